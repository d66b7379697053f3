//! The document scanner behind `moddesk.pvf.docparse.build_document`: script text → the flat
//! rows the Python `Document` is assembled from (tags, and values grouped into source lines),
//! identical to the reference's `_slow_events` / `_scan`. Spans are *character* offsets, as
//! Python counts them; lines and columns are `format.text.lex`'s (the lexer is `compile::Lexer`).

use std::borrow::Cow;

use rustc_hash::{FxHashMap, FxHashSet};

use crate::compile::{escape_numbering, Lexeme, Lexer, Numbering, Payload, TextError, Token};

/// What a value row holds (the `Value.kind` it becomes, its Python value).
#[derive(Debug, Clone, PartialEq)]
pub enum ScanValue<'a> {
    /// An integer word (Python `int(word)`).
    Integer(&'a str),
    /// The float32 value of a float word, widened.
    Float(f64),
    Str(Cow<'a, str>),
    /// (id word, key, display).
    Link(&'a str, &'a str, Option<Cow<'a, str>>),
    /// An escape: value kind ("command", "separator", "intex" or "escape"), number, raw, payload.
    Escape(&'static str, u32, bool, EscapePayload<'a>),
}

#[derive(Debug, Clone, PartialEq)]
pub enum EscapePayload<'a> {
    Str(Cow<'a, str>),
    Int(&'a str),
}

/// One row: a section tag, or a value that starts a new value line or joins the last one.
#[derive(Debug, Clone, PartialEq)]
pub struct Row<'a> {
    pub kind: RowKind,
    /// The tag text (tags) or the source text (values).
    pub source: &'a str,
    pub value: Option<ScanValue<'a>>,
    /// Source text between the previous token and this one.
    pub gap: &'a str,
    pub line: u32,
    pub col: u32,
    pub start: usize,
    pub end: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowKind {
    Open,
    Close,
    NewLine,
    SameLine,
}

/// A scanned document: its rows and the character spans of the first token's start and the
/// last token's end (None when there is no token).
#[derive(Debug, Clone, Default)]
pub struct Scanned<'a> {
    pub rows: Vec<Row<'a>>,
    pub first: Option<usize>,
    pub last: usize,
}

/// Escape numbers with their own value kind, per numbering (`_ESCAPE_KINDS_BY_NUMBERING`).
fn escape_kind(numbering: Option<Numbering>, number: u32, raw: bool) -> &'static str {
    if raw {
        return "escape";
    }
    match (numbering, number) {
        (Some(Numbering::Classic | Numbering::Legacy), 6) => "command",
        (Some(Numbering::Classic | Numbering::Legacy), 8) => "separator",
        (Some(Numbering::Classic | Numbering::Legacy), 3) => "intex",
        (Some(Numbering::Nkpi), 5) => "command",
        (Some(Numbering::Nkpi), 7) => "separator",
        (Some(Numbering::Nkpi), 1) => "intex",
        _ => "escape",
    }
}

/// Byte → character offsets for increasing byte positions.
struct Chars<'a> {
    text: &'a [u8],
    ascii: bool,
    byte: usize,
    chars: usize,
}

impl Chars<'_> {
    fn at(&mut self, byte: usize) -> usize {
        if self.ascii {
            return byte;
        }
        if byte < self.byte {
            self.byte = 0;
            self.chars = 0;
        }
        self.chars += self.text[self.byte..byte]
            .iter()
            .filter(|&&b| (b & 0xC0) != 0x80)
            .count();
        self.byte = byte;
        self.chars
    }
}

