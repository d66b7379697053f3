//! Bulk passes over many entries: read (decrypt / inflate) and render on every core, answering in
//! one buffer with offsets — the shape the Python side asks for (no object per entry).

use rayon::prelude::*;

use crate::container::Container;
use crate::error::PvfError;
use crate::render::{
    is_list_path, string_refs, units_into, Links, Numbering, PieceCache, RenderOptions, Renderer,
};
use crate::strings::Strings;
use crate::texts::{Text, TextDecoders};
use crate::{classic, nkpi};

/// What became of one entry of a bulk pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Outcome {
    /// A script: its text is in the buffer.
    Rendered = 0,
    /// Not a script: its raw bytes are in the buffer (the caller renders texts, lists binaries).
    Raw = 1,
    /// No text form (a binary entry; `render` raises NOT_TEXT): nothing is in the buffer.
    NoText = 2,
}

/// Entries rendered per task of a pass (one output buffer and one scratch buffer each).
const FILES_PER_TASK: usize = 256;

/// Entries read for a pass: the decoded blocks (an NKPI chunk holds many entries) and where in
/// them each entry's bytes are.
pub struct Batch {
    pub indexes: Vec<u32>,
    blocks: Vec<Vec<u8>>,
    /// (block, start, end) of every entry read, in `indexes` order.
    spans: Vec<(usize, usize, usize)>,
    classic: bool,
    scripts: Vec<bool>,
    /// NKPI data type of each entry read (0 for classic).
    types: Vec<i32>,
    /// The first entry that could not be read (its position in `indexes`) and why; entries from
    /// there on are left out.
    pub error: Option<(usize, PvfError)>,
}

/// One task's rendered entries: their texts back to back, each one's length, each one's outcome.
pub type RenderedPart = (Vec<u8>, Vec<u64>, Vec<u8>);

/// The ends (with a leading 0) and outcomes of rendered parts laid end to end.
pub fn part_ends(parts: &[RenderedPart]) -> (Vec<u64>, Vec<u8>) {
    let count = parts.iter().map(|p| p.1.len()).sum::<usize>();
    let mut ends = Vec::with_capacity(count + 1);
    let mut kinds = Vec::with_capacity(count);
    ends.push(0);
    for (_, lens, k) in parts {
        for len in lens {
            ends.push(ends.last().copied().unwrap_or(0) + len);
        }
        kinds.extend_from_slice(k);
    }
    (ends, kinds)
}

impl Batch {
    /// Read `indexes` of `container` from the archive bytes `data`.
    pub fn read(container: &Container, data: &[u8], indexes: &[u32]) -> Batch {
        // runs of consecutive indexes sharing an NKPI chunk: one inflate per run; classic: one block each
        let mut runs: Vec<(usize, usize)> = Vec::new();
        let mut start = 0;
        for k in 1..=indexes.len() {
            let same = match container {
                Container::Nkpi(d) if k < indexes.len() => {
                    d.chunk(indexes[k] as usize) == d.chunk(indexes[start] as usize)
                }
                _ => false,
            };
            if !same {
                runs.push((start, k));
                start = k;
            }
        }
        let read: Vec<Result<Vec<u8>, PvfError>> = runs
            .par_iter()
            .map(|&(a, _)| match container {
                Container::Classic(d) => classic::read_classic_block(data, d, indexes[a] as usize),
                Container::Nkpi(d) => {
                    nkpi::read_chunk(data, d, d.chunk(indexes[a] as usize) as usize)
                }
            })
            .collect();
        let mut blocks = Vec::with_capacity(read.len());
        let mut spans = Vec::with_capacity(indexes.len());
        let mut error = None;
        for (&(a, b), block) in runs.iter().zip(read) {
            let block = match block {
                Ok(block) => block,
                Err(e) => {
                    error = Some((a, e));
                    break;
                }
            };
            for &i in &indexes[a..b] {
                let i = i as usize;
                let span = match container {
                    Container::Classic(_) => (blocks.len(), 0, block.len()),
                    Container::Nkpi(d) => {
                        let off = d.offset(i) as usize;
                        (blocks.len(), off, off + d.size(i) as usize)
                    }
                };
                spans.push(span);
            }
            blocks.push(block);
        }
        let classic = container.is_classic();
        let mut batch = Batch {
            indexes: indexes.to_vec(),
            blocks,
            spans,
            classic,
            scripts: Vec::new(),
            types: Vec::new(),
            error,
        };
        batch.types = (0..batch.spans.len())
            .map(|k| match container {
                Container::Nkpi(d) => d.data_type(indexes[k] as usize),
                Container::Classic(_) => 0,
            })
            .collect();
        batch.scripts = (0..batch.spans.len())
            .map(|k| match container.nkpi_script(indexes[k] as usize) {
                Some(flag) => flag,
                None => batch.data(k).starts_with(&[0xB0, 0xD0]),
            })
            .collect();
        batch
    }

