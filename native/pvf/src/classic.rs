//! Classic GUID-header archives (spec §1): the directory (`moddesk.pvf.format.classic`).

use crate::crypto::{classic_decrypt, crc32_seeded, name_hash};
use crate::error::{i32_at, slice, u32_at, PvfError, Result};

/// Real archives carry a 36-character GUID; anything longer than this is not a classic header.
pub const MAX_GUID_LEN: i64 = 1024;

/// The decoded header and directory tree of a classic archive, as flat arrays (no per-entry object).
#[derive(Debug, Clone, Default)]
pub struct ClassicDirectory {
    pub guid: Vec<u8>,
    pub version: i32,
    pub tree_len: i32,
    pub tree_crc: u32,
    /// Every raw name (as stored, trailing NULs included) back to back; entry i is
    /// `names[name_ends[i]..name_ends[i + 1]]`.
    pub names: Vec<u8>,
    pub name_ends: Vec<u64>,
    pub hashes: Vec<u32>,
    pub sizes: Vec<i64>,
    pub crcs: Vec<u32>,
    pub offsets: Vec<i64>,
    pub base: u64,
    pub trailing_offset: u64,
    pub problems: Vec<String>,
}

impl ClassicDirectory {
    pub fn count(&self) -> usize {
        self.sizes.len()
    }

    /// The raw name of entry `i` (trailing NULs included).
    pub fn name(&self, i: usize) -> &[u8] {
        &self.names[self.name_ends[i] as usize..self.name_ends[i + 1] as usize]
    }
}

pub fn align4(n: i64) -> i64 {
    (n + 3) & !3
}

/// Whether `guid` looks like a classic header's GUID: non-empty printable ASCII.
pub fn guid_plausible(guid: &[u8]) -> bool {
    !guid.is_empty() && guid.iter().all(|&b| (0x20..0x7F).contains(&b))
}

fn guid_problem(guid: &[u8]) -> Option<String> {
    if guid_plausible(guid) {
        return None;
    }
    let bad: Vec<String> = guid
        .iter()
        .enumerate()
        .filter(|(_, &b)| !(0x20..0x7F).contains(&b))
        .map(|(i, &b)| format!("{i}:{b:#04x}"))
        .collect();
    let mut shown = bad.iter().take(8).cloned().collect::<Vec<_>>().join(", ");
    if bad.len() > 8 {
        shown.push_str(" …");
    }
    Some(format!(
        "the GUID holds {} byte(s) that are not printable ASCII ({shown}); read leniently as the peers do",
        bad.len()
    ))
}

/// Whether the first directory entry decrypts to a name whose hash matches (garbage never does).
fn first_entry_verifies(
    data: &[u8],
    guid_len: i64,
    tree_len: i64,
    tree_crc: u32,
    count: i64,
) -> bool {
    if count <= 0 || tree_len < 20 {
        return false;
    }
    let len = tree_len.min(1024) & !3;
    let Ok(raw) = slice(data, (20 + guid_len) as u64, len as u64, "data") else {
        return false;
    };
    let head = classic_decrypt(raw, tree_crc);
    let h = u32_at(&head, 0);
    let n = i32_at(&head, 4) as i64;
    if !(0 < n && n <= head.len() as i64 - 20) {
        return false;
    }
    name_hash(&head[8..8 + n as usize]) == h
}

/// Whether the bytes can be a classic archive (`detect._classic_plausible`).
pub fn classic_plausible(data: &[u8]) -> bool {
    let size = data.len() as i64;
    if size < 20 {
        return false;
    }
    let guid_len = i32_at(data, 0) as i64;
    if !(0 < guid_len && guid_len <= MAX_GUID_LEN) || 20 + guid_len > size {
        return false;
    }
    let p = 4 + guid_len as usize;
    let tree_len = i32_at(data, p + 4) as i64;
    let crc = u32_at(data, p + 8);
    let count = i32_at(data, p + 12) as i64;
    let fits = tree_len >= 0
        && tree_len % 4 == 0
        && 20 + guid_len + tree_len <= size
        && 0 <= count * 20
        && count * 20 <= tree_len;
    if !fits {
        return false;
    }
    guid_plausible(&data[4..4 + guid_len as usize])
        || first_entry_verifies(data, guid_len, tree_len, crc, count)
}

/// TRUNCATED when a real classic header (a plausible GUID) announces a directory past the end
/// (`detect._raise_if_classic_cut`).
pub fn check_classic_cut(data: &[u8]) -> Result<()> {
    let size = data.len() as i64;
    if size < 8 {
        return Ok(());
    }
    let guid_len = i32_at(data, 0) as i64;
    let real = 0 < guid_len
        && guid_len <= MAX_GUID_LEN
        && guid_plausible(&data[4..4 + guid_len.min(size - 4) as usize]);
    if !real {
        return Ok(());
    }
    if 20 + guid_len > size {
        let missing = 20 + guid_len - size;
        return Err(PvfError::at(
            "TRUNCATED",
            format!("this classic archive is cut short inside its header ({missing} bytes missing); copy or download it again"),
            size as u64,
        ));
    }
    let tree_len = i32_at(data, 8 + guid_len as usize) as i64;
    let directory_end = 20 + guid_len + tree_len;
    if tree_len > 0 && tree_len % 4 == 0 && directory_end > size {
        return Err(PvfError::at(
            "TRUNCATED",
            format!(
                "this classic archive is cut short: {} bytes of its directory and all of its data area are missing \
                 (the file has {size} bytes); copy or download it again",
                directory_end - size
            ),
            size as u64,
        ));
    }
    Ok(())
}

