//! The workspace's table of lookup keys without a Python object per entry: every entry's
//! normalised key (`moddesk.pvf.archive.normalize_path`), the first entry of each distinct key in
//! key order (a permutation of directory indexes) and in directory order. Listing, lookups, folder
//! children and prefix ranges are answered from it; a key is made as a Python `str` only when a
//! caller asks for it.
//!
//! Keys are compared as UTF-8 bytes (lone surrogates in their 3-byte forms), whose order is the
//! code-point order Python sorts `str` by.

use std::cmp::Ordering;
use std::collections::HashMap;

use rayon::prelude::*;

use crate::lookup::{is_py_space, normalize_ascii};

/// '0' follows '/' in byte order: every key under "a/b/" sorts in ["a/b/", "a/b0").
const AFTER_SLASH: u8 = b'0';

/// One child of a folder: its name, and for a subfolder the number of keys under it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Child {
    pub name: Vec<u8>,
    pub folder: bool,
    pub count: u64,
}

/// The distinct keys of an archive's entries, sorted and in directory order.
pub struct KeyTable {
    /// Keys that are not the entry's own path bytes (the caller's non-ASCII keys, and ASCII paths
    /// that normalisation changes).
    given: HashMap<u32, Vec<u8>>,
    /// The first entry of each distinct key, in key order.
    sorted: Vec<u32>,
    /// The same entries in directory order (the order a dictionary of first entries keeps).
    firsts: Vec<u32>,
    /// The entries whose key an earlier entry has, in key order then directory order (few).
    repeats: Vec<u32>,
    /// Whether every entry's key is its own path, distinct, with no trailing `/`.
    own_keys: bool,
}

type PathFn<'a, 'p> = &'a (dyn Fn(usize) -> &'p [u8] + Sync);

impl KeyTable {
    /// Table `count` entries (`path(i)` gives entry i's path bytes). `given` holds the keys of the
    /// entries whose paths are not ASCII (as UTF-8); `given_are_paths` says whether each of those
    /// is its entry's own name with no trailing `/` (the caller compares the decoded names).
    /// An entry whose path is not ASCII and has no given key has no key (it cannot be looked up).
    pub fn build(
        count: usize,
        path: PathFn<'_, '_>,
        mut given: HashMap<u32, Vec<u8>>,
        given_are_paths: bool,
    ) -> KeyTable {
        let changed: Vec<(u32, Vec<u8>)> = (0..count as u32)
            .into_par_iter()
            .filter(|i| !given.contains_key(i))
            .filter_map(|i| {
                let p = path(i as usize);
                if is_normal_ascii(p) {
                    return None;
                }
                let key = normalize_ascii(p)?;
                (key != p).then_some((i, key))
            })
            .collect();
        let ascii_normal = changed.is_empty();
        given.extend(changed);
        let keyed: Vec<u32> = (0..count as u32)
            .into_par_iter()
            .filter(|&i| given.contains_key(&i) || path(i as usize).is_ascii())
            .collect();
        let key_of = |i: u32| -> &[u8] {
            match given.get(&i) {
                Some(k) => k.as_slice(),
                None => path(i as usize),
            }
        };
        // each key looked up once, not at every comparison of the sort
        let mut order: Vec<(&[u8], u32)> = keyed.par_iter().map(|&i| (key_of(i), i)).collect();
        drop(keyed);
        order.par_sort_unstable();
        let mut sorted: Vec<u32> = Vec::with_capacity(order.len());
        let mut repeats: Vec<u32> = Vec::new();
        let mut last: Option<&[u8]> = None;
        for &(key, i) in &order {
            if last != Some(key) {
                sorted.push(i);
                last = Some(key);
            } else {
                repeats.push(i);
            }
        }
        drop(order);
        sorted.shrink_to_fit();
        let mut firsts = sorted.clone();
        firsts.par_sort_unstable();
        let own_keys = ascii_normal
            && given_are_paths
            && sorted.len() == count
            && sorted.par_iter().all(|&i| !key_of(i).ends_with(b"/"));
        KeyTable {
            given,
            sorted,
            firsts,
            repeats,
            own_keys,
        }
    }

