//! NKPI archives (spec §4): standard "90US" and protected "90CN" — header, file table, name pools,
//! chunk index and chunks (`moddesk.pvf.format.nkpi`).

use std::borrow::Cow;
use std::collections::HashMap;

use flate2::{Decompress, FlushDecompress, Status};

use crate::crypto::{lcg_crypt, seed_ascii, seed_wide, MAGIC_MAIN, MAGIC_POOL};
use crate::error::{i32_at, slice, u32_at, PvfError, Result};

pub const SIGNATURE: u32 = 0x6970_6B6E;
pub const HEADER_SIZE: u64 = 48;
pub const ROW_SIZE: u64 = 24;
pub const ROOT_PATH: u32 = 0xFFFF_FFFF;
/// zlib cannot expand more than ~1032:1; a chunk announcing more than this is lying.
pub const MAX_RATIO: i64 = 1100;
pub const DATA_SCRIPT: i32 = 1;
pub const DATA_TEXT: i32 = 3;

/// The section keys of one NKPI family (spec §4.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Variant {
    pub name: &'static str,
    pub header_seed: u32,
    pub grpi_seed: u32,
    pub body_seed: u32,
    pub pool_a_seed: u32,
    pub pool_w_seed: u32,
    pub mask_a: u32,
    pub mask_w: u32,
    pub guardable: bool,
}

pub fn standard() -> Variant {
    Variant {
        name: "90US",
        header_seed: seed_ascii(b"HeaD"),
        grpi_seed: seed_ascii(b"GRPI"),
        body_seed: seed_ascii(b"BodY"),
        pool_a_seed: seed_ascii(b"sTrA"),
        pool_w_seed: seed_ascii(b"sTrW"),
        mask_a: 0xAA74_472E,
        mask_w: 0x9A82_F037,
        guardable: true,
    }
}

pub fn protected() -> Variant {
    Variant {
        name: "90CN",
        header_seed: seed_wide(b"hEAd"),
        grpi_seed: seed_wide(b"grpi"),
        body_seed: seed_wide(b"bODy"),
        pool_a_seed: seed_wide(b"StRa"),
        pool_w_seed: seed_wide(b"StRw"),
        mask_a: 0xAA74_472E,
        mask_w: 0x9A82_F037,
        guardable: false,
    }
}

pub fn paged110() -> Variant {
    Variant {
        name: "110US",
        header_seed: seed_wide(b"iNfO"),
        grpi_seed: seed_wide(b"Gidx"),
        body_seed: seed_wide(b"mAIn"),
        pool_a_seed: seed_wide(b"stAs"),
        pool_w_seed: seed_wide(b"stWs"),
        mask_a: 0xE7AD_F7EA,
        mask_w: 0xB8DE_A7AC,
        guardable: false,
    }
}

/// The decrypted 48-byte header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub guid: [u8; 20],
    pub count: i32,
    pub padding: i32,
    pub body_size: i32,
    pub group_count: i32,
    pub hash_size: i32,
    pub name_size: i32,
}

/// What opened the header: the variant, the LCG magic and whether bytes 24..28 were guarded.
#[derive(Debug, Clone, Copy)]
pub struct Probe {
    pub variant: Variant,
    pub magic: u32,
    pub guard: bool,
    pub header: Header,
}

fn decrypt_header(raw: &[u8], variant: &Variant, magic: u32, guard: bool) -> Option<Header> {
    let mut data = raw[..HEADER_SIZE as usize].to_vec();
    if guard {
        for b in &mut data[24..28] {
            *b ^= 0x55;
        }
    }
    let plain = lcg_crypt(&data, variant.header_seed, magic);
    if u32_at(&plain, 0) != SIGNATURE {
        return None;
    }
    let mut guid = [0u8; 20];
    guid.copy_from_slice(&plain[4..24]);
    Some(Header {
        guid,
        count: i32_at(&plain, 24),
        padding: i32_at(&plain, 28),
        body_size: i32_at(&plain, 32),
        group_count: i32_at(&plain, 36),
        hash_size: i32_at(&plain, 40),
        name_size: i32_at(&plain, 44),
    })
}

