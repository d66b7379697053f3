//! `moddesk_native.pvf.build_index`: the content index file of an open archive in one call
//! (`moddesk.pvf.workbench.searchindex.ContentIndex.build_native` wraps it; the layout is the
//! reference's, `moddesk_pvf::index`). Scripts are read, rendered and folded natively on every
//! core with the GIL released; Python is called back only for what only it can do: the strings
//! its codecs decode (`resolver`, as in `render_many`), the few entries only the reference renders
//! (`raw_texts`), and progress (`progress`, which may raise to cancel the build).

use std::fs::File;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};
use rayon::prelude::*;

use moddesk_pvf::batch::{Batch, Outcome, RenderedPart};
use moddesk_pvf::blocks::BlockReader;
use moddesk_pvf::index::Spool;
use moddesk_pvf::render::RenderOptions;

use crate::pvf::{
    error_tuple, lock, resolve_by, u32_bytes, u32_list, u64_bytes, u64_list, with_bytes,
    NativeArchive, RenderState,
};

/// Runs (batches) read and rendered side by side per step (~16k entries: a few MiB of text).
const RUNS_PER_STEP: usize = 8;
/// Stored bytes of the runs of one step, at most (unless one run is bigger): an archive's few huge
/// entries (10^6 generated files: string tables of 14–22 MB, lists of 3–6 MB, each a run of its
/// own) are rendered one step each instead of side by side — rendering them together added
/// 300–420 MiB of peak RSS to the build.
const STEP_BYTES: i64 = 8 << 20;

/// `runs` cut into steps of at most `RUNS_PER_STEP` runs and `STEP_BYTES` stored bytes (a bigger
/// run alone), in order; `size(index)` gives an entry's stored size.
fn steps<'a>(runs: &[&'a [u32]], size: impl Fn(u32) -> i64) -> Vec<Vec<&'a [u32]>> {
    let mut out: Vec<Vec<&[u32]>> = Vec::new();
    let mut bytes = 0i64;
    for &run in runs {
        let run_bytes: i64 = run.iter().map(|&i| size(i).max(0)).sum();
        match out.last_mut() {
            Some(step) if step.len() < RUNS_PER_STEP && bytes + run_bytes <= STEP_BYTES => {
                step.push(run);
                bytes += run_bytes;
            }
            _ => {
                out.push(vec![run]);
                bytes = run_bytes;
            }
        }
    }
    out
}

fn os_error(e: std::io::Error) -> PyErr {
    PyOSError::new_err(e.to_string())
}

fn i64_le(values: &[i64]) -> Vec<u8> {
    let mut out = Vec::with_capacity(values.len() * 8);
    for v in values {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out
}

/// Render and fold every entry of `runs` (uint32 directory indexes in storage order, cut into
/// runs by the uint64 `run_ends`), each text followed by a NUL, spool them to `spool_path`, and
/// write the index file `out_path` with the texts in the order of `order` (uint32 directory index
/// of each sorted path; `compressed`: format 3, the corpus as compressed blocks, `moddesk_pvf::blocks`,
/// else format 2). `raw_texts(indexes, blob, ends)` answers, for the entries only the
/// reference renders, the list of their folded texts + NUL (None: no text form). Answers
/// (offsets <i8 bytes, text mask bytes, None), or (None, None, the first read error as
/// (position, code, message, offset)) — the reference's build fails on that error too.
#[pyfunction]
#[pyo3(signature = (archive, data, runs, run_ends, order, spool_path, out_path, resolver, raw_texts, progress, compressed=false))]
#[allow(clippy::too_many_arguments)]
fn build_index<'py>(
    py: Python<'py>,
    archive: &Bound<'py, NativeArchive>,
    data: &Bound<'py, PyAny>,
    runs: &[u8],
    run_ends: &[u8],
    order: &[u8],
    spool_path: PathBuf,
    out_path: PathBuf,
    resolver: &Bound<'py, PyAny>,
    raw_texts: &Bound<'py, PyAny>,
    progress: &Bound<'py, PyAny>,
    compressed: bool,
) -> PyResult<Bound<'py, PyTuple>> {
    let native = archive.get();
    let indexes = native.checked(u32_list(runs)?)?;
    let order = native.checked(u32_list(order)?)?;
    let ends = u64_list(run_ends)?;
    if ends.first() != Some(&0)
        || ends.last() != Some(&(indexes.len() as u64))
        || ends.windows(2).any(|w| w[0] > w[1])
    {
        return Err(PyValueError::new_err(
            "run ends: from 0 to the number of indexes, ascending",
        ));
    }
    let spool_file = File::options()
        .read(true)
        .write(true)
        .open(&spool_path)
        .map_err(os_error)?;
    let mut spool = Spool::new(spool_file, native.count()).map_err(os_error)?;
    let options = RenderOptions {
        fold: true,
        terminator: vec![0],
    };
    let runs: Vec<&[u32]> = ends
        .windows(2)
        .map(|w| &indexes[w[0] as usize..w[1] as usize])
        .collect();
    let failed = with_bytes(data, |bytes| -> PyResult<Option<Bound<'py, PyTuple>>> {
        let mut done = 0usize;
        for group in steps(&runs, |i| native.container.size(i as usize)) {
            // a step's runs are read (inflated, decrypted) and rendered side by side on every core
            let batches: Vec<Batch> = py.detach(|| {
                group
                    .par_iter()
                    .map(|run| Batch::read(&native.container, bytes, run))
                    .collect()
            });
            let rendered = render(py, native, &batches, &options, resolver)?;
            for (batch, parts) in batches.iter().zip(&rendered) {
                let raws = raw_answers(py, batch, parts, raw_texts)?;
                py.detach(|| spool_batch(&mut spool, batch, parts, &raws))
                    .map_err(os_error)?;
                done += batch.len();
                progress.call1((done,))?;
                if let Some((k, e)) = &batch.error {
                    return Ok(Some(error_tuple(py, done - batch.len() + k, e)?));
                }
            }
        }
        Ok(None)
    })?;
    if let Some(error) = failed {
        return PyTuple::new(
            py,
            [
                py.None().into_bound(py),
                py.None().into_bound(py),
                error.into_any(),
            ],
        );
    }
    let out = File::options()
        .write(true)
        .truncate(true)
        .open(&out_path)
        .map_err(os_error)?;
    let (offsets, mask) = py
        .detach(|| {
            if compressed {
                spool.write_block_index(out, &order, || Ok(()))
            } else {
                spool.write_index(out, &order)
            }
        })
        .map_err(os_error)?;
    PyTuple::new(
        py,
        [
            PyBytes::new(py, &i64_le(&offsets)).into_any(),
            PyBytes::new(py, &mask).into_any(),
            py.None().into_bound(py),
        ],
    )
}

