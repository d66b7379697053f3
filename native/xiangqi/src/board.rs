//! The position: board, side to move, make/unmake, incremental Zobrist key, legal move generation
//! and perft. It mirrors `moddesk.xiangqi.core.board.Position` (the reference) move for move.

use crate::fen::{self, FenError};
use crate::tables::{
    has, tables, zobrist_row, Tables, ADVISOR, BLACK, CANNON, ELEPHANT, HORSE, KING, PAWN, RED,
    ROOK,
};

/// A move from one square to another, packed as `from | to << 7`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct Move(pub u16);

impl Move {
    pub const NONE: Move = Move(0);

    #[inline]
    pub fn new(from: usize, to: usize) -> Move {
        Move((from | (to << 7)) as u16)
    }
    #[inline]
    pub fn from(self) -> usize {
        (self.0 & 0x7f) as usize
    }
    #[inline]
    pub fn to(self) -> usize {
        (self.0 >> 7) as usize
    }

    /// ICCS text such as `h2e2`.
    pub fn iccs(self) -> String {
        format!("{}{}", square_name(self.from()), square_name(self.to()))
    }

    /// Parse ICCS (`h2e2`, ranks 0–9); None when it is not four valid coordinates.
    pub fn parse_iccs(text: &str) -> Option<Move> {
        let bytes = text.trim().as_bytes();
        if bytes.len() != 4 {
            return None;
        }
        let from = parse_square(&bytes[0..2])?;
        let to = parse_square(&bytes[2..4])?;
        Some(Move::new(from, to))
    }
}

fn parse_square(bytes: &[u8]) -> Option<usize> {
    let file = bytes[0].to_ascii_lowercase();
    let rank = bytes[1];
    if !(b'a'..=b'i').contains(&file) || !rank.is_ascii_digit() {
        return None;
    }
    Some(crate::tables::square(
        (file - b'a') as i32,
        (rank - b'0') as i32,
    ))
}

pub fn square_name(sq: usize) -> String {
    let file = (b'a' + (sq % 9) as u8) as char;
    format!("{}{}", file, 9 - sq / 9)
}

#[derive(Clone, Copy)]
struct Undo {
    mv: Move,
    captured: i8,
    key: u64,
    halfmove: u32,
}

/// A list of moves without heap allocation (a xiangqi position has at most ~120 pseudo-legal moves).
pub struct MoveList {
    moves: [Move; 160],
    len: usize,
}

impl Default for MoveList {
    fn default() -> Self {
        MoveList {
            moves: [Move::NONE; 160],
            len: 0,
        }
    }
}

impl MoveList {
    #[inline]
    fn push(&mut self, m: Move) {
        self.moves[self.len] = m;
        self.len += 1;
    }
    #[inline]
    pub fn as_slice(&self) -> &[Move] {
        &self.moves[..self.len]
    }
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    #[inline]
    pub fn set(&mut self, index: usize, m: Move) {
        self.moves[index] = m;
    }
    #[inline]
    pub fn clear(&mut self) {
        self.len = 0;
    }
    #[inline]
    pub fn retain(&mut self, mut keep: impl FnMut(Move) -> bool) {
        let mut j = 0;
        for i in 0..self.len {
            if keep(self.moves[i]) {
                self.moves[j] = self.moves[i];
                j += 1;
            }
        }
        self.len = j;
    }
}

/// True if the side whose pieces have sign `by_sign` (+1 Red, −1 Black) attacks `sq`; the
/// enemy king counts as a rook along its lines (flying general), exactly like the reference.
pub fn is_attacked(t: &Tables, board: &[i8; 90], sq: usize, by_sign: i8) -> bool {
    let rook = ROOK * by_sign;
    let king = KING * by_sign;
    let cannon = CANNON * by_sign;
    for ray in &t.rays[sq] {
        let squares = ray.as_slice();
        let mut i = 0;
        while i < squares.len() {
            let p = board[squares[i] as usize];
            i += 1;
            if p != 0 {
                if p == rook || p == king {
                    return true;
                }
                while i < squares.len() {
                    let q = board[squares[i] as usize];
                    i += 1;
                    if q != 0 {
                        if q == cannon {
                            return true;
                        }
                        break;
                    }
                }
                break;
            }
        }
    }
    let horse = HORSE * by_sign;
    for &(leg, src) in t.horse_attacks[sq].as_slice() {
        if board[src as usize] == horse && board[leg as usize] == 0 {
            return true;
        }
    }
    let pawn = PAWN * by_sign;
    let color = if by_sign > 0 { RED } else { BLACK };
    t.pawn_attacks[color][sq]
        .as_slice()
        .iter()
        .any(|&src| board[src as usize] == pawn)
}

