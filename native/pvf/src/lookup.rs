//! Finding an entry by path without a dictionary of every name: the normalised key of each entry
//! is hashed once into a sorted array (12 bytes an entry), and a lookup compares the few entries
//! whose hash matches (`Archive._find`; keys as `moddesk.pvf.archive.normalize_path` makes them).

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};

use rayon::prelude::*;

/// Python's `str.strip()` whitespace among ASCII characters.
pub fn is_py_space(b: u8) -> bool {
    matches!(
        b,
        b' ' | b'\t' | b'\n' | b'\r' | 0x0B | 0x0C | 0x1C | 0x1D | 0x1E | 0x1F
    )
}

/// `normalize_path` of an ASCII path (`\` → `/`, stripped, no leading `./` or `/`, lower case),
/// or None when the path is not ASCII (the caller's own normalisation decides those).
pub fn normalize_ascii(path: &[u8]) -> Option<Vec<u8>> {
    if !path.is_ascii() {
        return None;
    }
    let mut p: &[u8] = path;
    while let Some((&first, rest)) = p.split_first() {
        if !is_py_space(first) {
            break;
        }
        p = rest;
    }
    while let Some((&last, rest)) = p.split_last() {
        if !is_py_space(last) {
            break;
        }
        p = rest;
    }
    let mut out: Vec<u8> = p
        .iter()
        .map(|&b| if b == b'\\' { b'/' } else { b })
        .collect();
    let mut start = 0;
    while out[start..].starts_with(b"./") {
        start += 2;
    }
    while start < out.len() && out[start] == b'/' {
        start += 1;
    }
    out.drain(..start);
    out.make_ascii_lowercase();
    Some(out)
}

fn hash_of(key: &[u8]) -> u64 {
    let mut h = DefaultHasher::new();
    key.hash(&mut h);
    h.finish()
}

/// Every entry's key hash, sorted, and the keys the caller normalised (non-ASCII paths).
pub struct PathIndex {
    sorted: Vec<(u64, u32)>,
    given: HashMap<u32, Vec<u8>>,
}

impl PathIndex {
    /// Index `count` paths (`path(i)` gives entry i's bytes); `given` holds the keys of the
    /// entries whose paths are not ASCII.
    pub fn build<'a>(
        count: usize,
        path: &(dyn Fn(usize) -> &'a [u8] + Sync),
        given: HashMap<u32, Vec<u8>>,
    ) -> PathIndex {
        let mut sorted: Vec<(u64, u32)> = (0..count)
            .into_par_iter()
            .filter_map(|i| {
                let key = match given.get(&(i as u32)) {
                    Some(k) => k.clone(),
                    None => normalize_ascii(path(i))?,
                };
                Some((hash_of(&key), i as u32))
            })
            .collect();
        sorted.par_sort_unstable();
        PathIndex { sorted, given }
    }

    /// The entries whose key is `key`, in directory order.
    pub fn find<'a>(&self, key: &[u8], path: &dyn Fn(usize) -> &'a [u8]) -> Vec<u32> {
        let h = hash_of(key);
        let start = self.sorted.partition_point(|&(x, _)| x < h);
        let mut out = Vec::new();
        for &(x, i) in &self.sorted[start..] {
            if x != h {
                break;
            }
            let same = match self.given.get(&i) {
                Some(k) => k.as_slice() == key,
                None => normalize_ascii(path(i as usize)).is_some_and(|k| k == key),
            };
            if same {
                out.push(i);
            }
        }
        out.sort_unstable();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalises_as_the_reference() {
        let n = |s: &str| normalize_ascii(s.as_bytes()).map(|v| String::from_utf8(v).unwrap());
        assert_eq!(
            n(" ././/Equipment\\A.EQU \x1c").as_deref(),
            Some("equipment/a.equ")
        );
        assert_eq!(n("././a").as_deref(), Some("a"));
        assert_eq!(n("/./a").as_deref(), Some("./a"));
        assert_eq!(n("\x00a").as_deref(), Some("\x00a"));
        assert_eq!(n("é"), None);
    }

    #[test]
    fn finds_every_entry_and_duplicates_in_order() {
        let paths = ["A/b.equ", "x.lst", "a/B.EQU", "c"];
        let path = |i: usize| paths[i].as_bytes();
        let index = PathIndex::build(paths.len(), &path, HashMap::new());
        assert_eq!(index.find(b"a/b.equ", &path), vec![0, 2]);
        assert_eq!(index.find(b"x.lst", &path), vec![1]);
        assert!(index.find(b"nope", &path).is_empty());
    }
}