/// Scan `text` for the document model; `classic` decides what escape numbers mean. Errors are
/// the lexer's (what `lex` raises).
pub fn scan(text: &str, classic: bool) -> Result<Scanned<'_>, TextError> {
    let mut lexemes: Vec<Lexeme<'_>> = Vec::new();
    let mut lexer = Lexer::new(text);
    while let Some(lx) = lexer.next_lexeme()? {
        lexemes.push(lx);
    }
    let numbering = if lexemes
        .iter()
        .any(|lx| matches!(lx.token, Token::Escape { .. }))
    {
        escape_numbering(text, &lexemes, classic).ok()
    } else {
        None
    };
    let bytes = text.as_bytes();
    let mut chars = Chars {
        text: bytes,
        ascii: text.is_ascii(),
        byte: 0,
        chars: 0,
    };
    let mut out = Scanned {
        rows: Vec::with_capacity(lexemes.len()),
        first: None,
        last: 0,
    };
    let mut prev_end = lexemes.first().map_or(0, |lx| lx.start);
    let mut in_line = false; // whether a value line is open (no tag since)
    let mut last_line = 0u32;
    for lx in lexemes {
        let gap = &text[prev_end..lx.start];
        prev_end = lx.end;
        let start = chars.at(lx.start);
        let end = chars.at(lx.end);
        out.first.get_or_insert(start);
        out.last = end;
        let source = &text[lx.start..lx.end];
        let value = match lx.token {
            Token::Section(tag) => {
                let kind = if tag.starts_with("[/") {
                    RowKind::Close
                } else {
                    RowKind::Open
                };
                out.rows.push(Row {
                    kind,
                    source: tag,
                    value: None,
                    gap,
                    line: lx.line,
                    col: lx.col,
                    start,
                    end,
                });
                in_line = false;
                continue;
            }
            Token::Int(word) => ScanValue::Integer(word),
            Token::Float(word) => {
                ScanValue::Float(f32::from_bits(crate::compile::float_bits(word)) as f64)
            }
            Token::Str(s) => ScanValue::Str(s),
            Token::Link { id, key, display } => ScanValue::Link(id, key, display),
            Token::Escape {
                number,
                raw,
                payload,
            } => ScanValue::Escape(
                escape_kind(numbering, number, raw),
                number,
                raw,
                match payload {
                    Payload::Str(s) => EscapePayload::Str(s),
                    Payload::Int(w) => EscapePayload::Int(w),
                },
            ),
        };
        let newline_in_gap = gap.as_bytes().contains(&b'\n');
        let kind = if !in_line || lx.line != last_line || newline_in_gap {
            RowKind::NewLine
        } else {
            RowKind::SameLine
        };
        in_line = true;
        last_line = lx.line
            + bytes[lx.start..lx.end]
                .iter()
                .filter(|&&b| b == b'\n')
                .count() as u32;
        out.rows.push(Row {
            kind,
            source,
            value: Some(value),
            gap,
            line: lx.line,
            col: lx.col,
            start,
            end,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_group_values_by_line() {
        let s = scan("#PVF_File\n[a]\n\t1\t2.5\n\t`x`\n[/a]\n", true).unwrap();
        let kinds: Vec<RowKind> = s.rows.iter().map(|r| r.kind).collect();
        assert_eq!(
            kinds,
            vec![
                RowKind::Open,
                RowKind::NewLine,
                RowKind::SameLine,
                RowKind::NewLine,
                RowKind::Close
            ]
        );
        assert_eq!(s.rows[2].gap, "\t");
        assert_eq!(s.rows[2].value, Some(ScanValue::Float(2.5)));
        assert_eq!(s.first, Some(10));
    }

    #[test]
    fn assembly_nests_blocks_and_warns() {
        let s = scan("[a]\n[b]\n1\n[/a]\n[c]\n[/b]\n[/x]\n[d]\n[/d]\n[d]", true).unwrap();
        let tree = assemble(&s.rows);
        let names: Vec<&str> = tree.sections.iter().map(|x| x.name).collect();
        assert_eq!(names, vec!["a", "b", "c", "d", "d"]);
        assert_eq!(tree.sections[1].parent, Some(0));
        assert_eq!(tree.sections[4].occurrence, 1);
        let codes: Vec<&str> = tree.warnings.iter().map(|w| w.code).collect();
        assert_eq!(
            codes,
            vec![
                "mismatched-close",
                "orphan-close",
                "orphan-close",
                "missing-close"
            ]
        );
        assert_eq!(tree.warnings[0].section, "a/b");
    }

    #[test]
    fn escapes_take_the_numbering_kind() {
        let s = scan("{5=`(DOWN)`} {7=`,`}", false).unwrap();
        assert!(matches!(
            s.rows[0].value,
            Some(ScanValue::Escape("command", 5, false, _))
        ));
        let s = scan("{6=`x`} {5=`y`}", false).unwrap();
        assert!(matches!(
            s.rows[0].value,
            Some(ScanValue::Escape("escape", 6, false, _))
        ));
    }
}

// ------------------------------------------------------------------------------------ assembly

/// A body item: a value line (rows `first..end` of the scan) or a section (its index).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Item {
    Line(usize, usize),
    Section(usize),
}

/// A section of the assembled document (`document.Section`'s fields; `body` in source order).
#[derive(Debug, Clone)]
pub struct SectionInfo<'a> {
    pub name: &'a str,
    pub parent: Option<usize>,
    pub occurrence: u32,
    pub has_end_tag: bool,
    pub line: u32,
    pub col: u32,
    pub start: usize,
    pub end: usize,
    pub before: &'a str,
    pub end_before: Option<&'a str>,
}

