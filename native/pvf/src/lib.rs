//! PVF archives in pure Rust: the hot loops behind `moddesk.pvf` (container, tokens, render,
//! compile, document scan, search index). Every function here has a pure-Python reference in
//! `src/moddesk/pvf/` and is proven identical to it by the differential tests in `tests/`.

/// The version of this crate, reported by `moddesk doctor`.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
