//! `#PVF_File` text → script units, identical to `moddesk.pvf.format.text.compile_script`.
//!
//! The lexer follows `format.text.lex` rule by rule (same token forms, same error codes, messages
//! and offsets, same line counting: lines inside escape and link payloads are not counted). String
//! units are compiled against a *local* string list (distinct strings in first-occurrence order):
//! the caller interns those into the archive's string table or pools — where the reference's
//! `StringSink.intern` lives — and `encode` then writes the final references. Interning the list in
//! order gives exactly the references (and the table growth) of the reference's one-by-one interns.
//!
//! Python's `\d` matches every Unicode decimal digit; this lexer reads ASCII digits only, so
//! `supported` refuses texts holding any other numeric character and the caller uses the reference.

use std::borrow::Cow;

use rayon::prelude::*;
use rustc_hash::FxHashMap;

pub const SCRIPT_MAGIC: [u8; 2] = [0xB0, 0xD0];

/// A compile error: `code`, `message` and the *character* offset (as Python counts) it names.
/// When `token` is set, the message is `"unknown token " + repr(token) + message` (Python's repr
/// of a string is left to Python).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextError {
    pub code: &'static str,
    pub message: String,
    pub offset: usize,
    pub token: Option<String>,
}

/// One lexeme's payload (the reference's `Lexeme.kind` / `value`).
#[derive(Debug, Clone, PartialEq)]
pub enum Token<'a> {
    Int(&'a str),
    Float(&'a str),
    Section(&'a str),
    Str(Cow<'a, str>),
    Escape {
        number: u32,
        raw: bool,
        payload: Payload<'a>,
    },
    Link {
        id: &'a str,
        key: &'a str,
        display: Option<Cow<'a, str>>,
    },
}

/// An escape's payload: a string (backticks removed, doubled backticks undone) or an integer word.
#[derive(Debug, Clone, PartialEq)]
pub enum Payload<'a> {
    Str(Cow<'a, str>),
    Int(&'a str),
}

/// A lexeme with its source span (byte offsets) and 1-based line / character column.
#[derive(Debug, Clone, PartialEq)]
pub struct Lexeme<'a> {
    pub token: Token<'a>,
    pub start: usize,
    pub end: usize,
    pub line: u32,
    pub col: u32,
}

/// Digit runs longer than this go to the reference, which converts them with Python's `int()`
/// under its configurable limit (`sys.get_int_max_str_digits()`, never below 640).
pub const LONGEST_DIGIT_RUN: usize = 640;

/// Whether the native lexer reads `text` exactly as the reference does: no non-ASCII numerals,
/// no digit run longer than [`LONGEST_DIGIT_RUN`].
pub fn supported(text: &str) -> bool {
    // A run of more than LONGEST_DIGIT_RUN digits covers LONGEST_DIGIT_RUN + 1 consecutive
    // positions, so it covers one of every (LONGEST_DIGIT_RUN + 1)-th position: only the runs
    // through those are measured (a text shorter than the limit is not looked at).
    let b = text.as_bytes();
    let step = LONGEST_DIGIT_RUN + 1;
    let mut probe = LONGEST_DIGIT_RUN;
    while probe < b.len() {
        if b[probe].is_ascii_digit() {
            let lo = b[..probe]
                .iter()
                .rposition(|x| !x.is_ascii_digit())
                .map_or(0, |k| k + 1);
            let hi = b[probe..]
                .iter()
                .position(|x| !x.is_ascii_digit())
                .map_or(b.len(), |k| probe + k);
            if hi - lo > LONGEST_DIGIT_RUN {
                return false;
            }
        }
        probe += step;
    }
    // only non-ASCII characters can be numerals Python's \d reads: skip from one to the next
    let mut rest = text;
    while let Some(k) = next_non_ascii(rest.as_bytes()) {
        // a byte >= 0x80 right after an ASCII byte (or a whole character) starts a character
        let Some(c) = rest[k..].chars().next() else {
            break;
        };
        if !plain_letter(c) && c.is_numeric() {
            return false;
        }
        rest = &rest[k + c.len_utf8()..];
    }
    true
}

/// The position of the first non-ASCII byte of `b` (16 bytes at a time over ASCII runs).
fn next_non_ascii(b: &[u8]) -> Option<usize> {
    let mut i = 0;
    while i + 16 <= b.len() && b[i..i + 16].is_ascii() {
        i += 16;
    }
    b[i..].iter().position(|&x| x >= 0x80).map(|k| i + k)
}

/// CJK ideographs, kana and hangul syllables: frequent in real texts, never numerals (a quick
/// answer before the numeric table lookup).
fn plain_letter(c: char) -> bool {
    matches!(c as u32, 0x3040..=0x30FF | 0x4E00..=0x9FFF | 0xAC00..=0xD7A3)
}

/// The character offset of byte offset `byte` (the reference counts characters).
pub fn char_offset(text: &str, byte: usize) -> usize {
    let head = &text.as_bytes()[..byte.min(text.len())];
    head.iter().filter(|&&b| (b & 0xC0) != 0x80).count()
}

fn error(text: &str, code: &'static str, message: String, byte: usize) -> TextError {
    TextError {
        code,
        message,
        offset: char_offset(text, byte),
        token: None,
    }
}

fn bad_text(text: &str, message: String, byte: usize) -> TextError {
    error(text, "BAD_TEXT", message, byte)
}

fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

fn digits_from(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
    }
    i
}

/// The string opening at `pos` (a backtick) and the byte after its closing backtick.
fn read_backtick(text: &str, pos: usize) -> Result<(Cow<'_, str>, usize), TextError> {
    let b = text.as_bytes();
    let mut j = pos + 1;
    let mut owned: Option<String> = None;
    loop {
        let Some(k) = b[j..].iter().position(|&c| c == b'`').map(|k| k + j) else {
            return Err(bad_text(text, "unterminated string".into(), pos));
        };
        if k + 1 < b.len() && b[k + 1] == b'`' {
            // a doubled backtick is one literal backtick
            owned
                .get_or_insert_with(String::new)
                .push_str(&text[j..k + 1]);
            j = k + 2;
            continue;
        }
        return Ok(match owned {
            Some(mut s) => {
                s.push_str(&text[j..k]);
                (Cow::Owned(s), k + 1)
            }
            None => (Cow::Borrowed(&text[j..k]), k + 1),
        });
    }
}

fn is_comment_line(b: &[u8], pos: usize) -> bool {
    let mut i = pos;
    while i > 0 && matches!(b[i - 1], b' ' | b'\t') {
        i -= 1;
    }
    i == 0 || b[i - 1] == b'\n'
}

/// `_NUMBER.match` at `pos`: the end of the longest number form, or None.
fn number_end(b: &[u8], pos: usize) -> Option<usize> {
    let mut i = pos;
    if i < b.len() && matches!(b[i], b'+' | b'-') {
        i += 1;
    }
    if i < b.len() && b[i].is_ascii_digit() {
        i = digits_from(b, i);
        if i < b.len() && b[i] == b'.' {
            i = digits_from(b, i + 1);
        }
    } else if i + 1 < b.len() && b[i] == b'.' && b[i + 1].is_ascii_digit() {
        i = digits_from(b, i + 1);
    } else {
        return None;
    }
    if i < b.len() && matches!(b[i], b'e' | b'E') {
        let mut j = i + 1;
        if j < b.len() && matches!(b[j], b'+' | b'-') {
            j += 1;
        }
        if j < b.len() && b[j].is_ascii_digit() {
            i = digits_from(b, j);
        }
    }
    Some(i)
}

/// Split script text into lexemes (`format.text.lex`); `#` at the start of a line comments it out.
pub fn lex(text: &str) -> Result<Vec<Lexeme<'_>>, TextError> {
    // about one lexeme per 12 bytes in real texts: one allocation for most
    let mut out = Vec::with_capacity(text.len() / 8 + 4);
    let mut lexer = Lexer::new(text);
    while let Some(lx) = lexer.next_lexeme()? {
        out.push(lx);
    }
    Ok(out)
}

/// The lexer's state: a position and the line counter (`lex`'s `line`, `line_start`).
pub struct Lexer<'a> {
    text: &'a str,
    pos: usize,
    line: u32,
    line_start: usize,
    /// Character column bookkeeping: the character count of `text[..col_byte]`.
    col_byte: usize,
    col_chars: usize,
}