/// A parse warning (`document.ParseWarning`): code, message, line, column, section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warning {
    pub code: &'static str,
    pub message: String,
    pub line: u32,
    pub col: u32,
    pub section: String,
}

/// The assembled document: every section (parents before children), warnings, and the bodies
/// (the top level's and each section's, in source order) in one list: `bodies.items(None)` is
/// the top level, `bodies.items(Some(k))` section `k`'s.
#[derive(Debug, Clone, Default)]
pub struct Tree<'a> {
    pub bodies: Bodies,
    pub sections: Vec<SectionInfo<'a>>,
    pub warnings: Vec<Warning>,
}

/// Every body of a document in one allocation: `items[ranges[0]]` is the top level,
/// `items[ranges[k + 1]]` section `k`'s (a document has a body per section: one `Vec` each
/// would be most of its allocations).
#[derive(Debug, Clone, Default)]
pub struct Bodies {
    pub items: Vec<Item>,
    pub ranges: Vec<(u32, u32)>,
}

impl Bodies {
    /// The body of section `k`, or the top level's (None).
    pub fn items(&self, k: Option<usize>) -> &[Item] {
        let (a, b) = self.ranges[k.map_or(0, |k| k + 1)];
        &self.items[a as usize..b as usize]
    }

    /// Items placed in source order with their owner (0: the top level, `k + 1`: section `k`),
    /// grouped by owner, each group keeping that order (a counting sort).
    fn group(placed: &[(u32, Item)], owners: usize) -> Bodies {
        let mut ends = vec![0u32; owners + 1];
        for &(owner, _) in placed {
            ends[owner as usize] += 1;
        }
        let mut at = 0u32;
        let mut ranges = Vec::with_capacity(owners + 1);
        for count in ends.iter_mut() {
            ranges.push((at, at + *count));
            *count = at; // from here on: the next free slot of that owner
            at = ranges.last().map_or(0, |r| r.1);
        }
        let mut items = vec![Item::Line(0, 0); placed.len()];
        for &(owner, item) in placed {
            let slot = &mut ends[owner as usize];
            items[*slot as usize] = item;
            *slot += 1;
        }
        Bodies { items, ranges }
    }
}

impl Tree<'_> {
    /// Section names from the top level down, joined by `/` (`Section.path`).
    pub fn path(&self, mut k: usize) -> String {
        let mut names = vec![self.sections[k].name];
        while let Some(p) = self.sections[k].parent {
            names.push(self.sections[p].name);
            k = p;
        }
        names.reverse();
        names.join("/")
    }
}

/// Tags and value lines in source order (`docparse`'s events).
#[derive(Debug, Clone, Copy)]
enum Event {
    Tag(usize),
    Line(usize, usize),
}

fn events(rows: &[Row<'_>]) -> Vec<Event> {
    let mut out: Vec<Event> = Vec::with_capacity(rows.len());
    for (i, row) in rows.iter().enumerate() {
        match row.kind {
            RowKind::Open | RowKind::Close => out.push(Event::Tag(i)),
            RowKind::NewLine => out.push(Event::Line(i, i + 1)),
            RowKind::SameLine => {
                if let Some(Event::Line(_, end)) = out.last_mut() {
                    *end = i + 1;
                }
            }
        }
    }
    out
}

fn open_name(tag: &str) -> &str {
    &tag[1..tag.len() - 1]
}

fn close_name(tag: &str) -> &str {
    &tag[2..tag.len() - 1]
}

/// Which opening tags have a matching close, and every name closed somewhere (`_pairing`).
fn pairing<'a>(rows: &[Row<'a>], events: &[Event]) -> (Vec<bool>, FxHashSet<&'a str>) {
    let mut paired = vec![false; events.len()];
    let mut closed: FxHashSet<&str> = FxHashSet::default();
    let mut stack: Vec<(&str, usize)> = Vec::new();
    for (idx, event) in events.iter().enumerate() {
        let Event::Tag(r) = *event else { continue };
        let row = &rows[r];
        if row.kind == RowKind::Close {
            let name = close_name(row.source);
            closed.insert(name);
            if let Some(pos) = stack.iter().rposition(|(n, _)| *n == name) {
                paired[stack[pos].1] = true;
                stack.truncate(pos);
            }
        } else {
            stack.push((open_name(row.source), idx));
        }
    }
    (paired, closed)
}

