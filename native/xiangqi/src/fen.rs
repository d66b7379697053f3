//! FEN parsing and rendering with the reference's checks (`Position._set_fen` and `placement.py`):
//! every malformed or unreachable FEN is a `FenError` (code `BAD_FEN`), never a panic.

use crate::tables::{square, ADVISOR, BLACK, ELEPHANT, KING, PAWN, RED};

/// A refused FEN: always the error code `BAD_FEN`, with English and Chinese text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FenError {
    pub message: String,
    pub message_zh: String,
}

impl FenError {
    pub const CODE: &'static str = "BAD_FEN";

    pub fn new(message: impl Into<String>, message_zh: impl Into<String>) -> FenError {
        FenError {
            message: message.into(),
            message_zh: message_zh.into(),
        }
    }

    fn plain(message: String) -> FenError {
        FenError {
            message_zh: format!("FEN 无效：{message}"),
            message,
        }
    }
}

impl std::fmt::Display for FenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", Self::CODE, self.message)
    }
}

impl std::error::Error for FenError {}

pub struct ParsedFen {
    pub board: [i8; 90],
    pub turn: usize,
    pub halfmove: u32,
    pub fullmove: u32,
}

/// Python's `str.isspace()` (what `str.split()` splits on): Unicode White_Space plus U+001C..U+001F.
fn py_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

pub fn parse(text: &str) -> Result<ParsedFen, FenError> {
    let fields: Vec<&str> = text.split(py_space).filter(|f| !f.is_empty()).collect();
    if fields.is_empty() {
        return Err(FenError::plain("empty FEN".into()));
    }
    if fields.len() > 6 {
        return Err(FenError::plain(format!(
            "FEN has {} fields, at most 6 expected",
            fields.len()
        )));
    }
    let rows: Vec<&str> = fields[0].split('/').collect();
    if rows.len() != 10 {
        return Err(FenError::plain(format!(
            "FEN board has {} ranks, 10 expected",
            rows.len()
        )));
    }
    let mut board = [0i8; 90];
    for (row_index, row) in rows.iter().enumerate() {
        let rank = 9 - row_index as i64;
        let mut col: i64 = 0;
        for ch in row.chars() {
            if ('1'..='9').contains(&ch) {
                col += ch as i64 - '0' as i64;
                continue;
            }
            let kind = match ch.to_ascii_uppercase() {
                'K' => 1,
                'A' => 2,
                'B' | 'E' => 3,
                'N' | 'H' => 4,
                'R' => 5,
                'C' => 6,
                'P' => 7,
                _ => 0,
            };
            if kind == 0 || !ch.is_ascii() {
                return Err(FenError::plain(format!(
                    "unknown piece letter {ch:?} in rank {rank}"
                )));
            }
            if col >= 9 {
                return Err(FenError::plain(format!(
                    "rank {rank} has more than 9 files"
                )));
            }
            board[row_index * 9 + col as usize] =
                if ch.is_ascii_uppercase() { kind } else { -kind };
            col += 1;
        }
        if col != 9 {
            return Err(FenError::plain(format!(
                "rank {rank} has {col} files, 9 expected"
            )));
        }
    }
    let side = fields
        .get(1)
        .map(|s| s.to_lowercase())
        .unwrap_or_else(|| "w".into());
    if !matches!(side.as_str(), "w" | "r" | "b") {
        return Err(FenError::plain(format!(
            "side to move must be w, r or b, not {:?}",
            fields[1]
        )));
    }
    let halfmove = match fields.get(4) {
        Some(text) => parse_counter(text)?,
        None => 0,
    };
    let fullmove = match fields.get(5) {
        Some(text) => parse_counter(text)?,
        None => 1,
    };
    if !((0..=100_000).contains(&halfmove) && (0..=1_000_000).contains(&fullmove)) {
        return Err(FenError::plain("move counters out of range".into()));
    }
    if let Some((en, zh)) = placement_problem(&board) {
        return Err(FenError::new(en, zh));
    }
    Ok(ParsedFen {
        board,
        turn: if side == "b" { BLACK } else { RED },
        halfmove: halfmove as u32,
        fullmove: fullmove as u32,
    })
}

/// Python's `int(text)` for ASCII text: optional sign, digits with single `_` between them.
/// Values beyond the range saturate (they are refused as out of range, like Python's big ints).
fn parse_counter(text: &str) -> Result<i64, FenError> {
    let bad = || FenError::plain("move counters must be integers".into());
    let (negative, digits) = match text.as_bytes().first() {
        Some(b'+') => (false, &text[1..]),
        Some(b'-') => (true, &text[1..]),
        _ => (false, text),
    };
    let bytes = digits.as_bytes();
    if bytes.is_empty() || bytes[0] == b'_' || bytes[bytes.len() - 1] == b'_' {
        return Err(bad());
    }
    let mut value: i64 = 0;
    let mut previous_underscore = false;
    for &b in bytes {
        if b == b'_' {
            if previous_underscore {
                return Err(bad());
            }
            previous_underscore = true;
            continue;
        }
        previous_underscore = false;
        if !b.is_ascii_digit() {
            return Err(bad());
        }
        value = value.saturating_mul(10).saturating_add((b - b'0') as i64);
    }
    Ok(if negative { -value } else { value })
}

const MAX_COUNT: [u8; 8] = [0, 1, 2, 2, 2, 2, 2, 5];
const NAMES_EN: [&str; 8] = [
    "", "king", "advisor", "elephant", "horse", "rook", "cannon", "pawn",
];
const NAMES_ZH: [[&str; 8]; 2] = [
    ["", "帅", "仕", "相", "马", "车", "炮", "兵"],
    ["", "将", "士", "象", "马", "车", "炮", "卒"],
];
const SIDE_EN: [&str; 2] = ["red", "black"];
const SIDE_ZH: [&str; 2] = ["红方", "黑方"];

