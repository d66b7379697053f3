"""Differential test: the native core (``moddesk_native.xiangqi``) against the Python reference.

Random and engine games are played through both; at every position the legal-move lists, the
Zobrist keys and the verdicts (``rules.game_status`` under a rule set chosen per game) must be equal.
The random player prefers moving a piece back and giving check, so repetitions, perpetual checks
and perpetual chases really happen (the test asserts they did). ``MODDESK_DIFF_GAMES`` sets the
number of games (``benchmarks/xiangqi_native_rules.py`` runs thousands).
"""

from __future__ import annotations

import os
import random
from collections import Counter
from types import ModuleType

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from moddesk.xiangqi.core.board import (
    START_FEN,
    Move,
    Position,
    XiangqiError,
    parse_square,
    perft,
    piece_letter,
)
from moddesk.xiangqi.core.rules import RULE_SETS, game_status

GAMES = int(os.environ.get("MODDESK_DIFF_GAMES", "240"))
MAX_PLIES = 140
# Middlegame and endgame starts (plus the start position) so captures, checks and mates come early
STARTS = (
    START_FEN,
    "r1ba1a3/4kn3/2n1b4/pNp1p1p1p/4c4/6P2/P1P2R2P/1CcC5/9/2BAKAB2 w - - 0 1",
    "r2akab1r/3n5/4b3n/p1p1pRp1p/9/2P3P2/P3P3c/N2C3C1/4A4/1RBAK1B2 w - - 0 1",
    "3k5/4a4/4b4/9/9/9/9/4B4/4A4/R3K4 w - - 0 1",
    "2ba1k3/4a4/4b4/p8/2n6/9/P1N6/4B4/4A4/4K1BC1 w - - 0 1",
    "4k4/9/9/9/9/9/9/9/4A4/3AKC2R b - - 0 1",
    "3ak4/4a4/9/9/9/9/9/2n6/4r4/3K5 w - - 0 1",
)


@pytest.fixture(scope="module")
def nx() -> ModuleType:
    try:
        import moddesk_native
    except ImportError:
        if os.environ.get("MODDESK_REQUIRE_EXTERNAL") == "1":
            pytest.fail("moddesk_native is not installed: `make native` did not run or failed")
        pytest.skip("moddesk_native is not installed (no cargo on this machine)")
    module: ModuleType = moddesk_native.xiangqi
    return module


def pick_move(pos: Position, rng: random.Random, previous: dict[int, Move]) -> Move:
    """A random legal move, biased towards moving the last-moved piece back and towards checks."""
    moves = pos.legal_moves()
    back = previous.get(pos.turn)
    roll = rng.random()
    if back is not None and roll < 0.45:
        undo = Move(back.to_sq, back.from_sq)
        if undo in moves:
            return undo
    if roll < 0.65:
        checks = [m for m in moves if pos.gives_check(m)]
        if checks:
            return rng.choice(checks)
    captures = [m for m in moves if pos.board[m.to_sq]]
    if captures and roll < 0.8:
        return rng.choice(captures)
    return rng.choice(moves)


def play_game(rng: random.Random, start: str, engine: object | None) -> tuple[Position, str]:
    """One game from ``start``: random (biased) moves, or the native engine for one side."""
    pos = Position(start)
    rule_set = rng.choice(RULE_SETS)
    previous: dict[int, Move] = {}
    for _ in range(MAX_PLIES):
        if game_status(pos, rule_set).over:
            break
        if engine is not None and pos.turn == 0:
            fen, moves = start, [m.iccs() for m in pos.move_stack()]
            best = engine.search(fen, moves, [*pos.key_history(), pos.key], 3, None, 3000)["best"]  # type: ignore[attr-defined]
            move = Move(parse_square(best[:2]), parse_square(best[2:4]))
        else:
            move = pick_move(pos, rng, previous)
        previous[pos.turn] = move
        pos.push(move)
    return pos, rule_set


def compare(nx: ModuleType, start: str, pos: Position, rule_set: str) -> Counter[str]:
    """Replay the game through both cores and compare every position; returns the verdict codes seen."""
    moves = pos.move_stack()
    native = nx.replay(start, [m.iccs() for m in moves], rule_set)
    ref = Position(start)
    codes: Counter[str] = Counter()
    for i, (legal, key, state, winner, code) in enumerate(native):
        if i:
            ref.push(moves[i - 1])
        where = f"{start} moves {' '.join(m.iccs() for m in moves[:i])} ({rule_set})"
        assert legal == sorted(m.iccs() for m in ref.legal_moves()), where
        assert key == ref.key, where
        status = game_status(ref, rule_set)
        assert (state, winner, code) == (status.state, status.winner, status.reason_code), where
        codes[code] += 1
    return codes


def test_random_and_engine_games_agree(nx: ModuleType) -> None:
    rng = random.Random(20261204)
    engine = nx.Searcher(4)
    seen: Counter[str] = Counter()
    for game in range(GAMES):
        start = STARTS[game % len(STARTS)]
        pos, rule_set = play_game(rng, start, engine if game % 8 == 7 else None)
        seen += compare(nx, start, pos, rule_set)
    # the games must have exercised every rule, or the comparison proved little
    for code in ("CHECKMATE", "PERPETUAL_CHECK", "PERPETUAL_CHASE", "REPETITION_DRAW", "IN_PROGRESS"):
        assert seen[code] > 0, (code, seen)


def test_perft_matches_the_reference(nx: ModuleType) -> None:
    for fen in STARTS:
        pos = Position(fen)
        for depth in (1, 2, 3):
            assert nx.perft(fen, depth) == perft(pos, depth), (fen, depth)


FEN_ALPHABET = "KABNRCPEHkabnrcpeh0123456789/ wrb-+_\t\u3000\u001cxX"


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=FEN_ALPHABET, max_size=90))
def test_fen_acceptance_matches_the_reference(nx: ModuleType, text: str) -> None:
    """Any text: both cores accept it as the same position, or both refuse it with BAD_FEN."""
    try:
        expected = Position(text).fen()
    except XiangqiError as exc:
        assert exc.code == "BAD_FEN"
        expected = None
    try:
        got = nx.position(text)[0]
    except ValueError as exc:
        assert exc.args[0] == "BAD_FEN", exc.args
        got = None
    assert got == expected


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 89), min_size=2, max_size=40), st.integers(0, 1))
def test_placed_boards_match_the_reference(nx: ModuleType, squares: list[int], side: int) -> None:
    """Random placements (kings first): same acceptance, same FEN, same key."""
    board = [0] * 90
    pieces = [1, -1, 5, -5, 6, -6, 4, -4, 7, -7, 2, -2, 3, -3, 7, 7, -7]
    for sq, piece in zip(squares, pieces, strict=False):
        board[sq] = piece
    rows = []
    for r in range(10):
        row, empty = "", 0
        for p in board[r * 9 : r * 9 + 9]:
            if not p:
                empty += 1
                continue
            row += (str(empty) if empty else "") + piece_letter(p)
            empty = 0
        rows.append(row + (str(empty) if empty else ""))
    fen = "/".join(rows) + (" w" if side == 0 else " b")
    try:
        ref = Position(fen)
    except XiangqiError:
        with pytest.raises(ValueError) as caught:
            nx.position(fen)
        assert caught.value.args[0] == "BAD_FEN"
        return
    got_fen, key, check = nx.position(fen)
    assert (got_fen, key, check) == (ref.fen(), ref.key, ref.is_check())
    assert sorted(nx.legal_moves(fen)) == sorted(m.iccs() for m in ref.legal_moves())
