//! The content index file (`moddesk.pvf.workbench.searchindex`, INDEX_FORMAT 2) written natively.
//!
//! The build renders entries in storage order (one inflate per NKPI chunk, one decrypt per
//! classic block) and appends each entry's folded text to a spool file; the index wants them in
//! path order, so a second step copies the spooled texts into the index file in that order:
//!
//! ```text
//! header (HEADER_SIZE zero bytes: the caller writes it when it publishes) | corpus |
//! offsets (<i8, texts + 1) | text mask (u1, sorted paths) | sorting permutation (<i8, paths)
//! ```
//!
//! byte for byte what the reference writes (`ContentIndex.build_folded`). The corpus never sits
//! in memory whole (at 10^6 files it is ~560 MiB): texts are spooled as they are rendered and
//! read back a window at a time.

use std::fs::File;
use std::io::{self, BufWriter, Write};

use rayon::prelude::*;

use crate::blocks::{self, read_exact_at};

/// Zero bytes before the corpus (the caller's header: magic + JSON, written last).
pub const HEADER_SIZE: usize = 4096;
/// Texts copied into path order per window (bounds what the copy holds in memory).
const COPY_FILES: usize = 16384;
/// Texts read back from the spool per task of a window.
const COPY_TASK: usize = 512;

/// Where one entry's folded text lies in the spool; `len < 0`: the entry has no text (binary,
/// or not rendered).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    pub start: u64,
    pub len: i64,
}

impl Span {
    pub const NONE: Span = Span { start: 0, len: -1 };
}

/// The spool's file, the spans of the texts in path order, the text mask and the text offsets.
type InOrder = (File, Vec<Span>, Vec<u8>, Vec<i64>);

/// Texts appended in arrival order to a file, with the span of each entry (by directory index).
pub struct Spool {
    out: BufWriter<File>,
    file: File,
    size: u64,
    pub spans: Vec<Span>,
}

impl Spool {
    /// A spool over `file` (truncated) for an archive of `count` entries.
    pub fn new(file: File, count: usize) -> io::Result<Spool> {
        file.set_len(0)?;
        let reader = file.try_clone()?;
        Ok(Spool {
            out: BufWriter::with_capacity(8 << 20, file),
            file: reader,
            size: 0,
            spans: vec![Span::NONE; count],
        })
    }

    /// Append the text of entry `index` (None: it has none). An index past the archive is ignored
    /// (the caller checked them); a repeated one keeps its first text, as the reference's sort does.
    pub fn push(&mut self, index: u32, text: Option<&[u8]>) -> io::Result<()> {
        let Some(text) = text else { return Ok(()) };
        let Some(span) = self.spans.get_mut(index as usize) else {
            return Ok(());
        };
        if span.len >= 0 {
            return Ok(());
        }
        self.out.write_all(text)?;
        *span = Span {
            start: self.size,
            len: text.len() as i64,
        };
        self.size += text.len() as u64;
        Ok(())
    }

    /// The spans of `order`'s texts (path order, entries without text left out), the text mask
    /// and the offsets of the texts laid end to end; the spool's file to read them from.
    fn in_order(mut self, order: &[u32]) -> io::Result<InOrder> {
        self.out.flush()?;
        // one pass over the sorted entries, no path-order copy of every span beside the texts'
        // (at 10^6 files that copy was 16 MB at the build's peak)
        let mut mask = Vec::with_capacity(order.len());
        let mut texts = Vec::new();
        for &i in order {
            let span = self.spans.get(i as usize).copied().unwrap_or(Span::NONE);
            mask.push(u8::from(span.len >= 0));
            if span.len >= 0 {
                texts.push(span);
            }
        }
        drop(self.spans);
        let mut offsets = Vec::with_capacity(texts.len() + 1);
        offsets.push(0i64);
        for s in &texts {
            offsets.push(offsets.last().copied().unwrap_or(0) + s.len);
        }
        Ok((self.file, texts, mask, offsets))
    }

    /// Copy the texts of `order` (directory indexes of the sorted paths) into `out` after a zeroed
    /// header, then the offsets, text mask and permutation (format 2); returns (offsets, text mask).
    pub fn write_index(self, out: File, order: &[u32]) -> io::Result<(Vec<i64>, Vec<u8>)> {
        let (spool, texts, mask, offsets) = self.in_order(order)?;
        let mut writer = BufWriter::with_capacity(8 << 20, out);
        writer.write_all(&[0u8; HEADER_SIZE])?;
        for window in texts.chunks(COPY_FILES) {
            let parts: Vec<io::Result<Vec<u8>>> = window
                .par_chunks(COPY_TASK)
                .map(|task| read_spans(&spool, task))
                .collect();
            for part in parts {
                writer.write_all(&part?)?;
            }
        }
        write_i64s(&mut writer, &offsets)?;
        writer.write_all(&mask)?;
        write_permutation(&mut writer, order)?;
        writer.flush()?;
        Ok((offsets, mask))
    }

