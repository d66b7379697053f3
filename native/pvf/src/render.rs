//! Script units → pvfUtility `#PVF_File` text, byte-identical to `moddesk.pvf.format.text.render_script`
//! (and so to the bulk renderer `format/bulk.py`), optionally case-folded as the content index stores it.

use std::borrow::Cow;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::rc::Rc;

use crate::strings::{replace, Strings};

pub const HEADER: &[u8] = b"#PVF_File";
const OPEN: u8 = 0;
const CLOSE: u8 = 1;
const NUM: u8 = 2;
const STR: u8 = 3;

/// Classic string links resolved up front (`LinkTable`): (link id, key text) → (text, folded text).
pub type Links = HashMap<(i32, Vec<u8>), (Vec<u8>, Vec<u8>)>;

/// How the texts are made: case-folded or not, and what follows each text.
#[derive(Debug, Clone, Default)]
pub struct RenderOptions {
    pub fold: bool,
    pub terminator: Vec<u8>,
}

/// The unit numbering of a family (`_view_items`' int/float/string types).
#[derive(Debug, Clone, Copy)]
pub struct Numbering {
    pub classic: bool,
    int_t: u8,
    float_t: u8,
}

impl Numbering {
    pub fn new(classic: bool) -> Self {
        if classic {
            Numbering {
                classic,
                int_t: 2,
                float_t: 4,
            }
        } else {
            Numbering {
                classic,
                int_t: 0,
                float_t: 2,
            }
        }
    }

    pub fn is_string(&self, t: u8) -> bool {
        if self.classic {
            matches!(t, 5 | 6 | 7 | 8 | 10)
        } else {
            matches!(t, 3 | 5 | 6 | 7 | 8 | 10)
        }
    }

    /// The classic view type of a raw unit type (NKPI_TO_VIEW; -1 when none).
    fn view(&self, t: u8) -> i32 {
        if self.classic {
            return t as i32;
        }
        match t {
            0 => 2,
            1 => 3,
            2 => 4,
            3 => 5,
            5 => 6,
            6 => 7,
            7 => 8,
            _ => -1,
        }
    }
}

/// The units of a script: (type, value) pairs, or None for a classic entry without the B0 D0 magic.
pub fn units(data: &[u8], classic: bool) -> Option<Vec<(u8, u32)>> {
    let start = if classic {
        if data.len() < 2 || data[0] != 0xB0 || data[1] != 0xD0 {
            return None;
        }
        2
    } else {
        0
    };
    let body = &data[start..];
    Some(
        body.chunks_exact(5)
            .map(|u| (u[0], u32::from_le_bytes([u[1], u[2], u[3], u[4]])))
            .collect(),
    )
}

/// Decode a script's units into `out` (cleared first); false for a classic entry without B0 D0.
pub fn units_into(data: &[u8], classic: bool, out: &mut Vec<(u8, u32)>) -> bool {
    out.clear();
    let body = if classic {
        if data.len() < 2 || data[0] != 0xB0 || data[1] != 0xD0 {
            return false;
        }
        &data[2..]
    } else {
        data
    };
    out.extend(
        body.chunks_exact(5)
            .map(|u| (u[0], u32::from_le_bytes([u[1], u[2], u[3], u[4]]))),
    );
    true
}

