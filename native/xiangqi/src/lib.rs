//! Xiangqi in pure Rust: board, move generation and the search engine behind `moddesk.xiangqi`.
//! The rules have a pure-Python reference in `src/moddesk/xiangqi/core/`; differential tests
//! prove both give the same legal moves and verdicts.

/// The version of this crate, reported by `moddesk doctor`.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
