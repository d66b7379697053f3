//! `moddesk_native.pvf`: the PVF functions Python calls (see `moddesk.pvf.format.native` for the
//! wrapper and `moddesk.pvf` for the reference). Archive bytes come in as a buffer (the archive's
//! mmap or bytes) for the length of one call; answers go out as a few bytes objects (one buffer
//! plus offset arrays), never one Python object per entry. Long calls release the GIL.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, TryLockError};
use std::time::Duration;

use pyo3::buffer::PyBuffer;
use pyo3::create_exception;
use pyo3::exceptions::{PyBufferError, PyException, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyString, PyTuple};

use moddesk_pvf::batch::{part_ends, Batch, ChunkCache};
use moddesk_pvf::container::{self, Container};
use moddesk_pvf::lookup::PathIndex;
use moddesk_pvf::nkpi;
use moddesk_pvf::render::{Links, Numbering, RenderOptions};
use moddesk_pvf::strings::Strings;
use moddesk_pvf::texts::{str_links, TextDecoders};
use moddesk_pvf::PvfError;

use crate::pvf_table::{CaseFoldTable, CodecTable};

create_exception!(
    pvf,
    NativeFormatError,
    PyException,
    "A PVF structure is malformed: args (code, message, offset)."
);

pub(crate) fn format_error(e: PvfError) -> PyErr {
    NativeFormatError::new_err((e.code, e.message, e.offset))
}

pub(crate) fn error_tuple<'py>(
    py: Python<'py>,
    position: usize,
    e: &PvfError,
) -> PyResult<Bound<'py, PyTuple>> {
    PyTuple::new(
        py,
        [
            position.into_pyobject(py)?.into_any(),
            e.code.into_pyobject(py)?.into_any(),
            e.message.clone().into_pyobject(py)?.into_any(),
            e.offset.into_pyobject(py)?.into_any(),
        ],
    )
}

/// The bytes of a Python buffer for the length of `f`, which may release the GIL while it reads
/// them. Only a buffer nobody can change meanwhile is read in place: `bytes`, a read-only `mmap`
/// (the archive's), or a native table view; any other (a `bytearray`, a writable `mmap` or
/// `memoryview`, which another Python thread could change while the GIL is released) is copied
/// first, under the GIL.
pub(crate) fn with_bytes<R>(
    obj: &Bound<'_, PyAny>,
    f: impl FnOnce(&[u8]) -> PyResult<R>,
) -> PyResult<R> {
    let buffer = PyBuffer::<u8>::get(obj)?;
    if !buffer.is_c_contiguous() {
        return Err(PyValueError::new_err(
            "the archive bytes must be one contiguous buffer",
        ));
    }
    let len = buffer.len_bytes();
    if len == 0 {
        return f(&[]);
    }
    if !immutable(obj, &buffer)? {
        let copy = buffer.to_vec(obj.py())?;
        drop(buffer);
        return f(&copy);
    }
    // SAFETY: `buffer` holds the exporter's buffer (PyObject_GetBuffer) until it is dropped at the
    // end of this function, so the memory stays valid and unmoved for all of `f` (an mmap refuses
    // to close or resize while a buffer is exported). Its contents cannot change either, even with
    // the GIL released: `immutable` admitted only `bytes` (immutable), a read-only mmap (no Python
    // code can write through it) and a `TableView` (a frozen archive's tables, never mutated). It
    // is C-contiguous (checked above) with `len` bytes of item size 1 (PyBuffer<u8> checked the
    // format). We only read. The slice does not outlive `buffer`: `f` cannot keep it ('_ bound).
    #[allow(unsafe_code)]
    let bytes = unsafe { std::slice::from_raw_parts(buffer.buf_ptr() as *const u8, len) };
    f(bytes)
}

/// Whether no Python code can change the contents of `obj`'s buffer while it is exported.
fn immutable(obj: &Bound<'_, PyAny>, buffer: &PyBuffer<u8>) -> PyResult<bool> {
    if obj.is_exact_instance_of::<PyBytes>() || obj.is_instance_of::<TableView>() {
        return Ok(true);
    }
    if !buffer.readonly() {
        return Ok(false);
    }
    let mmap = obj.py().import("mmap")?.getattr("mmap")?;
    Ok(obj.is_exact_instance(&mmap))
}

pub(crate) fn u64_bytes<'py>(py: Python<'py>, values: &[u64]) -> Bound<'py, PyBytes> {
    let mut out = Vec::with_capacity(values.len() * 8);
    for v in values {
        out.extend_from_slice(&v.to_le_bytes());
    }
    PyBytes::new(py, &out)
}

