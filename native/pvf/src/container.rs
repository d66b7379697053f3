//! One open archive of either family: detection, the entry table, and bulk reads of entry bytes
//! (`moddesk.pvf.format.detect` and the reading half of `moddesk.pvf.archive.Archive`).

use rayon::prelude::*;

use crate::classic::{self, align4, ClassicDirectory};
use crate::error::{PvfError, Result};
use crate::nkpi::{self, NkpiDirectory};

/// The directory of an archive of either family.
#[derive(Debug, Clone)]
pub enum Container {
    Classic(ClassicDirectory),
    Nkpi(NkpiDirectory),
}

/// Recognise the container and read its directory (`detect` + `read_*_directory`). Paged110 is
/// refused with UNSUPPORTED_FORMAT; unknown bytes give UNKNOWN_FORMAT (the caller adds the
/// sidecar check, which needs the file's folder).
pub fn open(data: &[u8]) -> Result<Container> {
    if let Some(probe) = nkpi::probe_header(data)? {
        if probe.variant.name == "110US" {
            return Err(nkpi::unsupported_paged110());
        }
        return Ok(Container::Nkpi(nkpi::read_nkpi_directory(data, &probe)?));
    }
    if classic::classic_plausible(data) {
        return Ok(Container::Classic(classic::read_classic_directory(data)?));
    }
    classic::check_classic_cut(data)?;
    Err(PvfError::at(
        "UNKNOWN_FORMAT",
        "not a classic (GUID header) or NKPI (90US/90CN) archive; a Paged110 (110US) archive is recognised \
         only with its sk.dat next to it",
        0,
    ))
}

impl Container {
    pub fn count(&self) -> usize {
        match self {
            Container::Classic(d) => d.count(),
            Container::Nkpi(d) => d.count(),
        }
    }

    pub fn is_classic(&self) -> bool {
        matches!(self, Container::Classic(_))
    }

    /// Directory indexes in storage order (NKPI: by chunk; classic: by data offset; both stable).
    pub fn storage_order(&self) -> Vec<u32> {
        let mut order: Vec<u32> = (0..self.count() as u32).collect();
        match self {
            Container::Classic(d) => order.sort_by_key(|&i| d.offsets[i as usize]),
            Container::Nkpi(d) => order.sort_by_key(|&i| d.chunk(i as usize)),
        }
        order
    }

    /// The bytes of entry `index` (classic: decrypted; NKPI: its slice of the inflated chunk).
    pub fn read(&self, data: &[u8], index: usize) -> Result<Vec<u8>> {
        match self {
            Container::Classic(d) => classic::read_classic_block(data, d, index),
            Container::Nkpi(d) => {
                let chunk = nkpi::read_chunk(data, d, d.chunk(index) as usize)?;
                let off = d.offset(index) as usize;
                Ok(chunk[off..off + d.size(index) as usize].to_vec())
            }
        }
    }

    /// The bytes of `indexes` (any order), read on every core: each NKPI chunk is inflated once
    /// per group of consecutive indexes in the same chunk. Entry k of the answer belongs to
    /// `indexes[k]`; an error stops the answer at the first entry (in `indexes` order) it hits.
    pub fn read_many(&self, data: &[u8], indexes: &[u32]) -> Vec<Result<Vec<u8>>> {
        match self {
            Container::Classic(d) => indexes
                .par_iter()
                .map(|&i| classic::read_classic_block(data, d, i as usize))
                .collect(),
            Container::Nkpi(d) => {
                // runs of consecutive indexes sharing a chunk: one inflate per run
                let mut runs: Vec<(usize, usize)> = Vec::new();
                let mut start = 0;
                for k in 1..=indexes.len() {
                    if k == indexes.len()
                        || d.chunk(indexes[k] as usize) != d.chunk(indexes[start] as usize)
                    {
                        runs.push((start, k));
                        start = k;
                    }
                }
                let parts: Vec<Vec<Result<Vec<u8>>>> = runs
                    .par_iter()
                    .map(|&(a, b)| {
                        match nkpi::read_chunk(data, d, d.chunk(indexes[a] as usize) as usize) {
                            Ok(chunk) => indexes[a..b]
                                .iter()
                                .map(|&i| {
                                    let off = d.offset(i as usize) as usize;
                                    Ok(chunk[off..off + d.size(i as usize) as usize].to_vec())
                                })
                                .collect(),
                            Err(e) => (a..b).map(|_| Err(e.clone())).collect(),
                        }
                    })
                    .collect();
                parts.into_iter().flatten().collect()
            }
        }
    }

    /// Whether entry `index` is a script by its NKPI data type (None for classic: the bytes decide).
    pub fn nkpi_script(&self, index: usize) -> Option<bool> {
        match self {
            Container::Classic(_) => None,
            Container::Nkpi(d) => Some(d.data_type(index) == nkpi::DATA_SCRIPT),
        }
    }

    /// Size of entry `index` as stored in the directory.
    pub fn size(&self, index: usize) -> i64 {
        match self {
            Container::Classic(d) => d.sizes[index],
            Container::Nkpi(d) => d.size(index) as i64,
        }
    }
}

/// The padded length of a classic block (public for callers that batch reads).
pub fn classic_block_len(size: i64) -> i64 {
    align4(size)
}
