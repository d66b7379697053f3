//! The text form of entries that are not scripts, as `Archive.render` makes it: classic text
//! files decoded with the region's code page (`.nut` with CP949), the classic `stringtable.bin`
//! dumped as `index>string` lines, NKPI text (data type 3) decoded from UTF-16LE; and `.str`
//! tables parsed into the key → text pairs classic string links resolve through.
//!
//! What needs the reference (animations, `.ani`/`.als` text sniffing, non-ASCII classic names,
//! Korean mojibake repair, a code page without a table) is answered `Text::Caller`.

use std::collections::HashMap;
use std::sync::Arc;

use rayon::prelude::*;

use crate::container::Container;
use crate::render::Links;

use crate::codec::{CaseFold, Codec};
use crate::lookup::normalize_ascii;
use crate::nkpi::utf16_to_utf8;
use crate::strings::Strings;

/// `kinds.TEXT_EXTENSIONS`.
const TEXT_EXTENSIONS: [&[u8]; 8] = [
    b".str", b".nut", b".txt", b".xml", b".csv", b".ini", b".cfg", b".json",
];
/// Classic extensions whose entries may be animations or text (the reference sniffs them).
const ANIMATION_EXTENSIONS: [&[u8]; 2] = [b".ani", b".als"];
const STRINGTABLE_PATH: &[u8] = b"stringtable.bin";
/// `NKPI DataType` of UTF-16 text.
const DATA_TEXT: i32 = 3;

/// The text of one non-script entry.
#[derive(Debug, PartialEq, Eq)]
pub enum Text {
    /// Its text (folded when asked, terminator not yet appended).
    Some(Vec<u8>),
    /// No text form (`render` raises NOT_TEXT): a binary entry.
    None,
    /// Only the reference can say.
    Caller,
}

/// The decoders of an archive's text entries.
#[derive(Debug, Clone, Default)]
pub struct TextDecoders {
    /// The region's code page (classic text, the string table dump).
    pub region: Option<Arc<Codec>>,
    /// CP949 (classic `.nut` files).
    pub names: Option<Arc<Codec>>,
    pub casefold: Option<Arc<CaseFold>>,
    /// NKPI text stored as Korean mojibake is repaired by the reference (its option is on).
    pub korean_mojibake: bool,
}

/// `kinds.ext` of an ASCII path: the lower-case extension of its last component ("" when none).
fn extension(path: &[u8]) -> Vec<u8> {
    let name = path.rsplit(|&b| b == b'/').next().unwrap_or(path);
    match name.iter().rposition(|&b| b == b'.') {
        Some(dot) if dot > 0 => name[dot..].to_ascii_lowercase(),
        _ => Vec::new(),
    }
}

impl TextDecoders {
    fn fold(&self, text: Vec<u8>, fold: bool) -> Option<Vec<u8>> {
        if !fold {
            return Some(text);
        }
        if text.is_ascii() {
            return Some(text.to_ascii_lowercase());
        }
        self.casefold.as_ref()?.fold(&text)
    }

    fn settled(&self, text: Option<Vec<u8>>, fold: bool) -> Text {
        match text.and_then(|t| self.fold(t, fold)) {
            Some(t) => Text::Some(t),
            None => Text::Caller,
        }
    }

    /// The text of a classic entry that is not a script (no B0 D0), by its path and bytes.
    pub fn classic(&self, path: &[u8], data: &[u8], fold: bool) -> Text {
        if !path.is_ascii() {
            return Text::Caller;
        }
        let ext = extension(path);
        if TEXT_EXTENSIONS.contains(&ext.as_slice()) {
            let codec = if ext == b".nut" {
                &self.names
            } else {
                &self.region
            };
            return self.settled(codec.as_ref().and_then(|c| c.decode(data)), fold);
        }
        if ANIMATION_EXTENSIONS.contains(&ext.as_slice()) {
            return Text::Caller;
        }
        if normalize_ascii(path).as_deref() == Some(STRINGTABLE_PATH) {
            let Some(codec) = self.region.as_deref() else {
                return Text::Caller;
            };
            return match Strings::classic(data) {
                Ok(table) => self.settled(table.dump(codec), fold),
                Err(_) => Text::None, // BAD_STRING_TABLE: render raises, the entry has no text
            };
        }
        Text::None
    }