pub(crate) fn u32_bytes<'py>(py: Python<'py>, values: &[u32]) -> Bound<'py, PyBytes> {
    let mut out = Vec::with_capacity(values.len() * 4);
    for v in values {
        out.extend_from_slice(&v.to_le_bytes());
    }
    PyBytes::new(py, &out)
}

pub(crate) fn u32_list(raw: &[u8]) -> PyResult<Vec<u32>> {
    if raw.len() % 4 != 0 {
        return Err(PyValueError::new_err(
            "an index array is a whole number of uint32",
        ));
    }
    Ok(raw
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect())
}

pub(crate) fn u64_list(raw: &[u8]) -> PyResult<Vec<u64>> {
    if raw.len() % 8 != 0 {
        return Err(PyValueError::new_err(
            "an offset array is a whole number of uint64",
        ));
    }
    Ok(raw
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
        .collect())
}

/// Pieces `blob[ends[k]..ends[k + 1]]` of a buffer + offsets pair, checked.
fn pieces<'a>(blob: &'a [u8], ends: &[u64]) -> PyResult<Vec<&'a [u8]>> {
    let mut out = Vec::with_capacity(ends.len().saturating_sub(1));
    for w in ends.windows(2) {
        if w[0] > w[1] || w[1] > blob.len() as u64 {
            return Err(PyValueError::new_err(
                "offsets out of order or past the buffer",
            ));
        }
        out.push(&blob[w[0] as usize..w[1] as usize]);
    }
    Ok(out)
}

/// An open archive's directory held natively: the entry table (paths in one buffer), the
/// container's arrays, and the string source for rendering.
/// The renderer's string source and links, set from Python before a pass and extended by it.
#[derive(Default)]
pub(crate) struct RenderState {
    pub(crate) strings: Option<Strings>,
    pub(crate) links: Option<Links>,
    pub(crate) texts: Option<TextDecoders>,
}

/// Lock `m` without holding the GIL while waiting (a holder may need the GIL to finish).
pub(crate) fn lock<'a, T>(py: Python<'_>, m: &'a Mutex<T>) -> MutexGuard<'a, T> {
    loop {
        match m.try_lock() {
            Ok(guard) => return guard,
            Err(TryLockError::Poisoned(poisoned)) => return poisoned.into_inner(),
            Err(TryLockError::WouldBlock) => {
                py.detach(|| std::thread::sleep(Duration::from_millis(1)))
            }
        }
    }
}

/// Frozen (every method takes `&self`): Python threads may read one archive at the same time (an
/// archive diff beside the index build); what changes sits behind mutexes. The directory itself
/// (`container`, the paths, the pools) never changes after open, which is what lets Python read
/// its tables in place (`TableView`).
#[pyclass(module = "moddesk_native.pvf", name = "Archive", frozen)]
pub(crate) struct NativeArchive {
    pub(crate) container: Container,
    /// NKPI: every path made from the pools, back to back (classic paths are the stored names
    /// with their trailing NULs cut off, read from the directory: not held twice).
    paths: Vec<u8>,
    path_ends: Vec<u64>,
    legacy_rows: Vec<u64>,
    /// The NKPI pools as read: Python's `StringPools` reads them in place until its first
    /// `intern`, and the renderer shares them (`set_nkpi_strings`) instead of copying them.
    pools: (Arc<Vec<u8>>, Arc<Vec<u8>>),
    pub(crate) state: Mutex<RenderState>,
    /// The path lookup, built on first use (`build_lookup`).
    lookup: Mutex<Option<PathIndex>>,
    /// NKPI chunks kept between `render_many` calls that ask for it (`cache_bytes`).
    chunks: Mutex<ChunkCache>,
}

impl NativeArchive {
    pub(crate) fn path(&self, i: u32) -> &[u8] {
        let i = i as usize;
        if let Container::Classic(d) = &self.container {
            if i >= d.count() {
                return &[];
            }
            // the name as the reference keys it: trailing NULs stripped (decoded by the caller)
            let name = d.name(i);
            return &name[..name.iter().rposition(|&b| b != 0).map_or(0, |k| k + 1)];
        }
        if i + 1 >= self.path_ends.len() {
            return &[];
        }
        &self.paths[self.path_ends[i] as usize..self.path_ends[i + 1] as usize]
    }

    /// How many entries the directory holds.
    pub(crate) fn count(&self) -> usize {
        self.container.count()
    }

    pub(crate) fn numbering(&self) -> Numbering {
        Numbering::new(self.container.is_classic())
    }

