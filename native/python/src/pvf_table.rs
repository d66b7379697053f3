//! `moddesk_native.pvf.KeyTable`: the workspace's table of lookup keys over an open native
//! archive (`moddesk.pvf.workbench.pathtable.NativeBasePaths` wraps it). It holds no Python
//! object per entry: keys live in the archive's path buffer (or, for the few whose key differs
//! from the path, in the table), and answers are one buffer plus offsets, or a few plain values.

use std::collections::HashMap;
use std::sync::Arc;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};

use moddesk_pvf::codec::{CaseFold, Codec};
use moddesk_pvf::table::{keys_buffer, keys_crc32, KeyTable as Table};

use crate::pvf::{u32_bytes, u32_list, u64_bytes, u64_list, NativeArchive};

#[pyclass(module = "moddesk_native.pvf", name = "KeyTable", frozen)]
pub struct KeyTable {
    archive: Py<NativeArchive>,
    table: Table,
}

impl KeyTable {
    fn archive(&self) -> &NativeArchive {
        self.archive.get()
    }

    fn range(&self, lo: usize, hi: usize, sorted: bool) -> &[u32] {
        let order = if sorted {
            self.table.sorted()
        } else {
            self.table.firsts()
        };
        let hi = hi.min(order.len());
        &order[lo.min(hi)..hi]
    }
}

/// Build the key table of `archive`: ASCII paths are normalised here, `keys` are the caller's
/// keys (UTF-8) of `rows` (the non-ASCII ones), `given_are_paths` whether each of those keys is
/// its entry's own name with no trailing `/` (GIL released).
#[pyfunction]
fn key_table(
    py: Python<'_>,
    archive: Py<NativeArchive>,
    rows: &[u8],
    keys: Vec<Vec<u8>>,
    given_are_paths: bool,
) -> PyResult<KeyTable> {
    let rows = u32_list(rows)?;
    if rows.len() != keys.len() {
        return Err(PyValueError::new_err("one key per row"));
    }
    let given: HashMap<u32, Vec<u8>> = rows.into_iter().zip(keys).collect();
    let table = {
        let native = archive.get();
        let count = native.count();
        let path = |i: usize| native.path(i as u32);
        py.detach(|| Table::build(count, &path, given, given_are_paths))
    };
    Ok(KeyTable { archive, table })
}

#[pymethods]
impl KeyTable {
    /// How many distinct keys.
    fn __len__(&self) -> usize {
        self.table.len()
    }

    /// Whether every entry's key is its own path (distinct, no trailing `/`).
    #[getter]
    fn own_keys(&self) -> bool {
        self.table.own_keys()
    }

    /// The first entry (directory index) whose key is `key`, or None.
    fn find(&self, key: &[u8]) -> Option<u32> {
        let native = self.archive();
        self.table.find(key, &|i| native.path(i as u32))
    }

    /// Every entry (directory index) whose key is `key`, in directory order.
    fn find_all(&self, key: &[u8]) -> Vec<u32> {
        let native = self.archive();
        self.table.find_all(key, &|i| native.path(i as u32))
    }

    /// The rank in key order of the first key not less than `key` (`bisect_left`).
    fn bisect(&self, key: &[u8]) -> usize {
        let native = self.archive();
        self.table
            .bisect(key, 0, self.table.len(), &|i| native.path(i as u32))
    }

    /// The ranks (lo, hi) in key order of the keys under the folder `prefix` ("" or ending in `/`).
    fn prefix_range(&self, prefix: &[u8]) -> (usize, usize) {
        let native = self.archive();
        self.table.prefix_range(prefix, &|i| native.path(i as u32))
    }