/// Nest sections and place value lines (`docparse._assemble`): a section whose name is closed
/// later is a block; the warnings are the reference's, in its order.
pub fn assemble<'a>(rows: &[Row<'a>]) -> Tree<'a> {
    let events = events(rows);
    let (paired, closed) = pairing(rows, &events);
    let opened = rows.iter().filter(|r| r.kind == RowKind::Open).count();
    // (owner, item) in source order: 0 the top level, k + 1 section k (grouped at the end)
    let owner = |container: Option<usize>| container.map_or(0, |k| k as u32 + 1);
    let mut placed: Vec<(u32, Item)> = Vec::with_capacity(events.len());
    let mut tree = Tree {
        sections: Vec::with_capacity(opened),
        ..Tree::default()
    };
    let mut containers: Vec<usize> = Vec::new();
    let mut open_stack: Vec<usize> = Vec::new();
    let mut counts: FxHashMap<(Option<usize>, &str), u32> =
        FxHashMap::with_capacity_and_hasher(opened, Default::default());
    let mut target: Option<usize> = None;
    for (idx, event) in events.iter().enumerate() {
        let r = match *event {
            Event::Line(first, end) => {
                placed.push((owner(target), Item::Line(first, end)));
                if let Some(&top) = open_stack.last() {
                    tree.sections[top].end = rows[end - 1].end;
                }
                continue;
            }
            Event::Tag(r) => r,
        };
        let row = &rows[r];
        if row.kind == RowKind::Close {
            close(&mut tree, row, &mut containers, &mut open_stack, &closed);
            target = containers.last().copied();
            continue;
        }
        let name = open_name(row.source);
        let parent = containers.last().copied();
        let seen = counts.entry((parent, name)).or_insert(0);
        let occurrence = *seen;
        *seen += 1;
        let k = tree.sections.len();
        tree.sections.push(SectionInfo {
            name,
            parent,
            occurrence,
            has_end_tag: false,
            line: row.line,
            col: row.col,
            start: row.start,
            end: row.end,
            before: row.gap,
            end_before: None,
        });
        placed.push((owner(parent), Item::Section(k)));
        open_stack.push(k);
        if paired[idx] {
            containers.push(k);
        }
        target = Some(k);
    }
    tree.bodies = Bodies::group(&placed, tree.sections.len());
    for &k in &open_stack {
        let sec = &tree.sections[k];
        if closed.contains(&sec.name) && !sec.has_end_tag {
            let warning = Warning {
                code: "missing-close",
                message: format!("[{}] is never closed", sec.name),
                line: sec.line,
                col: sec.col,
                section: tree.path(k),
            };
            tree.warnings.push(warning);
        }
    }
    tree
}

/// A `[/name]` tag: close the innermost open block of that name, with the warnings it causes.
fn close<'a>(
    tree: &mut Tree<'a>,
    row: &Row<'a>,
    containers: &mut Vec<usize>,
    open_stack: &mut Vec<usize>,
    closed: &FxHashSet<&str>,
) {
    let tag = row.source;
    let name = close_name(tag);
    match containers
        .iter()
        .rposition(|&k| tree.sections[k].name == name)
    {
        None => tree.warnings.push(Warning {
            code: "orphan-close",
            message: format!("{tag} closes nothing"),
            line: row.line,
            col: row.col,
            section: name.to_owned(),
        }),
        Some(hit) => {
            let closing = &mut tree.sections[containers[hit]];
            closing.has_end_tag = true;
            closing.end = row.end;
            closing.end_before = Some(row.gap);
            containers.truncate(hit);
        }
    }
    if let Some(k) = open_stack
        .iter()
        .rposition(|&s| tree.sections[s].name == name)
    {
        for &inner in &open_stack[k + 1..] {
            let sec = &tree.sections[inner];
            if closed.contains(&sec.name) && !sec.has_end_tag {
                let warning = Warning {
                    code: "mismatched-close",
                    message: format!("{tag} closes [{name}] while [{}] is still open", sec.name),
                    line: row.line,
                    col: row.col,
                    section: tree.path(inner),
                };
                tree.warnings.push(warning);
            }
        }
        open_stack.truncate(k);
    }
}

// ------------------------------------------------------------------------------ owned document

