//! Text decoding and case folding exactly as the Python reference does them, from tables the
//! reference's own codecs fill (`moddesk.pvf.format.native.codec_tables` / `casefold_table`).
//!
//! Python's CJK codecs (CP950, CP949, CP932, GB18030) decide at each position from the byte there
//! and at most the next one (GB18030's four-byte sequences excepted): a table of every lead byte
//! and every lead/trail pair, made by asking Python's codec once per pair, therefore decodes any
//! string as Python does, undecodable bytes included (`surrogateescape`: byte b becomes U+DC00+b,
//! written here in its 3-byte UTF-8 form as `surrogatepass` encodes it). Whatever the table cannot
//! settle (a four-byte GB18030 sequence, an error over an ASCII byte, which `surrogateescape`
//! refuses) is left to the caller: `decode` answers None, never a guess.
//!
//! `str.casefold` is per character without context; the characters it changes (about 1,500) are
//! a table from the running Python, so the Unicode version is always the reference's.

use std::collections::HashMap;

/// What the decoder does with a byte met at a position.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Step {
    /// The byte (or pair) decodes to its text.
    Text = 0,
    /// The byte needs the next one to decide (a lead byte).
    Lead = 1,
    /// The byte is undecodable alone (one escape).
    Invalid1 = 2,
    /// The pair is undecodable as a whole (two escapes).
    Invalid2 = 3,
    /// Only the caller can decide (GB18030's four-byte form, an error over an ASCII byte).
    Caller = 4,
}

impl Step {
    fn from_u8(v: u8) -> Step {
        match v {
            0 => Step::Text,
            1 => Step::Lead,
            2 => Step::Invalid1,
            3 => Step::Invalid2,
            _ => Step::Caller,
        }
    }
}

/// A code page's decoding table: what each byte alone and each lead/trail pair becomes.
#[derive(Debug)]
pub struct Codec {
    single: Vec<Step>,
    single_text: Vec<Vec<u8>>,
    pair: Vec<Step>,
    /// The UTF-8 text of pair `lead * 256 + trail` (for `Step::Text`), as spans of `pair_blob`.
    pair_spans: Vec<(u32, u32)>,
    pair_blob: Vec<u8>,
}

fn spans(ends: &[u64], len: usize) -> Option<Vec<(u32, u32)>> {
    if ends.len() != len + 1 {
        return None;
    }
    Some(
        ends.windows(2)
            .map(|w| (w[0] as u32, w[1] as u32))
            .collect(),
    )
}

impl Codec {
    /// A table from its parts: 256 single-byte steps with their texts (buffer + 257 ends), 65,536
    /// pair steps with their texts (buffer + 65,537 ends). None when the parts do not fit.
    pub fn new(
        single: &[u8],
        single_blob: &[u8],
        single_ends: &[u64],
        pair: &[u8],
        pair_blob: Vec<u8>,
        pair_ends: &[u64],
    ) -> Option<Codec> {
        if single.len() != 256 || pair.len() != 1 << 16 {
            return None;
        }
        let single_spans = spans(single_ends, 256)?;
        let pair_spans = spans(pair_ends, 1 << 16)?;
        let fits =
            |s: &[(u32, u32)], len: usize| s.iter().all(|&(a, b)| a <= b && b as usize <= len);
        if !fits(&single_spans, single_blob.len()) || !fits(&pair_spans, pair_blob.len()) {
            return None;
        }
        Some(Codec {
            single: single.iter().map(|&v| Step::from_u8(v)).collect(),
            single_text: single_spans
                .iter()
                .map(|&(a, b)| single_blob[a as usize..b as usize].to_vec())
                .collect(),
            pair: pair.iter().map(|&v| Step::from_u8(v)).collect(),
            pair_spans,
            pair_blob,
        })
    }

