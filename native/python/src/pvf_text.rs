//! `moddesk_native.pvf.compile_text` / `compile_texts`: `#PVF_File` text → script bytes (see
//! `moddesk.pvf.format.text.compile_script_bytes` for the Python side, which interns the strings
//! into the archive's string table or pools and asks for the final bytes); `build_document`:
//! text → the `moddesk.pvf.document.Document` model (`moddesk.pvf.docparse.build_document`),
//! whose sections' bodies are made when first asked for.
//!
//! A text the native lexer cannot read exactly as the reference does (lone surrogates, non-ASCII
//! numerals) gives None: the caller compiles it with the reference.

use pyo3::exceptions::PyValueError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyInt, PyList, PyString, PyTuple};
use rustc_hash::FxHashMap;
use std::sync::Mutex;

use moddesk_pvf::compile::{self, Batch, Compiled, TextError};
use moddesk_pvf::scan::{Item, OwnedDocument, OwnedPayload, OwnedValue, Text};

fn error_tuple<'py>(py: Python<'py>, e: &TextError) -> PyResult<Bound<'py, PyTuple>> {
    PyTuple::new(
        py,
        [
            e.code.into_pyobject(py)?.into_any(),
            e.message.clone().into_pyobject(py)?.into_any(),
            e.offset.into_pyobject(py)?.into_any(),
            e.token.clone().into_pyobject(py)?.into_any(),
        ],
    )
}

/// The UTF-8 of a Python str, or None when it holds lone surrogates or non-ASCII numerals.
fn readable<'a>(text: &'a Bound<'_, PyString>) -> Option<&'a str> {
    let s = text.to_str().ok()?;
    compile::supported(s).then_some(s)
}

/// One compiled text: units against its own string list (`strings()`), or its error.
#[pyclass(module = "moddesk_native.pvf", name = "CompiledText", frozen)]
pub struct CompiledText {
    inner: Compiled<'static>,
    classic: bool,
}

#[pymethods]
impl CompiledText {
    /// The distinct strings to intern, in order (before the error, when there is one).
    fn strings(&self) -> Vec<String> {
        self.inner.strings.iter().map(|s| s.to_string()).collect()
    }

    /// (line, byte offset) of the lexeme where `strings()[k]` first occurs.
    fn site(&self, k: usize) -> Option<(u32, u32)> {
        self.inner.sites.get(k).copied()
    }

    /// (code, message, character offset, token or None), or None.
    fn error<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyTuple>>> {
        self.inner
            .error
            .as_ref()
            .map(|e| error_tuple(py, e))
            .transpose()
    }

    /// The script bytes with `refs[i]` as the reference of `strings()[i]`.
    fn encode<'py>(&self, py: Python<'py>, refs: Vec<u32>) -> PyResult<Bound<'py, PyBytes>> {
        let mut out = Vec::with_capacity(2 + 5 * self.inner.units.len());
        compile::encode(
            &self.inner.units,
            &self.inner.string_units,
            &refs,
            self.classic,
            &mut out,
        )
        .ok_or_else(|| PyValueError::new_err("one reference per string"))?;
        Ok(PyBytes::new(py, &out))
    }
}

/// Compile one text (classic or NKPI numbering); None when only the reference reads it exactly.
#[pyfunction]
fn compile_text(
    py: Python<'_>,
    text: &Bound<'_, PyString>,
    classic: bool,
) -> PyResult<Option<CompiledText>> {
    let Some(s) = readable(text) else {
        return Ok(None);
    };
    let inner = if s.len() < 4096 {
        compile::compile(s, classic).into_owned()
    } else {
        py.detach(|| compile::compile(s, classic).into_owned())
    };
    Ok(Some(CompiledText { inner, classic }))
}

/// Many texts compiled at once (both cores): one string list for all of them, in the order the
/// texts would intern them one after another.
#[pyclass(module = "moddesk_native.pvf", name = "CompiledBatch", frozen)]
pub struct CompiledBatch {
    inner: Batch,
    classic: bool,
}

