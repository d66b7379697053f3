//! The strings script units refer to: a classic `stringtable.bin` or the NKPI pools
//! (`moddesk.pvf.format.strings`), decoded as the reference decodes them.
//!
//! ASCII strings and valid UTF-8 / UTF-16 pool strings are decoded here. What needs Python's own
//! codecs — classic code pages (Big5, GBK, CP949, CP932 with `surrogateescape`), GB18030 bytes in
//! a 90CN UTF-8 pool, and `str.casefold` of non-ASCII text — is asked of the caller once per
//! string (`missing`) and kept (`resolve`), so every text is exactly the reference's.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::sync::OnceLock;

use crate::error::{u32_at, PvfError, Result};
use crate::nkpi::{pool_text, PoolText};

#[derive(Debug)]
enum Table {
    /// `stringtable.bin`: every string's bytes with trailing NULs stripped, as (start, end) in `blob`.
    Classic {
        blob: Vec<u8>,
        bounds: Vec<(u32, u32)>,
    },
    Nkpi {
        pool_a: Vec<u8>,
        pool_w: Vec<u8>,
    },
}

/// A text and its case-folded form, both UTF-8 (lone surrogates in their 3-byte forms).
#[derive(Debug, Clone)]
pub struct Resolved {
    pub text: Vec<u8>,
    pub folded: Vec<u8>,
}

#[derive(Debug)]
pub struct Strings {
    table: Table,
    resolved: HashMap<u32, Resolved>,
    /// Classic: every stripped raw string (for the CRLF rule's "does the table hold it" test).
    held: OnceLock<HashSet<Vec<u8>>>,
}

fn ascii_fold(text: &[u8]) -> Vec<u8> {
    text.to_ascii_lowercase()
}

impl Strings {
    /// A classic `stringtable.bin` (count, count + 1 offsets, string bytes), as `StringTable.parse`.
    pub fn classic(data: &[u8]) -> Result<Strings> {
        if data.len() < 4 {
            return Err(PvfError::new(
                "BAD_STRING_TABLE",
                "string table shorter than its count",
            ));
        }
        let count = u32_at(data, 0) as u64;
        if 4 + 4 * (count + 1) > data.len() as u64 {
            return Err(PvfError::at(
                "BAD_STRING_TABLE",
                format!(
                    "string table announces {count} strings in {} bytes",
                    data.len()
                ),
                0,
            ));
        }
        let n = count as usize;
        let offs: Vec<u64> = (0..=n)
            .map(|k| u32_at(data, 4 + 4 * k) as u64 + 4)
            .collect();
        if n > 0
            && (offs.windows(2).any(|w| w[1] < w[0])
                || offs[0] < 4 + 4 * (count + 1)
                || offs[n] > data.len() as u64)
        {
            return Err(PvfError::new(
                "BAD_STRING_TABLE",
                "string table offsets are out of order or out of range",
            ));
        }
        let bounds = (0..n)
            .map(|k| {
                let (a, mut b) = (offs[k] as usize, offs[k + 1] as usize);
                while b > a && data[b - 1] == 0 {
                    b -= 1;
                }
                (a as u32, b as u32)
            })
            .collect();
        Ok(Strings {
            table: Table::Classic {
                blob: data.to_vec(),
                bounds,
            },
            resolved: HashMap::new(),
            held: OnceLock::new(),
        })
    }

    /// The NKPI UTF-8 and UTF-16LE pools.
    pub fn nkpi(pool_a: Vec<u8>, pool_w: Vec<u8>) -> Strings {
        Strings {
            table: Table::Nkpi { pool_a, pool_w },
            resolved: HashMap::new(),
            held: OnceLock::new(),
        }
    }

    pub fn is_classic(&self) -> bool {
        matches!(self.table, Table::Classic { .. })
    }