/// Find the keys under which the header decrypts and whose sections sum to the file size; a
/// header that decrypts under real keys but does not add up is a cut (TRUNCATED) or appended-to
/// (BAD_HEADER) archive (`nkpi.probe_header` / `_size_mismatch`).
pub fn probe_header(data: &[u8]) -> Result<Option<Probe>> {
    if (data.len() as u64) < HEADER_SIZE {
        return Ok(None);
    }
    let size = data.len() as i64;
    let mut mismatched: Option<(Variant, Header, i64)> = None;
    for variant in [standard(), protected(), paged110()] {
        for magic in [MAGIC_MAIN, MAGIC_POOL] {
            let guards: &[bool] = if variant.guardable {
                &[false, true]
            } else {
                &[false]
            };
            for &guard in guards {
                let Some(h) = decrypt_header(data, &variant, magic, guard) else {
                    continue;
                };
                let total = HEADER_SIZE as i64
                    + ROW_SIZE as i64 * h.count as i64
                    + h.hash_size as i64
                    + h.name_size as i64
                    + 8 * h.group_count as i64
                    + h.body_size as i64;
                let least = h
                    .count
                    .min(h.hash_size)
                    .min(h.name_size)
                    .min(h.group_count)
                    .min(h.body_size);
                if least < 0 {
                    continue;
                }
                if total == size {
                    return Ok(Some(Probe {
                        variant,
                        magic,
                        guard,
                        header: h,
                    }));
                }
                if mismatched.is_none() && variant.name != "110US" {
                    mismatched = Some((variant, h, total)); // other keys may still fit exactly: try them first
                }
            }
        }
    }
    match mismatched {
        Some((variant, h, total)) => Err(size_mismatch(&variant, &h, total, size)),
        None => Ok(None),
    }
}

fn size_mismatch(variant: &Variant, h: &Header, total: i64, size: i64) -> PvfError {
    let name = variant.name;
    let directory_end = total - h.body_size as i64;
    if size < total {
        let place = if size >= directory_end {
            "the data area"
        } else {
            "the directory"
        };
        return PvfError::at(
            "TRUNCATED",
            format!(
                "this {name} archive is cut short: {} bytes missing from {place} (the header announces {total} bytes, \
                 the file has {size}); copy or download it again",
                total - size
            ),
            size as u64,
        );
    }
    PvfError::at(
        "BAD_HEADER",
        format!(
            "this {name} archive has {} bytes after the end its header announces ({total} bytes); \
             the file may have been appended to or damaged",
            size - total
        ),
        total as u64,
    )
}

/// The refusal for Paged110 archives, naming the key material they need.
pub fn unsupported_paged110() -> PvfError {
    PvfError::new(
        "UNSUPPORTED_FORMAT",
        "this is a Paged110 ('110US') archive: reading it needs the page-key table from the sidecar sk.dat, \
         decrypted with the client's RSA-1024 private key and its 32-byte metadata key (found in DFO.exe); \
         moddesk does not ship that key material",
    )
}

/// Everything an NKPI archive holds except file data: header, table, pools, chunk index.
#[derive(Debug, Clone)]
pub struct NkpiDirectory {
    pub variant: Variant,
    pub magic: u32,
    pub guard: bool,
    pub header: Header,
    /// The file table as stored (24 bytes a row: name, path, chunk, offset, size, type).
    pub rows: Vec<u8>,
    pub pool_a: Vec<u8>,
    pub pool_w: Vec<u8>,
    pub name_prefix: Vec<u8>,
    pub name_tail: Vec<u8>,
    pub cumulative: Vec<i64>,
    pub original_sizes: Vec<i64>,
}

impl NkpiDirectory {
    pub fn count(&self) -> usize {
        self.rows.len() / ROW_SIZE as usize
    }

    fn field(&self, row: usize, k: usize) -> i32 {
        i32_at(&self.rows, row * ROW_SIZE as usize + 4 * k)
    }

    pub fn name(&self, row: usize) -> u32 {
        self.field(row, 0) as u32
    }
    pub fn folder(&self, row: usize) -> u32 {
        self.field(row, 1) as u32
    }
    pub fn chunk(&self, row: usize) -> i32 {
        self.field(row, 2)
    }
    pub fn offset(&self, row: usize) -> i32 {
        self.field(row, 3)
    }
    pub fn size(&self, row: usize) -> i32 {
        self.field(row, 4)
    }
    pub fn data_type(&self, row: usize) -> i32 {
        self.field(row, 5)
    }

    pub fn body_offset(&self) -> u64 {
        let h = &self.header;
        HEADER_SIZE
            + ROW_SIZE * h.count as u64
            + h.hash_size as u64
            + h.name_size as u64
            + 8 * h.group_count as u64
    }

    /// Absolute (start, end) of stored chunk `index`.
    pub fn chunk_span(&self, index: usize) -> (u64, u64) {
        let start = if index > 0 {
            self.cumulative[index - 1]
        } else {
            0
        };
        let base = self.body_offset();
        (base + start as u64, base + self.cumulative[index] as u64)
    }
}