/// Spool the texts of one rendered batch (`raws`: the answers for its entries only the reference
/// renders, in order).
fn spool_batch(
    spool: &mut Spool,
    batch: &Batch,
    parts: &[RenderedPart],
    raws: &[Option<Vec<u8>>],
) -> std::io::Result<()> {
    let mut raws = raws.iter();
    let mut k = 0;
    for (texts, lens, outcomes) in parts {
        let mut at = 0usize;
        for (&len, &outcome) in lens.iter().zip(outcomes) {
            let len = len as usize;
            let text = match outcome {
                o if o == Outcome::Raw as u8 => raws.next().and_then(|t| t.as_deref()),
                o if o == Outcome::NoText as u8 => None,
                _ => Some(&texts[at..at + len]),
            };
            spool.push(batch.indexes[k], text)?;
            at += len;
            k += 1;
        }
    }
    Ok(())
}

/// `render_many`'s pass over a step's batches: scripts and text entries rendered and folded (the
/// strings only Python can decode asked for, and the batches rendered again once they are known).
fn render(
    py: Python<'_>,
    native: &NativeArchive,
    batches: &[Batch],
    options: &RenderOptions,
    resolver: &Bound<'_, PyAny>,
) -> PyResult<Vec<Vec<RenderedPart>>> {
    let numbering = native.numbering();
    let path_of = |i: u32| native.path(i);
    let mut state = lock(py, &native.state);
    let mut attempts = 0;
    loop {
        let current: &RenderState = &state;
        let Some(strings) = current.strings.as_ref() else {
            return Err(PyValueError::new_err(
                "set_classic_strings / set_nkpi_strings first",
            ));
        };
        let links = current.links.as_ref();
        let texts = current.texts.as_ref();
        let out = py.detach(|| {
            batches
                .par_iter()
                .map(|b| b.render_parts(strings, numbering, links, options, &path_of, texts))
                .collect()
        });
        let asked = strings.take_asked();
        attempts += 1;
        if asked.is_empty() || attempts > 2 {
            return Ok(out);
        }
        if let Some(strings) = state.strings.as_mut() {
            resolve_by(py, resolver, strings, &asked)?;
        }
    }
}

/// The folded texts of the batch's entries only the reference renders (animations, …), from `raw_texts`.
fn raw_answers(
    py: Python<'_>,
    batch: &Batch,
    parts: &[RenderedPart],
    raw_texts: &Bound<'_, PyAny>,
) -> PyResult<Vec<Option<Vec<u8>>>> {
    let rows: Vec<usize> = parts
        .iter()
        .flat_map(|p| p.2.iter())
        .enumerate()
        .filter(|(_, &kind)| kind == Outcome::Raw as u8)
        .map(|(k, _)| k)
        .collect();
    if rows.is_empty() {
        return Ok(Vec::new());
    }
    let mut blob = Vec::new();
    let mut ends = vec![0u64];
    let mut indexes = Vec::with_capacity(rows.len());
    for &k in &rows {
        blob.extend_from_slice(batch.data(k));
        ends.push(blob.len() as u64);
        indexes.push(batch.indexes[k]);
    }
    let answer = raw_texts.call1((
        u32_bytes(py, &indexes),
        PyBytes::new(py, &blob),
        u64_bytes(py, &ends),
    ))?;
    let texts: Vec<Option<Vec<u8>>> = answer.extract()?;
    if texts.len() != rows.len() {
        return Err(PyValueError::new_err(
            "raw_texts: one answer per entry handed over",
        ));
    }
    Ok(texts)
}