    /// `raw.decode(encoding, "surrogateescape")` as UTF-8 (surrogatepass), or None when only the
    /// caller can decode it.
    pub fn decode(&self, raw: &[u8]) -> Option<Vec<u8>> {
        let mut out = Vec::with_capacity(raw.len() * 3 / 2);
        let mut pos = 0;
        while pos < raw.len() {
            let b = raw[pos];
            match self.single[b as usize] {
                Step::Text => {
                    out.extend_from_slice(&self.single_text[b as usize]);
                    pos += 1;
                }
                Step::Invalid1 => {
                    escape(&mut out, b)?;
                    pos += 1;
                }
                Step::Lead => {
                    let Some(&t) = raw.get(pos + 1) else {
                        // an incomplete sequence at the end: the rest (this byte) is escaped
                        escape(&mut out, b)?;
                        pos += 1;
                        continue;
                    };
                    let k = (b as usize) << 8 | t as usize;
                    match self.pair[k] {
                        Step::Text => {
                            let (a, e) = self.pair_spans[k];
                            out.extend_from_slice(&self.pair_blob[a as usize..e as usize]);
                            pos += 2;
                        }
                        Step::Invalid1 => {
                            escape(&mut out, b)?;
                            pos += 1;
                        }
                        Step::Invalid2 => {
                            escape(&mut out, b)?;
                            escape(&mut out, t)?;
                            pos += 2;
                        }
                        Step::Lead | Step::Caller => return None,
                    }
                }
                Step::Invalid2 | Step::Caller => return None,
            }
        }
        Some(out)
    }
}

/// Append `surrogateescape`'s U+DC00+b for an undecodable byte b (UTF-8, surrogatepass); None
/// for an ASCII byte, which `surrogateescape` refuses (the reference raises: the caller decides).
fn escape(out: &mut Vec<u8>, b: u8) -> Option<()> {
    if b < 0x80 {
        return None;
    }
    let c = 0xDC00u32 + b as u32;
    out.extend_from_slice(&[
        0xE0 | (c >> 12) as u8,
        0x80 | ((c >> 6) & 0x3F) as u8,
        0x80 | (c & 0x3F) as u8,
    ]);
    Some(())
}

/// `str.casefold` of UTF-8 text (lone surrogates in their 3-byte forms pass unchanged).
#[derive(Debug, Default)]
pub struct CaseFold {
    /// For each BMP code point, 1 + the index of its folded text, or 0 when it folds to itself.
    bmp: Vec<u32>,
    astral: HashMap<u32, u32>,
    spans: Vec<(u32, u32)>,
    blob: Vec<u8>,
}

impl CaseFold {
    /// The table from the code points `str.casefold` changes and their folded texts (buffer + ends).
    pub fn new(points: &[u32], blob: Vec<u8>, ends: &[u64]) -> Option<CaseFold> {
        let spans = spans(ends, points.len())?;
        if spans.iter().any(|&(a, b)| a > b || b as usize > blob.len()) {
            return None;
        }
        let mut bmp = vec![0u32; 1 << 16];
        let mut astral = HashMap::new();
        for (k, &c) in points.iter().enumerate() {
            if c < 1 << 16 {
                bmp[c as usize] = k as u32 + 1;
            } else {
                astral.insert(c, k as u32);
            }
        }
        Some(CaseFold {
            bmp,
            astral,
            spans,
            blob,
        })
    }

    fn folded(&self, c: u32) -> Option<&[u8]> {
        let k = if c < 1 << 16 {
            self.bmp[c as usize].checked_sub(1)?
        } else {
            *self.astral.get(&c)?
        };
        let (a, b) = self.spans[k as usize];
        Some(&self.blob[a as usize..b as usize])
    }

    /// The case-folded form of UTF-8 (surrogatepass) `text`; None when it is not such UTF-8.
    pub fn fold(&self, text: &[u8]) -> Option<Vec<u8>> {
        let mut out = Vec::with_capacity(text.len());
        let mut pos = 0;
        while pos < text.len() {
            let b = text[pos];
            if b < 0x80 {
                out.push(b.to_ascii_lowercase());
                pos += 1;
                continue;
            }
            let (c, len) = decode_char(&text[pos..])?;
            match self.folded(c) {
                Some(f) => out.extend_from_slice(f),
                None => out.extend_from_slice(&text[pos..pos + len]),
            }
            pos += len;
        }
        Some(out)
    }
}

