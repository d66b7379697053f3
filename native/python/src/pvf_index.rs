//! `moddesk_native.pvf.build_index`: the content index file of an open archive in one call
//! (`moddesk.pvf.workbench.searchindex.ContentIndex.build_native` wraps it; the layout is the
//! reference's, `moddesk_pvf::index`). Scripts are read, rendered and folded natively on every
//! core with the GIL released; Python is called back only for what only it can do: the strings
//! its codecs decode (`resolver`, as in `render_many`), the few entries only the reference renders
//! (`raw_texts`), and progress (`progress`, which may raise to cancel the build).

use std::fs::File;
use std::path::PathBuf;

use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};
use rayon::prelude::*;

use moddesk_pvf::batch::{Batch, Outcome, RenderedPart};
use moddesk_pvf::index::Spool;
use moddesk_pvf::render::RenderOptions;

use crate::pvf::{
    error_tuple, lock, resolve_by, u32_bytes, u32_list, u64_bytes, u64_list, with_bytes,
    NativeArchive, RenderState,
};

/// Runs (batches) read and rendered side by side per step (~16k entries: a few MiB of text).
const RUNS_PER_STEP: usize = 8;

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
/// of each sorted path). `raw_texts(indexes, blob, ends)` answers, for the entries only the
/// reference renders, the list of their folded texts + NUL (None: no text form). Answers
/// (offsets <i8 bytes, text mask bytes, None), or (None, None, the first read error as
/// (position, code, message, offset)) — the reference's build fails on that error too.
#[pyfunction]
#[pyo3(signature = (archive, data, runs, run_ends, order, spool_path, out_path, resolver, raw_texts, progress))]
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
        for group in runs.chunks(RUNS_PER_STEP) {
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
        .detach(|| spool.write_index(out, &order))
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

pub fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(build_index, module)?)?;
    module.add_function(wrap_pyfunction!(joined_crc32, module)?)?;
    Ok(())
}