/// Parse header and tree; every size is checked against the file before anything is allocated.
pub fn read_classic_directory(data: &[u8]) -> Result<ClassicDirectory> {
    let size = data.len() as i64;
    let guid_len = i32_at(slice(data, 0, 4, "classic header")?, 0) as i64;
    if !(0..=MAX_GUID_LEN).contains(&guid_len) {
        return Err(PvfError::at(
            "BAD_HEADER",
            format!("GUID length {guid_len} is not plausible"),
            0,
        ));
    }
    let guid = slice(data, 4, guid_len as u64, "GUID")?.to_vec();
    if guid.is_empty() {
        return Err(PvfError::at("BAD_HEADER", "the GUID is empty", 4));
    }
    let head = slice(data, 4 + guid_len as u64, 16, "classic header")?;
    let version = i32_at(head, 0);
    let tree_len = i32_at(head, 4) as i64;
    let tree_crc = u32_at(head, 8);
    let count = i32_at(head, 12) as i64;
    let mut problems = Vec::new();
    if let Some(warning) = guid_problem(&guid) {
        problems.push(warning);
    }
    let base = 20 + guid_len + tree_len;
    if tree_len < 0 || tree_len % 4 != 0 || base > size {
        return Err(PvfError::at(
            "BAD_HEADER",
            format!("directory length {tree_len} does not fit the file"),
            (8 + guid_len) as u64,
        ));
    }
    if count < 0 || count * 20 > tree_len {
        return Err(PvfError::new(
            "BAD_HEADER",
            format!("file count {count} does not fit a {tree_len}-byte directory"),
        ));
    }
    let tree = classic_decrypt(
        slice(data, (20 + guid_len) as u64, tree_len as u64, "directory")?,
        tree_crc,
    );
    let tree_ok = crc32_seeded(&tree, count as u32) == tree_crc;
    if !tree_ok {
        problems.push("directory checksum does not match crc32(tree, count)".to_string());
    }
    let n = count as usize;
    let mut d = ClassicDirectory {
        guid,
        version,
        tree_len: tree_len as i32,
        tree_crc,
        name_ends: Vec::with_capacity(n + 1),
        hashes: Vec::with_capacity(n),
        sizes: Vec::with_capacity(n),
        crcs: Vec::with_capacity(n),
        offsets: Vec::with_capacity(n),
        base: base as u64,
        problems,
        ..ClassicDirectory::default()
    };
    d.name_ends.push(0);
    let data_area = size - base;
    let mut p: i64 = 0;
    let mut cut_end: i64 = 0; // the furthest end of an entry whose data lies past the end of the file
    let entry_at = |p: i64| (20 + guid_len + p) as u64;
    for i in 0..n {
        if p + 8 > tree_len {
            return Err(PvfError::at(
                "TRUNCATED",
                format!("directory entry {i} runs past the directory"),
                entry_at(p),
            ));
        }
        let h = u32_at(&tree, p as usize);
        let name_len = i32_at(&tree, p as usize + 4) as i64;
        if name_len < 0 || p + 20 + name_len > tree_len {
            return Err(PvfError::at(
                "BAD_HEADER",
                format!("directory entry {i} has name length {name_len}"),
                entry_at(p),
            ));
        }
        let start = (p + 8) as usize;
        d.names
            .extend_from_slice(&tree[start..start + name_len as usize]);
        d.name_ends.push(d.names.len() as u64);
        p += 8 + name_len;
        let dlen = i32_at(&tree, p as usize) as i64;
        let crc = u32_at(&tree, p as usize + 4);
        let off = i32_at(&tree, p as usize + 8) as i64;
        p += 12;
        if dlen < 0 || off < 0 || (off + align4(dlen) > data_area && !tree_ok) {
            return Err(PvfError::at(
                "BAD_OFFSET",
                format!("entry {i} data ({dlen} bytes at {off}) is outside the data area"),
                (base + off.max(0)) as u64,
            ));
        }
        cut_end = cut_end.max(off + align4(dlen) - data_area);
        d.hashes.push(h);
        d.sizes.push(dlen);
        d.crcs.push(crc);
        d.offsets.push(off);
    }
    if cut_end > 0 {
        // the directory verified, so its offsets are true: the file itself is short
        return Err(PvfError::at(
            "TRUNCATED",
            format!(
                "this classic archive is cut short: {cut_end} bytes missing from the data area \
                 (the file has {size} bytes); copy or download it again"
            ),
            size as u64,
        ));
    }
    let end = d
        .offsets
        .iter()
        .zip(&d.sizes)
        .map(|(o, s)| o + align4(*s))
        .max()
        .unwrap_or(0);
    d.trailing_offset = (base + end) as u64;
    Ok(d)
}

/// The plaintext data of entry `index` (padding removed).
pub fn read_classic_block(data: &[u8], d: &ClassicDirectory, index: usize) -> Result<Vec<u8>> {
    let size = d.sizes[index];
    let block = slice(
        data,
        d.base + d.offsets[index] as u64,
        align4(size) as u64,
        &format!("entry {index}"),
    )?;
    let mut plain = classic_decrypt(block, d.crcs[index]);
    plain.truncate(size as usize);
    Ok(plain)
}
