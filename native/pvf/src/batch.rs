//! Bulk passes over many entries: read (decrypt / inflate) and render on every core, answering in
//! one buffer with offsets — the shape the Python side asks for (no object per entry).

use rayon::prelude::*;

use crate::container::Container;
use crate::error::PvfError;
use crate::render::{is_list_path, string_refs, units, Links, Numbering, RenderOptions, Renderer};
use crate::strings::Strings;

/// What became of one entry of a bulk pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Outcome {
    /// A script: its text is in the buffer.
    Rendered = 0,
    /// Not a script: its raw bytes are in the buffer (the caller renders texts, lists binaries).
    Raw = 1,
}

/// Entries read for a pass: the bytes of each, whether it is a script, and its units when it is.
pub struct Batch {
    pub indexes: Vec<u32>,
    datas: Vec<Vec<u8>>,
    scripts: Vec<Option<Vec<(u8, u32)>>>,
    /// The first entry that could not be read (its position in `indexes`) and why; entries from
    /// there on are left out.
    pub error: Option<(usize, PvfError)>,
}

impl Batch {
    /// Read `indexes` of `container` from the archive bytes `data` and decode the scripts' units.
    pub fn read(container: &Container, data: &[u8], indexes: &[u32]) -> Batch {
        let results = container.read_many(data, indexes);
        let mut datas = Vec::with_capacity(results.len());
        let mut error = None;
        for (k, r) in results.into_iter().enumerate() {
            match r {
                Ok(bytes) => datas.push(bytes),
                Err(e) => {
                    error = Some((k, e));
                    break;
                }
            }
        }
        let classic = container.is_classic();
        let scripts = datas
            .par_iter()
            .zip(&indexes[..datas.len()])
            .map(|(bytes, &i)| match container.nkpi_script(i as usize) {
                Some(false) => None,
                _ => units(bytes, classic),
            })
            .collect();
        Batch {
            indexes: indexes.to_vec(),
            datas,
            scripts,
            error,
        }
    }

    /// String references the caller must resolve before `render` (distinct, in no order).
    pub fn refs_for_caller(&self, strings: &Strings, numbering: Numbering, fold: bool) -> Vec<u32> {
        let mut refs = Vec::new();
        for u in self.scripts.iter().flatten() {
            string_refs(u, numbering, &mut refs);
        }
        refs.sort_unstable();
        refs.dedup();
        refs.retain(|&r| strings.needs_caller(r, fold));
        refs
    }

    /// Render every script (texts) and pass the others' bytes through, in order, into one buffer.
    /// `path_of(index)` gives an entry's path bytes (only its `.lst` suffix matters).
    pub fn render<'p>(
        &self,
        strings: &Strings,
        numbering: Numbering,
        links: Option<&Links>,
        options: &RenderOptions,
        path_of: &(dyn Fn(u32) -> &'p [u8] + Sync),
    ) -> (Vec<u8>, Vec<u64>, Vec<u8>) {
        let renderer = Renderer {
            numbering,
            strings,
            links,
            options,
        };
        let parts: Vec<(Vec<u8>, u8)> = self
            .datas
            .par_iter()
            .zip(&self.scripts)
            .zip(&self.indexes[..self.datas.len()])
            .map(|((bytes, script), &i)| match script {
                Some(u) => {
                    let mut out = Vec::with_capacity(bytes.len() * 2);
                    renderer.render(u, is_list_path(path_of(i)), &mut out);
                    (out, Outcome::Rendered as u8)
                }
                None => (bytes.clone(), Outcome::Raw as u8),
            })
            .collect();
        let total = parts.iter().map(|(p, _)| p.len()).sum();
        let mut blob = Vec::with_capacity(total);
        let mut ends = Vec::with_capacity(parts.len() + 1);
        let mut kinds = Vec::with_capacity(parts.len());
        ends.push(0);
        for (p, k) in parts {
            blob.extend_from_slice(&p);
            ends.push(blob.len() as u64);
            kinds.push(k);
        }
        (blob, ends, kinds)
    }

    /// The bytes of every entry read, in order, in one buffer.
    pub fn bytes(&self) -> (Vec<u8>, Vec<u64>) {
        let mut blob = Vec::with_capacity(self.datas.iter().map(Vec::len).sum());
        let mut ends = Vec::with_capacity(self.datas.len() + 1);
        ends.push(0);
        for d in &self.datas {
            blob.extend_from_slice(d);
            ends.push(blob.len() as u64);
        }
        (blob, ends)
    }
}
