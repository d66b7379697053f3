//! Format 3 of the content index (`moddesk.pvf.workbench.searchindex`, the native core's): the
//! folded corpus in path order stored as independently compressed zstd frames ("blocks") that end
//! on file boundaries, so one block answers on its own and no match spans two of them:
//!
//! ```text
//! header (HEADER_SIZE bytes: magic + JSON, written when published) | blocks (compressed) |
//! offsets (<i8, texts + 1) | text mask (u1, sorted paths) | sorting permutation (<i8, paths) |
//! block ordinals (<i8, blocks + 1) | block ends (<i8, blocks + 1, compressed) | blocks (<i8)
//! ```
//!
//! The uncompressed corpus is byte for byte format 2's (`index::Spool::write_index`); the offsets,
//! mask and permutation are the same arrays. Block `k` holds the texts of ordinals
//! `ords[k]..ords[k + 1]`, i.e. corpus bytes `offsets[ords[k]]..offsets[ords[k + 1]]`, stored at
//! `ends[k]..ends[k + 1]` after the header. Zstd level 1 was measured on the generated archives
//! (10^5 files): the folded corpus compresses 11–12× (0.44× the 90US archive, 0.15× classic),
//! where lz4 kept it above the 90US archive's size and deflate-1 at 0.85× decodes 3–4× slower.
//!
//! The first blocks are small (a common word answers after decoding 256 KiB), then they double to
//! `BLOCK`: a page that starts mid-corpus decodes at most one block it does not need.

use std::fs::File;
use std::io::{self, Write};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use memchr::memmem;
use rayon::prelude::*;

#[cfg(unix)]
use std::os::unix::fs::FileExt;
#[cfg(windows)]
use std::os::windows::fs::FileExt;

/// Corpus bytes in the first block; each next block doubles up to `BLOCK`.
pub const FIRST_BLOCK: i64 = 256 << 10;
/// Corpus bytes a block holds at most (unless one text is bigger).
pub const BLOCK: i64 = 1 << 20;
/// Zstd level of the blocks (see the module comment for the measurement).
pub const LEVEL: i32 = 1;
/// Blocks compressed (build) or decoded (search) side by side per step: bounds what is in flight.
pub const WINDOW: usize = 8;

/// Block boundaries (ordinals, from 0 to the number of texts) for texts ending at `offsets`
/// (`offsets[0] == 0`, ascending): every block holds at least one text and ends at the first text
/// end that reaches its size (`FIRST_BLOCK`, doubling up to `BLOCK`). No text: `[0]`.
pub fn plan(offsets: &[i64]) -> Vec<u64> {
    plan_sized(offsets, FIRST_BLOCK, BLOCK)
}

/// `plan` with other block sizes (the tests use small ones to get many blocks).
pub fn plan_sized(offsets: &[i64], first: i64, most: i64) -> Vec<u64> {
    let texts = offsets.len().saturating_sub(1);
    let mut ords = vec![0u64];
    let mut start = 0usize;
    let mut size = first.max(1);
    while start < texts {
        let limit = offsets[start].saturating_add(size);
        // the first ordinal past `start` whose end reaches the limit (or the last text)
        let reach = offsets[start + 1..].partition_point(|&o| o < limit);
        let end = (start + 1 + reach).min(texts);
        ords.push(end as u64);
        start = end;
        size = (size * 2).min(most.max(1));
    }
    ords
}

/// Compress the blocks `ords` cuts the corpus into and write them to `out` one after the other:
/// `texts(a, b)` gives the corpus bytes of ordinals `a..b` (called on worker threads, `WINDOW`
/// blocks at a time, so at most that many blocks are in memory). Answers the block ends
/// (compressed, with a leading 0). `step()` runs after each window (it may stop the write).
pub fn write_blocks<T, S>(
    out: &mut impl Write,
    ords: &[u64],
    texts: T,
    mut step: S,
) -> io::Result<Vec<u64>>
where
    T: Fn(usize, usize) -> io::Result<Vec<u8>> + Sync,
    S: FnMut() -> io::Result<()>,
{
    let mut ends = vec![0u64];
    let blocks: Vec<(usize, usize)> = ords
        .windows(2)
        .map(|w| (w[0] as usize, w[1] as usize))
        .collect();
    for window in blocks.chunks(WINDOW) {
        let frames: Vec<io::Result<Vec<u8>>> = window
            .par_iter()
            .map(|&(a, b)| compress(&texts(a, b)?))
            .collect();
        for frame in frames {
            let frame = frame?;
            out.write_all(&frame)?;
            ends.push(ends.last().copied().unwrap_or(0) + frame.len() as u64);
        }
        step()?;
    }
    Ok(ends)
}