    /// The bytes of one of the directory's tables (`TableView`). The typed arrays are shown as
    /// their little-endian bytes, which is how they sit in memory on the targets we build for.
    fn table(&self, table: Table) -> &[u8] {
        match (&self.container, table) {
            (Container::Nkpi(d), Table::NkpiRows) => &d.rows,
            (Container::Nkpi(d), Table::NkpiCumulative) => le_bytes(&d.cumulative),
            (Container::Nkpi(d), Table::NkpiOriginals) => le_bytes(&d.original_sizes),
            (Container::Nkpi(_), Table::PoolA) => &self.pools.0,
            (Container::Nkpi(_), Table::PoolW) => &self.pools.1,
            (Container::Classic(d), Table::ClassicHashes) => le_bytes(&d.hashes),
            (Container::Classic(d), Table::ClassicSizes) => le_bytes(&d.sizes),
            (Container::Classic(d), Table::ClassicCrcs) => le_bytes(&d.crcs),
            (Container::Classic(d), Table::ClassicOffsets) => le_bytes(&d.offsets),
            _ => &[],
        }
    }
}

/// A table of an open archive that Python reads in place.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Table {
    NkpiRows,
    NkpiCumulative,
    NkpiOriginals,
    PoolA,
    PoolW,
    ClassicHashes,
    ClassicSizes,
    ClassicCrcs,
    ClassicOffsets,
}

/// Plain integers as the bytes they are stored in.
#[cfg(target_endian = "little")]
fn le_bytes<T: LeInt>(values: &[T]) -> &[u8] {
    // SAFETY: `T` is a primitive integer (`LeInt` is implemented for u32/i64 only): no padding, no
    // invalid bit patterns, alignment ≥ 1, so its `size_of_val(values)` bytes are valid `u8`s for
    // as long as `values` is borrowed, which the returned slice's lifetime ties it to. On a
    // little-endian target those bytes are the little-endian encoding Python reads.
    #[allow(unsafe_code)]
    unsafe {
        std::slice::from_raw_parts(values.as_ptr() as *const u8, std::mem::size_of_val(values))
    }
}

#[cfg(not(target_endian = "little"))]
compile_error!("TableView shows integer arrays in place: little-endian targets only");

/// Primitive integer types whose memory is shown to Python as bytes.
trait LeInt: Copy {}
impl LeInt for u32 {}
impl LeInt for i64 {}

/// A read-only buffer over one table of an open archive (the buffer protocol): `numpy.frombuffer`
/// and `memoryview` read the native table in place instead of a copy of it. The view keeps its
/// archive alive, and the archive never changes its tables (frozen, no interior mutability in
/// the directory), so the memory stays valid and unchanged while any buffer is exported.
#[pyclass(module = "moddesk_native.pvf", name = "TableView", frozen)]
pub(crate) struct TableView {
    archive: Py<NativeArchive>,
    table: Table,
}

impl TableView {
    fn bytes(&self) -> &[u8] {
        self.archive.get().table(self.table)
    }
}

#[pymethods]
impl TableView {
    fn __len__(&self) -> usize {
        self.bytes().len()
    }

    /// # Safety
    /// Called by Python's buffer protocol with a `Py_buffer` to fill (`view` may be null).
    #[allow(unsafe_code)]
    unsafe fn __getbuffer__(
        slf: Bound<'_, Self>,
        view: *mut pyo3::ffi::Py_buffer,
        flags: std::os::raw::c_int,
    ) -> PyResult<()> {
        if view.is_null() {
            return Err(PyBufferError::new_err("no buffer to fill"));
        }
        let bytes = slf.get().bytes();
        let (ptr, len) = (bytes.as_ptr(), bytes.len() as pyo3::ffi::Py_ssize_t);
        // SAFETY: `view` is the non-null Py_buffer the caller (PyObject_GetBuffer) passed us.
        // PyBuffer_FillInfo fills it read-only (a writable request fails with BufferError), with
        // `obj` = this view, whose reference it takes: until the buffer is released the view, its
        // `Py<NativeArchive>` and so the table's memory stay alive. `bytes` borrows a table the
        // frozen archive never mutates or moves (no `&mut` to it exists after open), so `ptr` stays
        // valid for `len` bytes as long as that reference is held. Nothing writes through it.
        let rc = unsafe {
            pyo3::ffi::PyBuffer_FillInfo(
                view,
                slf.as_ptr(),
                ptr as *mut std::os::raw::c_void,
                len,
                1,
                flags,
            )
        };
        if rc == -1 {
            return Err(PyErr::fetch(slf.py()));
        }
        Ok(())
    }
}