impl<'a> Lexer<'a> {
    pub fn new(text: &'a str) -> Self {
        Lexer {
            text,
            pos: 0,
            line: 1,
            line_start: 0,
            col_byte: 0,
            col_chars: 0,
        }
    }

    /// Characters between `line_start` and `pos` (+1), counted incrementally.
    fn column(&mut self, pos: usize) -> u32 {
        let b = self.text.as_bytes();
        if self.col_byte < self.line_start || self.col_byte > pos {
            self.col_byte = self.line_start;
            self.col_chars = 0;
        }
        if b[self.col_byte..pos].is_ascii() {
            self.col_chars += pos - self.col_byte;
        } else {
            self.col_chars += char_offset(&self.text[self.col_byte..], pos - self.col_byte);
        }
        self.col_byte = pos;
        // line_start moves only forward; columns restart from it
        (self.col_chars + 1) as u32
    }

    pub fn next_lexeme(&mut self) -> Result<Option<Lexeme<'a>>, TextError> {
        let text = self.text;
        let b = text.as_bytes();
        let n = b.len();
        while self.pos < n {
            let c = b[self.pos];
            if is_space(c) {
                if c == b'\n' {
                    self.line += 1;
                    self.line_start = self.pos + 1;
                }
                self.pos += 1;
                continue;
            }
            let start = self.pos;
            let line = self.line;
            if c == b'#' && is_comment_line(b, start) {
                self.pos = b[start..]
                    .iter()
                    .position(|&x| x == b'\n')
                    .map_or(n, |k| start + k);
                continue;
            }
            if self.col_byte < self.line_start {
                self.col_byte = self.line_start;
                self.col_chars = 0;
            }
            let col = self.column(start);
            let (token, end) = match c {
                b'`' => {
                    let (s, end) = read_backtick(text, start)?;
                    (Token::Str(s), end)
                }
                b'[' => {
                    let close = b[start + 1..]
                        .iter()
                        .position(|&x| matches!(x, b']' | b'\r' | b'\n'))
                        .map(|k| start + 1 + k);
                    match close {
                        Some(k) if b[k] == b']' => (Token::Section(&text[start..k + 1]), k + 1),
                        _ => {
                            return Err(bad_text(
                                text,
                                format!("unterminated section tag at line {line}"),
                                start,
                            ))
                        }
                    }
                }
                b'{' => self.escape(start, line)?,
                b'<' => self.link(start, line)?,
                _ => {
                    let end = match number_end(b, start) {
                        Some(e) if e >= n || is_space(b[e]) => e,
                        _ => {
                            let mut end = start;
                            while end < n && !is_space(b[end]) {
                                end += 1;
                            }
                            let token: String = text[start..end].chars().take(40).collect();
                            let mut e = bad_text(text, format!(" at line {line}"), start);
                            e.token = Some(token);
                            return Err(e);
                        }
                    };
                    let word = &text[start..end];
                    if word.bytes().any(|x| matches!(x, b'.' | b'e' | b'E')) {
                        (Token::Float(word), end)
                    } else {
                        (Token::Int(word), end)
                    }
                }
            };
            self.pos = end;
            if matches!(token, Token::Str(_)) {
                // strings may span lines: keep the line counter honest
                if let Some(last) = b[start..end].iter().rposition(|&x| x == b'\n') {
                    self.line += b[start..end].iter().filter(|&&x| x == b'\n').count() as u32;
                    self.line_start = start + last + 1;
                }
            }
            return Ok(Some(Lexeme {
                token,
                start,
                end,
                line,
                col,
            }));
        }
        Ok(None)
    }

    fn escape(&self, start: usize, line: u32) -> Result<(Token<'a>, usize), TextError> {
        let text = self.text;
        let b = text.as_bytes();
        let mut i = start + 1;
        let raw = i < b.len() && b[i] == b'#';
        if raw {
            i += 1;
        }
        let digits_end = digits_from(b, i);
        if digits_end == i || digits_end - i > 3 || digits_end >= b.len() || b[digits_end] != b'=' {
            return Err(bad_text(
                text,
                format!("bad {{N=value}} escape at line {line}"),
                start,
            ));
        }
        let number: u32 = text[i..digits_end].parse().unwrap_or(u32::MAX);
        if number > 255 {
            return Err(bad_text(
                text,
                format!("type {number} is not a byte"),
                start,
            ));
        }
        let mut pos = digits_end + 1;
        let payload = if pos < b.len() && b[pos] == b'`' {
            let (s, end) = read_backtick(text, pos)?;
            pos = end;
            Payload::Str(s)
        } else {
            let mut j = pos;
            if j < b.len() && matches!(b[j], b'+' | b'-') {
                j += 1;
            }
            let end = digits_from(b, j);
            if end == j {
                return Err(bad_text(
                    text,
                    format!("bad escape payload at line {line}"),
                    pos,
                ));
            }
            let word = &text[pos..end];
            pos = end;
            Payload::Int(word)
        };
        if pos >= b.len() || b[pos] != b'}' {
            return Err(bad_text(
                text,
                format!("escape not closed by '}}' at line {line}"),
                pos,
            ));
        }
        Ok((
            Token::Escape {
                number,
                raw,
                payload,
            },
            pos + 1,
        ))
    }

    fn link(&self, start: usize, line: u32) -> Result<(Token<'a>, usize), TextError> {
        let text = self.text;
        let b = text.as_bytes();
        let digits_end = digits_from(b, start + 1);
        if digits_end == start + 1 || !b[digits_end..].starts_with(b"::") {
            return Err(bad_text(
                text,
                format!("bad <id::key> link at line {line}"),
                start,
            ));
        }
        let key_start = digits_end + 2;
        let key_end = b[key_start..]
            .iter()
            .position(|&x| matches!(x, b'`' | b'>' | b'\r' | b'\n'))
            .map_or(b.len(), |k| key_start + k);
        let mut pos = key_end;
        let mut display = None;
        if pos < b.len() && b[pos] == b'`' {
            let (s, end) = read_backtick(text, pos)?;
            display = Some(s);
            pos = end;
        }
        if pos >= b.len() || b[pos] != b'>' {
            return Err(bad_text(
                text,
                format!("link not closed by '>' at line {line}"),
                pos,
            ));
        }
        Ok((
            Token::Link {
                id: &text[start + 1..digits_end],
                key: &text[key_start..key_end],
                display,
            },
            pos + 1,
        ))
    }
}

