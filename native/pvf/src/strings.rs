//! The strings script units refer to: a classic `stringtable.bin` or the NKPI pools
//! (`moddesk.pvf.format.strings`), decoded as the reference decodes them.
//!
//! ASCII strings and valid UTF-8 / UTF-16 pool strings are decoded here. What needs Python's own
//! codecs — classic code pages (Big5, GBK, CP949, CP932 with `surrogateescape`), GB18030 bytes in
//! a 90CN UTF-8 pool, and `str.casefold` of non-ASCII text — is asked of the caller once per
//! string (`missing`) and kept (`resolve`), so every text is exactly the reference's.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, OnceLock};

use rayon::prelude::*;

use crate::codec::{CaseFold, Codec};

use crate::error::{u32_at, PvfError, Result};
use crate::nkpi::{pool_text, PoolText};

#[derive(Debug)]
enum Table {
    /// `stringtable.bin`: every string's bytes with trailing NULs stripped, as (start, end) in `blob`.
    Classic {
        blob: Vec<u8>,
        bounds: Vec<(u32, u32)>,
    },
    /// Shared with the open archive (and Python's view of it) when the pools are unedited.
    Nkpi {
        pool_a: Arc<Vec<u8>>,
        pool_w: Arc<Vec<u8>>,
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
    /// NKPI: the decoder of GB18030 bytes in the UTF-8 pool (90CN), made from the reference's codec.
    legacy: Option<Arc<Codec>>,
    /// `str.casefold` of the running Python (non-ASCII folding without the caller).
    casefold: Option<Arc<CaseFold>>,
    /// References a render asked for that only the caller can resolve (`take_asked`).
    asked: Mutex<Vec<u32>>,
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
            legacy: None,
            casefold: None,
            asked: Mutex::new(Vec::new()),
        })
    }

    /// The NKPI UTF-8 and UTF-16LE pools (a `Vec` is moved in; an `Arc` is shared, not copied).
    pub fn nkpi(pool_a: impl Into<Arc<Vec<u8>>>, pool_w: impl Into<Arc<Vec<u8>>>) -> Strings {
        Strings {
            table: Table::Nkpi {
                pool_a: pool_a.into(),
                pool_w: pool_w.into(),
            },
            resolved: HashMap::new(),
            held: OnceLock::new(),
            legacy: None,
            casefold: None,
            asked: Mutex::new(Vec::new()),
        }
    }

    /// Decode natively what only the caller's codecs could: `codec` is the classic table's code
    /// page (every non-ASCII string is decoded and folded here, once) or, for NKPI, GB18030 for
    /// legacy bytes in the UTF-8 pool; `casefold` folds non-ASCII text. Strings the tables cannot
    /// settle still go to the caller (`needs_caller`).
    pub fn with_tables(
        mut self,
        codec: Option<Arc<Codec>>,
        casefold: Option<Arc<CaseFold>>,
    ) -> Strings {
        self.casefold = casefold;
        match &self.table {
            Table::Classic { blob, bounds } => {
                if let (Some(codec), Some(fold)) = (codec.as_deref(), self.casefold.as_deref()) {
                    let found: Vec<(u32, Resolved)> = bounds
                        .par_iter()
                        .enumerate()
                        .filter_map(|(r, &(a, b))| {
                            let raw = &blob[a as usize..b as usize];
                            if raw.is_ascii() {
                                return None;
                            }
                            let text = codec.decode(raw)?;
                            let folded = fold.fold(&text)?;
                            Some((r as u32, Resolved { text, folded }))
                        })
                        .collect();
                    self.resolved.extend(found);
                }
            }
            Table::Nkpi { .. } => self.legacy = codec,
        }
        self
    }

    /// `text` case-folded: ASCII here, the rest by the casefold table (None without it).
    fn fold_text(&self, text: &[u8]) -> Option<Vec<u8>> {
        if text.is_ascii() {
            return Some(ascii_fold(text));
        }
        self.casefold.as_ref()?.fold(text)
    }

    /// The text of a GB18030 string in a 90CN UTF-8 pool, when the legacy table settles it.
    fn legacy_text(&self, raw: &[u8], fold: bool) -> Option<Vec<u8>> {
        let text = self.legacy.as_ref()?.decode(raw)?;
        if fold {
            self.fold_text(&text)
        } else {
            Some(text)
        }
    }

    /// `StringTable.dump` of a classic table: `index>string` lines joined by LF, every string
    /// decoded by `codec` (None when one needs the caller).
    pub fn dump(&self, codec: &Codec) -> Option<Vec<u8>> {
        let Table::Classic { blob, bounds } = &self.table else {
            return None;
        };
        let mut out = Vec::with_capacity(blob.len() * 2);
        for (k, &(a, b)) in bounds.iter().enumerate() {
            if k > 0 {
                out.push(b'\n');
            }
            out.extend_from_slice(k.to_string().as_bytes());
            out.push(b'>');
            let raw = &blob[a as usize..b as usize];
            if raw.is_ascii() {
                out.extend_from_slice(raw);
            } else {
                out.extend_from_slice(&codec.decode(raw)?);
            }
        }
        Some(out)
    }

    /// Bytes held by this string source alone (pools shared with their archive are not counted):
    /// the memory breakdown of an open workspace.
    pub fn owned_bytes(&self) -> usize {
        let table = match &self.table {
            Table::Classic { blob, bounds } => {
                blob.capacity() + bounds.capacity() * std::mem::size_of::<(u32, u32)>()
            }
            Table::Nkpi { pool_a, pool_w } => [pool_a, pool_w]
                .iter()
                .filter(|p| Arc::strong_count(p) == 1)
                .map(|p| p.capacity())
                .sum(),
        };
        let resolved: usize = self
            .resolved
            .values()
            .map(|r| r.text.capacity() + r.folded.capacity())
            .sum();
        table + resolved
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
                PoolText::Legacy(raw) => self.legacy_text(raw, fold).is_none(),
                PoolText::Text(t) => fold && !t.is_ascii() && self.casefold.is_none(),
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
        let found = self.known_text(r, fold);
        if found.is_none() && self.needs_caller(r, fold) {
            // a render that met it is redone once the caller has resolved it (`take_asked`)
            let mut asked = self.asked.lock().unwrap_or_else(|p| p.into_inner());
            asked.push(r);
        }
        found
    }

    /// The references `text` was asked for that need the caller (distinct), emptied.
    pub fn take_asked(&self) -> Vec<u32> {
        let mut asked = self.asked.lock().unwrap_or_else(|p| p.into_inner());
        let mut refs = std::mem::take(&mut *asked);
        refs.sort_unstable();
        refs.dedup();
        refs
    }

    fn known_text(&self, r: u32, fold: bool) -> Option<Cow<'_, [u8]>> {
        if self.resolved.is_empty() {
            return self.table_text(r, fold);
        }
        if let Some(found) = self.resolved.get(&r) {
            return Some(Cow::Borrowed(if fold {
                &found.folded
            } else {
                &found.text
            }));
        }
        self.table_text(r, fold)
    }

    /// The text of `r` from the table itself (what needs no caller).
    fn table_text(&self, r: u32, fold: bool) -> Option<Cow<'_, [u8]>> {
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
                PoolText::Text(t) => self.fold_text(&t).map(Cow::Owned),
                PoolText::Legacy(raw) => self.legacy_text(raw, fold).map(Cow::Owned),
                PoolText::Missing => None,
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