/// One block as a zstd frame with its content size and checksum (XXH64 of the content), so a
/// damaged block is an error when it is read, never wrong text.
pub fn compress(plain: &[u8]) -> io::Result<Vec<u8>> {
    let mut compressor = zstd::bulk::Compressor::new(LEVEL)?;
    compressor.include_checksum(true)?;
    compressor.include_contentsize(true)?;
    compressor.compress(plain)
}

/// What a search over the blocks stopped at: the hits (ordinals, ascending), where to go on from
/// (`resume`: every ordinal below it that matched is in `hits`), and whether it stopped because its
/// time ran out (else it found `max_hits` hits or reached the end of the range).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub hits: Vec<u64>,
    pub resume: u64,
    pub timed_out: bool,
}

/// Reads a format-3 corpus: positioned reads of the blocks of an open index file (no shared file
/// position, so concurrent searches need no lock), each block decoded on its own.
pub struct BlockReader {
    file: File,
    /// Where the blocks begin in the file (after the header).
    start: u64,
    offsets: Vec<i64>,
    ords: Vec<u64>,
    ends: Vec<u64>,
    /// The block `read` decoded last: snippets of a page's hits mostly fall in one block.
    last: LastBlock,
}

impl BlockReader {
    /// A reader over `file` whose blocks begin at `start`, checked: offsets from 0 ascending by at
    /// least one byte (every text ends with its separator), block ordinals from 0 to the number of
    /// texts strictly ascending, block ends from 0 strictly ascending. Err names what is wrong.
    pub fn new(
        file: File,
        start: u64,
        offsets: Vec<i64>,
        ords: Vec<u64>,
        ends: Vec<u64>,
    ) -> Result<BlockReader, String> {
        let texts = offsets.len().checked_sub(1).ok_or("no offsets")?;
        if offsets[0] != 0 || offsets.windows(2).any(|w| w[1] <= w[0]) {
            return Err("text offsets: from 0, each text at least one byte".into());
        }
        if ords.first() != Some(&0)
            || ords.last() != Some(&(texts as u64))
            || ords.windows(2).any(|w| w[1] <= w[0])
        {
            return Err("block ordinals: from 0 to the number of texts, ascending".into());
        }
        if ends.len() != ords.len() || ends[0] != 0 || ends.windows(2).any(|w| w[1] <= w[0]) {
            return Err("block ends: one per block from 0, ascending".into());
        }
        Ok(BlockReader {
            file,
            start,
            offsets,
            ords,
            ends,
            last: Mutex::new(None),
        })
    }

    pub fn blocks(&self) -> usize {
        self.ords.len() - 1
    }

    pub fn texts(&self) -> usize {
        self.offsets.len() - 1
    }

    /// The block holding ordinal `ordinal` (< texts).
    pub fn block_of(&self, ordinal: u64) -> usize {
        self.ords.partition_point(|&o| o <= ordinal) - 1
    }

    /// First ordinal of block `k` (`k == blocks()`: the number of texts).
    pub fn block_start(&self, k: usize) -> u64 {
        self.ords[k]
    }

    /// The corpus bytes of block `k`, decoded and checked against the size the offsets give.
    pub fn block(&self, k: usize) -> io::Result<Vec<u8>> {
        let bad = |what: String| io::Error::new(io::ErrorKind::InvalidData, what);
        let (a, b) = (self.ends[k], self.ends[k + 1]);
        let mut frame = vec![0u8; (b - a) as usize];
        read_exact_at(&self.file, &mut frame, self.start + a)?;
        let size = (self.offsets[self.ords[k + 1] as usize] - self.offsets[self.ords[k] as usize])
            as usize;
        let plain = zstd::bulk::decompress(&frame, size).map_err(|e| {
            bad(format!(
                "index block {k} (file offset {}): {e}",
                self.start + a
            ))
        })?;
        if plain.len() != size {
            return Err(bad(format!(
                "index block {k} (file offset {}): {} bytes decoded, {size} expected",
                self.start + a,
                plain.len()
            )));
        }
        Ok(plain)
    }