/// The code point at the start of UTF-8 (surrogatepass) bytes and its length.
fn decode_char(s: &[u8]) -> Option<(u32, usize)> {
    let b = s[0];
    let (len, init) = match b {
        0xC2..=0xDF => (2, (b & 0x1F) as u32),
        0xE0..=0xEF => (3, (b & 0x0F) as u32),
        0xF0..=0xF4 => (4, (b & 0x07) as u32),
        _ => return None,
    };
    if s.len() < len {
        return None;
    }
    let mut c = init;
    for &x in &s[1..len] {
        if x & 0xC0 != 0x80 {
            return None;
        }
        c = c << 6 | (x & 0x3F) as u32;
    }
    let shortest = match len {
        2 => c >= 0x80,
        3 => c >= 0x800,
        _ => (0x10000..=0x10FFFF).contains(&c),
    };
    shortest.then_some((c, len))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn latin_like() -> Codec {
        // 0x00-0x7F ASCII, 0x80 invalid alone, 0x81 a lead: 0x81 0x40 → "é", 0x81 0xA1 and 0x41 invalid2,
        // anything else after 0x81 invalid1; 0x82 needs the caller
        let mut single = vec![0u8; 256];
        let mut blob = Vec::new();
        let mut ends = vec![0u64];
        for (b, step) in single.iter_mut().enumerate() {
            if b < 0x80 {
                blob.push(b as u8);
            } else {
                *step = match b {
                    0x81 => Step::Lead as u8,
                    0x82 => Step::Caller as u8,
                    _ => Step::Invalid1 as u8,
                };
            }
            ends.push(blob.len() as u64);
        }
        let mut pair = vec![Step::Invalid1 as u8; 1 << 16];
        let mut pblob = Vec::new();
        let mut pends = vec![0u64];
        for (k, step) in pair.iter_mut().enumerate() {
            if k == 0x8140 {
                *step = Step::Text as u8;
                pblob.extend_from_slice("é".as_bytes());
            } else if k == 0x81A1 || k == 0x8141 {
                *step = Step::Invalid2 as u8;
            }
            pends.push(pblob.len() as u64);
        }
        Codec::new(&single, &blob, &ends, &pair, pblob, &pends).unwrap()
    }

    #[test]
    fn decodes_escapes_and_defers_as_the_table_says() {
        let c = latin_like();
        assert_eq!(c.decode(b"a\x81\x40b").unwrap(), "aéb".as_bytes());
        assert_eq!(c.decode(b"\x80").unwrap(), b"\xed\xb2\x80");
        assert_eq!(c.decode(b"\x81").unwrap(), b"\xed\xb2\x81");
        assert_eq!(c.decode(b"\x81\xa1").unwrap().len(), 6);
        assert!(c.decode(b"\x81\x41").is_none()); // surrogateescape refuses an ASCII byte
        assert_eq!(c.decode(b"\x81\x42").unwrap().len(), 4); // escape + 'B'
        assert!(c.decode(b"\x82").is_none());
    }

    #[test]
    fn folds_by_the_table_and_ascii() {
        let fold =
            CaseFold::new(&[0xDF, 0x130], "ssi\u{307}".as_bytes().to_vec(), &[0, 2, 5]).unwrap();
        assert_eq!(
            fold.fold("AßİZ".as_bytes()).unwrap(),
            "assi\u{307}z".as_bytes()
        );
        assert_eq!(fold.fold(b"\xed\xb2\x80A").unwrap(), b"\xed\xb2\x80a");
        assert!(fold.fold(b"\xff").is_none());
    }

    proptest::proptest! {
        #[test]
        fn any_bytes_decode_or_defer_without_panic(raw in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..64)) {
            let c = latin_like();
            if let Some(text) = c.decode(&raw) {
                proptest::prop_assert!(text.len() >= raw.len());
            }
            let fold = CaseFold::new(&[0xDF], b"ss".to_vec(), &[0, 2]).unwrap();
            let _ = fold.fold(&raw);
        }
    }
}
