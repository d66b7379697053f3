"""Game verdicts on hand-built positions: mate, stalemate, perpetual check/chase, repetition, no-capture."""

from __future__ import annotations

import pytest

from moddesk.xiangqi.core.board import BLACK, RED, Move, Position, parse_square
from moddesk.xiangqi.core.rules import chased_squares, game_status


def play(fen: str, moves: str) -> list[str]:
    """Play ``moves`` from ``fen``; return the reason code after each ply."""
    pos = Position(fen)
    codes = []
    for text in moves.split():
        move = Move(parse_square(text[:2]), parse_square(text[2:]))
        assert pos.is_legal(move), text
        pos.push(move)
        codes.append(game_status(pos).reason_code)
    return codes


def test_checkmate_loses() -> None:
    status = game_status(Position("3k5/9/9/9/9/9/9/9/3R5/4K4 b"))
    assert (status.state, status.winner, status.reason_code) == ("win", RED, "CHECKMATE")
    assert status.reason_zh == "黑方被将死，红方胜"


def test_stalemate_loses() -> None:
    status = game_status(Position("4k4/3P1P3/9/9/9/9/9/9/9/3K5 b"))
    assert (status.state, status.winner, status.reason_code) == ("win", RED, "STALEMATE")
    assert "困毙" in status.reason_zh


def test_start_is_in_progress() -> None:
    status = game_status(Position())
    assert (status.state, status.winner, status.reason_code, status.reason_zh) == (
        "playing",
        None,
        "IN_PROGRESS",
        "对局进行中",
    )
    assert not status.over


PERPETUAL_CHECK = "g0g9 d9d8 g9g8 d8d9 g8g9 d9d8 g9g8 d8d9 g8g9"


def test_perpetual_check_loses_at_the_third_occurrence() -> None:
    codes = play("3k5/9/9/9/9/9/9/9/9/4K1R2 w", PERPETUAL_CHECK)
    assert codes[:-1] == ["IN_PROGRESS"] * 8
    assert codes[-1] == "PERPETUAL_CHECK"
    pos = Position("3k5/9/9/9/9/9/9/9/9/4K1R2 w")
    for t in PERPETUAL_CHECK.split():
        pos.push(Move(parse_square(t[:2]), parse_square(t[2:])))
    status = game_status(pos)
    assert status.winner == BLACK and status.reason_zh == "红方长将，黑方胜"


def test_perpetual_check_is_a_draw_under_the_draw_rule_set() -> None:
    pos = Position("3k5/9/9/9/9/9/9/9/9/4K1R2 w")
    for t in PERPETUAL_CHECK.split():
        pos.push(Move(parse_square(t[:2]), parse_square(t[2:])))
    assert game_status(pos, rule_set="draw").reason_code == "REPETITION_DRAW"
    assert game_status(pos, rule_set="check").reason_code == "PERPETUAL_CHECK"


def test_idle_repetition_is_a_draw() -> None:
    codes = play("3k5/9/9/9/9/9/9/9/9/5K3 w", "f0f1 d9d8 f1f0 d8d9 f0f1 d9d8 f1f0 d8d9")
    assert codes[:-1] == ["IN_PROGRESS"] * 7
    assert codes[-1] == "REPETITION_DRAW"


CHASE = "b3b4 a4a5 b4b5 a5a4 b5b4 a4a5 b4b5 a5a4 b5b4"


def test_perpetual_chase_of_an_unprotected_cannon_loses() -> None:
    fen = "3k5/9/9/9/9/c8/1R7/9/9/4K4 w"
    codes = play(fen, CHASE)
    assert codes[-1] == "PERPETUAL_CHASE" and codes[:-1] == ["IN_PROGRESS"] * 8
    pos = Position(fen)
    for t in CHASE.split():
        pos.push(Move(parse_square(t[:2]), parse_square(t[2:])))
    assert game_status(pos).winner == BLACK
    assert game_status(pos, rule_set="check").reason_code == "REPETITION_DRAW"


def test_attacking_a_protected_piece_is_not_a_chase() -> None:
    # the black cannon a4 is protected by the rook a9: a red rook attack on it is not a chase
    pos = Position("r2k5/9/9/9/9/c8/1R7/9/9/4K4 w")
    pos.push(Move(parse_square("b3"), parse_square("b4")))
    assert chased_squares(pos, RED) == set()
    # a horse attacking a rook is a chase even when the rook is protected
    pos = Position("r2k5/9/9/9/9/r8/9/1N7/9/4K4 b")
    pos.push(Move(parse_square("d9"), parse_square("d8")))
    assert chased_squares(pos, RED) == {parse_square("a4")}


@pytest.mark.parametrize(("limit", "code"), [(120, "NO_CAPTURE_LIMIT"), (200, "IN_PROGRESS")])
def test_no_capture_limit(limit: int, code: str) -> None:
    pos = Position("3k5/9/9/9/9/9/9/9/9/5K3 w - - 119 80")
    pos.push(Move(parse_square("f0"), parse_square("f1")))
    status = game_status(pos, no_capture_limit=limit)
    assert status.reason_code == code
    if code == "NO_CAPTURE_LIMIT":
        assert status.state == "draw" and status.reason_zh == "60回合无吃子，判和"


def test_a_capture_resets_the_no_capture_count() -> None:
    pos = Position("3k5/9/9/9/9/9/9/p8/R8/5K3 w - - 119 80")
    pos.push(Move(parse_square("a1"), parse_square("a2")))
    assert pos.halfmove == 0 and game_status(pos).reason_code == "IN_PROGRESS"


def test_unknown_rule_set_is_refused() -> None:
    with pytest.raises(ValueError):
        game_status(Position(), rule_set="fide")