    /// How many entries were read (all of them unless `error`).
    pub fn len(&self) -> usize {
        self.spans.len()
    }

    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    /// The bytes of entry `k` (in `indexes` order).
    pub fn data(&self, k: usize) -> &[u8] {
        let (block, a, b) = self.spans[k];
        &self.blocks[block][a..b]
    }

    /// String references the caller must resolve before `render` (distinct, in no order).
    pub fn refs_for_caller(&self, strings: &Strings, numbering: Numbering, fold: bool) -> Vec<u32> {
        let mut refs = Vec::new();
        let mut units = Vec::new();
        for k in 0..self.len() {
            if self.scripts[k] && units_into(self.data(k), self.classic, &mut units) {
                string_refs(&units, numbering, &mut refs);
            }
        }
        refs.sort_unstable();
        refs.dedup();
        refs.retain(|&r| strings.needs_caller(r, fold));
        refs
    }

    /// Render every script (texts) and pass the others' bytes through, in order, into one buffer:
    /// (buffer, ends with a leading 0, outcome per entry). `path_of(index)` gives an entry's path
    /// bytes (only its `.lst` suffix matters).
    pub fn render<'p>(
        &self,
        strings: &Strings,
        numbering: Numbering,
        links: Option<&Links>,
        options: &RenderOptions,
        path_of: &(dyn Fn(u32) -> &'p [u8] + Sync),
    ) -> (Vec<u8>, Vec<u64>, Vec<u8>) {
        self.render_with_texts(strings, numbering, links, options, path_of, None)
    }

    /// `render`, with the other entries' texts made natively where `texts` settles them: a text
    /// entry's text (folded, terminated) is `Rendered`, a binary entry `NoText`, the rest `Raw`.
    pub fn render_with_texts<'p>(
        &self,
        strings: &Strings,
        numbering: Numbering,
        links: Option<&Links>,
        options: &RenderOptions,
        path_of: &(dyn Fn(u32) -> &'p [u8] + Sync),
        texts: Option<&TextDecoders>,
    ) -> (Vec<u8>, Vec<u64>, Vec<u8>) {
        let parts = self.render_parts(strings, numbering, links, options, path_of, texts);
        let (ends, kinds) = part_ends(&parts);
        let mut blob = Vec::with_capacity(ends.last().copied().unwrap_or(0) as usize);
        for part in &parts {
            blob.extend_from_slice(&part.0);
        }
        (blob, ends, kinds)
    }

    /// `render_with_texts` as the pieces each task rendered (buffer, lengths, outcomes), for a
    /// caller that copies them straight into its own buffer (`part_ends` gives the offsets).
    pub fn render_parts<'p>(
        &self,
        strings: &Strings,
        numbering: Numbering,
        links: Option<&Links>,
        options: &RenderOptions,
        path_of: &(dyn Fn(u32) -> &'p [u8] + Sync),
        texts: Option<&TextDecoders>,
    ) -> Vec<RenderedPart> {
        let renderer = Renderer {
            numbering,
            strings,
            links,
            options,
        };
        let tasks: Vec<usize> = (0..self.len()).step_by(FILES_PER_TASK).collect();
        tasks
            .par_iter()
            .map(|&first| {
                let last = (first + FILES_PER_TASK).min(self.len());
                let mut out = Vec::new();
                let mut lens = Vec::with_capacity(last - first);
                let mut kinds = Vec::with_capacity(last - first);
                let mut units = Vec::new();
                let mut scratch = Vec::new();
                let mut cache = PieceCache::default();
                for k in first..last {
                    let before = out.len();
                    let bytes = self.data(k);
                    if self.scripts[k] && units_into(bytes, self.classic, &mut units) {
                        let list = is_list_path(path_of(self.indexes[k]));
                        renderer.render_cached(&units, list, &mut out, &mut scratch, &mut cache);
                        kinds.push(Outcome::Rendered as u8);
                    } else {
                        let text = match texts {
                            None => Text::Caller,
                            Some(t) if self.classic => {
                                t.classic(path_of(self.indexes[k]), bytes, options.fold)
                            }
                            Some(t) => t.nkpi(self.types[k], bytes, options.fold),
                        };
                        match text {
                            Text::Some(text) => {
                                out.extend_from_slice(&text);
                                out.extend_from_slice(&options.terminator);
                                kinds.push(Outcome::Rendered as u8);
                            }
                            Text::None => kinds.push(Outcome::NoText as u8),
                            Text::Caller => {
                                out.extend_from_slice(bytes);
                                kinds.push(Outcome::Raw as u8);
                            }
                        }
                    }
                    lens.push((out.len() - before) as u64);
                }
                (out, lens, kinds)
            })
            .collect()
    }

    /// The bytes of every entry read, in order, in one buffer.
    pub fn bytes(&self) -> (Vec<u8>, Vec<u64>) {
        let mut blob = Vec::with_capacity(self.spans.iter().map(|(_, a, b)| b - a).sum());
        let mut ends = Vec::with_capacity(self.len() + 1);
        ends.push(0);
        for k in 0..self.len() {
            blob.extend_from_slice(self.data(k));
            ends.push(blob.len() as u64);
        }
        (blob, ends)
    }
}
