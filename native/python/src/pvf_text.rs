//! `moddesk_native.pvf.compile_text` / `compile_texts`: `#PVF_File` text → script bytes (see
//! `moddesk.pvf.format.text.compile_script_bytes` for the Python side, which interns the strings
//! into the archive's string table or pools and asks for the final bytes); `build_document`:
//! text → the `moddesk.pvf.document.Document` model (`moddesk.pvf.docparse.build_document`).
//!
//! A text the native lexer cannot read exactly as the reference does (lone surrogates, non-ASCII
//! numerals) gives None: the caller compiles it with the reference.

use pyo3::exceptions::PyValueError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyInt, PyList, PyString, PyTuple};

use moddesk_pvf::compile::{self, Batch, Compiled, TextError};
use moddesk_pvf::scan::{self, EscapePayload, ScanValue};

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
    fn strings(&self) -> Vec<String> {
        self.inner.strings.clone()
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

    /// (bytes of every text one after another, uint64 ends): the script bytes of each compiled
    /// text without an error with `refs[g]` for global string `g`; others are empty.
    fn encode<'py>(&self, py: Python<'py>, refs: Vec<u32>) -> PyResult<Bound<'py, PyTuple>> {
        if refs.len() != self.inner.strings.len() {
            return Err(PyValueError::new_err("one reference per string"));
        }
        let (blob, ends) = py.detach(|| {
            let mut blob = Vec::new();
            let mut ends = Vec::with_capacity(self.inner.texts.len());
            for text in &self.inner.texts {
                if let Some(c) = text.as_ref().filter(|c| c.error.is_none()) {
                    compile::encode(&c.units, &c.string_units, &refs, self.classic, &mut blob);
                }
                ends.push(blob.len() as u64);
            }
            (blob, ends)
        });
        let ends: Vec<u8> = ends.iter().flat_map(|v| v.to_le_bytes()).collect();
        PyTuple::new(
            py,
            [
                PyBytes::new(py, &blob).into_any(),
                PyBytes::new(py, &ends).into_any(),
            ],
        )
    }
}

/// Compile many texts in parallel; strings are merged in text order afterwards.
#[pyfunction]
fn compile_texts(
    py: Python<'_>,
    texts: Vec<Bound<'_, PyString>>,
    classic: bool,
) -> PyResult<CompiledBatch> {
    let sources: Vec<Option<&str>> = texts.iter().map(readable).collect();
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

fn scan_value<'py>(py: Python<'py>, value: &ScanValue<'_>) -> PyResult<ValueParts<'py>> {
    Ok(match value {
        ScanValue::Integer(word) => ("integer", py_int(py, word)?, None, false),
        ScanValue::Float(f) => ("float", f.into_pyobject(py)?.into_any(), None, false),
        ScanValue::Str(s) => (
            "string",
            s.as_ref().into_pyobject(py)?.into_any(),
            None,
            false,
        ),
        ScanValue::Link(id, key, display) => {
            let link = (py_int(py, id)?, *key, display.as_deref()).into_pyobject(py)?;
            ("link", link.into_any(), Some(9), false)
        }
        ScanValue::Escape(kind, number, raw, payload) => {
            let payload = match payload {
                EscapePayload::Str(s) => s.as_ref().into_pyobject(py)?.into_any(),
                EscapePayload::Int(word) => py_int(py, word)?,
            };
            (kind, payload, Some(*number), *raw)
        }
    })
}

type ValueParts<'py> = (&'static str, Bound<'py, PyAny>, Option<u32>, bool);

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

/// The value line of rows `first..end` (a `ValueLine` of `Value`s; the first keeps no lead).
fn value_line<'py>(
    py: Python<'py>,
    classes: &DocumentClasses<'py>,
    rows: &[scan::Row<'_>],
    first: usize,
    end: usize,
) -> PyResult<Bound<'py, PyAny>> {
    let values = PyList::empty(py);
    for (k, row) in rows[first..end].iter().enumerate() {
        let Some(value) = &row.value else { continue };
        let (name, value, number, raw) = scan_value(py, value)?;
        let lead = if k == 0 { None } else { Some(row.gap) };
        let args = (
            kind_name(py, name),
            value,
            number,
            raw,
            row.source,
            lead,
            row.line,
            row.col,
            row.start,
            row.end,
        );
        values.append(classes.value.call1(args)?)?;
    }
    let line = classes.line.call1((values,))?;
    line.setattr(intern!(py, "before"), rows[first].gap)?;
    Ok(line)
}