/// Append the decimal form of `v` (no allocation).
fn push_int(out: &mut Vec<u8>, v: i64) {
    let mut digits = [0u8; 20];
    let mut n = v.unsigned_abs();
    let mut k = digits.len();
    loop {
        k -= 1;
        digits[k] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    if v < 0 {
        out.push(b'-');
    }
    out.extend_from_slice(&digits[k..]);
}

/// Append `{raw=v}` (an escape of a unit's raw type and signed value).
fn push_escape(out: &mut Vec<u8>, raw: u8, v: i64) {
    out.push(b'{');
    push_int(out, raw as i64);
    out.push(b'=');
    push_int(out, v);
    out.push(b'}');
}

/// Shortest float32 text with a dot (numpy's `format_float_positional(unique=True, trim="0")`),
/// or None for NaN, infinities and -0.0.
pub fn format_float(bits: u32) -> Option<String> {
    let f = f32::from_bits(bits);
    if !f.is_finite() || (f == 0.0 && f.is_sign_negative()) {
        return None;
    }
    let mut s = format!("{f}");
    if !s.contains('.') {
        s.push_str(".0");
    }
    Some(s)
}

fn signed(v: u32) -> i64 {
    v as i32 as i64
}

fn quote_into(out: &mut Vec<u8>, s: &[u8]) {
    out.push(b'`');
    for &b in s {
        out.push(b);
        if b == b'`' {
            out.push(b'`');
        }
    }
    out.push(b'`');
}

fn is_tag(s: &[u8]) -> bool {
    s.len() >= 2
        && s[0] == b'['
        && s[s.len() - 1] == b']'
        && !s[1..s.len() - 1].contains(&b']')
        && !s.contains(&b'\n')
        && !s.contains(&b'\r')
}

/// Per-line layouts of the sections pvfine lays out (`SECTION_LAYOUT`); -1 = "index".
fn section_layout(tag: &[u8]) -> i64 {
    match tag {
        b"[level info]" => -1,
        b"[skill data up]" => 7,
        b"[skill levelup]" => 3,
        b"[input item]" => 2,
        b"[output item]" => 2,
        _ => 0,
    }
}

/// A string piece as `string_piece` made it: its kind, its text and its unfolded tag.
type CachedPiece = (u8, Rc<[u8]>, Rc<[u8]>);

/// Units of a list rendered at a time (`Renderer::render_list_in_chunks`); smaller lists at once.
pub const LIST_CHUNK: usize = 1 << 16;

/// String pieces a renderer made, by (unit type, value): the kind, the text and the unfolded tag
/// (None: the string does not resolve). One per task, never shared between threads.
#[derive(Default)]
pub struct PieceCache {
    map: HashMap<(u8, u32), Option<CachedPiece>, BuildHasherDefault<UnitHasher>>,
}

/// A multiplicative hash for small integer keys (the default SipHash costs more than the
/// lookup it guards; the keys are not chosen by an attacker who gains from collisions here).
#[derive(Default)]
pub struct UnitHasher(u64);

impl Hasher for UnitHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u8(b);
        }
    }

    fn write_u8(&mut self, v: u8) {
        self.write_u64(v as u64);
    }

    fn write_u32(&mut self, v: u32) {
        self.write_u64(v as u64);
    }

    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
}

/// A rendered unit: its kind, its text's span in the scratch buffer and its unfolded tag's span.
type Piece = (u8, (usize, usize), (usize, usize));

/// One rendered item: its kind, its text (folded when folding) and, for tags, the unfolded tag.
struct Item {
    kind: u8,
    text: (usize, usize),
    tag: (usize, usize),
    count: i64,
}

/// Renders scripts of one archive (one family and string source).
pub struct Renderer<'a> {
    pub numbering: Numbering,
    pub strings: &'a Strings,
    pub links: Option<&'a Links>,
    pub options: &'a RenderOptions,
}