/// Text held by an [`OwnedDocument`]: a byte range of its text, or a string of its own (a
/// backtick string whose doubled backticks were undone).
#[derive(Debug, Clone, PartialEq)]
pub enum Text {
    Range(usize, usize),
    Owned(String),
}

/// [`ScanValue`] without borrows.
#[derive(Debug, Clone, PartialEq)]
pub enum OwnedValue {
    Integer(Text),
    Float(f64),
    Str(Text),
    Link(Text, Text, Option<Text>),
    Escape(&'static str, u32, bool, OwnedPayload),
}

/// [`EscapePayload`] without borrows.
#[derive(Debug, Clone, PartialEq)]
pub enum OwnedPayload {
    Str(Text),
    Int(Text),
}

/// [`Row`] without borrows (`source` and `gap` as byte ranges; `start`/`end` stay characters).
#[derive(Debug, Clone, PartialEq)]
pub struct OwnedRow {
    pub kind: RowKind,
    pub source: Text,
    pub value: Option<OwnedValue>,
    pub gap: Text,
    pub line: u32,
    pub col: u32,
    pub start: usize,
    pub end: usize,
}

/// [`SectionInfo`] without borrows.
#[derive(Debug, Clone)]
pub struct OwnedSection {
    pub name: Text,
    pub parent: Option<usize>,
    pub occurrence: u32,
    pub has_end_tag: bool,
    pub line: u32,
    pub col: u32,
    pub start: usize,
    pub end: usize,
    pub before: Text,
    pub end_before: Option<Text>,
}

/// A scanned and assembled document that owns its text: what a lazily built model keeps to make
/// a section's body when it is first asked for.
#[derive(Debug, Clone)]
pub struct OwnedDocument {
    pub text: String,
    pub rows: Vec<OwnedRow>,
    pub bodies: Bodies,
    pub sections: Vec<OwnedSection>,
    pub warnings: Vec<Warning>,
    pub first: Option<usize>,
    pub last: usize,
}

impl OwnedDocument {
    /// Scan and assemble `text` (the lexer's error when it does not lex).
    pub fn new(text: &str, classic: bool) -> Result<Self, TextError> {
        let scanned = scan(text, classic)?;
        let tree = assemble(&scanned.rows);
        let base = text.as_ptr() as usize;
        let range = |s: &str| {
            let at = s.as_ptr() as usize - base;
            Text::Range(at, at + s.len())
        };
        let cow = |s: &Cow<'_, str>| match s {
            Cow::Borrowed(b) => range(b),
            Cow::Owned(o) => Text::Owned(o.clone()),
        };
        let rows = scanned
            .rows
            .iter()
            .map(|r| OwnedRow {
                kind: r.kind,
                source: range(r.source),
                value: r.value.as_ref().map(|v| match v {
                    ScanValue::Integer(w) => OwnedValue::Integer(range(w)),
                    ScanValue::Float(f) => OwnedValue::Float(*f),
                    ScanValue::Str(s) => OwnedValue::Str(cow(s)),
                    ScanValue::Link(id, key, display) => {
                        OwnedValue::Link(range(id), range(key), display.as_ref().map(cow))
                    }
                    ScanValue::Escape(kind, number, raw, payload) => OwnedValue::Escape(
                        kind,
                        *number,
                        *raw,
                        match payload {
                            EscapePayload::Str(s) => OwnedPayload::Str(cow(s)),
                            EscapePayload::Int(w) => OwnedPayload::Int(range(w)),
                        },
                    ),
                }),
                gap: range(r.gap),
                line: r.line,
                col: r.col,
                start: r.start,
                end: r.end,
            })
            .collect();
        let sections = tree
            .sections
            .into_iter()
            .map(|s| OwnedSection {
                name: range(s.name),
                parent: s.parent,
                occurrence: s.occurrence,
                has_end_tag: s.has_end_tag,
                line: s.line,
                col: s.col,
                start: s.start,
                end: s.end,
                before: range(s.before),
                end_before: s.end_before.map(range),
            })
            .collect();
        Ok(OwnedDocument {
            text: text.to_owned(),
            rows,
            bodies: tree.bodies,
            sections,
            warnings: tree.warnings,
            first: scanned.first,
            last: scanned.last,
        })
    }

    /// The text a [`Text`] stands for.
    pub fn str<'s>(&'s self, t: &'s Text) -> &'s str {
        match t {
            Text::Range(a, b) => &self.text[*a..*b],
            Text::Owned(s) => s,
        }
    }
}