    /// Blocks `first..last` decoded side by side, one after the other (corpus bytes
    /// `offsets[ords[first]]..offsets[ords[last]]`).
    pub fn block_range(&self, first: usize, last: usize) -> io::Result<Vec<u8>> {
        let parts: Vec<io::Result<Vec<u8>>> = (first..last)
            .into_par_iter()
            .map(|k| self.block(k))
            .collect();
        let mut out = Vec::new();
        for part in parts {
            out.extend_from_slice(&part?);
        }
        Ok(out)
    }

    /// Corpus bytes `begin..end` (clamped to the corpus).
    pub fn read(&self, begin: i64, end: i64) -> io::Result<Vec<u8>> {
        let total = self.offsets[self.texts()];
        let (begin, end) = (begin.clamp(0, total), end.clamp(0, total));
        if end <= begin {
            return Ok(Vec::new());
        }
        let first_text = self.offsets.partition_point(|&o| o <= begin) - 1;
        let last_text = self.offsets.partition_point(|&o| o < end) - 1;
        let (first, last) = (
            self.block_of(first_text as u64),
            self.block_of(last_text as u64) + 1,
        );
        let base = self.offsets[self.ords[first] as usize];
        let (a, b) = ((begin - base) as usize, (end - base) as usize);
        if last == first + 1 {
            let plain = self.cached(first)?;
            return Ok(plain[a..b].to_vec());
        }
        Ok(self.block_range(first, last)?[a..b].to_vec())
    }

    /// Block `k` from the one-block cache, decoded into it when it is another.
    fn cached(&self, k: usize) -> io::Result<Arc<Vec<u8>>> {
        if let Some((at, plain)) = lock(&self.last).as_ref() {
            if *at == k {
                return Ok(Arc::clone(plain));
            }
        }
        let plain = Arc::new(self.block(k)?);
        *lock(&self.last) = Some((k, Arc::clone(&plain)));
        Ok(plain)
    }

    /// Ordinals in `lo..hi` whose text contains `needle`, ascending, at most `max_hits` of them;
    /// blocks are decoded and scanned side by side, first one alone (a common needle answers after
    /// one small block), then `WINDOW` at a time. `deadline`: checked before each step after the
    /// first (so every call makes progress); past it the search stops with `timed_out`.
    pub fn containing(
        &self,
        needle: &[u8],
        lo: u64,
        hi: u64,
        max_hits: usize,
        deadline: Option<Instant>,
    ) -> io::Result<Found> {
        let hi = hi.min(self.texts() as u64);
        let mut found = Found {
            hits: Vec::new(),
            resume: hi,
            timed_out: false,
        };
        if lo >= hi || max_hits == 0 {
            found.resume = lo; // lo >= hi: past the range already
            return Ok(found);
        }
        let finder = memmem::Finder::new(needle);
        let mut k = self.block_of(lo);
        let last = self.block_of(hi - 1) + 1;
        let mut width = 1;
        while k < last {
            if width > 1 && deadline.is_some_and(|d| Instant::now() > d) {
                found.resume = self.ords[k].max(lo);
                found.timed_out = true;
                return Ok(found);
            }
            let step_end = (k + width).min(last);
            let parts: Vec<io::Result<Vec<u64>>> = (k..step_end)
                .into_par_iter()
                .map(|b| self.find_in_block(&finder, b, lo, hi))
                .collect();
            for part in parts {
                for ordinal in part? {
                    found.hits.push(ordinal);
                    if found.hits.len() == max_hits {
                        found.resume = ordinal + 1;
                        return Ok(found);
                    }
                }
            }
            k = step_end;
            width = WINDOW;
        }
        Ok(found)
    }

