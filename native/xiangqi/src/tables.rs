//! Precomputed move and attack tables, Zobrist keys, and the square numbering shared with Python.
//!
//! Squares are numbered 0..89 in FEN order, exactly like `moddesk.xiangqi.core.board`:
//! `sq = (9 - rank) * 9 + file`, file 0..8 = ICCS `a`..`i`, rank 0 = Red's back rank. A 10×9
//! mailbox with per-square tables was chosen over bitboards: a 90-square board does not fit a
//! 64-bit word, the tables make every piece's moves a short loop, and perft(5) runs faster than
//! Fairy-Stockfish's bitboards on this machine (benchmarks/RESULTS.md).

use std::sync::OnceLock;

pub const RED: usize = 0;
pub const BLACK: usize = 1;
pub const KING: i8 = 1;
pub const ADVISOR: i8 = 2;
pub const ELEPHANT: i8 = 3;
pub const HORSE: i8 = 4;
pub const ROOK: i8 = 5;
pub const CANNON: i8 = 6;
pub const PAWN: i8 = 7;

/// A set of squares (bit `sq` set = member); 90 squares fit in a `u128`.
pub type SquareSet = u128;

/// Up to `N` entries of a fixed-size list (no allocation on the hot path).
#[derive(Clone, Copy)]
pub struct Small<T: Copy + Default, const N: usize> {
    pub items: [T; N],
    pub len: u8,
}

impl<T: Copy + Default, const N: usize> Default for Small<T, N> {
    fn default() -> Self {
        Small {
            items: [T::default(); N],
            len: 0,
        }
    }
}

impl<T: Copy + Default, const N: usize> Small<T, N> {
    fn push(&mut self, item: T) {
        self.items[self.len as usize] = item;
        self.len += 1;
    }

    /// The filled entries.
    #[inline]
    pub fn as_slice(&self) -> &[T] {
        &self.items[..self.len as usize]
    }
}

pub struct Tables {
    /// Squares along each of the 4 orthogonal rays (up, down, right, left), nearest first.
    pub rays: [[Small<u8, 9>; 4]; 90],
    /// Horse moves: (leg, destination).
    pub horse_moves: [Small<(u8, u8), 8>; 90],
    /// Horses attacking a square: (leg, horse square).
    pub horse_attacks: [Small<(u8, u8), 8>; 90],
    pub king_moves: [[Small<u8, 4>; 90]; 2],
    pub advisor_moves: [[Small<u8, 4>; 90]; 2],
    /// Elephant moves: (eye, destination).
    pub elephant_moves: [[Small<(u8, u8), 4>; 90]; 2],
    pub pawn_moves: [[Small<u8, 3>; 90]; 2],
    /// Squares from which a pawn of a colour attacks a square.
    pub pawn_attacks: [[Small<u8, 3>; 90]; 2],
    /// Squares on the same rank or file.
    pub lines: [SquareSet; 90],
    /// `lines` plus the diagonal neighbours (horse legs next to the king).
    pub sensitive: [SquareSet; 90],
    /// Squares from which a move can check a king on this square (lines and horse sources).
    pub check_to: [SquareSet; 90],
    /// Zobrist keys by piece row (`piece.rem_euclid(15)`, like Python's negative indexing) and square.
    pub zobrist: [[u64; 90]; 15],
    pub zobrist_side: u64,
}

pub fn square(file: i32, rank: i32) -> usize {
    ((9 - rank) * 9 + file) as usize
}

pub fn file_of(sq: usize) -> i32 {
    (sq % 9) as i32
}

pub fn rank_of(sq: usize) -> i32 {
    9 - (sq / 9) as i32
}

fn on_board(file: i32, rank: i32) -> bool {
    (0..9).contains(&file) && (0..10).contains(&rank)
}

fn in_palace(color: usize, file: i32, rank: i32) -> bool {
    (3..=5).contains(&file) && if color == RED { rank <= 2 } else { rank >= 7 }
}

pub fn own_half(color: usize, rank: i32) -> bool {
    if color == RED {
        rank <= 4
    } else {
        rank >= 5
    }
}

