//! Verdicts on hand-built games (the same cases as the reference's tests/xiangqi/core/test_rules.py).

use moddesk_xiangqi::rules::{game_status, RuleSet, State};
use moddesk_xiangqi::{Move, Position};

fn play(fen: &str, moves: &str) -> Vec<&'static str> {
    let mut pos = Position::from_fen(fen).unwrap();
    moves
        .split_whitespace()
        .map(|text| {
            let m = Move::parse_iccs(text).unwrap();
            assert!(pos.is_legal(m), "{text}");
            pos.push(m);
            game_status(&mut pos, RuleSet::Asian, 120, 3).reason_code
        })
        .collect()
}

#[test]
fn checkmate_and_stalemate_lose() {
    let mut mated = Position::from_fen("3k5/9/9/9/9/9/9/9/3R5/4K4 b").unwrap();
    let status = game_status(&mut mated, RuleSet::Asian, 120, 3);
    assert_eq!(
        (status.state, status.winner, status.reason_code),
        (State::Win, Some(0), "CHECKMATE")
    );
    assert_eq!(status.reason_zh, "黑方被将死，红方胜");
    let mut stalemated = Position::from_fen("4k4/3P1P3/9/9/9/9/9/9/9/3K5 b").unwrap();
    assert_eq!(
        game_status(&mut stalemated, RuleSet::Asian, 120, 3).reason_code,
        "STALEMATE"
    );
}

#[test]
fn perpetual_check_loses_and_idle_repetition_draws() {
    // Red's rook checks along ranks 9 and 8 while Black's king steps e9-e8 and back
    let codes = play(
        "4k4/9/9/9/9/9/9/9/4A4/R2AK4 w",
        "a0a9 e9e8 a9a8 e8e9 a8a9 e9e8 a9a8 e8e9 a8a9",
    );
    assert!(codes.contains(&"PERPETUAL_CHECK"), "{codes:?}");
    let idle = play(
        "5k3/9/9/9/9/9/9/9/4A4/3K5 w",
        "d0d1 f9f8 d1d0 f8f9 d0d1 f9f8 d1d0 f8f9",
    );
    assert_eq!(idle.last(), Some(&"REPETITION_DRAW"));
}

#[test]
fn no_capture_limit_draws() {
    let mut pos = Position::from_fen("3k5/9/9/9/9/9/9/9/9/4K4 w - - 119 80").unwrap();
    pos.push(Move::parse_iccs("e0f0").unwrap());
    let status = game_status(&mut pos, RuleSet::Asian, 120, 3);
    assert_eq!(
        (status.state, status.reason_code),
        (State::Draw, "NO_CAPTURE_LIMIT")
    );
    assert_eq!(status.reason_zh, "60回合无吃子，判和");
}