// ------------------------------------------------------------------------------------ values

/// An integer word's canonical decimal text (Python's `str(int(word))`).
pub fn canonical_int(word: &str) -> String {
    let (negative, digits) = match word.as_bytes().first() {
        Some(b'-') => (true, &word[1..]),
        Some(b'+') => (false, &word[1..]),
        _ => (false, word),
    };
    let digits = digits.trim_start_matches('0');
    if digits.is_empty() {
        "0".into()
    } else if negative {
        format!("-{digits}")
    } else {
        digits.into()
    }
}

/// A 4-byte unit value from an integer word (i32 or u32 range), or the reference's message.
pub fn int_value(word: &str) -> Result<u32, String> {
    // the common word (a sign, at most ten significant digits) without the canonical text
    let (negative, digits) = match word.as_bytes().first() {
        Some(b'-') => (true, &word[1..]),
        Some(b'+') => (false, &word[1..]),
        _ => (false, word),
    };
    let significant = digits.trim_start_matches('0');
    if significant.len() <= 10 && digits.bytes().all(|b| b.is_ascii_digit()) {
        let magnitude = significant
            .bytes()
            .fold(0u64, |v, b| v * 10 + u64::from(b - b'0'));
        if negative && magnitude <= 1 << 31 {
            return Ok((magnitude as i64).wrapping_neg() as u32);
        }
        if !negative && magnitude <= 0xFFFF_FFFF {
            return Ok(magnitude as u32);
        }
    }
    int_value_slow(word)
}

