//! Bulk passes over many entries: read (decrypt / inflate) and render on every core, answering in
//! one buffer with offsets — the shape the Python side asks for (no object per entry).

use std::collections::HashMap;
use std::sync::Arc;

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
    blocks: Vec<Arc<Vec<u8>>>,
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

/// Inflated NKPI chunks kept from one bulk read to the next, for passes that come back to the
/// same chunks: a script's read-ahead walks files in path order, which in a 10^5-file archive
/// visits ~60 of its ~340 chunks per 512 files, nearly every chunk again a few batches later
/// (without a cache each chunk was inflated ~20 times). The least recently used chunks are
/// dropped past `budget` bytes.
pub struct ChunkCache {
    budget: usize,
    used: usize,
    tick: u64,
    chunks: HashMap<usize, (u64, Arc<Vec<u8>>)>,
}

impl ChunkCache {
    pub fn new(budget: usize) -> ChunkCache {
        ChunkCache {
            budget,
            used: 0,
            tick: 0,
            chunks: HashMap::new(),
        }
    }

    /// Keep at most `budget` bytes from now on (dropping the oldest chunks at the next `put`).
    pub fn set_budget(&mut self, budget: usize) {
        self.budget = budget;
    }

    /// How many inflated bytes are held.
    pub fn held(&self) -> usize {
        self.used
    }

    fn get(&mut self, chunk: usize) -> Option<Arc<Vec<u8>>> {
        self.tick += 1;
        let tick = self.tick;
        self.chunks.get_mut(&chunk).map(|entry| {
            entry.0 = tick;
            Arc::clone(&entry.1)
        })
    }

    fn put(&mut self, chunk: usize, block: Arc<Vec<u8>>) {
        self.tick += 1;
        self.used += block.len();
        if let Some((_, old)) = self.chunks.insert(chunk, (self.tick, block)) {
            self.used -= old.len();
        }
        while self.used > self.budget && self.chunks.len() > 1 {
            let Some(oldest) = self.chunks.iter().min_by_key(|(_, v)| v.0).map(|(k, _)| *k) else {
                break;
            };
            if let Some((_, gone)) = self.chunks.remove(&oldest) {
                self.used -= gone.len();
            }
        }
    }
}

/// Runs of consecutive `indexes` sharing an NKPI chunk (one inflate each); classic: one entry each.
fn runs_of(container: &Container, indexes: &[u32]) -> Vec<(usize, usize)> {
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
    runs
}

impl Batch {
    /// Read `indexes` of `container` from the archive bytes `data`.
    pub fn read(container: &Container, data: &[u8], indexes: &[u32]) -> Batch {
        Batch::read_with(container, data, indexes, None)
    }

    /// `read`, taking NKPI chunks from `cache` when it holds them and keeping those it inflates.
    pub fn read_cached(
        container: &Container,
        data: &[u8],
        indexes: &[u32],
        cache: &mut ChunkCache,
    ) -> Batch {
        Batch::read_with(container, data, indexes, Some(cache))
    }

    fn read_with(
        container: &Container,
        data: &[u8],
        indexes: &[u32],
        mut cache: Option<&mut ChunkCache>,
    ) -> Batch {
        let runs = runs_of(container, indexes);
        let chunk_of = |a: usize| match container {
            Container::Nkpi(d) => Some(d.chunk(indexes[a] as usize) as usize),
            Container::Classic(_) => None,
        };
        let cached: Vec<Option<Arc<Vec<u8>>>> = runs
            .iter()
            .map(|&(a, _)| match (cache.as_deref_mut(), chunk_of(a)) {
                (Some(cache), Some(chunk)) => cache.get(chunk),
                _ => None,
            })
            .collect();
        let read: Vec<Result<Arc<Vec<u8>>, PvfError>> = runs
            .par_iter()
            .zip(cached.into_par_iter())
            .map(|(&(a, _), hit)| match (hit, container) {
                (Some(block), _) => Ok(block),
                (None, Container::Classic(d)) => {
                    classic::read_classic_block(data, d, indexes[a] as usize).map(Arc::new)
                }
                (None, Container::Nkpi(d)) => {
                    nkpi::read_chunk(data, d, d.chunk(indexes[a] as usize) as usize).map(Arc::new)
                }
            })
            .collect();
        if let Some(cache) = cache {
            for (&(a, _), block) in runs.iter().zip(&read) {
                if let (Some(chunk), Ok(block)) = (chunk_of(a), block) {
                    cache.put(chunk, Arc::clone(block));
                }
            }
        }
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