    /// The text of an NKPI entry that is not a script, by its data type.
    pub fn nkpi(&self, data_type: i32, data: &[u8], fold: bool) -> Text {
        if data_type != DATA_TEXT {
            return Text::None;
        }
        if data.len() % 2 == 1 {
            return Text::None; // NOT_TEXT: an odd byte count is damage
        }
        if self.korean_mojibake {
            return Text::Caller;
        }
        self.settled(Some(utf16_to_utf8(data)), fold)
    }
}

/// A `.str` key with its text and folded text.
type LinkText = (Vec<u8>, Vec<u8>, Vec<u8>);

/// Classic string links from the `.str` entries they name: link `ids[k]` reads entry
/// `indexes[k]` of `container` (its table as `parse_str(render(...))` reads it; the first of a
/// duplicated key wins), each text with its folded form. None when an entry needs the reference
/// (unreadable, a script, a code page without a table, text the fold table cannot fold).
pub fn str_links<'p>(
    container: &Container,
    data: &[u8],
    ids: &[i32],
    indexes: &[u32],
    path_of: &(dyn Fn(u32) -> &'p [u8] + Sync),
    texts: &TextDecoders,
) -> Option<Links> {
    let casefold = texts.casefold.as_deref()?;
    // each table read, decoded, parsed and folded on every core
    let tables: Vec<Option<Vec<LinkText>>> = indexes
        .par_iter()
        .map(|&i| {
            let entry = container.read(data, i as usize).ok()?;
            if entry.starts_with(&[0xB0, 0xD0]) {
                return None; // a script named .str: the reference renders it
            }
            let table = match texts.classic(path_of(i), &entry, false) {
                Text::Some(text) => parse_str(&text),
                Text::None => Vec::new(),
                Text::Caller => return None,
            };
            table
                .into_par_iter()
                .map(|(key, text)| {
                    let folded = casefold.fold(&text)?;
                    Some((key, text, folded))
                })
                .collect()
        })
        .collect();
    let mut links: Links = HashMap::new();
    for (&id, table) in ids.iter().zip(tables) {
        for (key, text, folded) in table? {
            links.entry((id, key)).or_insert((text, folded));
        }
    }
    Some(links)
}

/// `lists.parse_str` over UTF-8 text: `key>value` lines (CRLF or LF); `//` comments, lines
/// without `>` and empty keys skipped; trailing NULs stripped from both; the first key wins.
pub fn parse_str(text: &[u8]) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    let strip = |s: &[u8]| -> Vec<u8> {
        let end = s.iter().rposition(|&b| b != 0).map_or(0, |k| k + 1);
        s[..end].to_vec()
    };
    let mut lines: Vec<&[u8]> = text.split(|&b| b == b'\n').collect();
    // "\r\n" → "\n" before the split: a CR that ends a line (before an LF) goes
    let last = lines.len() - 1;
    for (k, line) in lines.iter_mut().enumerate() {
        if k < last {
            if let Some(rest) = line.strip_suffix(b"\r") {
                *line = rest;
            }
        }
    }
    for line in lines {
        if line.is_empty() || line.starts_with(b"//") {
            continue;
        }
        let Some(sep) = line.iter().position(|&b| b == b'>') else {
            continue;
        };
        let key = strip(&line[..sep]);
        if key.is_empty() || !seen.insert(key.clone()) {
            continue;
        }
        out.push((key, strip(&line[sep + 1..])));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn str_tables_parse_as_the_reference() {
        let got = parse_str(b"// c\r\na>1\r\nb >2>3\n\nno\na>dup\n>empty\nc\0>x\0\0\r\r\nd>e\r");
        let want: Vec<(Vec<u8>, Vec<u8>)> = vec![
            (b"a".to_vec(), b"1".to_vec()),
            (b"b ".to_vec(), b"2>3".to_vec()),
            (b"c".to_vec(), b"x\0\0\r".to_vec()),
            (b"d".to_vec(), b"e\r".to_vec()),
        ];
        assert_eq!(got, want);
    }

    #[test]
    fn extensions_as_kinds_ext() {
        assert_eq!(extension(b"a/B.STR"), b".str");
        assert_eq!(extension(b"a/.str"), b"");
        assert_eq!(extension(b"a.b/c"), b"");
    }
}