/// [`int_value`] through the canonical text (its error message names it).
fn int_value_slow(word: &str) -> Result<u32, String> {
    let canonical = canonical_int(word);
    let (negative, digits) = match canonical.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, canonical.as_str()),
    };
    let fits = digits.len() <= 10;
    let magnitude: u64 = if fits {
        digits.parse().unwrap_or(u64::MAX)
    } else {
        u64::MAX
    };
    if negative && magnitude <= 1 << 31 {
        Ok((magnitude as i64).wrapping_neg() as u32)
    } else if !negative && magnitude <= 0xFFFF_FFFF {
        Ok(magnitude as u32)
    } else {
        Err(format!("integer {canonical} does not fit in 32 bits"))
    }
}

/// The float32 bits of a float word (`np.float32(float(word))`: parsed as f64, then rounded).
pub fn float_bits(word: &str) -> u32 {
    let f: f64 = word.parse().unwrap_or(f64::NAN);
    (f as f32).to_bits()
}

/// The float32 bits of a float written in script text, as the compiler stores it
/// (`format.text.text_float_bits`): an error when float32 cannot hold it (`1e39` would become an
/// infinity the author did not write).
pub fn text_float_bits(word: &str) -> Result<u32, String> {
    let bits = float_bits(word);
    if bits & 0x7FFF_FFFF == 0x7F80_0000 {
        Err(format!("float {word} does not fit in float32"))
    } else {
        Ok(bits)
    }
}