fn view<'py>(
    py: Python<'py>,
    archive: &Bound<'py, NativeArchive>,
    table: Table,
) -> PyResult<Bound<'py, TableView>> {
    Bound::new(
        py,
        TableView {
            archive: archive.clone().unbind(),
            table,
        },
    )
}

/// Recognise the archive in `data` and read its directory (GIL released).
#[pyfunction]
fn open_archive(py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<NativeArchive> {
    with_bytes(data, |bytes| {
        py.detach(|| -> Result<NativeArchive, PvfError> {
            let mut container = container::open(bytes)?;
            let (paths, path_ends, legacy_rows, pools) = match &mut container {
                Container::Classic(_) => Default::default(),
                Container::Nkpi(d) => {
                    let found = nkpi::entry_paths(d)?;
                    let mut paths = found.buffer;
                    paths.shrink_to_fit();
                    let pools = (
                        Arc::new(std::mem::take(&mut d.pool_a)),
                        Arc::new(std::mem::take(&mut d.pool_w)),
                    );
                    (paths, found.ends, found.legacy_rows, pools)
                }
            };
            Ok(NativeArchive {
                container,
                paths,
                path_ends,
                legacy_rows,
                pools,
                state: Mutex::new(RenderState::default()),
                lookup: Mutex::new(None),
                chunks: Mutex::new(ChunkCache::new(0)),
            })
        })
        .map_err(format_error)
    })
}

#[pymethods]
impl NativeArchive {
    /// `classic`, `90US` or `90CN`.
    #[getter]
    fn format(&self) -> &'static str {
        match &self.container {
            Container::Classic(_) => "classic",
            Container::Nkpi(d) => d.variant.name,
        }
    }

    fn __len__(&self) -> usize {
        self.container.count()
    }

    /// The rows whose path the caller decodes (uint64; GB18030 names in a 90CN UTF-8 pool).
    fn legacy_rows<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        u64_bytes(py, &self.legacy_rows)
    }

    /// (paths buffer, uint64 ends with a leading 0, uint64 rows whose path the caller decodes).
    fn paths<'py>(
        &self,
        py: Python<'py>,
    ) -> (
        Bound<'py, PyBytes>,
        Bound<'py, PyBytes>,
        Bound<'py, PyBytes>,
    ) {
        let (blob, ends) = self.paths_between(py, 0, self.count());
        (blob, ends, u64_bytes(py, &self.legacy_rows))
    }

    /// The path of entry `index`: a `str` when it is ASCII (or NKPI UTF-8), else its bytes for
    /// the caller to decode (classic CP949 names, NKPI paths holding lone surrogates).
    fn path_at<'py>(&self, py: Python<'py>, index: usize) -> PyResult<Bound<'py, PyAny>> {
        if index >= self.container.count() {
            return Err(PyValueError::new_err("no entry with that index"));
        }
        let raw = self.path(index as u32);
        let text = if raw.is_ascii() || !self.container.is_classic() {
            std::str::from_utf8(raw).ok()
        } else {
            None
        };
        Ok(match text {
            Some(text) => PyString::new(py, text).into_any(),
            None => PyBytes::new(py, raw).into_any(),
        })
    }

    /// The paths of entries `lo..hi` (clamped): (buffer, uint64 ends with a leading 0).
    fn paths_between<'py>(
        &self,
        py: Python<'py>,
        lo: usize,
        hi: usize,
    ) -> (Bound<'py, PyBytes>, Bound<'py, PyBytes>) {
        let n = self.container.count();
        let (lo, hi) = (lo.min(n), hi.min(n).max(lo.min(n)));
        let mut blob = Vec::new();
        let mut ends = Vec::with_capacity(hi - lo + 1);
        ends.push(0u64);
        for i in lo..hi {
            blob.extend_from_slice(self.path(i as u32));
            ends.push(blob.len() as u64);
        }
        (PyBytes::new(py, &blob), u64_bytes(py, &ends))
    }

    /// The raw name of classic entry `index` as stored (trailing NULs kept), for saving and
    /// verifying (`classic_info` leaves the names out: Python does not hold them too).
    fn classic_name<'py>(&self, py: Python<'py>, index: usize) -> PyResult<Bound<'py, PyBytes>> {
        match &self.container {
            Container::Classic(d) if index < d.count() => Ok(PyBytes::new(py, d.name(index))),
            _ => Err(PyValueError::new_err("no classic entry with that index")),
        }
    }

    /// The classic directory's fields (arrays as `TableView`s of little-endian values), or None
    /// for NKPI.
    fn classic_info<'py>(slf: &Bound<'py, Self>) -> PyResult<Option<Bound<'py, PyDict>>> {
        let py = slf.py();
        let Container::Classic(d) = &slf.get().container else {
            return Ok(None);
        };
        let out = PyDict::new(py);
        out.set_item("guid", PyBytes::new(py, &d.guid))?;
        out.set_item("version", d.version)?;
        out.set_item("tree_len", d.tree_len)?;
        out.set_item("tree_crc", d.tree_crc)?;
        out.set_item("hashes", view(py, slf, Table::ClassicHashes)?)?;
        out.set_item("sizes", view(py, slf, Table::ClassicSizes)?)?;
        out.set_item("crcs", view(py, slf, Table::ClassicCrcs)?)?;
        out.set_item("offsets", view(py, slf, Table::ClassicOffsets)?)?;
        out.set_item("base", d.base)?;
        out.set_item("trailing_offset", d.trailing_offset)?;
        out.set_item("problems", d.problems.clone())?;
        Ok(Some(out))
    }

    /// The NKPI directory's fields (the table, pools and chunk index as `TableView`s), or None
    /// for classic.
    fn nkpi_info<'py>(slf: &Bound<'py, Self>) -> PyResult<Option<Bound<'py, PyDict>>> {
        let py = slf.py();
        let Container::Nkpi(d) = &slf.get().container else {
            return Ok(None);
        };
        let out = PyDict::new(py);
        let h = &d.header;
        out.set_item("variant", d.variant.name)?;
        out.set_item("magic", d.magic)?;
        out.set_item("guard", d.guard)?;
        out.set_item("guid", PyBytes::new(py, &h.guid))?;
        out.set_item("count", h.count)?;
        out.set_item("padding", h.padding)?;
        out.set_item("body_size", h.body_size)?;
        out.set_item("group_count", h.group_count)?;
        out.set_item("hash_size", h.hash_size)?;
        out.set_item("name_size", h.name_size)?;
        out.set_item("rows", view(py, slf, Table::NkpiRows)?)?;
        out.set_item("pool_a", view(py, slf, Table::PoolA)?)?;
        out.set_item("pool_w", view(py, slf, Table::PoolW)?)?;
        out.set_item("prefix", PyBytes::new(py, &d.name_prefix))?;
        out.set_item("tail", PyBytes::new(py, &d.name_tail))?;
        out.set_item("cumulative", view(py, slf, Table::NkpiCumulative)?)?;
        out.set_item("originals", view(py, slf, Table::NkpiOriginals)?)?;
        Ok(Some(out))
    }

    /// What the archive holds natively, in bytes per table (allocated capacity): the workspace's
    /// memory breakdown (`benchmarks/pvf_entry_memory.py`).
    fn held<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        fn cap<T>(v: &Vec<T>) -> usize {
            v.capacity() * std::mem::size_of::<T>()
        }
        let out = PyDict::new(py);
        match &self.container {
            Container::Classic(d) => {
                out.set_item("names", cap(&d.names))?;
                out.set_item("name_ends", cap(&d.name_ends))?;
                out.set_item("hashes", cap(&d.hashes))?;
                out.set_item("sizes", cap(&d.sizes))?;
                out.set_item("crcs", cap(&d.crcs))?;
                out.set_item("offsets", cap(&d.offsets))?;
            }
            Container::Nkpi(d) => {
                out.set_item("rows", cap(&d.rows))?;
                out.set_item("pool_a", cap(&self.pools.0))?;
                out.set_item("pool_w", cap(&self.pools.1))?;
                out.set_item("chunks", cap(&d.cumulative) + cap(&d.original_sizes))?;
                out.set_item("paths", cap(&self.paths))?;
                out.set_item("path_ends", cap(&self.path_ends))?;
                out.set_item("legacy_rows", cap(&self.legacy_rows))?;
            }
        }
        let state = lock(py, &self.state);
        out.set_item(
            "render_strings_own",
            state.strings.as_ref().map_or(0, |s| s.owned_bytes()),
        )?;
        Ok(out)
    }

    /// Entries whose path is not ASCII (uint32): the caller normalises their keys for `build_lookup`.
    fn non_ascii_rows<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        let rows: Vec<u32> = (0..self.container.count() as u32)
            .filter(|&i| !self.path(i).is_ascii())
            .collect();
        u32_bytes(py, &rows)
    }

    /// Build the path lookup: ASCII paths are normalised here, `keys` are the caller's keys of
    /// `rows` (the non-ASCII ones, UTF-8).
    fn build_lookup(&self, py: Python<'_>, rows: &[u8], keys: Vec<Vec<u8>>) -> PyResult<()> {
        let rows = u32_list(rows)?;
        if rows.len() != keys.len() {
            return Err(PyValueError::new_err("one key per row"));
        }
        let given: HashMap<u32, Vec<u8>> = rows.into_iter().zip(keys).collect();
        let count = self.container.count();
        let path = |i: usize| self.path(i as u32);
        let index = py.detach(|| PathIndex::build(count, &path, given));
        *lock(py, &self.lookup) = Some(index);
        Ok(())
    }

    /// The entries whose normalised key is `key`, in directory order (build_lookup first).
    fn find(&self, py: Python<'_>, key: &[u8]) -> PyResult<Vec<u32>> {
        let guard = lock(py, &self.lookup);
        let Some(index) = guard.as_ref() else {
            return Err(PyValueError::new_err("build_lookup first"));
        };
        Ok(index.find(key, &|i| self.path(i as u32)))
    }

    /// Directory indexes in storage order (uint32).
    fn storage_order<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        let order = py.detach(|| self.container.storage_order());
        u32_bytes(py, &order)
    }

    /// The bytes of entry `index`.
    fn read<'py>(
        &self,
        py: Python<'py>,
        data: &Bound<'_, PyAny>,
        index: usize,
    ) -> PyResult<Bound<'py, PyBytes>> {
        if index >= self.container.count() {
            return Err(PyValueError::new_err("no entry with that index"));
        }
        let out = with_bytes(data, |bytes| {
            py.detach(|| self.container.read(bytes, index))
                .map_err(format_error)
        })?;
        Ok(PyBytes::new(py, &out))
    }

    /// The bytes of many entries (uint32 indexes): (buffer, uint64 ends, None or the first error
    /// as (position, code, message, offset) — entries from that position on are left out).
    fn read_many<'py>(
        &self,
        py: Python<'py>,
        data: &Bound<'_, PyAny>,
        indexes: &[u8],
    ) -> PyResult<Bound<'py, PyTuple>> {
        let indexes = self.checked(u32_list(indexes)?)?;
        let batch = with_bytes(data, |bytes| {
            Ok(py.detach(|| Batch::read(&self.container, bytes, &indexes)))
        })?;
        let (blob, ends) = py.detach(|| batch.bytes());
        let error = match &batch.error {
            Some((k, e)) => Some(error_tuple(py, *k, e)?),
            None => None,
        };
        PyTuple::new(
            py,
            [
                PyBytes::new(py, &blob).into_any(),
                u64_bytes(py, &ends).into_any(),
                error.into_pyobject(py)?.into_any(),
            ],
        )
    }

    /// Use a classic `stringtable.bin` (its bytes) as the string source of `render_many`; with
    /// `codec` (the table's code page) and `casefold`, every string is decoded and folded natively.
    #[pyo3(signature = (table, codec=None, casefold=None))]
    fn set_classic_strings(
        &self,
        py: Python<'_>,
        table: &[u8],
        codec: Option<PyRef<'_, CodecTable>>,
        casefold: Option<PyRef<'_, CaseFoldTable>>,
    ) -> PyResult<()> {
        let codec = codec.map(|c| c.inner.clone());
        let casefold = casefold.map(|c| c.inner.clone());
        lock(py, &self.state).strings = Some(
            py.detach(|| Strings::classic(table).map(|s| s.with_tables(codec, casefold)))
                .map_err(format_error)?,
        );
        Ok(())
    }

    /// Use NKPI pools (their current bytes) as the string source of `render_many`; `legacy`
    /// decodes GB18030 bytes in the UTF-8 pool, `casefold` folds non-ASCII text natively. A pool
    /// given as this archive's own `TableView` (Python's `StringPools` before any `intern`) is
    /// shared, not copied; any other buffer is copied here, under the GIL.
    #[pyo3(signature = (pool_a, pool_w, legacy=None, casefold=None))]
    fn set_nkpi_strings(
        slf: &Bound<'_, Self>,
        pool_a: &Bound<'_, PyAny>,
        pool_w: &Bound<'_, PyAny>,
        legacy: Option<PyRef<'_, CodecTable>>,
        casefold: Option<PyRef<'_, CaseFoldTable>>,
    ) -> PyResult<()> {
        let this = slf.get();
        let pool_a = this.pool(slf, pool_a, Table::PoolA)?;
        let pool_w = this.pool(slf, pool_w, Table::PoolW)?;
        let strings = Strings::nkpi(pool_a, pool_w).with_tables(
            legacy.map(|c| c.inner.clone()),
            casefold.map(|c| c.inner.clone()),
        );
        lock(slf.py(), &this.state).strings = Some(strings);
        Ok(())
    }

    /// Make the texts of non-script entries in `render_many` natively: `region` decodes classic
    /// text and the string table dump, `names` (CP949) `.nut` files, `casefold` folds; with
    /// `korean_mojibake` NKPI text is left to the caller (the reference repairs it).
    #[pyo3(signature = (region=None, names=None, casefold=None, korean_mojibake=false))]
    fn set_text_decoders(
        &self,
        py: Python<'_>,
        region: Option<PyRef<'_, CodecTable>>,
        names: Option<PyRef<'_, CodecTable>>,
        casefold: Option<PyRef<'_, CaseFoldTable>>,
        korean_mojibake: bool,
    ) {
        lock(py, &self.state).texts = Some(TextDecoders {
            region: region.map(|c| c.inner.clone()),
            names: names.map(|c| c.inner.clone()),
            casefold: casefold.map(|c| c.inner.clone()),
            korean_mojibake,
        });
    }

    /// Classic string links made natively from the `.str` entries they name (`indexes`, uint32,
    /// one per link id in `ids`; an entry's table as `parse_str(render(...))` reads it). False,
    /// with nothing set, when an entry needs the reference (set_text_decoders first).
    fn set_str_links(
        &self,
        py: Python<'_>,
        data: &Bound<'_, PyAny>,
        ids: Vec<i32>,
        indexes: &[u8],
    ) -> PyResult<bool> {
        let indexes = self.checked(u32_list(indexes)?)?;
        if ids.len() != indexes.len() || !self.container.is_classic() {
            return Ok(false);
        }
        let mut state = lock(py, &self.state);
        let Some(texts) = state.texts.clone() else {
            return Ok(false);
        };
        let links = with_bytes(data, |bytes| {
            let path_of = |i: u32| self.path(i);
            Ok(py.detach(|| str_links(&self.container, bytes, &ids, &indexes, &path_of, &texts)))
        })?;
        match links {
            Some(links) => {
                state.links = Some(links);
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// Classic string links resolved up front: parallel lists of link ids, keys, texts and folded texts.
    fn set_links(
        &self,
        py: Python<'_>,
        ids: Vec<i32>,
        keys: Vec<Vec<u8>>,
        texts: Vec<Vec<u8>>,
        folded: Vec<Vec<u8>>,
    ) -> PyResult<()> {
        if ids.len() != keys.len() || keys.len() != texts.len() || texts.len() != folded.len() {
            return Err(PyValueError::new_err(
                "links: the four lists differ in length",
            ));
        }
        let mut links: Links = HashMap::with_capacity(ids.len());
        for (((id, key), text), fold) in ids.into_iter().zip(keys).zip(texts).zip(folded) {
            links.insert((id, key), (text, fold));
        }
        lock(py, &self.state).links = Some(links);
        Ok(())
    }

    /// Let the chunks `render_many` kept go; answers how many inflated bytes were held.
    fn drop_cached_chunks(&self, py: Python<'_>) -> usize {
        let mut cache = lock(py, &self.chunks);
        let held = cache.held();
        *cache = ChunkCache::new(0);
        held
    }

    /// Render many entries (uint32 indexes): scripts as text (case-folded with `fold`, each
    /// followed by `terminator`), other entries as their raw bytes. `resolver(refs)` is called
    /// with the uint32 string references only Python can decode or fold, and returns
    /// (texts buffer, uint64 ends, folded buffer, uint64 ends) for them in that order.
    /// Answers (buffer, uint64 ends, uint8 kinds: 0 text / 1 raw bytes, first error or None).
    /// With `cache_bytes` > 0 the NKPI chunks it inflates are kept for the next such call, up to
    /// that many bytes (`drop_cached_chunks` lets them go); a pass that reads every chunk once
    /// passes 0.
    #[pyo3(signature = (data, indexes, fold, terminator, resolver, cache_bytes=0))]
    #[allow(clippy::too_many_arguments)]
    fn render_many<'py>(
        &self,
        py: Python<'py>,
        data: &Bound<'_, PyAny>,
        indexes: &[u8],
        fold: bool,
        terminator: &[u8],
        resolver: &Bound<'_, PyAny>,
        cache_bytes: usize,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let indexes = self.checked(u32_list(indexes)?)?;
        let numbering = self.numbering();
        let batch = with_bytes(data, |bytes| {
            if cache_bytes == 0 {
                return Ok(py.detach(|| Batch::read(&self.container, bytes, &indexes)));
            }
            let mut cache = lock(py, &self.chunks);
            cache.set_budget(cache_bytes);
            let cache: &mut ChunkCache = &mut cache;
            Ok(py.detach(|| Batch::read_cached(&self.container, bytes, &indexes, cache)))
        })?;
        let mut state = lock(py, &self.state);
        let options = RenderOptions {
            fold,
            terminator: terminator.to_vec(),
        };
        let path_of = |i: u32| self.path(i);
        // rendered optimistically: the strings only the caller can decode are asked for when a
        // script meets one, and that batch is rendered again once they are resolved
        let mut attempts = 0;
        let parts = loop {
            let current: &RenderState = &state;
            let Some(strings) = current.strings.as_ref() else {
                return Err(PyValueError::new_err(
                    "set_classic_strings / set_nkpi_strings first",
                ));
            };
            let links = current.links.as_ref();
            let texts = current.texts.as_ref();
            let out = py.detach(|| {
                batch.render_parts(strings, numbering, links, &options, &path_of, texts)
            });
            let asked = strings.take_asked();
            attempts += 1;
            if asked.is_empty() || attempts > 2 {
                break out;
            }
            if let Some(strings) = state.strings.as_mut() {
                resolve_by(py, resolver, strings, &asked)?;
            }
        };
        let (ends, kinds) = part_ends(&parts);
        // the texts go straight into the answer's bytes (one copy, not two)
        let blob = PyBytes::new_with(py, ends.last().copied().unwrap_or(0) as usize, |buf| {
            let mut at = 0;
            for (text, _, _) in &parts {
                buf[at..at + text.len()].copy_from_slice(text);
                at += text.len();
            }
            Ok(())
        })?;
        let error = match &batch.error {
            Some((k, e)) => Some(error_tuple(py, *k, e)?),
            None => None,
        };
        PyTuple::new(
            py,
            [
                blob.into_any(),
                u64_bytes(py, &ends).into_any(),
                PyBytes::new(py, &kinds).into_any(),
                error.into_pyobject(py)?.into_any(),
            ],
        )
    }
}

/// Ask `resolver` for the texts of `refs` (uint32) and keep them in `strings`.
pub(crate) fn resolve_by(
    py: Python<'_>,
    resolver: &Bound<'_, PyAny>,
    strings: &mut Strings,
    refs: &[u32],
) -> PyResult<()> {
    let answer = resolver.call1((u32_bytes(py, refs),))?;
    let (texts, text_ends, folded, folded_ends): (Vec<u8>, Vec<u8>, Vec<u8>, Vec<u8>) =
        answer.extract()?;
    let texts = pieces(&texts, &u64_list(&text_ends)?)?;
    let folded = pieces(&folded, &u64_list(&folded_ends)?)?;
    if texts.len() != refs.len() || folded.len() != refs.len() {
        return Err(PyValueError::new_err(
            "resolver: one text and one folded text per reference",
        ));
    }
    for ((r, t), f) in refs.iter().zip(texts).zip(folded) {
        strings.resolve(*r, t.to_vec(), f.to_vec());
    }
    Ok(())
}

impl NativeArchive {
    /// `given` as a pool for the renderer: this archive's own pool when `given` is its view,
    /// else a copy of the buffer's bytes (taken under the GIL: no Python thread changes it meanwhile).
    fn pool(
        &self,
        slf: &Bound<'_, Self>,
        given: &Bound<'_, PyAny>,
        table: Table,
    ) -> PyResult<Arc<Vec<u8>>> {
        if let Ok(v) = given.cast::<TableView>() {
            let v = v.get();
            if v.table == table && v.archive.as_ptr() == slf.as_ptr() {
                return Ok(match table {
                    Table::PoolW => self.pools.1.clone(),
                    _ => self.pools.0.clone(),
                });
            }
        }
        let buffer = PyBuffer::<u8>::get(given)?;
        Ok(Arc::new(buffer.to_vec(given.py())?))
    }

    pub(crate) fn checked(&self, indexes: Vec<u32>) -> PyResult<Vec<u32>> {
        let n = self.container.count() as u32;
        if indexes.iter().any(|&i| i >= n) {
            return Err(PyValueError::new_err("an index is past the directory"));
        }
        Ok(indexes)
    }
}

pub fn register(parent: &Bound<'_, PyModule>) -> PyResult<()> {
    let module = crate::add_submodule(parent, "pvf")?;
    module.add("VERSION", moddesk_pvf::VERSION)?;
    module.add(
        "NativeFormatError",
        parent.py().get_type::<NativeFormatError>(),
    )?;
    module.add_class::<NativeArchive>()?;
    module.add_class::<TableView>()?;
    module.add_function(wrap_pyfunction!(open_archive, &module)?)?;
    crate::pvf_table::register(&module)?;
    crate::pvf_text::register(&module)?;
    crate::pvf_index::register(&module)?;
    Ok(())
}