    /// The keys of ranks `lo..hi` in key order (`sorted`) or in directory order: (buffer, uint64 ends).
    fn keys<'py>(
        &self,
        py: Python<'py>,
        lo: usize,
        hi: usize,
        sorted: bool,
    ) -> (Bound<'py, PyBytes>, Bound<'py, PyBytes>) {
        let native = self.archive();
        let entries = self.range(lo, hi, sorted);
        let (blob, ends) =
            py.detach(|| keys_buffer(&self.table, entries, &|i| native.path(i as u32)));
        (PyBytes::new(py, &blob), u64_bytes(py, &ends))
    }

    /// CRC-32 of every key in key order joined by `\n` (the index header's `pathsCrc`), without
    /// making the keys buffer (`keys` + `joined_crc32` held it and its copy at once).
    fn sorted_crc32(&self, py: Python<'_>) -> u32 {
        let native = self.archive();
        py.detach(|| keys_crc32(&self.table, self.table.sorted(), &|i| native.path(i as u32)))
    }

    /// The entries (uint32 directory indexes) of ranks `lo..hi` in key order or directory order.
    fn entries<'py>(
        &self,
        py: Python<'py>,
        lo: usize,
        hi: usize,
        sorted: bool,
    ) -> Bound<'py, PyBytes> {
        u32_bytes(py, self.range(lo, hi, sorted))
    }

    /// The direct children of the folder `prefix` ("" or ending in `/`): folders first by name,
    /// then files in key order, as (names buffer, uint64 ends, uint8 folder flags, uint64 counts).
    fn children<'py>(&self, py: Python<'py>, prefix: &[u8]) -> PyResult<Bound<'py, PyTuple>> {
        let native = self.archive();
        let children = py.detach(|| self.table.children(prefix, &|i| native.path(i as u32)));
        let mut names = Vec::new();
        let mut ends = Vec::with_capacity(children.len() + 1);
        let mut folders = Vec::with_capacity(children.len());
        let mut counts = Vec::with_capacity(children.len());
        ends.push(0u64);
        for child in &children {
            names.extend_from_slice(&child.name);
            ends.push(names.len() as u64);
            folders.push(u8::from(child.folder));
            counts.push(child.count);
        }
        PyTuple::new(
            py,
            [
                PyBytes::new(py, &names).into_any(),
                u64_bytes(py, &ends).into_any(),
                PyBytes::new(py, &folders).into_any(),
                u64_bytes(py, &counts).into_any(),
            ],
        )
    }
}

pub fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<KeyTable>()?;
    module.add_class::<CodecTable>()?;
    module.add_class::<CaseFoldTable>()?;
    module.add_function(wrap_pyfunction!(key_table, module)?)?;
    Ok(())
}

/// A code page's decoding table, filled from the reference's codec (`format.native.codec_tables`).
#[pyclass(module = "moddesk_native.pvf", name = "CodecTable", frozen)]
pub struct CodecTable {
    pub(crate) inner: Arc<Codec>,
}

#[pymethods]
impl CodecTable {
    /// 256 single-byte steps with their UTF-8 texts (buffer, uint64 ends), 65,536 pair steps with theirs.
    #[new]
    fn new(
        single: &[u8],
        single_blob: &[u8],
        single_ends: &[u8],
        pair: &[u8],
        pair_blob: Vec<u8>,
        pair_ends: &[u8],
    ) -> PyResult<Self> {
        let codec = Codec::new(
            single,
            single_blob,
            &u64_list(single_ends)?,
            pair,
            pair_blob,
            &u64_list(pair_ends)?,
        )
        .ok_or_else(|| PyValueError::new_err("a codec table of the wrong shape"))?;
        Ok(CodecTable {
            inner: Arc::new(codec),
        })
    }

    /// `raw.decode(encoding, "surrogateescape")` as UTF-8 (surrogatepass), or None: the caller decodes.
    fn decode<'py>(&self, py: Python<'py>, raw: &[u8]) -> Option<Bound<'py, PyBytes>> {
        self.inner.decode(raw).map(|t| PyBytes::new(py, &t))
    }
}

/// `str.casefold` of the running Python as a table (`format.native.casefold_table`).
#[pyclass(module = "moddesk_native.pvf", name = "CaseFoldTable", frozen)]
pub struct CaseFoldTable {
    pub(crate) inner: Arc<CaseFold>,
}

#[pymethods]
impl CaseFoldTable {
    /// The code points `str.casefold` changes (uint32) and their folded texts (UTF-8 buffer, uint64 ends).
    #[new]
    fn new(points: &[u8], blob: Vec<u8>, ends: &[u8]) -> PyResult<Self> {
        let fold = CaseFold::new(&u32_list(points)?, blob, &u64_list(ends)?)
            .ok_or_else(|| PyValueError::new_err("a casefold table of the wrong shape"))?;
        Ok(CaseFoldTable {
            inner: Arc::new(fold),
        })
    }

    /// The case-folded form of UTF-8 (surrogatepass) text; None when it is not such UTF-8.
    fn fold<'py>(&self, py: Python<'py>, text: &[u8]) -> Option<Bound<'py, PyBytes>> {
        self.inner.fold(text).map(|t| PyBytes::new(py, &t))
    }
}