    /// Format 3 (`blocks`): the texts of `order` in path order as compressed blocks after a zeroed
    /// header, each block read back from the spool and compressed on a worker (`blocks::WINDOW`
    /// at a time), then the offsets, text mask, permutation, block ordinals, block ends and the
    /// number of blocks. `step()` runs after each window of blocks (it may stop the write).
    /// Returns (offsets, text mask).
    pub fn write_block_index(
        self,
        out: File,
        order: &[u32],
        step: impl FnMut() -> io::Result<()>,
    ) -> io::Result<(Vec<i64>, Vec<u8>)> {
        let (spool, texts, mask, offsets) = self.in_order(order)?;
        let ords = blocks::plan(&offsets);
        let mut writer = BufWriter::with_capacity(1 << 20, out);
        writer.write_all(&[0u8; HEADER_SIZE])?;
        let ends = blocks::write_blocks(
            &mut writer,
            &ords,
            |a, b| {
                let parts: Vec<io::Result<Vec<u8>>> = texts[a..b]
                    .par_chunks(COPY_TASK)
                    .map(|task| read_spans(&spool, task))
                    .collect();
                let mut plain = Vec::with_capacity((offsets[b] - offsets[a]) as usize);
                for part in parts {
                    plain.extend_from_slice(&part?);
                }
                Ok(plain)
            },
            step,
        )?;
        write_i64s(&mut writer, &offsets)?;
        writer.write_all(&mask)?;
        write_permutation(&mut writer, order)?;
        let as_i64 = |v: &[u64]| v.iter().map(|&x| x as i64).collect::<Vec<i64>>();
        write_i64s(&mut writer, &as_i64(&ords))?;
        write_i64s(&mut writer, &as_i64(&ends))?;
        write_i64s(&mut writer, &[(ords.len() - 1) as i64])?;
        writer.flush()?;
        Ok((offsets, mask))
    }
}

/// The spooled texts of `spans`, one after the other.
fn read_spans(spool: &File, spans: &[Span]) -> io::Result<Vec<u8>> {
    let total: i64 = spans.iter().map(|s| s.len).sum();
    let mut buffer = vec![0u8; usize::try_from(total).unwrap_or(0)];
    let mut at = 0usize;
    for s in spans {
        let len = s.len as usize;
        read_exact_at(spool, &mut buffer[at..at + len], s.start)?;
        at += len;
    }
    Ok(buffer)
}

/// CRC-32 (zlib's) of the keys `blob[ends[k]..ends[k + 1]]` joined by `\n`: the index header's
/// `pathsCrc` (`searchindex.paths_crc`) without making a string per key. None: bad ends.
pub fn joined_crc32(blob: &[u8], ends: &[u64]) -> Option<u32> {
    let mut hasher = crc32fast::Hasher::new();
    for (k, w) in ends.windows(2).enumerate() {
        if w[0] > w[1] || w[1] > blob.len() as u64 {
            return None;
        }
        if k > 0 {
            hasher.update(b"\n");
        }
        hasher.update(&blob[w[0] as usize..w[1] as usize]);
    }
    Some(hasher.finalize())
}

/// Little-endian `values` to `out` (a `BufWriter`: no byte copy of the whole array).
fn write_i64s(out: &mut impl Write, values: &[i64]) -> io::Result<()> {
    for v in values {
        out.write_all(&v.to_le_bytes())?;
    }
    Ok(())
}

