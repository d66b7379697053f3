//! Game result, exactly as `moddesk.xiangqi.core.rules` rules it: checkmate and stalemate lose;
//! repetition (perpetual check loses; under the `asian` rule set a perpetual chase loses too;
//! otherwise a draw); the no-capture limit. The differential test in `tests/xiangqi/core/`
//! plays thousands of games through both and compares every verdict.

use crate::board::{is_attacked, MoveList, Position};
use crate::tables::{rank_of, CANNON, HORSE, KING, PAWN, RED, ROOK};

const SIDE_ZH: [&str; 2] = ["红方", "黑方"];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RuleSet {
    Asian,
    Check,
    Draw,
}

impl RuleSet {
    pub fn parse(name: &str) -> Option<RuleSet> {
        match name {
            "asian" => Some(RuleSet::Asian),
            "check" => Some(RuleSet::Check),
            "draw" => Some(RuleSet::Draw),
            _ => None,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    Playing,
    Win,
    Draw,
}

impl State {
    pub fn name(self) -> &'static str {
        match self {
            State::Playing => "playing",
            State::Win => "win",
            State::Draw => "draw",
        }
    }
}

/// The verdict: state, winner (RED/BLACK), the machine code and the Chinese reason.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GameStatus {
    pub state: State,
    pub winner: Option<usize>,
    pub reason_code: &'static str,
    pub reason_zh: String,
}

fn win(winner: usize, code: &'static str, why: String) -> GameStatus {
    GameStatus {
        state: State::Win,
        winner: Some(winner),
        reason_code: code,
        reason_zh: format!("{why}，{}胜", SIDE_ZH[winner]),
    }
}

fn draw(code: &'static str, why: String) -> GameStatus {
    GameStatus {
        state: State::Draw,
        winner: None,
        reason_code: code,
        reason_zh: why,
    }
}

/// The verdict for the current position of the game recorded on `pos` (its pushed moves).
/// `repetitions` must be at least 2 (the reference's default is 3).
pub fn game_status(
    pos: &mut Position,
    rule_set: RuleSet,
    no_capture_limit: u32,
    repetitions: usize,
) -> GameStatus {
    let mover = pos.turn;
    if !pos.has_legal_move() {
        if pos.is_check() {
            return win(1 - mover, "CHECKMATE", format!("{}被将死", SIDE_ZH[mover]));
        }
        return win(
            1 - mover,
            "STALEMATE",
            format!("{}困毙（无着可走）", SIDE_ZH[mover]),
        );
    }
    if let Some(verdict) = repetition_verdict(pos, rule_set, repetitions) {
        return verdict;
    }
    if no_capture_limit > 0 && pos.halfmove >= no_capture_limit {
        return draw(
            "NO_CAPTURE_LIMIT",
            format!("{}回合无吃子，判和", no_capture_limit / 2),
        );
    }
    GameStatus {
        state: State::Playing,
        winner: None,
        reason_code: "IN_PROGRESS",
        reason_zh: "对局进行中".into(),
    }
}

/// The repetition ruling when the current position occurs for the `repetitions`-th time.
pub fn repetition_verdict(
    pos: &Position,
    rule_set: RuleSet,
    repetitions: usize,
) -> Option<GameStatus> {
    let repetitions = repetitions.max(2);
    let mut keys: Vec<u64> = pos.key_history().collect();
    keys.push(pos.key);
    let now = keys.len() - 1;
    let window = (pos.halfmove as usize).min(now);
    let mut hits = Vec::new();
    let mut i = now as isize - 2;
    while i >= (now - window) as isize {
        if keys[i as usize] == pos.key {
            hits.push(i as usize);
        }
        i -= 2;
    }
    if hits.len() + 1 < repetitions {
        return None;
    }
    let repeated = || draw("REPETITION_DRAW", "重复局面，判和".into());
    if rule_set == RuleSet::Draw {
        return Some(repeated());
    }
    let start = hits[repetitions - 2]; // the first of the counted occurrences
    let (checks, chases) = cycle_facts(pos, now - start);
    let mover = pos.turn; // the side to move did not make the last move
    let last = 1 - mover;
    let perpetual_check = [checks[0].iter().all(|&c| c), checks[1].iter().all(|&c| c)];
    if perpetual_check[last] != perpetual_check[mover] {
        let loser = if perpetual_check[last] { last } else { mover };
        return Some(win(
            1 - loser,
            "PERPETUAL_CHECK",
            format!("{}长将", SIDE_ZH[loser]),
        ));
    }
    if rule_set == RuleSet::Asian && !perpetual_check[0] && !perpetual_check[1] {
        let perpetual_chase = [chases[0] != 0, chases[1] != 0];
        if perpetual_chase[last] != perpetual_chase[mover] {
            let loser = if perpetual_chase[last] { last } else { mover };
            return Some(win(
                1 - loser,
                "PERPETUAL_CHASE",
                format!("{}长捉", SIDE_ZH[loser]),
            ));
        }
    }
    Some(repeated())
}