#[derive(Clone)]
pub struct Position {
    pub board: [i8; 90],
    pub turn: usize,
    pub kings: [usize; 2],
    pub halfmove: u32,
    pub fullmove: u32,
    pub key: u64,
    stack: Vec<Undo>,
    pub(crate) t: &'static Tables,
}

impl std::fmt::Debug for Position {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Position({:?})", self.fen())
    }
}

pub const START_FEN: &str = "rnbakabnr/9/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C5C1/9/RNBAKABNR w - - 0 1";

impl Position {
    /// Parse a FEN (the reference's dialect: `w`/`r`/`b`, `E`/`H` for `B`/`N`, at most 6 fields).
    pub fn from_fen(text: &str) -> Result<Position, FenError> {
        let parsed = fen::parse(text)?;
        let t = tables();
        let mut kings = [0usize; 2];
        for (sq, &p) in parsed.board.iter().enumerate() {
            if p == KING {
                kings[RED] = sq;
            } else if p == -KING {
                kings[BLACK] = sq;
            }
        }
        let other = 1 - parsed.turn;
        let by = if parsed.turn == RED { 1 } else { -1 };
        if is_attacked(t, &parsed.board, kings[other], by) {
            return Err(FenError::new(
                "the side not to move is in check (or the kings face each other)",
                "不该走棋的一方正被将军（或双方将帅照面）",
            ));
        }
        let mut pos = Position {
            board: parsed.board,
            turn: parsed.turn,
            kings,
            halfmove: parsed.halfmove,
            fullmove: parsed.fullmove.max(1),
            key: 0,
            stack: Vec::with_capacity(256),
            t,
        };
        pos.key = pos.compute_key();
        Ok(pos)
    }

    pub fn start() -> Position {
        Position::from_fen(START_FEN).expect("the start FEN is valid")
    }

    fn compute_key(&self) -> u64 {
        let mut key = if self.turn == BLACK {
            self.t.zobrist_side
        } else {
            0
        };
        for (sq, &p) in self.board.iter().enumerate() {
            if p != 0 {
                key ^= self.t.zobrist[zobrist_row(p)][sq];
            }
        }
        key
    }

    /// The canonical FEN (`w`/`b`, letters `KABNRCP`).
    pub fn fen(&self) -> String {
        fen::render(&self.board, self.turn, self.halfmove, self.fullmove)
    }

    #[inline]
    pub fn sign(&self) -> i8 {
        if self.turn == RED {
            1
        } else {
            -1
        }
    }

    /// True if the side to move is in check (flying general included).
    #[inline]
    pub fn is_check(&self) -> bool {
        is_attacked(self.t, &self.board, self.kings[self.turn], -self.sign())
    }

    /// Number of moves pushed since the position was loaded.
    pub fn ply(&self) -> usize {
        self.stack.len()
    }

