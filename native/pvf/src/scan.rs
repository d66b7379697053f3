//! The document scanner behind `moddesk.pvf.docparse.build_document`: script text → the flat
//! rows the Python `Document` is assembled from (tags, and values grouped into source lines),
//! identical to the reference's `_slow_events` / `_scan`. Spans are *character* offsets, as
//! Python counts them; lines and columns are `format.text.lex`'s (the lexer is `compile::Lexer`).

use std::borrow::Cow;

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