impl Renderer<'_> {
    fn string_piece(&self, raw: u8, v: u32, scratch: &mut Vec<u8>) -> Option<Piece> {
        let fold = self.options.fold;
        let mut text = self.strings.text(v, fold)?;
        let mut shown_lf = false;
        if self.numbering.classic && text.windows(2).any(|w| w == b"\r\n") {
            shown_lf = self.strings.crlf_shown_as_lf(v);
            if shown_lf {
                text = Cow::Owned(replace(&text, b"\r\n", b"\n"));
            }
        }
        let view = self.numbering.view(raw);
        if view == 5 {
            // the tag test and tag identity use the unfolded text
            let plain: Cow<'_, [u8]> = if fold {
                let t = self.strings.text(v, false)?;
                if shown_lf {
                    Cow::Owned(replace(&t, b"\r\n", b"\n"))
                } else {
                    t
                }
            } else {
                Cow::Borrowed(&text[..])
            };
            if is_tag(&plain) {
                let kind = if plain.starts_with(b"[/") {
                    CLOSE
                } else {
                    OPEN
                };
                let a = scratch.len();
                scratch.extend_from_slice(&text);
                let b = scratch.len();
                scratch.extend_from_slice(&plain);
                return Some((kind, (a, b), (b, scratch.len())));
            }
        }
        let a = scratch.len();
        if view == 7 {
            quote_into(scratch, &text);
        } else {
            scratch.push(b'{');
            push_int(scratch, raw as i64);
            scratch.push(b'=');
            quote_into(scratch, &text);
            scratch.push(b'}');
        }
        Some((STR, (a, scratch.len()), (0, 0)))
    }

    fn link_key_ok(&self, key: u32) -> Option<Vec<u8>> {
        let text = self.strings.text(key, false)?;
        if text
            .iter()
            .any(|b| matches!(b, b'`' | b'>' | b'\r' | b'\n'))
        {
            return None;
        }
        Some(text.into_owned())
    }

    /// `string_piece`, from `cache` when this task has made the same piece before.
    fn cached_piece(
        &self,
        raw: u8,
        v: u32,
        scratch: &mut Vec<u8>,
        cache: &mut PieceCache,
    ) -> Option<Piece> {
        if let Some(found) = cache.map.get(&(raw, v)) {
            let (kind, text, tag) = found.as_ref()?;
            let a = scratch.len();
            scratch.extend_from_slice(text);
            let b = scratch.len();
            scratch.extend_from_slice(tag);
            let tag_span = if tag.is_empty() {
                (0, 0)
            } else {
                (b, scratch.len())
            };
            return Some((*kind, (a, b), tag_span));
        }
        let piece = self.string_piece(raw, v, scratch);
        let kept = piece.map(|(kind, text, tag)| {
            (
                kind,
                Rc::from(&scratch[text.0..text.1]),
                Rc::from(&scratch[tag.0..tag.1]),
            )
        });
        cache.map.insert((raw, v), kept);
        piece
    }

    fn items(
        &self,
        units: &[(u8, u32)],
        scratch: &mut Vec<u8>,
        cache: &mut PieceCache,
    ) -> Vec<Item> {
        let nb = self.numbering;
        let mut items = Vec::with_capacity(units.len());
        let push = |items: &mut Vec<Item>,
                    kind: u8,
                    text: (usize, usize),
                    tag: (usize, usize),
                    count: i64| {
            items.push(Item {
                kind,
                text,
                tag,
                count,
            });
        };
        let mut i = 0;
        while i < units.len() {
            let (raw, v) = units[i];
            let a = scratch.len();
            if raw == nb.int_t {
                push_int(scratch, signed(v));
                push(
                    &mut items,
                    NUM,
                    (a, scratch.len()),
                    (0, 0),
                    signed(v).max(0),
                );
                i += 1;
                continue;
            }
            if raw == nb.float_t {
                match format_float(v) {
                    Some(f) => scratch.extend_from_slice(f.as_bytes()),
                    None => push_escape(scratch, nb.float_t, signed(v)),
                }
                push(&mut items, NUM, (a, scratch.len()), (0, 0), 0);
                i += 1;
                continue;
            }
            if nb.is_string(raw) {
                match self.cached_piece(raw, v, scratch, cache) {
                    Some((kind, text, tag)) => push(&mut items, kind, text, tag, 0),
                    None => {
                        push_escape(scratch, raw, signed(v));
                        push(&mut items, STR, (a, scratch.len()), (0, 0), 0);
                    }
                }
                i += 1;
                continue;
            }
            if nb.classic && raw == 9 && i + 1 < units.len() && units[i + 1].0 == 10 {
                if let Some(key) = self.link_key_ok(units[i + 1].1) {
                    let id = signed(v) as i32;
                    let shown = self.links.and_then(|l| l.get(&(id, key.clone())));
                    let key_out = if self.options.fold {
                        self.strings
                            .text(units[i + 1].1, true)
                            .map(|t| t.into_owned())
                            .unwrap_or(key)
                    } else {
                        key
                    };
                    scratch.extend_from_slice(format!("<{id}::").as_bytes());
                    scratch.extend_from_slice(&key_out);
                    let shown_text: &[u8] = match shown {
                        Some((text, folded)) => {
                            if self.options.fold {
                                folded
                            } else {
                                text
                            }
                        }
                        None => b"",
                    };
                    quote_into(scratch, shown_text);
                    scratch.push(b'>');
                    push(&mut items, STR, (a, scratch.len()), (0, 0), 0);
                    i += 2;
                    continue;
                }
            }
            push_escape(scratch, raw, signed(v));
            let kind = if nb.classic || matches!(raw, 0 | 1 | 2 | 3 | 5 | 6 | 7) {
                NUM
            } else {
                STR
            };
            push(&mut items, kind, (a, scratch.len()), (0, 0), 0);
            i += 1;
        }
        items
    }

    /// Append the text of one script (its units) to `out`; `is_list` for `.lst` paths.
    pub fn render(&self, units: &[(u8, u32)], is_list: bool, out: &mut Vec<u8>) {
        self.render_with(units, is_list, out, &mut Vec::new());
    }

    /// `render` with a scratch buffer the caller reuses across scripts.
    pub fn render_with(
        &self,
        units: &[(u8, u32)],
        is_list: bool,
        out: &mut Vec<u8>,
        scratch: &mut Vec<u8>,
    ) {
        self.render_cached(units, is_list, out, scratch, &mut PieceCache::default());
    }

    /// A list's text (`render` with `is_list`) made `chunk` units at a time, each chunk's items and
    /// pieces dropped before the next: a list's items are one per line and context-free (a classic
    /// link is the one two-unit item; a chunk never ends between its units), so the text is the
    /// same, and a 10^6-file archive's ~550k-item `equipment.lst` no longer holds an item, a piece
    /// and a cached copy of every path at once (that was +240 MiB of the index build's peak RSS).
    /// No piece cache: a list's strings are distinct paths, so caching them only costs memory.
    pub fn render_list_in_chunks(
        &self,
        units: &[(u8, u32)],
        out: &mut Vec<u8>,
        scratch: &mut Vec<u8>,
        chunk: usize,
    ) {
        out.extend_from_slice(if self.options.fold {
            b"#pvf_file"
        } else {
            HEADER
        });
        out.push(b'\n');
        let mut start = 0;
        while start < units.len() {
            let mut end = (start + chunk.max(1)).min(units.len());
            while end < units.len() && units[end - 1].0 == 9 {
                end += 1; // a classic link's first unit (9) stays with the unit after it
            }
            scratch.clear();
            let items = self.items(&units[start..end], scratch, &mut PieceCache::default());
            for item in &items {
                out.push(b'\n');
                out.extend_from_slice(&scratch[item.text.0..item.text.1]);
            }
            start = end;
        }
        out.extend_from_slice(&self.options.terminator);
    }

    /// `render_with` keeping the string pieces it makes in `cache` for the next scripts of the
    /// same archive and options (a script's tags and strings repeat across scripts).
    pub fn render_cached(
        &self,
        units: &[(u8, u32)],
        is_list: bool,
        out: &mut Vec<u8>,
        scratch: &mut Vec<u8>,
        cache: &mut PieceCache,
    ) {
        if is_list && units.len() > LIST_CHUNK {
            self.render_list_in_chunks(units, out, scratch, LIST_CHUNK);
            return;
        }
        scratch.clear();
        let items = self.items(units, scratch, cache);
        let scratch: &Vec<u8> = scratch;
        let piece = |r: (usize, usize)| &scratch[r.0..r.1];
        out.extend_from_slice(if self.options.fold {
            b"#pvf_file"
        } else {
            HEADER
        });
        out.push(b'\n');
        if is_list {
            for item in &items {
                out.push(b'\n');
                out.extend_from_slice(piece(item.text));
            }
            out.extend_from_slice(&self.options.terminator);
            return;
        }
        out.push(b'\n');
        let paired = pairing(&items, scratch);
        let mut cur: Vec<(usize, usize)> = Vec::new();
        let mut stack: Vec<&[u8]> = Vec::new();
        let mut indent = 0usize;
        let mut layout = 0i64; // 0 none, -1 index, n per line
        let mut per_line = 0usize;
        let mut seen_section = false;
        let mut index_seen = false;
        let add_line = |out: &mut Vec<u8>, indent: usize, cur: &mut Vec<(usize, usize)>| {
            out.extend(std::iter::repeat(b'\t').take(indent));
            for (k, r) in cur.iter().enumerate() {
                if k > 0 {
                    out.push(b'\t');
                }
                out.extend_from_slice(&scratch[r.0..r.1]);
            }
            out.push(b'\n');
            cur.clear();
        };
        for (idx, item) in items.iter().enumerate() {
            if item.kind >= NUM {
                if item.kind == STR && !cur.is_empty() {
                    add_line(out, indent, &mut cur);
                }
                cur.push(item.text);
                if layout != 0 {
                    if layout == -1 && !index_seen {
                        index_seen = true;
                        per_line = if item.kind == NUM {
                            item.count as usize
                        } else {
                            0
                        };
                        add_line(out, indent, &mut cur);
                    } else if per_line > 0 && cur.len() >= per_line {
                        add_line(out, indent, &mut cur);
                    }
                }
                if item.kind == STR && !cur.is_empty() && piece(item.text).contains(&b'\n') {
                    add_line(out, indent, &mut cur);
                }
                continue;
            }
            if !cur.is_empty() {
                add_line(out, indent, &mut cur);
            }
            let tag = piece(item.tag);
            if item.kind == OPEN {
                let depth = stack.len();
                if depth == 0 && seen_section {
                    out.push(b'\n');
                }
                seen_section = true;
                out.extend(std::iter::repeat(b'\t').take(depth));
                out.extend_from_slice(piece(item.text));
                out.push(b'\n');
                indent = depth + 1;
                if paired.get(idx).copied().unwrap_or(false) {
                    stack.push(tag);
                }
                layout = section_layout(tag);
                per_line = if layout > 0 { layout as usize } else { 0 };
                index_seen = false;
            } else {
                let want = want_of(tag);
                if let Some(pos) = stack.iter().rposition(|t| *t == want.as_slice()) {
                    stack.truncate(pos);
                }
                out.extend(std::iter::repeat(b'\t').take(stack.len()));
                out.extend_from_slice(piece(item.text));
                out.push(b'\n');
                indent = if !stack.is_empty() {
                    stack.len() + 1
                } else if seen_section {
                    1
                } else {
                    0
                };
                layout = 0;
                per_line = 0;
            }
        }
        if !cur.is_empty() {
            add_line(out, indent, &mut cur);
        }
        out.extend_from_slice(&self.options.terminator);
    }
}