/// Inflate exactly `size` bytes of a zlib stream and reach its end (so the Adler-32 check runs).
pub fn inflate(data: &[u8], size: i64, what: &str, offset: Option<u64>) -> Result<Vec<u8>> {
    let fail = |message: String| PvfError {
        code: "BAD_COMPRESSION",
        message,
        offset,
    };
    let want = size.max(0) as usize + 1;
    let mut out = Vec::with_capacity(want);
    let mut d = Decompress::new(true);
    let mut eof = false;
    loop {
        let before_in = d.total_in();
        let before_out = d.total_out();
        let input = &data[d.total_in() as usize..];
        match d.decompress_vec(input, &mut out, FlushDecompress::Finish) {
            Ok(Status::StreamEnd) => {
                eof = true;
                break;
            }
            Ok(_) => {}
            Err(exc) => return Err(fail(format!("{what}: {exc}"))),
        }
        if out.len() >= want || (d.total_in() == before_in && d.total_out() == before_out) {
            break;
        }
    }
    if out.len() as i64 != size {
        return Err(fail(format!(
            "{what} inflates to {}+ bytes, not {size}",
            out.len()
        )));
    }
    if !eof {
        return Err(fail(format!("{what}: compressed stream is cut short")));
    }
    Ok(out)
}

fn read_pool(
    data: &[u8],
    pos: u64,
    end: u64,
    seed: u32,
    mask: u32,
    what: &str,
) -> Result<(Vec<u8>, u64)> {
    if pos + 8 > end {
        return Err(PvfError::at(
            "TRUNCATED",
            format!("{what} pool header runs past the name table"),
            pos,
        ));
    }
    let head = slice(data, pos, 8, "data")?;
    let enc_size = u32_at(head, 0) ^ mask;
    let raw_len = u32_at(head, 4) ^ enc_size;
    let pos = pos + 8;
    if enc_size == 0 {
        return Ok((Vec::new(), pos));
    }
    if pos + enc_size as u64 > end {
        return Err(PvfError::at(
            "BAD_STRING_TABLE",
            format!("{what} pool of {enc_size} bytes overruns the name table"),
            pos,
        ));
    }
    if raw_len as i64 > enc_size as i64 * MAX_RATIO + 1024 {
        return Err(PvfError::at(
            "BAD_STRING_TABLE",
            format!("{what} pool claims {raw_len} bytes from {enc_size}"),
            pos,
        ));
    }
    let plain = lcg_crypt(slice(data, pos, enc_size as u64, "data")?, seed, MAGIC_POOL);
    let pool = inflate(&plain, raw_len as i64, &format!("{what} pool"), Some(pos))?;
    Ok((pool, pos + enc_size as u64))
}

/// Parse table, pools and GRPI; the HASH section and the body are not touched.
pub fn read_nkpi_directory(data: &[u8], probe: &Probe) -> Result<NkpiDirectory> {
    let (variant, magic, guard, h) = (probe.variant, probe.magic, probe.guard, probe.header);
    if variant.name == "110US" {
        return Err(unsupported_paged110());
    }
    let rows = slice(data, HEADER_SIZE, ROW_SIZE * h.count as u64, "file table")?.to_vec();
    let name_off = HEADER_SIZE + ROW_SIZE * h.count as u64 + h.hash_size as u64;
    let name_end = name_off + h.name_size as u64;
    if h.name_size < 8 {
        return Err(PvfError::at(
            "BAD_HEADER",
            format!("name table of {} bytes has no prefix", h.name_size),
            name_off,
        ));
    }
    let prefix = slice(data, name_off, 8, "data")?.to_vec();
    let (pool_a, pos) = read_pool(
        data,
        name_off + 8,
        name_end,
        variant.pool_a_seed,
        variant.mask_a,
        "UTF-8",
    )?;
    let (pool_w, pos) = read_pool(
        data,
        pos,
        name_end,
        variant.pool_w_seed,
        variant.mask_w,
        "UTF-16",
    )?;
    let tail = slice(data, pos, name_end - pos, "data")?.to_vec();
    let grpi_off = name_end;
    let grpi = lcg_crypt(
        slice(data, grpi_off, 8 * h.group_count as u64, "GRPI")?,
        variant.grpi_seed,
        magic,
    );
    let groups = h.group_count as usize;
    let cumulative: Vec<i64> = (0..groups).map(|g| i32_at(&grpi, 8 * g) as i64).collect();
    let originals: Vec<i64> = (0..groups)
        .map(|g| i32_at(&grpi, 8 * g + 4) as i64)
        .collect();
    if groups > 0 {
        let mut previous = 0i64;
        let mut stored = Vec::with_capacity(groups);
        for &c in &cumulative {
            stored.push(c - previous);
            previous = c;
        }
        if stored.iter().any(|&s| s <= 0) || cumulative[groups - 1] != h.body_size as i64 {
            return Err(PvfError::at(
                "BAD_OFFSET",
                "GRPI sizes are not increasing up to the body size",
                grpi_off,
            ));
        }
        if originals
            .iter()
            .zip(&stored)
            .any(|(&o, &s)| o < 0 || o > s * MAX_RATIO + 1024)
        {
            return Err(PvfError::at(
                "BAD_HEADER",
                "a chunk claims an impossible decompressed size",
                grpi_off,
            ));
        }
    } else if h.body_size != 0 {
        return Err(PvfError::at(
            "BAD_HEADER",
            "a body without chunks",
            grpi_off,
        ));
    }
    let d = NkpiDirectory {
        variant,
        magic,
        guard,
        header: h,
        rows,
        pool_a,
        pool_w,
        name_prefix: prefix,
        name_tail: tail,
        cumulative,
        original_sizes: originals,
    };
    check_rows(&d)?;
    Ok(d)
}