/// The sorting permutation (`order` as <i8) to `out`, without an i64 copy of it.
fn write_permutation(out: &mut impl Write, order: &[u32]) -> io::Result<()> {
    for &i in order {
        out.write_all(&i64::from(i).to_le_bytes())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn temp(name: &str) -> (std::path::PathBuf, File) {
        let path = std::env::temp_dir().join(format!(
            "moddesk-index-test-{}-{}",
            std::process::id(),
            name
        ));
        let file = File::options()
            .create(true)
            .truncate(true)
            .read(true)
            .write(true)
            .open(&path)
            .unwrap();
        (path, file)
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
        /// Any texts pushed in any order (repeats, entries without text) come out as the model
        /// says: path order, the first text of an entry, offsets and mask to match.
        #[test]
        fn written_index_matches_a_model(
            texts in proptest::collection::vec(
                proptest::option::of(proptest::collection::vec(1u8..=255, 0..20)), 0..40),
            pushes in proptest::collection::vec(0usize..40, 0..80),
            seed in 0u64..1000,
        ) {
            let n = texts.len();
            let (spool_path, spool_file) = temp(&format!("p-spool-{seed}-{n}"));
            let (out_path, out_file) = temp(&format!("p-out-{seed}-{n}"));
            let mut spool = Spool::new(spool_file, n).unwrap();
            let mut first: Vec<Option<Vec<u8>>> = vec![None; n];
            for &i in pushes.iter().filter(|&&i| i < n) {
                let text = texts[i].as_ref().map(|t| [t.as_slice(), b"\0"].concat());
                spool.push(i as u32, text.as_deref()).unwrap();
                if first[i].is_none() {
                    first[i] = text;
                }
            }
            let mut order: Vec<u32> = (0..n as u32).collect();
            order.sort_by_key(|&i| (u64::from(i) * 7919 + seed) % 101);
            let (offsets, mask) = spool.write_index(out_file, &order).unwrap();
            let mut corpus = Vec::new();
            let mut want_offsets = vec![0i64];
            for &i in &order {
                if let Some(t) = &first[i as usize] {
                    corpus.extend_from_slice(t);
                    want_offsets.push(corpus.len() as i64);
                }
            }
            let want_mask: Vec<u8> = order.iter().map(|&i| u8::from(first[i as usize].is_some())).collect();
            proptest::prop_assert_eq!(&offsets, &want_offsets);
            proptest::prop_assert_eq!(&mask, &want_mask);
            let written = std::fs::read(&out_path).unwrap();
            proptest::prop_assert_eq!(&written[HEADER_SIZE..HEADER_SIZE + corpus.len()], corpus.as_slice());
            proptest::prop_assert_eq!(
                written.len(),
                HEADER_SIZE + corpus.len() + 8 * want_offsets.len() + n + 8 * n
            );
            // format 3 of the same pushes: the same arrays, the corpus as blocks that decode to it
            let (spool3_path, spool3_file) = temp(&format!("p-spool3-{seed}-{n}"));
            let (out3_path, out3_file) = temp(&format!("p-out3-{seed}-{n}"));
            let mut spool3 = Spool::new(spool3_file, n).unwrap();
            for &i in pushes.iter().filter(|&&i| i < n) {
                let text = texts[i].as_ref().map(|t| [t.as_slice(), b"\0"].concat());
                spool3.push(i as u32, text.as_deref()).unwrap();
            }
            let (offsets3, mask3) = spool3.write_block_index(out3_file, &order, || Ok(())).unwrap();
            proptest::prop_assert_eq!(&offsets3, &want_offsets);
            proptest::prop_assert_eq!(&mask3, &want_mask);
            let file3 = std::fs::read(&out3_path).unwrap();
            let i64_at = |at: usize| i64::from_le_bytes(file3[at..at + 8].try_into().unwrap());
            let blocks = i64_at(file3.len() - 8) as usize;
            let tables = file3.len() - 8 - 16 * (blocks + 1);
            let ords: Vec<u64> = (0..=blocks).map(|k| i64_at(tables + 8 * k) as u64).collect();
            let ends: Vec<u64> = (0..=blocks).map(|k| i64_at(tables + 8 * (blocks + 1 + k)) as u64).collect();
            proptest::prop_assert_eq!(&ords, &blocks::plan(&want_offsets));
            let arrays = HEADER_SIZE + *ends.last().unwrap() as usize;
            // offsets, mask and permutation as format 2 writes them
            proptest::prop_assert_eq!(&file3[arrays..tables], &written[HEADER_SIZE + corpus.len()..]);
            let reader = blocks::BlockReader::new(
                File::open(&out3_path).unwrap(), HEADER_SIZE as u64, want_offsets.clone(), ords, ends,
            ).unwrap();
            proptest::prop_assert_eq!(reader.read(0, corpus.len() as i64).unwrap(), corpus);
            std::fs::remove_file(spool_path).unwrap();
            std::fs::remove_file(out_path).unwrap();
            std::fs::remove_file(spool3_path).unwrap();
            std::fs::remove_file(out3_path).unwrap();
        }
    }

    #[test]
    fn joined_crc_is_zlibs_crc_of_the_keys_joined_by_newlines() {
        assert_eq!(joined_crc32(b"", &[0]), Some(0));
        assert_eq!(
            joined_crc32(b"abc", &[0, 1, 3]),
            Some(crc32fast::hash(b"a\nbc"))
        );
        assert_eq!(joined_crc32(b"abc", &[0, 4]), None);
    }

    #[test]
    fn texts_come_out_in_path_order_with_the_reference_layout() {
        let (spool_path, spool_file) = temp("spool");
        let (out_path, out_file) = temp("out");
        let mut spool = Spool::new(spool_file, 4).unwrap();
        spool.push(2, Some(b"cc\0")).unwrap();
        spool.push(0, Some(b"a\0")).unwrap();
        spool.push(1, None).unwrap();
        spool.push(0, Some(b"ignored\0")).unwrap(); // a repeat keeps the first text
        spool.push(3, Some(b"dddd\0")).unwrap();
        let (offsets, mask) = spool.write_index(out_file, &[3, 1, 0, 2]).unwrap();
        assert_eq!(offsets, vec![0, 5, 7, 10]);
        assert_eq!(mask, vec![1, 0, 1, 1]);
        let mut written = Vec::new();
        File::open(&out_path)
            .unwrap()
            .read_to_end(&mut written)
            .unwrap();
        let mut expected = vec![0u8; HEADER_SIZE];
        expected.extend_from_slice(b"dddd\0a\0cc\0");
        for v in [0i64, 5, 7, 10, 3, 1, 0, 2] {
            if expected.len() == HEADER_SIZE + 10 + 32 {
                expected.extend_from_slice(&[1, 0, 1, 1]);
            }
            expected.extend_from_slice(&v.to_le_bytes());
        }
        assert_eq!(written, expected);
        std::fs::remove_file(spool_path).unwrap();
        std::fs::remove_file(out_path).unwrap();
    }
}