fn want_of(close: &[u8]) -> Vec<u8> {
    let mut want = vec![b'['];
    want.extend_from_slice(&close[2..]);
    want
}

/// Whether each item is an opening tag that has a matching close tag (`text._pairing`).
fn pairing(items: &[Item], scratch: &[u8]) -> Vec<bool> {
    if !items.iter().any(|i| i.kind == CLOSE) {
        return Vec::new();
    }
    let mut paired = vec![false; items.len()];
    let mut stack: Vec<(&[u8], usize)> = Vec::new();
    for (idx, item) in items.iter().enumerate() {
        let tag = &scratch[item.tag.0..item.tag.1];
        if item.kind == OPEN {
            stack.push((tag, idx));
        } else if item.kind == CLOSE {
            let want = want_of(tag);
            if let Some(pos) = stack.iter().rposition(|(t, _)| *t == want.as_slice()) {
                paired[stack[pos].1] = true;
                stack.truncate(pos);
            }
        }
    }
    paired
}

/// Whether a path names a list (`.lst`, any case), whose text has one value per line.
pub fn is_list_path(path: &[u8]) -> bool {
    let name = path.rsplit(|&b| b == b'/').next().unwrap_or(path);
    name.len() >= 4 && name[name.len() - 4..].eq_ignore_ascii_case(b".lst")
}

/// The string references a script's units use (what the caller may have to resolve first).
pub fn string_refs(units: &[(u8, u32)], numbering: Numbering, out: &mut Vec<u32>) {
    for &(t, v) in units {
        if numbering.is_string(t) {
            out.push(v);
        }
    }
}