fn check_rows(d: &NkpiDirectory) -> Result<()> {
    let groups = d.header.group_count.max(0) as i64;
    let row_at = |i: usize| HEADER_SIZE + ROW_SIZE * i as u64;
    for i in 0..d.count() {
        let chunk = d.chunk(i) as i64;
        if chunk < 0 || chunk >= groups || d.offset(i) < 0 || d.size(i) < 0 {
            return Err(PvfError::at(
                "BAD_OFFSET",
                format!("file table row {i} points outside the chunks"),
                row_at(i),
            ));
        }
    }
    for i in 0..d.count() {
        let end = d.offset(i) as i64 + d.size(i) as i64;
        if end > d.original_sizes[d.chunk(i) as usize] {
            return Err(PvfError::at(
                "BAD_OFFSET",
                format!("file table row {i} runs past its chunk"),
                row_at(i),
            ));
        }
    }
    Ok(())
}

/// The decompressed bytes of chunk `index`.
pub fn read_chunk(data: &[u8], d: &NkpiDirectory, index: usize) -> Result<Vec<u8>> {
    let (start, end) = d.chunk_span(index);
    let plain = lcg_crypt(
        slice(data, start, end - start, &format!("chunk {index}"))?,
        d.variant.body_seed,
        d.magic,
    );
    inflate(
        &plain,
        d.original_sizes[index],
        &format!("chunk {index}"),
        Some(start),
    )
}