    /// The ordinals in `lo..hi` of block `k` whose text contains the needle.
    fn find_in_block(
        &self,
        finder: &memmem::Finder<'_>,
        k: usize,
        lo: u64,
        hi: u64,
    ) -> io::Result<Vec<u64>> {
        let plain = self.block(k)?;
        let (a, b) = (self.ords[k].max(lo), self.ords[k + 1].min(hi));
        let base = self.offsets[self.ords[k] as usize];
        let mut hits = Vec::new();
        let mut from = (self.offsets[a as usize] - base) as usize;
        let stop = (self.offsets[b as usize] - base) as usize;
        while from < stop {
            let Some(pos) = finder.find(&plain[from..stop]) else {
                break;
            };
            let at = base + (from + pos) as i64;
            let ordinal = self.offsets.partition_point(|&o| o <= at) - 1;
            hits.push(ordinal as u64);
            from = (self.offsets[ordinal + 1] - base) as usize; // one hit per text
        }
        Ok(hits)
    }
}

type LastBlock = Mutex<Option<(usize, Arc<Vec<u8>>)>>;

/// The cache's guard; a poisoned lock is taken as it is (a panicked reader left a whole value).
fn lock(m: &LastBlock) -> std::sync::MutexGuard<'_, Option<(usize, Arc<Vec<u8>>)>> {
    match m.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    }
}

/// Fill `buf` from `file` at `offset` without moving a shared cursor (readers on many threads).
#[cfg(unix)]
pub(crate) fn read_exact_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<()> {
    file.read_exact_at(buf, offset)
}