// ---------------------------------------------------------------------------------- numbering

/// Which numbering a text's `{N=…}` escapes use (`format.text.escape_numbering`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Numbering {
    Classic,
    Nkpi,
    Legacy,
}

const NKPI_ONLY_ESCAPES: [u32; 6] = [0, 1, 5, 7, 9, 10];

/// The numbering of `lexemes` for a family; mixed NKPI/legacy markers are BAD_TEXT.
pub fn escape_numbering(
    text: &str,
    lexemes: &[Lexeme<'_>],
    classic: bool,
) -> Result<Numbering, TextError> {
    if classic {
        return Ok(Numbering::Classic);
    }
    let mut legacy_at: Option<&Lexeme<'_>> = None;
    let mut nkpi_at: Option<&Lexeme<'_>> = None;
    for lx in lexemes {
        let Token::Escape {
            number,
            raw,
            payload,
        } = &lx.token
        else {
            continue;
        };
        if *raw || (*number == 6 && matches!(payload, Payload::Str(_))) {
            legacy_at = legacy_at.or(Some(lx));
        } else if NKPI_ONLY_ESCAPES.contains(number) {
            nkpi_at = nkpi_at.or(Some(lx));
        }
    }
    match (legacy_at, nkpi_at) {
        (None, _) => Ok(Numbering::Nkpi),
        (Some(_), None) => Ok(Numbering::Legacy),
        (Some(legacy), Some(nkpi)) => Err(bad_text(
            text,
            format!(
                "escapes mix the NKPI numbering (line {}: {{5=…}} command, {{7=…}} separator) with the \
                 classic view (line {}: {{6=…}}, {{#N=…}}); write NKPI text in one numbering",
                nkpi.line, legacy.line
            ),
            legacy.start,
        )),
    }
}

/// NKPI raw type of a classic view type (`VIEW_TO_NKPI`).
fn view_to_nkpi(view: u32) -> Option<u32> {
    match view {
        2 => Some(0),
        3 => Some(1),
        4 => Some(2),
        5 => Some(3),
        6 => Some(5),
        7 => Some(6),
        8 => Some(7),
        _ => None,
    }
}

/// The unit type an escape stands for in `numbering` (`format.text._escape_type`).
pub fn escape_type(number: u32, raw: bool, numbering: Numbering) -> Result<u32, String> {
    match numbering {
        Numbering::Classic if raw => Err(format!(
            "{{#{number}=…}} is an NKPI raw type; classic uses {{N=…}}"
        )),
        Numbering::Classic | Numbering::Nkpi => Ok(number),
        Numbering::Legacy if raw => Ok(number),
        Numbering::Legacy => view_to_nkpi(number)
            .ok_or_else(|| format!("classic type {number} has no NKPI equivalent; use {{#N=…}}")),
    }
}

// ------------------------------------------------------------------------------------ compile

/// A compiled text: units whose string references are positions in `strings` (listed in
/// `string_units`), and the first error if any — then `units` and `strings` hold what the
/// reference had compiled and interned before it (lexing and numbering errors: nothing).
#[derive(Debug, Clone, Default)]
pub struct Compiled<'a> {
    pub units: Vec<(u8, u32)>,
    pub string_units: Vec<u32>,
    pub strings: Vec<Cow<'a, str>>,
    pub sites: Vec<(u32, u32)>,
    pub error: Option<TextError>,
}