#[pymethods]
impl CompiledBatch {
    /// Every distinct string of the batch in first-occurrence order (text by text).
    fn strings<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        PyList::new(py, self.inner.strings.iter().map(String::as_str))
    }

    /// (line, byte offset in its text) of the lexeme where global string `g` first occurs.
    fn site(&self, g: usize) -> Option<(u32, u32)> {
        self.inner.sites.get(g).copied()
    }

    /// Per text, the end of its new strings in `strings()` (uint32 bytes).
    fn string_ends<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        let raw: Vec<u8> = self
            .inner
            .string_ends
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        PyBytes::new(py, &raw)
    }

    /// Indexes of the texts only the reference compiles exactly.
    fn unsupported(&self) -> Vec<usize> {
        (0..self.inner.texts.len())
            .filter(|&i| self.inner.texts[i].is_none())
            .collect()
    }

    /// (text index, code, message, character offset, token or None) of every text that failed.
    fn errors<'py>(&self, py: Python<'py>) -> PyResult<Vec<(usize, Bound<'py, PyTuple>)>> {
        let mut out = Vec::new();
        for (i, t) in self.inner.texts.iter().enumerate() {
            if let Some(e) = t.as_ref().and_then(|c| c.error.as_ref()) {
                out.push((i, error_tuple(py, e)?));
            }
        }
        Ok(out)
    }

    /// The script bytes of each compiled text without an error, `refs[g]` being the reference of
    /// global string `g`; None for the others (unsupported or failed texts).
    fn encode<'py>(&self, py: Python<'py>, refs: Vec<u32>) -> PyResult<Bound<'py, PyList>> {
        if refs.len() != self.inner.strings.len() {
            return Err(PyValueError::new_err("one reference per string"));
        }
        let out = PyList::empty(py);
        let mut buffer = Vec::new();
        for text in &self.inner.texts {
            match text.as_ref().filter(|c| c.error.is_none()) {
                Some(c) => {
                    buffer.clear();
                    compile::encode(&c.units, &c.string_units, &refs, self.classic, &mut buffer)
                        .ok_or_else(|| PyValueError::new_err("one reference per string"))?;
                    out.append(PyBytes::new(py, &buffer))?;
                }
                None => out.append(py.None())?,
            }
        }
        Ok(out)
    }
}

/// Compile many texts in parallel; strings are merged in text order afterwards.
#[pyfunction]
fn compile_texts(
    py: Python<'_>,
    texts: Vec<Bound<'_, PyString>>,
    classic: bool,
) -> PyResult<CompiledBatch> {
    // `supported` runs in the parallel part (compile_many)
    let sources: Vec<Option<&str>> = texts.iter().map(|t| t.to_str().ok()).collect();
    let inner = py.detach(|| compile::compile_many(&sources, classic));
    Ok(CompiledBatch { inner, classic })
}

/// `int(word)` (a word of `[+-]?digits`, any length).
fn py_int<'py>(py: Python<'py>, word: &str) -> PyResult<Bound<'py, PyAny>> {
    match word.parse::<i64>() {
        Ok(v) => Ok(v.into_pyobject(py)?.into_any()),
        Err(_) => py.get_type::<PyInt>().call1((word,)),
    }
}

type ValueParts<'py> = (Bound<'py, PyString>, Bound<'py, PyAny>, Option<u32>, bool);

fn kind_name<'py>(py: Python<'py>, kind: &str) -> Bound<'py, PyString> {
    match kind {
        "integer" => intern!(py, "integer").clone(),
        "float" => intern!(py, "float").clone(),
        "string" => intern!(py, "string").clone(),
        "link" => intern!(py, "link").clone(),
        "command" => intern!(py, "command").clone(),
        "separator" => intern!(py, "separator").clone(),
        "intex" => intern!(py, "intex").clone(),
        _ => intern!(py, "escape").clone(),
    }
}

