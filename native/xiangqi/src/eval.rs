//! Static evaluation (centipawns). Material plus piece-square tables are kept incrementally by the
//! search (`pst`); `positional` adds what tables cannot see: mobility of horses and rooks, king
//! safety (attackers across the river against missing advisors/elephants, cannons on the king's
//! file), coordination (connected crossed pawns, rooks on open files), and a tempo bonus.
//!
//! Tuning: the material, table and king-safety terms are the Python reference's
//! (`moddesk.xiangqi.core.evaluate`, tuned there by self-play matches, benchmarks/RESULTS.md). The
//! rook-mobility, open-file and tempo weights are set by hand (typical values of chess engines
//! scaled to these piece values) and have not been tuned yet: the published match figures are
//! with these weights.

use crate::board::Position;
use crate::tables::{
    file_of, rank_of, zobrist_row, ADVISOR, CANNON, ELEPHANT, HORSE, KING, PAWN, ROOK,
};
use std::sync::OnceLock;

pub const PIECE_VALUES: [i32; 8] = [0, 0, 200, 200, 400, 900, 450, 100];

/// Value of a Red piece of `kind` on `sq` (material + placement), the reference's formula.
fn red_bonus(kind: i8, sq: usize) -> i32 {
    let (f, r) = (file_of(sq), rank_of(sq));
    let centre = (f - 4).abs();
    match kind {
        KING => -15 * i32::from(r > 0) - 5 * centre,
        ADVISOR | ELEPHANT => PIECE_VALUES[kind as usize] + if f == 4 { 10 } else { 0 },
        HORSE => {
            let advanced = if (5..=8).contains(&r) {
                25
            } else if r == 3 || r == 4 {
                10
            } else {
                0
            };
            let edge = if f == 0 || f == 8 { 30 } else { 0 };
            let back = if r == 0 { 20 } else { 0 };
            PIECE_VALUES[4] + advanced - 6 * centre - edge - back
        }
        ROOK => {
            PIECE_VALUES[5] + if r >= 5 { 15 } else { 0 } + if r == 6 { 10 } else { 0 } - 3 * centre
        }
        CANNON => {
            let central = if f == 4 { 20 } else { 0 };
            PIECE_VALUES[6] + central + if r == 2 || r == 7 { 10 } else { 0 } - 2 * centre
        }
        _ => {
            if r <= 4 {
                PIECE_VALUES[7] + if r == 4 && f == 4 { 15 } else { 0 }
            } else if r == 9 {
                130 - 5 * centre
            } else {
                let near_palace = if (3..=5).contains(&f) && (6..=8).contains(&r) {
                    40
                } else if (2..=6).contains(&f) {
                    20
                } else {
                    0
                };
                200 + near_palace + 5 * (r - 5) - 4 * centre
            }
        }
    }
}

/// `PST[zobrist_row(piece)][sq]`: the table score of a signed piece, from Red's point of view.
pub fn pst() -> &'static [[i32; 90]; 15] {
    static PST: OnceLock<[[i32; 90]; 15]> = OnceLock::new();
    PST.get_or_init(|| {
        let mut table = [[0i32; 90]; 15];
        for kind in 1..=7i8 {
            for (sq, cell) in table[zobrist_row(kind)].iter_mut().enumerate() {
                *cell = red_bonus(kind, sq);
            }
            for (sq, cell) in table[zobrist_row(-kind)].iter_mut().enumerate() {
                *cell = -red_bonus(kind, 89 - sq); // Black mirrors Red
            }
        }
        table
    })
}

/// The table score of a whole board (Red's view); the search updates it move by move.
pub fn table_score(board: &[i8; 90]) -> i32 {
    let pst = pst();
    board
        .iter()
        .enumerate()
        .filter(|(_, &p)| p != 0)
        .map(|(sq, &p)| pst[zobrist_row(p)][sq])
        .sum()
}