/// A pool string as the reference decodes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PoolText<'a> {
    /// No string at that magic (past the pool's end).
    Missing,
    /// The text as UTF-8 (lone UTF-16 surrogates as their 3-byte forms, like Python's surrogatepass).
    Text(Cow<'a, [u8]>),
    /// UTF-8 pool bytes that are not UTF-8: the reference decodes them as GB18030 (Python does).
    Legacy(&'a [u8]),
}

/// Append the UTF-8 form of code point `c` (surrogates included, as `surrogatepass` writes them).
pub fn push_code_point(out: &mut Vec<u8>, c: u32) {
    if c < 0x80 {
        out.push(c as u8);
    } else if c < 0x800 {
        out.extend_from_slice(&[0xC0 | (c >> 6) as u8, 0x80 | (c & 0x3F) as u8]);
    } else if c < 0x10000 {
        out.extend_from_slice(&[
            0xE0 | (c >> 12) as u8,
            0x80 | ((c >> 6) & 0x3F) as u8,
            0x80 | (c & 0x3F) as u8,
        ]);
    } else {
        out.extend_from_slice(&[
            0xF0 | (c >> 18) as u8,
            0x80 | ((c >> 12) & 0x3F) as u8,
            0x80 | ((c >> 6) & 0x3F) as u8,
            0x80 | (c & 0x3F) as u8,
        ]);
    }
}

/// UTF-16LE bytes decoded with `surrogatepass`, as UTF-8 (surrogates in 3 bytes); an odd last
/// byte is dropped, as the reference drops it.
pub fn utf16_to_utf8(raw: &[u8]) -> Vec<u8> {
    let units = raw
        .chunks_exact(2)
        .map(|u| u16::from_le_bytes([u[0], u[1]]));
    let mut out = Vec::with_capacity(raw.len() * 3 / 2);
    for item in char::decode_utf16(units) {
        match item {
            Ok(c) => push_code_point(&mut out, c as u32),
            Err(e) => push_code_point(&mut out, e.unpaired_surrogate() as u32),
        }
    }
    out
}

/// The raw bytes of the UTF-16 pool string at byte `pos` (up to its even-aligned 00 00).
pub fn utf16_raw(pool_w: &[u8], pos: usize) -> &[u8] {
    let limit = pool_w.len() & !1;
    let mut k = pos;
    while k + 2 <= limit {
        if pool_w[k] == 0 && pool_w[k + 1] == 0 {
            return &pool_w[pos..k];
        }
        k += 2;
    }
    if limit > pos {
        &pool_w[pos..limit]
    } else {
        &pool_w[0..0]
    }
}

/// The string at magic offset `magic` (even: UTF-8 pool, odd: UTF-16 pool), as `StringPools.string_at`.
pub fn pool_text<'a>(pool_a: &'a [u8], pool_w: &'a [u8], magic: u32) -> PoolText<'a> {
    if magic & 1 == 1 {
        let pos = (magic >> 1) as usize * 2;
        if pos >= pool_w.len() {
            return PoolText::Missing;
        }
        return PoolText::Text(Cow::Owned(utf16_to_utf8(utf16_raw(pool_w, pos))));
    }
    let pos = (magic >> 1) as usize;
    if pos >= pool_a.len() {
        return PoolText::Missing;
    }
    let end = pool_a[pos..]
        .iter()
        .position(|&b| b == 0)
        .map_or(pool_a.len(), |k| pos + k);
    let raw = &pool_a[pos..end];
    match std::str::from_utf8(raw) {
        Ok(_) => PoolText::Text(Cow::Borrowed(raw)),
        Err(_) => PoolText::Legacy(raw),
    }
}

/// Every row's full path (`dir/name`) as UTF-8 back to back (`ends` has count + 1 offsets), and the
/// rows whose name or folder is GB18030 in the UTF-8 pool: their paths are left empty here for
/// the caller to decode (their raw bytes stand in the buffer).
pub struct EntryPaths {
    pub buffer: Vec<u8>,
    pub ends: Vec<u64>,
    pub legacy_rows: Vec<u64>,
}

/// `nkpi.entry_paths`: the paths of every row, or BAD_OFFSET when a row names a string outside the pools.
pub fn entry_paths(d: &NkpiDirectory) -> Result<EntryPaths> {
    let n = d.count();
    let row_at = |i: usize| HEADER_SIZE + ROW_SIZE * i as u64;
    let missing = |magic: u32| {
        magic != ROOT_PATH && pool_text(&d.pool_a, &d.pool_w, magic) == PoolText::Missing
    };
    // names are checked before folders, as the reference's concatenated lookup does
    if let Some(row) = (0..n)
        .find(|&i| missing(d.name(i)))
        .or_else(|| (0..n).find(|&i| missing(d.folder(i))))
    {
        return Err(PvfError::at(
            "BAD_OFFSET",
            format!("file table row {row} names a string outside the pools"),
            row_at(row),
        ));
    }
    let mut out = EntryPaths {
        buffer: Vec::new(),
        ends: Vec::with_capacity(n + 1),
        legacy_rows: Vec::new(),
    };
    out.ends.push(0);
    // folders repeat (one per directory), names mostly do not: only folders are remembered
    let mut folders: HashMap<u32, (Vec<u8>, bool)> = HashMap::new();
    for i in 0..n {
        let magic = d.folder(i);
        let (folder, folder_legacy) = if magic == ROOT_PATH {
            (Vec::new(), false)
        } else {
            folders
                .entry(magic)
                .or_insert_with(|| match pool_text(&d.pool_a, &d.pool_w, magic) {
                    PoolText::Text(t) => (t.into_owned(), false),
                    PoolText::Legacy(raw) => (raw.to_vec(), true),
                    PoolText::Missing => (Vec::new(), false),
                })
                .clone()
        };
        let name_magic = d.name(i);
        let (name, name_legacy) = if name_magic == ROOT_PATH {
            (Cow::Borrowed(&[][..]), false)
        } else {
            match pool_text(&d.pool_a, &d.pool_w, name_magic) {
                PoolText::Text(t) => (t, false),
                PoolText::Legacy(raw) => (Cow::Borrowed(raw), true),
                PoolText::Missing => (Cow::Borrowed(&[][..]), false),
            }
        };
        // a GB18030 part is kept raw here (its `.lst` suffix still reads right); the caller decodes it
        if folder_legacy || name_legacy {
            out.legacy_rows.push(i as u64);
        }
        if !folder.is_empty() {
            out.buffer.extend_from_slice(&folder);
            out.buffer.push(b'/');
        }
        out.buffer.extend_from_slice(&name);
        out.ends.push(out.buffer.len() as u64);
    }
    Ok(out)
}