    fn classic_raw(&self, r: u32) -> Option<&[u8]> {
        match &self.table {
            Table::Classic { blob, bounds } => bounds
                .get(r as usize)
                .map(|&(a, b)| &blob[a as usize..b as usize]),
            Table::Nkpi { .. } => None,
        }
    }

    /// Whether `r` needs the caller (a text only Python's codecs make, or with `fold` a non-ASCII casefold).
    pub fn needs_caller(&self, r: u32, fold: bool) -> bool {
        if self.resolved.contains_key(&r) {
            return false;
        }
        match &self.table {
            Table::Classic { .. } => self.classic_raw(r).is_some_and(|raw| !raw.is_ascii()),
            Table::Nkpi { pool_a, pool_w } => match pool_text(pool_a, pool_w, r) {
                PoolText::Missing => false,
                PoolText::Legacy(_) => true,
                PoolText::Text(t) => fold && !t.is_ascii(),
            },
        }
    }

    /// Keep the caller's text and folded text of `r`.
    pub fn resolve(&mut self, r: u32, text: Vec<u8>, folded: Vec<u8>) {
        self.resolved.insert(r, Resolved { text, folded });
    }

    /// The text of `r` (None when it does not resolve); `fold` gives the case-folded text.
    /// Panics never: a text the caller was not asked for is looked up, and missing means None.
    pub fn text(&self, r: u32, fold: bool) -> Option<Cow<'_, [u8]>> {
        if let Some(found) = self.resolved.get(&r) {
            return Some(Cow::Borrowed(if fold {
                &found.folded
            } else {
                &found.text
            }));
        }
        match &self.table {
            Table::Classic { .. } => {
                let raw = self.classic_raw(r)?;
                if !raw.is_ascii() {
                    return None;
                }
                Some(if fold {
                    Cow::Owned(ascii_fold(raw))
                } else {
                    Cow::Borrowed(raw)
                })
            }
            Table::Nkpi { pool_a, pool_w } => match pool_text(pool_a, pool_w, r) {
                PoolText::Text(t) if !fold => Some(t),
                PoolText::Text(t) if t.is_ascii() => Some(Cow::Owned(ascii_fold(&t))),
                _ => None,
            },
        }
    }

    /// Whether `r` resolves at all (`string_at(r) is not None`).
    pub fn exists(&self, r: u32) -> bool {
        if self.resolved.contains_key(&r) {
            return true;
        }
        match &self.table {
            Table::Classic { bounds, .. } => (r as usize) < bounds.len(),
            Table::Nkpi { pool_a, pool_w } => pool_text(pool_a, pool_w, r) != PoolText::Missing,
        }
    }

    /// Classic CRLF rule (`text._crlf_shown`): whether string `r`, which holds CRLF and no other
    /// CR/LF, shows its line breaks as LF — when the table has no LF-only twin of it. Decided on
    /// the raw bytes: CR and LF are single bytes in every code page (never trail bytes).
    pub fn crlf_shown_as_lf(&self, r: u32) -> bool {
        let Some(raw) = self.classic_raw(r) else {
            return false;
        };
        let rest = replace(raw, b"\r\n", b"");
        if rest.len() == raw.len() || rest.contains(&b'\r') || rest.contains(&b'\n') {
            return false;
        }
        let shown = replace(raw, b"\r\n", b"\n");
        let held = self.held.get_or_init(|| match &self.table {
            Table::Classic { blob, bounds } => bounds
                .iter()
                .map(|&(a, b)| blob[a as usize..b as usize].to_vec())
                .collect(),
            Table::Nkpi { .. } => HashSet::new(),
        });
        !held.contains(&shown)
    }
}

/// `bytes.replace`.
pub fn replace(haystack: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(haystack.len());
    let mut k = 0;
    while k < haystack.len() {
        if haystack[k..].starts_with(from) {
            out.extend_from_slice(to);
            k += from.len();
        } else {
            out.push(haystack[k]);
            k += 1;
        }
    }
    out
}