/// Section names already made as Python strings, reused: the same few hundred names (`name`,
/// `grade`, …) recur in every document of an archive, so a section's name is usually an incref,
/// not a new `str` (bounded: at most SECTION_NAMES_LIMIT names of at most SECTION_NAME_BYTES
/// bytes are kept — a few hundred KiB — others are made each time).
static SECTION_NAMES: PyOnceLock<Mutex<FxHashMap<Box<str>, Py<PyString>>>> = PyOnceLock::new();
const SECTION_NAMES_LIMIT: usize = 1 << 12;
const SECTION_NAME_BYTES: usize = 64;

fn section_name<'py>(py: Python<'py>, name: &str) -> Bound<'py, PyString> {
    if name.len() > SECTION_NAME_BYTES {
        return PyString::new(py, name);
    }
    let cache = SECTION_NAMES.get_or_init(py, || Mutex::new(FxHashMap::default()));
    // a panic while the lock was held cannot leave the map inconsistent (inserts are whole)
    let mut map = cache
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(known) = map.get(name) {
        return known.bind(py).clone();
    }
    let made = PyString::new(py, name);
    if map.len() < SECTION_NAMES_LIMIT {
        map.insert(name.into(), made.clone().unbind());
    }
    made
}

/// `moddesk.pvf.document`'s classes, given by the caller: (a lazily filled Section, Value,
/// ValueLine, ParseWarning).
struct DocumentClasses {
    section: Py<PyAny>,
    value: Py<PyAny>,
    line: Py<PyAny>,
    warning: Py<PyAny>,
}

/// A scanned and assembled document (`moddesk_pvf::scan::OwnedDocument`) whose Python objects
/// are made when asked for: `body(k, parent)` makes the items of section `k` (-1: the top level),
/// sections among them empty until their own body is asked for (`_pending`).
#[pyclass(module = "moddesk_native.pvf", name = "Document", frozen)]
pub struct NativeDocument {
    doc: OwnedDocument,
    classes: DocumentClasses,
}

impl NativeDocument {
    fn text<'py>(&self, py: Python<'py>, t: &Text) -> PyResult<Bound<'py, PyAny>> {
        Ok(self.doc.str(t).into_pyobject(py)?.into_any())
    }

    fn value<'py>(&self, py: Python<'py>, value: &OwnedValue) -> PyResult<ValueParts<'py>> {
        Ok(match value {
            OwnedValue::Integer(word) => (
                kind_name(py, "integer"),
                py_int(py, self.doc.str(word))?,
                None,
                false,
            ),
            OwnedValue::Float(f) => (
                kind_name(py, "float"),
                f.into_pyobject(py)?.into_any(),
                None,
                false,
            ),
            OwnedValue::Str(s) => (kind_name(py, "string"), self.text(py, s)?, None, false),
            OwnedValue::Link(id, key, display) => {
                let display = match display {
                    Some(d) => Some(self.text(py, d)?),
                    None => None,
                };
                let link = (py_int(py, self.doc.str(id))?, self.text(py, key)?, display);
                (
                    kind_name(py, "link"),
                    link.into_pyobject(py)?.into_any(),
                    Some(9),
                    false,
                )
            }
            OwnedValue::Escape(kind, number, raw, payload) => {
                let payload = match payload {
                    OwnedPayload::Str(s) => self.text(py, s)?,
                    OwnedPayload::Int(word) => py_int(py, self.doc.str(word))?,
                };
                (kind_name(py, kind), payload, Some(*number), *raw)
            }
        })
    }

    /// The value line of rows `first..end` (a `ValueLine` of `Value`s; the first keeps no lead).
    fn line<'py>(&self, py: Python<'py>, first: usize, end: usize) -> PyResult<Bound<'py, PyAny>> {
        let values = PyList::empty(py);
        let value_class = self.classes.value.bind(py);
        for (k, row) in self.doc.rows[first..end].iter().enumerate() {
            let Some(value) = &row.value else { continue };
            let (kind, value, number, raw) = self.value(py, value)?;
            let lead = if k == 0 {
                None
            } else {
                Some(self.text(py, &row.gap)?)
            };
            let args = (
                kind,
                value,
                number,
                raw,
                self.text(py, &row.source)?,
                lead,
                row.line,
                row.col,
                row.start,
                row.end,
            );
            values.append(value_class.call1(args)?)?;
        }
        let line = self.classes.line.bind(py).call1((values,))?;
        line.setattr(
            intern!(py, "before"),
            self.text(py, &self.doc.rows[first].gap)?,
        )?;
        Ok(line)
    }

    /// Section `k` as an object whose body and other fields are made on first use: a
    /// `LazySection` made without its `__init__` (whose assignments would run the properties'
    /// Python setters), only `name` and `parent` set; `body` is left for its property to fill
    /// from `_pending`, the other fields for theirs to fill from `_source` (`field`).
    fn section<'py>(
        slf: &Bound<'py, Self>,
        k: usize,
        parent: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        static OBJECT_NEW: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
        let py = slf.py();
        let this = slf.get();
        let sec = &this.doc.sections[k];
        let new = OBJECT_NEW.get_or_try_init(py, || -> PyResult<Py<PyAny>> {
            Ok(py.get_type::<PyAny>().getattr("__new__")?.unbind())
        })?;
        let class = this.classes.section.bind(py);
        let obj = new.bind(py).call1((class,))?;
        obj.setattr(
            intern!(py, "name"),
            section_name(py, this.doc.str(&sec.name)),
        )?;
        obj.setattr(intern!(py, "parent"), parent)?;
        let source = (slf.clone(), k).into_pyobject(py)?;
        obj.setattr(intern!(py, "_pending"), &source)?;
        obj.setattr(intern!(py, "_source"), source)?;
        Ok(obj)
    }
}

