//! Xiangqi in pure Rust: board, move generation, the game rules and the search engine behind
//! `moddesk.xiangqi`. The rules have a pure-Python reference in `src/moddesk/xiangqi/core/`;
//! differential tests prove both give the same legal moves, keys and verdicts.

pub mod board;
pub mod eval;
pub mod fen;
pub mod rules;
pub mod search;
pub mod tables;

pub use board::{perft, Move, MoveList, Position, START_FEN};
pub use fen::FenError;

/// The version of this crate, reported by `moddesk doctor`.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