const HORSE_MOBILITY: i32 = 6;
const HORSE_TRAPPED: i32 = 30;
const HOLLOW_CANNON: i32 = 60;
const SCREENED_CANNON: i32 = 15;
const MISSING_ADVISOR: i32 = 4;
const MISSING_ELEPHANT: i32 = 2;
const CONNECTED_PAWNS: i32 = 12;
const ROOK_MOBILITY: i32 = 3;
const ROOK_OPEN_FILE: i32 = 12;
pub const TEMPO: i32 = 10;

fn crossed(color: usize, sq: usize) -> bool {
    if color == 0 {
        sq / 9 <= 4
    } else {
        sq / 9 >= 5
    }
}

/// Positional terms beyond the tables, from Red's point of view.
pub fn positional(pos: &Position) -> i32 {
    let t = pos.t;
    let board = &pos.board;
    let mut score = 0;
    let mut units = [0i32; 2];
    let mut guards = [[0i32; 2]; 2];
    for color in 0..2 {
        let sign: i8 = if color == 0 { 1 } else { -1 };
        let enemy_king = pos.kings[1 - color];
        let king_file = enemy_king % 9;
        let mut s = 0;
        let mut u = 0;
        for sq in 0..90 {
            let kind = board[sq] * sign;
            if kind <= 0 {
                continue;
            }
            match kind {
                ROOK => {
                    let mut free = 0;
                    for ray in &t.rays[sq] {
                        for &to in ray.as_slice() {
                            let q = board[to as usize];
                            if q == 0 {
                                free += 1;
                            } else {
                                if q * sign < 0 {
                                    free += 1;
                                }
                                break;
                            }
                        }
                    }
                    s += ROOK_MOBILITY * (free - 8);
                    // no own pawn ahead on its file
                    let file = sq % 9;
                    let open = (0..10).all(|r| board[r * 9 + file] != PAWN * sign);
                    if open {
                        s += ROOK_OPEN_FILE;
                    }
                    if crossed(color, sq) {
                        u += 4;
                    }
                }
                HORSE => {
                    let mut n = 0;
                    for &(leg, to) in t.horse_moves[sq].as_slice() {
                        if board[leg as usize] == 0 && board[to as usize] * sign <= 0 {
                            n += 1;
                        }
                    }
                    s += HORSE_MOBILITY * (n - 4) - if n <= 1 { HORSE_TRAPPED } else { 0 };
                    if crossed(color, sq) {
                        u += 3;
                    }
                }
                CANNON => {
                    if sq % 9 == king_file {
                        let step: isize = if sq < enemy_king { 9 } else { -9 };
                        let mut screens = 0;
                        let mut between = sq as isize + step;
                        while between != enemy_king as isize {
                            if board[between as usize] != 0 {
                                screens += 1;
                                if screens > 1 {
                                    break;
                                }
                            }
                            between += step;
                        }
                        s += match screens {
                            0 => HOLLOW_CANNON,
                            1 => SCREENED_CANNON,
                            _ => 0,
                        };
                    }
                    if crossed(color, sq) {
                        u += 2;
                    }
                }
                PAWN if crossed(color, sq) => {
                    let f = sq % 9;
                    if (2..=6).contains(&f) {
                        u += 1;
                    }
                    if (f > 0 && board[sq - 1] == board[sq])
                        || (f < 8 && board[sq + 1] == board[sq])
                    {
                        s += CONNECTED_PAWNS;
                    }
                }
                ADVISOR => guards[color][0] += 1,
                ELEPHANT => guards[color][1] += 1,
                _ => {}
            }
        }
        units[color] = u;
        score += s * i32::from(sign);
    }
    for color in 0..2 {
        let attack = units[1 - color];
        let missing =
            MISSING_ADVISOR * (2 - guards[color][0]) + MISSING_ELEPHANT * (2 - guards[color][1]);
        score -= attack * missing * if color == 0 { 1 } else { -1 };
    }
    score
}

/// The full static score for the side to move.
pub fn evaluate(pos: &Position) -> i32 {
    (table_score(&pos.board) + positional(pos)) * i32::from(pos.sign()) + TEMPO
}