/// `searchindex.paths_crc` of keys given as one buffer + uint64 ends (`KeyTable.keys`).
#[pyfunction]
fn joined_crc32(py: Python<'_>, blob: &[u8], ends: &[u8]) -> PyResult<u32> {
    let ends = u64_list(ends)?;
    py.detach(|| moddesk_pvf::index::joined_crc32(blob, &ends))
        .ok_or_else(|| PyValueError::new_err("offsets out of order or past the buffer"))
}

fn i64_list(raw: &[u8]) -> PyResult<Vec<i64>> {
    Ok(u64_list(raw)?.into_iter().map(|v| v as i64).collect())
}

fn deadline_after(budget: Option<f64>) -> Option<Instant> {
    budget.map(|s| Instant::now() + Duration::from_secs_f64(s.clamp(0.0, 1e9)))
}

/// A format-3 index file's corpus read natively (`moddesk_pvf::blocks::BlockReader`): blocks
/// decoded with the GIL released, literal search by memmem, a deadline checked per step of blocks.
#[pyclass(frozen, module = "moddesk_native.pvf")]
struct IndexBlocks {
    reader: BlockReader,
}

#[pymethods]
impl IndexBlocks {
    /// The corpus of the index file at `path`, blocks from byte `start`: `offsets` (<i8, texts +
    /// 1), block `ords` and compressed block `ends` (<i8, blocks + 1 each), as the file stores them.
    /// ValueError when they do not fit together.
    #[new]
    fn new(path: PathBuf, start: u64, offsets: &[u8], ords: &[u8], ends: &[u8]) -> PyResult<Self> {
        let file = File::open(&path).map_err(os_error)?;
        let size = file.metadata().map_err(os_error)?.len();
        let ends = u64_list(ends)?;
        if ends.last().is_some_and(|&e| start.saturating_add(e) > size) {
            return Err(PyValueError::new_err(format!(
                "index blocks run past the end of {}",
                path.display()
            )));
        }
        let reader = BlockReader::new(file, start, i64_list(offsets)?, u64_list(ords)?, ends)
            .map_err(PyValueError::new_err)?;
        Ok(IndexBlocks { reader })
    }

    /// How many blocks the corpus is stored in.
    #[getter]
    fn blocks(&self) -> usize {
        self.reader.blocks()
    }

    /// The block holding `ordinal`.
    fn block_of(&self, ordinal: u64) -> PyResult<usize> {
        if ordinal >= self.reader.texts() as u64 {
            return Err(PyValueError::new_err("ordinal past the last text"));
        }
        Ok(self.reader.block_of(ordinal))
    }

    /// First ordinal of block `k` (the number of texts for `k == blocks`).
    fn block_start(&self, k: usize) -> PyResult<u64> {
        if k > self.reader.blocks() {
            return Err(PyValueError::new_err("block past the last"));
        }
        Ok(self.reader.block_start(k))
    }

    /// Corpus bytes `begin..end` (clamped to the corpus). OSError when a block is damaged.
    fn read<'py>(&self, py: Python<'py>, begin: i64, end: i64) -> PyResult<Bound<'py, PyBytes>> {
        let bytes = py
            .detach(|| self.reader.read(begin, end))
            .map_err(os_error)?;
        Ok(PyBytes::new(py, &bytes))
    }

    /// Blocks `first..last` decoded side by side, one after the other.
    fn block_range<'py>(
        &self,
        py: Python<'py>,
        first: usize,
        last: usize,
    ) -> PyResult<Bound<'py, PyBytes>> {
        if first > last || last > self.reader.blocks() {
            return Err(PyValueError::new_err("block range out of the index"));
        }
        let bytes = py
            .detach(|| self.reader.block_range(first, last))
            .map_err(os_error)?;
        Ok(PyBytes::new(py, &bytes))
    }

    /// Ordinals in `lo..hi` whose text contains `needle` (at most `max_hits`), as (hits <u8 bytes,
    /// resume ordinal, timed out) — `moddesk_pvf::blocks::BlockReader::containing`; `budget`:
    /// seconds it may take (checked per step of blocks, after the first).
    #[pyo3(signature = (needle, lo, hi, max_hits, budget=None))]
    fn containing<'py>(
        &self,
        py: Python<'py>,
        needle: &[u8],
        lo: u64,
        hi: u64,
        max_hits: usize,
        budget: Option<f64>,
    ) -> PyResult<(Bound<'py, PyBytes>, u64, bool)> {
        let deadline = deadline_after(budget);
        let found = py
            .detach(|| self.reader.containing(needle, lo, hi, max_hits, deadline))
            .map_err(os_error)?;
        Ok((u64_bytes(py, &found.hits), found.resume, found.timed_out))
    }
}

pub fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<IndexBlocks>()?;
    module.add_function(wrap_pyfunction!(build_index, module)?)?;
    module.add_function(wrap_pyfunction!(joined_crc32, module)?)?;
    Ok(())
}