impl Compiled<'_> {
    /// The same, holding its strings (to outlive the text).
    pub fn into_owned(self) -> Compiled<'static> {
        Compiled {
            units: self.units,
            string_units: self.string_units,
            strings: self
                .strings
                .into_iter()
                .map(|s| Cow::Owned(s.into_owned()))
                .collect(),
            sites: self.sites,
            error: self.error,
        }
    }
}

/// Many texts compiled at once: one string list for all, in the order the texts would intern
/// them one after another (`string_ends[i]`: the strings that exist after text `i`).
#[derive(Debug, Default)]
pub struct Batch {
    /// Per text (None: only the reference reads it): units against the batch's `strings`.
    pub texts: Vec<Option<Compiled<'static>>>,
    pub strings: Vec<String>,
    pub sites: Vec<(u32, u32)>,
    pub string_ends: Vec<u32>,
}

/// Compile `texts` on every core (None entries, and texts only the reference reads exactly —
/// see [`supported`] — are skipped: the caller compiles them), then merge their strings in text
/// order.
pub fn compile_many(texts: &[Option<&str>], classic: bool) -> Batch {
    let compiled: Vec<Option<Compiled<'_>>> = texts
        .par_iter()
        .map(|s| s.filter(|s| supported(s)).map(|s| compile(s, classic)))
        .collect();
    let mut global =
        Interner::with_capacity(compiled.iter().flatten().map(|c| c.strings.len()).sum());
    let mut batch = Batch {
        texts: Vec::with_capacity(compiled.len()),
        ..Batch::default()
    };
    for text in compiled {
        let text = text.map(|mut c| {
            let strings = std::mem::take(&mut c.strings);
            let map: Vec<u32> = strings
                .into_iter()
                .zip(&c.sites)
                .map(|(s, &site)| global.intern(s, site))
                .collect();
            for &k in &c.string_units {
                let unit = &mut c.units[k as usize];
                unit.1 = map[unit.1 as usize];
            }
            c.sites = Vec::new();
            c.into_owned()
        });
        batch.string_ends.push(global.strings.len() as u32);
        batch.texts.push(text);
    }
    (batch.strings, batch.sites) = global.into_owned();
    batch
}