/// `moddesk.pvf.document`'s classes, given by the caller: (Document, Section, Value, ValueLine,
/// ParseWarning).
struct DocumentClasses<'py> {
    document: Bound<'py, PyAny>,
    section: Bound<'py, PyAny>,
    value: Bound<'py, PyAny>,
    line: Bound<'py, PyAny>,
    warning: Bound<'py, PyAny>,
}

type ClassTuple<'py> = (
    Bound<'py, PyAny>,
    Bound<'py, PyAny>,
    Bound<'py, PyAny>,
    Bound<'py, PyAny>,
    Bound<'py, PyAny>,
);

/// The whole `Document` of `text` (`docparse.build_document`'s model, head and tail left to the
/// caller), or None when only the reference reads it exactly or it does not lex (the reference
/// then raises lex's error): (document, first token's start or None, last token's end).
#[pyfunction]
fn build_document<'py>(
    py: Python<'py>,
    text: &Bound<'py, PyString>,
    classic: bool,
    classes: ClassTuple<'py>,
) -> PyResult<Option<Bound<'py, PyTuple>>> {
    let classes = DocumentClasses {
        document: classes.0,
        section: classes.1,
        value: classes.2,
        line: classes.3,
        warning: classes.4,
    };
    let Some(s) = readable(text) else {
        return Ok(None);
    };
    let Ok(scanned) = scan::scan(s, classic) else {
        return Ok(None);
    };
    let tree = scan::assemble(&scanned.rows);
    let rows = &scanned.rows;
    // sections first (parents come before children), their bodies filled afterwards
    let mut sections: Vec<Bound<'py, PyAny>> = Vec::with_capacity(tree.sections.len());
    let mut bodies: Vec<Bound<'py, PyList>> = Vec::with_capacity(tree.sections.len());
    for sec in &tree.sections {
        let body = PyList::empty(py);
        let parent = sec.parent.map(|p| sections[p].clone());
        let obj = classes.section.call1((
            sec.name,
            parent,
            sec.occurrence,
            sec.has_end_tag,
            body.clone(),
            sec.line,
            sec.col,
            sec.start,
            sec.end,
            sec.before,
        ))?;
        if let Some(end_before) = sec.end_before {
            obj.setattr(intern!(py, "end_before"), end_before)?;
        }
        sections.push(obj);
        bodies.push(body);
    }
    let fill = |list: &Bound<'py, PyList>, items: &[scan::Item]| -> PyResult<()> {
        for item in items {
            match *item {
                scan::Item::Section(k) => list.append(&sections[k])?,
                scan::Item::Line(first, end) => {
                    list.append(value_line(py, &classes, rows, first, end)?)?
                }
            }
        }
        Ok(())
    };
    for (sec, body) in tree.sections.iter().zip(&bodies) {
        fill(body, &sec.body)?;
    }
    let body = PyList::empty(py);
    fill(&body, &tree.body)?;
    let warnings = PyList::empty(py);
    for w in &tree.warnings {
        warnings.append(classes.warning.call1((
            w.code,
            w.message.as_str(),
            w.line,
            w.col,
            w.section.as_str(),
        ))?)?;
    }
    let doc = classes.document.call0()?;
    doc.setattr(intern!(py, "body"), body)?;
    doc.setattr(intern!(py, "warnings"), warnings)?;
    Ok(Some((doc, scanned.first, scanned.last).into_pyobject(py)?))
}

pub fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<CompiledText>()?;
    module.add_class::<CompiledBatch>()?;
    module.add_function(wrap_pyfunction!(compile_text, module)?)?;
    module.add_function(wrap_pyfunction!(compile_texts, module)?)?;
    module.add_function(wrap_pyfunction!(build_document, module)?)?;
    Ok(())
}