impl NativeDocument {
    /// The body items of section `k` (-1: the top level).
    fn items(&self, k: isize) -> PyResult<&[Item]> {
        if k < 0 {
            return Ok(self.doc.bodies.items(None));
        }
        if (k as usize) < self.doc.sections.len() {
            Ok(self.doc.bodies.items(Some(k as usize)))
        } else {
            Err(PyValueError::new_err("no such section"))
        }
    }

    /// Section `j`'s object: the one already at `made[j]`, or a new one put there (`made` is
    /// `new_made()`'s list, one slot per section, None until made).
    fn section_made<'py>(
        slf: &Bound<'py, Self>,
        j: usize,
        parent: &Bound<'py, PyAny>,
        made: Option<&Bound<'py, PyList>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let Some(made) = made else {
            return NativeDocument::section(slf, j, parent);
        };
        let known = made.get_item(j)?;
        if !known.is_none() {
            return Ok(known);
        }
        let sec = NativeDocument::section(slf, j, parent)?;
        made.set_item(j, &sec)?;
        Ok(sec)
    }
}

#[pymethods]
impl NativeDocument {
    /// The body items of section `k` (-1: the document's top level), `parent` being its object;
    /// sections already handed out (in `made`, at their section index) are reused, so a body made after
    /// `sections` holds the very objects `sections` gave.
    #[pyo3(signature = (k, parent, made=None))]
    fn body<'py>(
        slf: &Bound<'py, Self>,
        k: isize,
        parent: &Bound<'py, PyAny>,
        made: Option<&Bound<'py, PyList>>,
    ) -> PyResult<Bound<'py, PyList>> {
        let py = slf.py();
        let this = slf.get();
        let out = PyList::empty(py);
        for item in this.items(k)? {
            match *item {
                Item::Section(j) => {
                    out.append(NativeDocument::section_made(slf, j, parent, made)?)?
                }
                Item::Line(first, end) => out.append(this.line(py, first, end)?)?,
            }
        }
        Ok(out)
    }

    /// The sections among the body items of section `k` (-1: the top level), only those called
    /// `name` when it is given, without making the value lines around them; each made once
    /// (kept in `made`, at its section index).
    #[pyo3(signature = (k, parent, made, name=None))]
    fn sections<'py>(
        slf: &Bound<'py, Self>,
        k: isize,
        parent: &Bound<'py, PyAny>,
        made: &Bound<'py, PyList>,
        name: Option<&str>,
    ) -> PyResult<Bound<'py, PyList>> {
        let py = slf.py();
        let this = slf.get();
        let out = PyList::empty(py);
        for item in this.items(k)? {
            let Item::Section(j) = *item else { continue };
            if name.is_some_and(|n| this.doc.str(&this.doc.sections[j].name) != n) {
                continue;
            }
            out.append(NativeDocument::section_made(slf, j, parent, Some(made))?)?;
        }
        Ok(out)
    }

    /// Field `index` of section `k`, in `document._DEFERRED` order: occurrence, has_end_tag,
    /// line, col, start, end, before, end_before.
    fn field<'py>(&self, py: Python<'py>, k: usize, index: usize) -> PyResult<Bound<'py, PyAny>> {
        let Some(sec) = self.doc.sections.get(k) else {
            return Err(PyValueError::new_err("no such section"));
        };
        Ok(match index {
            0 => sec.occurrence.into_pyobject(py)?.into_any(),
            1 => pyo3::types::PyBool::new(py, sec.has_end_tag)
                .to_owned()
                .into_any(),
            2 => sec.line.into_pyobject(py)?.into_any(),
            3 => sec.col.into_pyobject(py)?.into_any(),
            4 => sec.start.into_pyobject(py)?.into_any(),
            5 => sec.end.into_pyobject(py)?.into_any(),
            6 => self.text(py, &sec.before)?,
            7 => match &sec.end_before {
                Some(t) => self.text(py, t)?,
                None => py.None().into_bound(py),
            },
            _ => return Err(PyValueError::new_err("no such field")),
        })
    }

    /// A list with a None per section of the document: where `sections` and `body` keep the
    /// section objects they made, so each is made once.
    fn new_made<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let none = py.None().into_bound(py);
        PyList::new(py, (0..self.doc.sections.len()).map(|_| none.clone()))
    }

    /// How many sections the body of section `k` (-1: the top level) holds.
    fn section_count(&self, k: isize) -> PyResult<usize> {
        Ok(self
            .items(k)?
            .iter()
            .filter(|item| matches!(item, Item::Section(_)))
            .count())
    }

    /// The parse warnings (`ParseWarning` objects).
    fn warnings<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let out = PyList::empty(py);
        for w in &self.doc.warnings {
            out.append(self.classes.warning.bind(py).call1((
                w.code,
                w.message.as_str(),
                w.line,
                w.col,
                w.section.as_str(),
            ))?)?;
        }
        Ok(out)
    }

    /// (first token's character offset or None, last token's end).
    fn span(&self) -> (Option<usize>, usize) {
        (self.doc.first, self.doc.last)
    }
}