const ORTHO: [(i32, i32); 4] = [(0, 1), (0, -1), (1, 0), (-1, 0)];
const DIAG: [(i32, i32); 4] = [(1, 1), (1, -1), (-1, 1), (-1, -1)];

/// Every table is built once on first use.
pub fn tables() -> &'static Tables {
    static TABLES: OnceLock<Box<Tables>> = OnceLock::new();
    TABLES.get_or_init(build)
}

fn build() -> Box<Tables> {
    let mut t = Box::new(Tables {
        rays: [[Small::default(); 4]; 90],
        horse_moves: [Small::default(); 90],
        horse_attacks: [Small::default(); 90],
        king_moves: [[Small::default(); 90]; 2],
        advisor_moves: [[Small::default(); 90]; 2],
        elephant_moves: [[Small::default(); 90]; 2],
        pawn_moves: [[Small::default(); 90]; 2],
        pawn_attacks: [[Small::default(); 90]; 2],
        lines: [0; 90],
        sensitive: [0; 90],
        check_to: [0; 90],
        zobrist: [[0; 90]; 15],
        zobrist_side: 0,
    });
    for sq in 0..90 {
        let (f, r) = (file_of(sq), rank_of(sq));
        for (dir, (df, dr)) in ORTHO.iter().enumerate() {
            let (mut nf, mut nr) = (f + df, r + dr);
            while on_board(nf, nr) {
                t.rays[sq][dir].push(square(nf, nr) as u8);
                t.lines[sq] |= 1u128 << square(nf, nr);
                nf += df;
                nr += dr;
            }
        }
        for (df, dr) in [
            (1, 2),
            (-1, 2),
            (1, -2),
            (-1, -2),
            (2, 1),
            (2, -1),
            (-2, 1),
            (-2, -1),
        ] {
            if !on_board(f + df, r + dr) {
                continue;
            }
            let leg = if dr.abs() == 2 {
                square(f, r + dr / 2)
            } else {
                square(f + df / 2, r)
            };
            let to = square(f + df, r + dr);
            t.horse_moves[sq].push((leg as u8, to as u8));
        }
        for color in [RED, BLACK] {
            for (df, dr) in ORTHO {
                if on_board(f + df, r + dr) && in_palace(color, f + df, r + dr) {
                    t.king_moves[color][sq].push(square(f + df, r + dr) as u8);
                }
            }
            for (df, dr) in DIAG {
                if on_board(f + df, r + dr) && in_palace(color, f + df, r + dr) {
                    t.advisor_moves[color][sq].push(square(f + df, r + dr) as u8);
                }
            }
            for (df, dr) in [(2, 2), (2, -2), (-2, 2), (-2, -2)] {
                let (nf, nr) = (f + df, r + dr);
                if on_board(nf, nr) && own_half(color, nr) {
                    let eye = square(f + df / 2, r + dr / 2) as u8;
                    t.elephant_moves[color][sq].push((eye, square(nf, nr) as u8));
                }
            }
            let forward = if color == RED { 1 } else { -1 };
            if on_board(f, r + forward) {
                t.pawn_moves[color][sq].push(square(f, r + forward) as u8);
            }
            if !own_half(color, r) {
                for d in [-1, 1] {
                    if on_board(f + d, r) {
                        t.pawn_moves[color][sq].push(square(f + d, r) as u8);
                    }
                }
            }
        }
        let mut diagonal: SquareSet = 0;
        for (df, dr) in DIAG {
            if on_board(f + df, r + dr) {
                diagonal |= 1u128 << square(f + df, r + dr);
            }
        }
        t.sensitive[sq] = t.lines[sq] | diagonal;
    }
    for src in 0..90 {
        for &(leg, dst) in t.horse_moves[src].as_slice() {
            t.horse_attacks[dst as usize].push((leg, src as u8));
        }
        for color in [RED, BLACK] {
            for &dst in t.pawn_moves[color][src].as_slice() {
                t.pawn_attacks[color][dst as usize].push(src as u8);
            }
        }
    }
    for sq in 0..90 {
        let mut set = t.lines[sq];
        for &(_, src) in t.horse_attacks[sq].as_slice() {
            set |= 1u128 << src;
        }
        t.check_to[sq] = set;
    }
    let mut rng = Mt19937::from_python_int_seed(0x5849_4E47);
    for row in t.zobrist.iter_mut() {
        for key in row.iter_mut() {
            *key = rng.getrandbits64();
        }
    }
    t.zobrist_side = rng.getrandbits64();
    t
}