/// Distinct strings in first-occurrence order, with where each first occurs: (line, byte offset
/// of its lexeme) — an error interning it names that line and offset, as the reference does.
#[derive(Default)]
pub struct Interner<'a> {
    pub strings: Vec<Cow<'a, str>>,
    pub sites: Vec<(u32, u32)>,
    index: FxHashMap<Cow<'a, str>, u32>,
}

impl<'a> Interner<'a> {
    /// An interner sized for about `n` strings.
    pub fn with_capacity(n: usize) -> Self {
        Interner {
            strings: Vec::with_capacity(n),
            sites: Vec::with_capacity(n),
            index: FxHashMap::with_capacity_and_hasher(n, Default::default()),
        }
    }

    pub fn intern(&mut self, s: Cow<'a, str>, site: (u32, u32)) -> u32 {
        if let Some(&i) = self.index.get(s.as_ref()) {
            return i;
        }
        let i = self.strings.len() as u32;
        self.strings.push(s.clone());
        self.sites.push(site);
        self.index.insert(s, i);
        i
    }

    /// The strings as owned values (to outlive the text).
    pub fn into_owned(self) -> (Vec<String>, Vec<(u32, u32)>) {
        (
            self.strings.into_iter().map(Cow::into_owned).collect(),
            self.sites,
        )
    }
}

/// Compile `text` into units of the classic or NKPI family (`format.text.compile_script`), the
/// strings interned into `interner` (which may be shared by many texts: references are its
/// positions). The string units' positions are appended to `string_units`.
pub fn compile_into<'a>(
    text: &'a str,
    classic: bool,
    interner: &mut Interner<'a>,
    units: &mut Vec<(u8, u32)>,
    string_units: &mut Vec<u32>,
) -> Result<(), TextError> {
    let lexemes = lex(text)?;
    let has_escape = lexemes
        .iter()
        .any(|lx| matches!(lx.token, Token::Escape { .. }));
    let numbering = if has_escape {
        escape_numbering(text, &lexemes, classic)?
    } else if classic {
        Numbering::Classic
    } else {
        Numbering::Nkpi
    };
    let (int_t, float_t, section_t, string_t) = if classic { (2, 4, 5, 7) } else { (0, 2, 3, 6) };
    for lx in lexemes.iter() {
        let at_line =
            |message: String| bad_text(text, format!("{message} (line {})", lx.line), lx.start);
        let site = (lx.line, lx.start as u32);
        let mut push_string = |t: u8, s: Cow<'a, str>, units: &mut Vec<(u8, u32)>| {
            string_units.push(units.len() as u32);
            units.push((t, interner.intern(s, site)));
        };
        match &lx.token {
            Token::Int(word) => units.push((int_t, int_value(word).map_err(at_line)?)),
            Token::Float(word) => units.push((float_t, text_float_bits(word).map_err(at_line)?)),
            Token::Section(tag) => push_string(section_t, Cow::Borrowed(tag), units),
            Token::Str(s) => push_string(string_t, s.clone(), units),
            Token::Link { id, key, .. } => {
                if !classic {
                    return Err(at_line(
                        "NKPI has no <id::key> links; write {8=`<t::key>`}".into(),
                    ));
                }
                units.push((9, int_value(id).map_err(at_line)?));
                push_string(10, Cow::Borrowed(key), units);
            }
            Token::Escape {
                number,
                raw,
                payload,
            } => {
                let t = escape_type(*number, *raw, numbering).map_err(at_line)? as u8;
                match payload {
                    Payload::Str(s) => push_string(t, s.clone(), units),
                    Payload::Int(word) => units.push((t, int_value(word).map_err(at_line)?)),
                }
            }
        }
    }
    Ok(())
}

/// Compile one text with its own string list.
pub fn compile(text: &str, classic: bool) -> Compiled<'_> {
    let mut interner = Interner::with_capacity(text.len() / 48 + 4);
    let mut out = Compiled {
        units: Vec::with_capacity(text.len() / 10 + 4),
        ..Compiled::default()
    };
    if let Err(e) = compile_into(
        text,
        classic,
        &mut interner,
        &mut out.units,
        &mut out.string_units,
    ) {
        out.error = Some(e);
    }
    out.strings = interner.strings;
    out.sites = interner.sites;
    out
}