#[cfg(windows)]
pub(crate) fn read_exact_at(file: &File, mut buf: &mut [u8], mut offset: u64) -> io::Result<()> {
    while !buf.is_empty() {
        match file.seek_read(buf, offset)? {
            0 => return Err(io::Error::from(io::ErrorKind::UnexpectedEof)),
            n => {
                buf = &mut buf[n..];
                offset += n as u64;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str) -> std::path::PathBuf {
        std::env::temp_dir().join(format!(
            "moddesk-blocks-test-{}-{}",
            std::process::id(),
            name
        ))
    }

    /// Texts (each + NUL) written as blocks to a file at `start`, and a reader over it.
    fn written(texts: &[Vec<u8>], start: u64, name: &str) -> (BlockReader, std::path::PathBuf) {
        written_sized(texts, start, name, FIRST_BLOCK, BLOCK)
    }

    fn written_sized(
        texts: &[Vec<u8>],
        start: u64,
        name: &str,
        first: i64,
        most: i64,
    ) -> (BlockReader, std::path::PathBuf) {
        let mut corpus = Vec::new();
        let mut offsets = vec![0i64];
        for t in texts {
            corpus.extend_from_slice(t);
            corpus.push(0);
            offsets.push(corpus.len() as i64);
        }
        let ords = plan_sized(&offsets, first, most);
        let path = temp(name);
        let mut out = vec![0u8; start as usize];
        let ends = write_blocks(
            &mut out,
            &ords,
            |a, b| Ok(corpus[offsets[a] as usize..offsets[b] as usize].to_vec()),
            || Ok(()),
        )
        .unwrap();
        std::fs::write(&path, &out).unwrap();
        let file = File::open(&path).unwrap();
        (
            BlockReader::new(file, start, offsets, ords, ends).unwrap(),
            path,
        )
    }

    #[test]
    fn a_plan_starts_small_and_ends_on_texts() {
        assert_eq!(plan(&[0]), vec![0]);
        assert_eq!(plan(&[0, 5]), vec![0, 1]);
        let big = FIRST_BLOCK + 10;
        // one text past the first block's size is a block of its own; the rest share the next
        assert_eq!(plan(&[0, big, big + 1, big + 2]), vec![0, 1, 3]);
        let offsets: Vec<i64> = (0..=10_000).map(|i| i * 1000).collect();
        let ords = plan(&offsets);
        assert_eq!(ords[1], (FIRST_BLOCK as u64).div_ceil(1000));
        assert!(ords.windows(2).all(|w| w[1] > w[0]));
        assert_eq!(*ords.last().unwrap(), 10_000);
    }

    #[test]
    fn damaged_blocks_are_errors_not_panics() {
        let texts: Vec<Vec<u8>> = (0..50).map(|i| format!("text {i}").into_bytes()).collect();
        let (reader, path) = written(&texts, 7, "damaged");
        let mut bytes = std::fs::read(&path).unwrap();
        for b in bytes.iter_mut().skip(12) {
            *b ^= 0x5a;
        }
        std::fs::write(&path, &bytes).unwrap();
        let damaged = BlockReader::new(
            File::open(&path).unwrap(),
            7,
            reader.offsets.clone(),
            reader.ords.clone(),
            reader.ends.clone(),
        )
        .unwrap();
        assert!(damaged.block(0).is_err());
        assert!(damaged.containing(b"text", 0, 50, 10, None).is_err());
        std::fs::write(&path, &bytes[..9]).unwrap(); // truncated
        let truncated = BlockReader::new(
            File::open(&path).unwrap(),
            7,
            reader.offsets.clone(),
            reader.ords.clone(),
            reader.ends.clone(),
        )
        .unwrap();
        assert!(truncated.read(0, 5).is_err());
        assert!(BlockReader::new(
            File::open(&path).unwrap(),
            0,
            vec![0, 0],
            vec![0, 1],
            vec![0, 1]
        )
        .is_err());
        assert!(
            BlockReader::new(File::open(&path).unwrap(), 0, vec![0, 2], vec![0], vec![0]).is_err()
        );
        assert!(BlockReader::new(
            File::open(&path).unwrap(),
            0,
            vec![0, 2],
            vec![0, 1],
            vec![0, 0]
        )
        .is_err());
        std::fs::remove_file(path).unwrap();
    }

    #[test]
    fn a_deadline_in_the_past_stops_after_the_first_block() {
        let texts: Vec<Vec<u8>> = (0..200_000).map(|i| format!("t{i}").into_bytes()).collect();
        let (reader, path) = written(&texts, 0, "deadline");
        assert!(reader.blocks() > 2);
        let found = reader
            .containing(b"no such text", 0, 200_000, 100, Some(Instant::now()))
            .unwrap();
        assert!(found.timed_out);
        assert_eq!(found.resume, reader.block_start(1));
        assert!(found.hits.is_empty());
        std::fs::remove_file(path).unwrap();
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]
        /// Written blocks read back as the corpus, and every search answers what a plain scan of
        /// the model corpus answers (hit limits, resumption, ranges).
        #[test]
        fn blocks_answer_as_the_plain_corpus(
            texts in proptest::collection::vec(
                proptest::collection::vec(proptest::sample::select(b"ab\ncd".to_vec()), 0..3000), 0..60),
            needle in proptest::collection::vec(proptest::sample::select(b"abc".to_vec()), 0..4),
            lo in 0u64..70,
            span in 0u64..70,
            max_hits in 1usize..8,
            start in 0u64..50,
            cut in 0i64..200_000,
            len in 0i64..5000,
            first in 1i64..3000,
        ) {
            let name = format!("prop-{}-{lo}-{span}-{max_hits}-{start}-{cut}", texts.len());
            let (reader, path) = written_sized(&texts, start, &name, first, 4 * first);
            let corpus: Vec<u8> = texts.iter().flat_map(|t| t.iter().copied().chain([0])).collect();
            let n = texts.len() as u64;
            // read: any range, clamped
            let (b, e) = (cut.min(corpus.len() as i64), (cut + len).min(corpus.len() as i64));
            proptest::prop_assert_eq!(reader.read(cut, cut + len).unwrap(), corpus[b as usize..e as usize].to_vec());
            // containing: pages of max_hits from lo, resumed until the end, equal the model
            let hi = (lo + span).min(n);
            let model: Vec<u64> = (lo..hi)
                .filter(|&i| memmem::find(&texts[i as usize], &needle).is_some() || needle.is_empty())
                .collect();
            let mut got = Vec::new();
            let mut from = lo;
            loop {
                let found = reader.containing(&needle, from, hi, max_hits, None).unwrap();
                proptest::prop_assert!(!found.timed_out);
                proptest::prop_assert!(found.hits.len() <= max_hits);
                let done = found.hits.len() < max_hits;
                got.extend_from_slice(&found.hits);
                from = found.resume;
                if done || from >= hi {
                    break;
                }
            }
            proptest::prop_assert_eq!(got, model);
            std::fs::remove_file(path).unwrap();
        }
    }
}
