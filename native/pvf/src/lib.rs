//! PVF archives in pure Rust: the hot loops behind `moddesk.pvf` (container, tokens, render,
//! compile, document scan, search index). Every function here has a pure-Python reference in
//! `src/moddesk/pvf/` and is proven identical to it by the differential tests in `tests/`.
//! Nothing here panics on malformed input: every length is checked before it is used.

pub mod batch;
pub mod blocks;
pub mod classic;
pub mod codec;
pub mod compile;
pub mod container;
pub mod crypto;
pub mod error;
pub mod index;
pub mod lookup;
pub mod nkpi;
pub mod render;
pub mod scan;
pub mod strings;
pub mod table;
pub mod texts;

pub use error::{PvfError, Result};

/// The version of this crate, reported by `moddesk doctor`.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