/// The script bytes of `units` (magic for classic) with string unit values replaced by `refs`
/// (`refs[local index]`); None when a local index has no reference.
pub fn encode(
    units: &[(u8, u32)],
    string_units: &[u32],
    refs: &[u32],
    classic: bool,
    out: &mut Vec<u8>,
) -> Option<()> {
    if classic {
        out.extend_from_slice(&SCRIPT_MAGIC);
    }
    let base = out.len();
    for &(t, v) in units {
        out.push(t);
        out.extend_from_slice(&v.to_le_bytes());
    }
    for &k in string_units {
        let at = base + 5 * k as usize + 1;
        let local = u32::from_le_bytes([out[at], out[at + 1], out[at + 2], out[at + 3]]);
        let r = *refs.get(local as usize)?;
        out[at..at + 4].copy_from_slice(&r.to_le_bytes());
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compiles_classic_units() {
        let c = compile("#PVF_File\n\n[name]\n\t`Sword`\t12\t1.5\n[/name]\n", true);
        assert!(c.error.is_none());
        assert_eq!(
            c.units,
            vec![(5, 0), (7, 1), (2, 12), (4, 1.5f32.to_bits()), (5, 2)]
        );
        assert_eq!(c.strings, vec!["[name]", "Sword", "[/name]"]);
        let b = compile_many(
            &[Some("[a] `x`"), None, Some("`x` `y` 99999999999 `z`")],
            true,
        );
        assert_eq!(b.strings, vec!["[a]", "x", "y"]);
        assert_eq!(b.string_ends, vec![2, 2, 3]);
        assert_eq!(b.texts[2].as_ref().unwrap().units, vec![(7, 1), (7, 2)]);
    }

    #[test]
    fn errors_name_line_and_offset() {
        let c = compile("#PVF_File\n\n99999999999\n", true);
        let e = c.error.unwrap();
        assert_eq!(
            e.message,
            "integer 99999999999 does not fit in 32 bits (line 3)"
        );
        assert_eq!(e.offset, 11);
        let e = lex("a`b").unwrap_err();
        assert_eq!(e.token.as_deref(), Some("a`b"));
    }

    #[test]
    fn nkpi_numbering() {
        let c = compile("{5=`(DOWN)`} {7=`,`}", false);
        assert_eq!(c.units, vec![(5, 0), (7, 1)]);
        let c = compile("{6=`(DOWN)`} {5=`x`}", false);
        assert!(c.error.unwrap().message.starts_with("escapes mix"));
    }

    #[test]
    fn int_ranges() {
        assert_eq!(int_value("-2147483648"), Ok(0x8000_0000));
        assert_eq!(int_value("4294967295"), Ok(u32::MAX));
        assert!(int_value("-2147483649").is_err());
        assert_eq!(canonical_int("-000"), "0");
    }

    #[test]
    fn float32_overflow_is_bad_text() {
        // 2^128 - 2^103 is the least double that rounds to infinity; just below it rounds to MAX
        assert_eq!(text_float_bits("3.4028235e38"), Ok(f32::MAX.to_bits()));
        assert_eq!(
            text_float_bits("3.4028235677973362e38"),
            Ok(f32::MAX.to_bits())
        );
        assert!(text_float_bits("340282356779733661637539395458142568448.0").is_err());
        assert_eq!(text_float_bits("1e-50"), Ok(0));
        let e = compile(
            "[a]
	1.5	-1e39
",
            true,
        )
        .error
        .unwrap();
        assert_eq!(
            (e.code, e.message.as_str(), e.offset),
            (
                "BAD_TEXT",
                "float -1e39 does not fit in float32 (line 2)",
                9
            )
        );
        assert_eq!(float_bits("1e39"), 0x7F80_0000); // the document keeps what the cast makes
    }
}