/// Replay the last `plies` moves: per side, did each move check, and which pieces (named by the
/// square they stood on when the cycle began) were chased by every one of its moves.
fn cycle_facts(pos: &Position, plies: usize) -> ([Vec<bool>; 2], [u128; 2]) {
    let mut replay = pos.clone();
    let mut moves: Vec<_> = (0..plies).map(|_| replay.pop()).collect();
    moves.reverse();
    let mut identity = [u8::MAX; 90]; // follow pieces as they move
    for (sq, id) in identity.iter_mut().enumerate() {
        if replay.board[sq] != 0 {
            *id = sq as u8;
        }
    }
    let mut checks: [Vec<bool>; 2] = [Vec::new(), Vec::new()];
    let mut chased: [Option<u128>; 2] = [None, None];
    for m in moves {
        let side = replay.turn;
        replay.push(m);
        identity[m.to()] = identity[m.from()];
        identity[m.from()] = u8::MAX;
        checks[side].push(replay.is_check());
        let mut targets = 0u128;
        for sq in chased_squares(&mut replay, side) {
            targets |= 1u128 << identity[sq];
        }
        chased[side] = Some(match chased[side] {
            None => targets,
            Some(previous) => previous & targets,
        });
    }
    (checks, [chased[0].unwrap_or(0), chased[1].unwrap_or(0)])
}

/// Squares of the opponent's pieces that `chaser` threatens to win (a chase, Asian rules).
pub fn chased_squares(pos: &mut Position, chaser: usize) -> Vec<usize> {
    let sign: i8 = if chaser == RED { 1 } else { -1 };
    let saved = pos.turn;
    pos.set_turn(chaser);
    let mut captures = MoveList::default();
    pos.legal_moves(true, &mut captures);
    pos.set_turn(saved);
    let mut result = Vec::new();
    for &m in captures.as_slice() {
        let (from, to) = (m.from(), m.to());
        let attacker = pos.board[from].abs();
        let target = pos.board[to].abs();
        if attacker == KING || attacker == PAWN || target == KING {
            continue;
        }
        if target == PAWN && uncrossed(to, -sign) {
            continue;
        }
        if (attacker == HORSE || attacker == CANNON) && target == ROOK {
            push_unique(&mut result, to);
            continue;
        }
        if !protected_after_capture(pos, from, to, sign) {
            push_unique(&mut result, to);
        }
    }
    result
}

fn push_unique(list: &mut Vec<usize>, sq: usize) {
    if !list.contains(&sq) {
        list.push(sq);
    }
}

/// True if a pawn of side `sign` on `sq` has not crossed the river.
fn uncrossed(sq: usize, sign: i8) -> bool {
    if sign > 0 {
        rank_of(sq) <= 4
    } else {
        rank_of(sq) >= 5
    }
}

/// True if the defender could legally recapture on `to` after `from`x`to`. Like the reference,
/// the quick test counts rook, cannon, horse, pawn and king (as a rook) attacks only.
fn protected_after_capture(pos: &mut Position, from: usize, to: usize, sign: i8) -> bool {
    let captured = pos.board[to];
    pos.board[to] = pos.board[from];
    pos.board[from] = 0;
    let mut protected = false;
    if is_attacked(pos.t, &pos.board, to, -sign) {
        // a recapture must also be legal: ask the real move generator
        let saved = pos.turn;
        let mover = if sign > 0 { 0 } else { 1 };
        pos.set_turn(1 - mover);
        let mut replies = MoveList::default();
        pos.legal_moves(true, &mut replies);
        protected = replies.as_slice().iter().any(|m| m.to() == to);
        pos.set_turn(saved);
    }
    pos.board[from] = pos.board[to];
    pos.board[to] = captured;
    protected
}