/// CPython's Mersenne Twister (`random.Random(seed)` with an int seed, `getrandbits(64)`), so the
/// Zobrist keys are bit-for-bit the ones `moddesk.xiangqi.core.board` computes: a key history
/// from Python can be handed to the native search unchanged.
struct Mt19937 {
    state: [u32; 624],
    index: usize,
}

impl Mt19937 {
    fn init_genrand(seed: u32) -> Self {
        let mut state = [0u32; 624];
        state[0] = seed;
        for i in 1..624 {
            state[i] = 1_812_433_253u32
                .wrapping_mul(state[i - 1] ^ (state[i - 1] >> 30))
                .wrapping_add(i as u32);
        }
        Mt19937 { state, index: 624 }
    }

    /// `init_by_array` with the 32-bit words of a non-negative seed below 2**32 (CPython's path).
    fn from_python_int_seed(seed: u32) -> Self {
        let key = [seed];
        let mut mt = Self::init_genrand(19_650_218);
        let s = &mut mt.state;
        let (mut i, mut j) = (1usize, 0usize);
        for _ in 0..624usize.max(key.len()) {
            s[i] = (s[i] ^ (s[i - 1] ^ (s[i - 1] >> 30)).wrapping_mul(1_664_525))
                .wrapping_add(key[j])
                .wrapping_add(j as u32);
            i += 1;
            j += 1;
            if i >= 624 {
                s[0] = s[623];
                i = 1;
            }
            if j >= key.len() {
                j = 0;
            }
        }
        for _ in 0..623 {
            s[i] = (s[i] ^ (s[i - 1] ^ (s[i - 1] >> 30)).wrapping_mul(1_566_083_941))
                .wrapping_sub(i as u32);
            i += 1;
            if i >= 624 {
                s[0] = s[623];
                i = 1;
            }
        }
        s[0] = 0x8000_0000;
        mt
    }

    fn next_u32(&mut self) -> u32 {
        if self.index >= 624 {
            for k in 0..624 {
                let y = (self.state[k] & 0x8000_0000) | (self.state[(k + 1) % 624] & 0x7fff_ffff);
                let mut v = self.state[(k + 397) % 624] ^ (y >> 1);
                if y & 1 != 0 {
                    v ^= 0x9908_b0df;
                }
                self.state[k] = v;
            }
            self.index = 0;
        }
        let mut y = self.state[self.index];
        self.index += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^ (y >> 18)
    }

    /// `getrandbits(64)`: the first 32-bit word is the low half (CPython fills little-endian).
    fn getrandbits64(&mut self) -> u64 {
        let low = self.next_u32() as u64;
        let high = self.next_u32() as u64;
        low | (high << 32)
    }
}

/// The Zobrist row of a signed piece (negative pieces index from the end, as in Python).
#[inline]
pub fn zobrist_row(piece: i8) -> usize {
    (piece as i32).rem_euclid(15) as usize
}

#[inline]
pub fn has(set: SquareSet, sq: usize) -> bool {
    (set >> sq) & 1 != 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zobrist_keys_are_pythons() {
        // values printed by `moddesk.xiangqi.core.board` (random.Random(0x58494E47).getrandbits(64))
        let t = tables();
        assert_eq!(t.zobrist[0][0], 0x0d2a_668a_88e0_4618);
        assert_eq!(t.zobrist[1][0], 0x282d_fdb9_138b_8703);
        assert_eq!(t.zobrist[14][89], 0x8719_6106_9c0e_4312);
        assert_eq!(t.zobrist_side, 0xfbe3_9e4c_e48f_00c7);
        assert_eq!(crate::Position::start().key, 0xf315_2dc8_e825_c72a);
    }
}