    /// The key of entry `i`.
    pub fn key<'p>(&'p self, i: u32, path: PathFn<'_, 'p>) -> &'p [u8] {
        match self.given.get(&i) {
            Some(k) => k.as_slice(),
            None => path(i as usize),
        }
    }

    /// How many distinct keys.
    pub fn len(&self) -> usize {
        self.sorted.len()
    }

    pub fn is_empty(&self) -> bool {
        self.sorted.is_empty()
    }

    /// Whether every entry is its own key (distinct, no trailing `/`).
    pub fn own_keys(&self) -> bool {
        self.own_keys
    }

    /// The first entry of each key, in key order.
    pub fn sorted(&self) -> &[u32] {
        &self.sorted
    }

    /// The first entry of each key, in directory order.
    pub fn firsts(&self) -> &[u32] {
        &self.firsts
    }

    /// The rank (in key order) of the first key not less than `key` (`bisect_left`), within `lo..hi`.
    pub fn bisect<'p>(&'p self, key: &[u8], lo: usize, hi: usize, path: PathFn<'_, 'p>) -> usize {
        let hi = hi.min(self.sorted.len());
        let lo = lo.min(hi);
        lo + self.sorted[lo..hi].partition_point(|&i| self.key(i, path) < key)
    }

    /// The first entry whose key is `key`.
    pub fn find<'p>(&'p self, key: &[u8], path: PathFn<'_, 'p>) -> Option<u32> {
        let rank = self.bisect(key, 0, self.sorted.len(), path);
        let &i = self.sorted.get(rank)?;
        (self.key(i, path).cmp(key) == Ordering::Equal).then_some(i)
    }

    /// Every entry whose key is `key`, in directory order (the first is `find`'s).
    pub fn find_all<'p>(&'p self, key: &[u8], path: PathFn<'_, 'p>) -> Vec<u32> {
        let Some(first) = self.find(key, path) else {
            return Vec::new();
        };
        let start = self.repeats.partition_point(|&i| self.key(i, path) < key);
        let mut out = vec![first];
        out.extend(
            self.repeats[start..]
                .iter()
                .take_while(|&&i| self.key(i, path) == key),
        );
        out
    }

    /// The ranks `lo..hi` (key order) of the keys under the folder `prefix` ("" = every key,
    /// else ending in `/`).
    pub fn prefix_range<'p>(&'p self, prefix: &[u8], path: PathFn<'_, 'p>) -> (usize, usize) {
        let n = self.sorted.len();
        if prefix.is_empty() {
            return (0, n);
        }
        let lo = self.bisect(prefix, 0, n, path);
        (lo, self.bisect(&after(prefix), lo, n, path))
    }

    /// The direct children of the folder `prefix` ("" = root, else ending in `/`): folders
    /// first, by name, with how many keys each holds; then files in key order.
    pub fn children<'p>(&'p self, prefix: &[u8], path: PathFn<'_, 'p>) -> Vec<Child> {
        let (lo, hi) = self.prefix_range(prefix, path);
        let cut = prefix.len();
        let mut folders = Vec::new();
        let mut files = Vec::new();
        let mut k = lo;
        while k < hi {
            let rest = &self.key(self.sorted[k], path)[cut..];
            match rest.iter().position(|&b| b == b'/') {
                None => {
                    files.push(Child {
                        name: rest.to_vec(),
                        folder: false,
                        count: 0,
                    });
                    k += 1;
                }
                Some(slash) => {
                    let name = rest[..slash].to_vec();
                    let mut bound = prefix.to_vec();
                    bound.extend_from_slice(&name);
                    bound.push(AFTER_SLASH);
                    let end = self.bisect(&bound, k, hi, path);
                    folders.push(Child {
                        name,
                        folder: true,
                        count: (end - k) as u64,
                    });
                    k = end;
                }
            }
        }
        // key order puts "a.b/…" before "a/…" ('.' < '/'); the listing is by name (stable)
        folders.sort_by(|a, b| a.name.cmp(&b.name));
        folders.extend(files);
        folders
    }
}

/// Whether an ASCII path is its own `normalize_ascii` key (checked without making the key).
fn is_normal_ascii(p: &[u8]) -> bool {
    p.is_ascii()
        && !p.first().is_some_and(|&b| is_py_space(b) || b == b'/')
        && !p.last().is_some_and(|&b| is_py_space(b))
        && !p.starts_with(b"./")
        && !p.iter().any(|&b| b.is_ascii_uppercase() || b == b'\\')
}

/// `prefix` ("a/b/") with its last `/` replaced by the byte after it ("a/b0").
fn after(prefix: &[u8]) -> Vec<u8> {
    let mut bound = prefix[..prefix.len() - 1].to_vec();
    bound.push(AFTER_SLASH);
    bound
}