    /// Zobrist keys before each pushed move, oldest first.
    pub fn key_history(&self) -> impl Iterator<Item = u64> + '_ {
        self.stack.iter().map(|u| u.key)
    }

    /// The moves pushed since the position was loaded, oldest first.
    pub fn move_stack(&self) -> impl Iterator<Item = Move> + '_ {
        self.stack.iter().map(|u| u.mv)
    }

    /// Play a pseudo-legal move; returns the captured piece (0 if none).
    #[inline]
    pub fn push(&mut self, m: Move) -> i8 {
        let (from, to) = (m.from(), m.to());
        let p = self.board[from];
        let cap = self.board[to];
        self.stack.push(Undo {
            mv: m,
            captured: cap,
            key: self.key,
            halfmove: self.halfmove,
        });
        let z = &self.t.zobrist;
        let mut key =
            self.key ^ z[zobrist_row(p)][from] ^ z[zobrist_row(p)][to] ^ self.t.zobrist_side;
        if cap != 0 {
            key ^= z[zobrist_row(cap)][to];
            self.halfmove = 0;
        } else {
            self.halfmove += 1;
        }
        self.key = key;
        self.board[to] = p;
        self.board[from] = 0;
        if p == KING || p == -KING {
            self.kings[self.turn] = to;
        }
        if self.turn == BLACK {
            self.fullmove += 1;
        }
        self.turn = 1 - self.turn;
        cap
    }

    /// Take back the last pushed move.
    #[inline]
    pub fn pop(&mut self) -> Move {
        let u = self.stack.pop().expect("pop without a pushed move");
        let (from, to) = (u.mv.from(), u.mv.to());
        let p = self.board[to];
        let us = 1 - self.turn;
        self.board[from] = p;
        self.board[to] = u.captured;
        if p == KING || p == -KING {
            self.kings[us] = from;
        }
        self.turn = us;
        self.key = u.key;
        self.halfmove = u.halfmove;
        if us == BLACK {
            self.fullmove -= 1;
        }
        u.mv
    }

    /// Pass the move (null-move pruning); undo with `pop_null`.
    pub fn push_null(&mut self) {
        self.turn = 1 - self.turn;
        self.key ^= self.t.zobrist_side;
    }

    pub fn pop_null(&mut self) {
        self.push_null();
    }

    /// Pseudo-legal moves of the side to move (they may leave the own king attacked).
    pub fn pseudo_moves(&self, captures_only: bool, out: &mut MoveList) {
        let us = self.turn;
        let sign = self.sign();
        for from in 0..90 {
            let kind = self.board[from] * sign;
            if kind > 0 {
                self.piece_moves(from, kind, us, sign, captures_only, out);
            }
        }
    }

    #[inline]
    fn piece_moves(
        &self,
        from: usize,
        kind: i8,
        us: usize,
        sign: i8,
        captures_only: bool,
        out: &mut MoveList,
    ) {
        let t = self.t;
        let board = &self.board;
        match kind {
            ROOK => {
                for ray in &t.rays[from] {
                    for &to in ray.as_slice() {
                        let q = board[to as usize];
                        if q != 0 {
                            if q * sign < 0 {
                                out.push(Move::new(from, to as usize));
                            }
                            break;
                        }
                        if !captures_only {
                            out.push(Move::new(from, to as usize));
                        }
                    }
                }
            }
            CANNON => {
                for ray in &t.rays[from] {
                    let squares = ray.as_slice();
                    let mut i = 0;
                    while i < squares.len() {
                        let to = squares[i] as usize;
                        i += 1;
                        if board[to] != 0 {
                            break;
                        }
                        if !captures_only {
                            out.push(Move::new(from, to));
                        }
                    }
                    while i < squares.len() {
                        let to = squares[i] as usize;
                        i += 1;
                        let q = board[to];
                        if q != 0 {
                            if q * sign < 0 {
                                out.push(Move::new(from, to));
                            }
                            break;
                        }
                    }
                }
            }
            HORSE => {
                for &(leg, to) in t.horse_moves[from].as_slice() {
                    if board[leg as usize] == 0 {
                        let q = board[to as usize] * sign;
                        if q < 0 || (q == 0 && !captures_only) {
                            out.push(Move::new(from, to as usize));
                        }
                    }
                }
            }
            ELEPHANT => {
                for &(eye, to) in t.elephant_moves[us][from].as_slice() {
                    if board[eye as usize] == 0 {
                        let q = board[to as usize] * sign;
                        if q < 0 || (q == 0 && !captures_only) {
                            out.push(Move::new(from, to as usize));
                        }
                    }
                }
            }
            _ => {
                let table = match kind {
                    PAWN => t.pawn_moves[us][from].as_slice(),
                    ADVISOR => t.advisor_moves[us][from].as_slice(),
                    _ => t.king_moves[us][from].as_slice(),
                };
                for &to in table {
                    let q = board[to as usize] * sign;
                    if q < 0 || (q == 0 && !captures_only) {
                        out.push(Move::new(from, to as usize));
                    }
                }
            }
        }
    }

    /// Would `m` (pseudo-legal, by the side to move) leave the own king attacked? `in_check`: the
    /// side to move is in check now (then every move is tested by playing it).
    #[inline]
    pub fn leaves_king_attacked(&mut self, m: Move, in_check: bool) -> bool {
        let (from, to) = (m.from(), m.to());
        let us = self.turn;
        let king = self.kings[us];
        let them = -self.sign();
        let t = self.t;
        if from == king {
            let cap = self.board[to];
            self.board[to] = self.board[from];
            self.board[from] = 0;
            let bad = is_attacked(t, &self.board, to, them);
            self.board[from] = self.board[to];
            self.board[to] = cap;
            return bad;
        }
        // only a move off the king's lines or off a horse leg next to it, or onto its lines (a new
        // cannon screen), can expose the king when it is not in check now
        if in_check || has(t.sensitive[king], from) || has(t.lines[king], to) {
            let cap = self.board[to];
            self.board[to] = self.board[from];
            self.board[from] = 0;
            let bad = is_attacked(t, &self.board, king, them);
            self.board[from] = self.board[to];
            self.board[to] = cap;
            return bad;
        }
        false
    }

    /// Legal moves of the side to move.
    pub fn legal_moves(&mut self, captures_only: bool, out: &mut MoveList) {
        out.clear();
        self.pseudo_moves(captures_only, out);
        let in_check = self.is_check();
        let mut kept = MoveList::default();
        for &m in out.as_slice() {
            if !self.leaves_king_attacked(m, in_check) {
                kept.push(m);
            }
        }
        out.moves[..kept.len].copy_from_slice(kept.as_slice());
        out.len = kept.len;
    }

    /// Legal moves as a vector (convenience for the rules and the bindings).
    pub fn legal_vec(&mut self) -> Vec<Move> {
        let mut list = MoveList::default();
        self.legal_moves(false, &mut list);
        list.as_slice().to_vec()
    }

    pub fn is_legal(&mut self, m: Move) -> bool {
        if m.from() >= 90 || m.to() >= 90 {
            return false;
        }
        let p = self.board[m.from()];
        if p == 0 || (p > 0) != (self.turn == RED) {
            return false;
        }
        let mut list = MoveList::default();
        let sign = self.sign();
        self.piece_moves(m.from(), p * sign, self.turn, sign, false, &mut list);
        if !list.as_slice().contains(&m) {
            return false;
        }
        let in_check = self.is_check();
        !self.leaves_king_attacked(m, in_check)
    }

    pub fn has_legal_move(&mut self) -> bool {
        let mut list = MoveList::default();
        self.pseudo_moves(false, &mut list);
        let in_check = self.is_check();
        list.as_slice()
            .iter()
            .any(|&m| !self.leaves_king_attacked(m, in_check))
    }

    /// Does playing `m` put the opponent in check?
    pub fn gives_check(&mut self, m: Move) -> bool {
        self.push(m);
        let check = self.is_check();
        self.pop();
        check
    }

    /// Turn the side to move (for the chase detector, which asks what the other side attacks).
    pub(crate) fn set_turn(&mut self, turn: usize) {
        self.turn = turn;
    }
}

/// Leaf nodes of the legal move tree to `depth` (bulk-counted at the last ply).
pub fn perft(pos: &mut Position, depth: u32) -> u64 {
    if depth == 0 {
        return 1;
    }
    let mut list = MoveList::default();
    pos.legal_moves(false, &mut list);
    if depth == 1 {
        return list.len() as u64;
    }
    let mut total = 0;
    for &m in list.as_slice() {
        pos.push(m);
        total += perft(pos, depth - 1);
        pos.pop();
    }
    total
}
