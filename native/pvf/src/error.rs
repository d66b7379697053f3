//! The one error family of the native core: the same stable codes as `moddesk.pvf.format.errors`.

use std::fmt;

/// A PVF structure could not be read or written; `code` is one of the reference's UPPER_SNAKE codes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PvfError {
    pub code: &'static str,
    pub message: String,
    pub offset: Option<u64>,
}

impl PvfError {
    pub fn new(code: &'static str, message: impl Into<String>) -> Self {
        PvfError {
            code,
            message: message.into(),
            offset: None,
        }
    }

    pub fn at(code: &'static str, message: impl Into<String>, offset: u64) -> Self {
        PvfError {
            code,
            message: message.into(),
            offset: Some(offset),
        }
    }
}

impl fmt::Display for PvfError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code, self.message)?;
        if let Some(offset) = self.offset {
            write!(f, " (offset={offset})")?;
        }
        Ok(())
    }
}

impl std::error::Error for PvfError {}

pub type Result<T> = std::result::Result<T, PvfError>;

/// `len` bytes at `offset` of `data`, or TRUNCATED worded as `ByteSource.read` words it.
pub fn slice<'a>(data: &'a [u8], offset: u64, len: u64, what: &str) -> Result<&'a [u8]> {
    let end = offset.checked_add(len);
    match end {
        Some(end) if end <= data.len() as u64 => Ok(&data[offset as usize..end as usize]),
        _ => Err(PvfError::at(
            "TRUNCATED",
            format!(
                "{what}: {len} bytes at {offset} run past the end ({} bytes)",
                data.len()
            ),
            offset,
        )),
    }
}

pub fn u32_at(data: &[u8], pos: usize) -> u32 {
    u32::from_le_bytes([data[pos], data[pos + 1], data[pos + 2], data[pos + 3]])
}

pub fn i32_at(data: &[u8], pos: usize) -> i32 {
    u32_at(data, pos) as i32
}