/// Every key of `table` in the order of `entries`, as one buffer and ends with a leading 0.
pub fn keys_buffer<'p>(
    table: &'p KeyTable,
    entries: &[u32],
    path: PathFn<'_, 'p>,
) -> (Vec<u8>, Vec<u64>) {
    let mut blob = Vec::new();
    let mut ends = Vec::with_capacity(entries.len() + 1);
    ends.push(0);
    for &i in entries {
        blob.extend_from_slice(table.key(i, path));
        ends.push(blob.len() as u64);
    }
    (blob, ends)
}

/// CRC-32 (zlib's) of the keys of `entries` joined by `\n` — `keys_buffer` fed to
/// `index::joined_crc32` (the index header's `pathsCrc`), without the buffer: at 10^6 paths that
/// buffer and its Python copy were ~90 MiB held for the length of a reopen's check.
pub fn keys_crc32<'p>(table: &'p KeyTable, entries: &[u32], path: PathFn<'_, 'p>) -> u32 {
    let mut hasher = crc32fast::Hasher::new();
    for (k, &i) in entries.iter().enumerate() {
        if k > 0 {
            hasher.update(b"\n");
        }
        hasher.update(table.key(i, path));
    }
    hasher.finalize()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(paths: &[&str]) -> (KeyTable, Vec<Vec<u8>>) {
        let owned: Vec<Vec<u8>> = paths.iter().map(|p| p.as_bytes().to_vec()).collect();
        let t = {
            let path = |i: usize| owned[i].as_slice();
            KeyTable::build(owned.len(), &path, HashMap::new(), true)
        };
        (t, owned)
    }

    #[test]
    fn keys_crc32_is_the_crc_of_the_joined_keys_buffer() {
        let (t, owned) = table(&["b/x.equ", "A/y.equ", "a/Y.EQU", "a/z", "a.b/q"]);
        let path = |i: usize| owned[i].as_slice();
        for entries in [t.sorted(), t.firsts(), &[][..], &t.sorted()[..1]] {
            let (blob, ends) = keys_buffer(&t, entries, &path);
            let want = crate::index::joined_crc32(&blob, &ends).expect("ends in order");
            assert_eq!(keys_crc32(&t, entries, &path), want);
        }
    }

    #[test]
    fn distinct_keys_sorted_and_in_directory_order() {
        let (t, owned) = table(&["b/x.equ", "A/y.equ", "a/Y.EQU", "a/z", "a.b/q"]);
        let path = |i: usize| owned[i].as_slice();
        let keys = |entries: &[u32]| -> Vec<String> {
            entries
                .iter()
                .map(|&i| String::from_utf8(t.key(i, &path).to_vec()).unwrap())
                .collect()
        };
        assert_eq!(keys(t.sorted()), ["a.b/q", "a/y.equ", "a/z", "b/x.equ"]);
        assert_eq!(keys(t.firsts()), ["b/x.equ", "a/y.equ", "a/z", "a.b/q"]);
        assert_eq!(t.find(b"a/y.equ", &path), Some(1));
        assert_eq!(t.find_all(b"a/y.equ", &path), vec![1, 2]);
        assert_eq!(t.find_all(b"a/z", &path), vec![3]);
        assert!(t.find_all(b"a", &path).is_empty());
        assert_eq!(t.find(b"a/y", &path), None);
        assert!(!t.own_keys());
        let root: Vec<(String, bool, u64)> = t
            .children(b"", &path)
            .into_iter()
            .map(|c| (String::from_utf8(c.name).unwrap(), c.folder, c.count))
            .collect();
        assert_eq!(
            root,
            [
                ("a".to_string(), true, 2),
                ("a.b".to_string(), true, 1),
                ("b".to_string(), true, 1)
            ]
        );
        assert_eq!(t.prefix_range(b"a/", &path), (1, 3));
    }

    #[test]
    fn the_normal_check_agrees_with_normalisation() {
        for p in [
            "a/b", " a", "a\t", "./a", "/a", "A", "a\\b", "", ".a", "a/./b", "\x0ba", "a\x1f",
        ] {
            let normal = normalize_ascii(p.as_bytes()).is_some_and(|k| k == p.as_bytes());
            assert_eq!(is_normal_ascii(p.as_bytes()), normal, "{p:?}");
        }
    }

    #[test]
    fn own_keys_when_every_path_is_normal_and_distinct() {
        assert!(table(&["a/b", "c"]).0.own_keys());
        assert!(!table(&["a/b", "a/b"]).0.own_keys());
        assert!(!table(&["a/b/"]).0.own_keys());
    }
}