/// May a piece of `kind` and `color` stand on `(file, rank)` in a real game (placement.py)?
fn allowed(kind: i8, color: usize, file: i32, rank: i32) -> bool {
    // Black's points are Red's mirrored through the river
    let r = if color == RED { rank } else { 9 - rank };
    match kind {
        KING => (3..=5).contains(&file) && r <= 2,
        ADVISOR => matches!((file, r), (3, 0) | (5, 0) | (4, 1) | (3, 2) | (5, 2)),
        ELEPHANT => matches!(
            (file, r),
            (2, 0) | (6, 0) | (0, 2) | (4, 2) | (8, 2) | (2, 4) | (6, 4)
        ),
        PAWN => (r >= 5) || ((r == 3 || r == 4) && file % 2 == 0),
        _ => true,
    }
}

fn name(sq: usize) -> String {
    crate::board::square_name(sq)
}

/// The first placement rule the board breaks, `(english, chinese)`, as `placement_problem` words it.
pub fn placement_problem(board: &[i8; 90]) -> Option<(String, String)> {
    let mut counts = [[0u8; 8]; 2];
    for (sq, &piece) in board.iter().enumerate() {
        if piece == 0 {
            continue;
        }
        let (color, kind) = if piece > 0 {
            (RED, piece)
        } else {
            (BLACK, -piece)
        };
        counts[color][kind as usize] += 1;
        let (file, rank) = (crate::tables::file_of(sq), crate::tables::rank_of(sq));
        if !allowed(kind, color, file, rank) {
            return Some(misplaced(color, kind, sq));
        }
    }
    for color in [RED, BLACK] {
        for kind in 1..8 {
            let n = counts[color][kind];
            if n > MAX_COUNT[kind] {
                return Some((
                    format!(
                        "too many {} {}s ({}, at most {})",
                        SIDE_EN[color], NAMES_EN[kind], n, MAX_COUNT[kind]
                    ),
                    format!(
                        "{}{}过多（{} 个，最多 {} 个）",
                        SIDE_ZH[color], NAMES_ZH[color][kind], n, MAX_COUNT[kind]
                    ),
                ));
            }
        }
        if counts[color][KING as usize] == 0 {
            return Some((
                format!("{} has no king", SIDE_EN[color]),
                format!("{}没有{}", SIDE_ZH[color], NAMES_ZH[color][KING as usize]),
            ));
        }
    }
    pawn_files(board)
}

fn misplaced(color: usize, kind: i8, sq: usize) -> (String, String) {
    let at = name(sq);
    let name_en = format!("{} {}", SIDE_EN[color], NAMES_EN[kind as usize]);
    let name_zh = format!("{}{}", SIDE_ZH[color], NAMES_ZH[color][kind as usize]);
    match kind {
        KING => (format!("{name_en} on {at} is outside its palace"), format!("{name_zh}在 {at}，不在九宫内")),
        ADVISOR => (
            format!("{name_en} on {at}: an advisor stands only on the five points of its palace's diagonals"),
            format!("{name_zh}在 {at}：仕（士）只能在九宫斜线的五个点上"),
        ),
        ELEPHANT => (
            format!("{name_en} on {at}: an elephant stands only on its seven points on its own side of the river"),
            format!("{name_zh}在 {at}：相（象）只能在本方的七个相位上，不能过河"),
        ),
        _ => (
            format!("{name_en} on {at}: a pawn never stands behind its start rank or off its file before the river"),
            format!("{name_zh}在 {at}：兵（卒）过河前不会退到起始线之后，也不会离开原来的纵线"),
        ),
    }
}

fn pawn_files(board: &[i8; 90]) -> Option<(String, String)> {
    for (color, sign, ranks) in [(RED, 1i8, (3, 4)), (BLACK, -1i8, (5, 6))] {
        for file in [0, 2, 4, 6, 8] {
            let (a, b) = (square(file, ranks.0), square(file, ranks.1));
            if board[a] == sign * PAWN && board[b] == sign * PAWN {
                let at = format!("{}/{}", name(a), name(b));
                let pawn = NAMES_ZH[color][PAWN as usize];
                return Some((
                    format!(
                        "two {} pawns on {at}: before the river a file holds one pawn",
                        SIDE_EN[color]
                    ),
                    format!(
                        "{}两个{pawn}同在 {at}：过河前一条纵线只有一个{pawn}",
                        SIDE_ZH[color]
                    ),
                ));
            }
        }
    }
    None
}

/// The canonical FEN of a board.
pub fn render(board: &[i8; 90], turn: usize, halfmove: u32, fullmove: u32) -> String {
    const LETTERS: &[u8; 8] = b".KABNRCP";
    let mut out = String::with_capacity(96);
    for r in 0..10 {
        let mut empty = 0;
        for &p in &board[r * 9..r * 9 + 9] {
            if p == 0 {
                empty += 1;
                continue;
            }
            if empty > 0 {
                out.push((b'0' + empty) as char);
                empty = 0;
            }
            let letter = LETTERS[p.unsigned_abs() as usize] as char;
            out.push(if p < 0 {
                letter.to_ascii_lowercase()
            } else {
                letter
            });
        }
        if empty > 0 {
            out.push((b'0' + empty) as char);
        }
        if r < 9 {
            out.push('/');
        }
    }
    let side = if turn == RED { 'w' } else { 'b' };
    out.push_str(&format!(" {side} - - {halfmove} {fullmove}"));
    out
}