/// The native document of `text`, or None when only the reference reads it exactly or it does
/// not lex (the reference then raises lex's error). `classes`: (a Section class whose body is
/// filled from `_pending`, Value, ValueLine, ParseWarning).
#[pyfunction]
fn parse_document(
    py: Python<'_>,
    text: &Bound<'_, PyString>,
    classic: bool,
    classes: (Py<PyAny>, Py<PyAny>, Py<PyAny>, Py<PyAny>),
) -> PyResult<Option<NativeDocument>> {
    let Some(s) = readable(text) else {
        return Ok(None);
    };
    // a big text (a long .lst) is scanned without the GIL; a typical script takes microseconds
    let parsed = if s.len() < 1 << 16 {
        OwnedDocument::new(s, classic)
    } else {
        py.detach(|| OwnedDocument::new(s, classic))
    };
    let Ok(doc) = parsed else {
        return Ok(None);
    };
    let (section, value, line, warning) = classes;
    Ok(Some(NativeDocument {
        doc,
        classes: DocumentClasses {
            section,
            value,
            line,
            warning,
        },
    }))
}

pub fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<CompiledText>()?;
    module.add_class::<CompiledBatch>()?;
    module.add_function(wrap_pyfunction!(compile_text, module)?)?;
    module.add_function(wrap_pyfunction!(compile_texts, module)?)?;
    module.add_class::<NativeDocument>()?;
    module.add_function(wrap_pyfunction!(parse_document, module)?)?;
    Ok(())
}
