"""Search: finds mates (checked by brute force), keeps material, limits, cancellation, MultiPV, info."""

from __future__ import annotations

import random
import threading
import time

import pytest

from moddesk.xiangqi.core import search as search_module
from moddesk.xiangqi.core.board import SENSITIVE, Move, Position, parse_square
from moddesk.xiangqi.core.evaluate import evaluate
from moddesk.xiangqi.core.search import CHECK_TO, INF, MATE, MATE_BOUND, Searcher, SearchInfo, mate_in, search

MATES = {
    1: [
        "3k5/9/9/9/9/9/9/9/4R4/4K4 w",
        "9/9/1c3k3/9/9/5N3/6C2/9/4K4/p8 w",
        "9/n8/3k5/9/2R6/9/9/9/9/1C2K4 w",
    ],
    2: [
        "3N1k3/9/9/7P1/2R6/9/6p2/9/3K5/9 w",
        "9/5k3/9/6c2/2R6/1n7/9/9/3N5/4K4 w",
        "3kN4/9/9/9/8n/9/1R6R/9/9/5K3 w",
        "9/N2k5/1C6R/9/9/9/8n/9/9/4K3c w",
    ],
    3: [
        "9/1P3k3/4c4/9/9/3R5/9/9/C2K5/9 w",
        "9/3k3P1/4c4/9/9/5R3/9/9/5K2C/9 w",
        "4k4/9/9/9/9/8R/9/1pCK5/9/9 w",
        "4k4/9/b8/9/9/8P/9/C2K5/9/6R2 w",
    ],
}


def forced_mate(pos: Position, moves: int) -> bool:
    """Brute force: the side to move can force mate (or stalemate, also a loss) within ``moves``."""
    for m in pos.generate_legal():
        pos.push(m)
        try:
            if all_replies_lose(pos, moves):
                return True
        finally:
            pos.pop()
    return False


def all_replies_lose(pos: Position, moves: int) -> bool:
    replies = pos.generate_legal()
    if not replies:
        return True
    if moves == 1:
        return False
    for r in replies:
        pos.push(r)
        try:
            if not forced_mate(pos, moves - 1):
                return False
        finally:
            pos.pop()
    return True


@pytest.mark.parametrize(("n", "fen"), [(n, fen) for n, fens in MATES.items() for fen in fens])
def test_finds_mate_in_n(n: int, fen: str) -> None:
    pos = Position(fen)
    result = search(pos, depth=2 * n)
    line = result.lines[0]
    assert line.mate == n and line.score == MATE - (2 * n - 1)
    assert pos.fen() == Position(fen).fen()  # the caller's position is untouched
    # the move it chose really mates in n: every reply still loses within n - 1
    assert result.best_move is not None
    pos.push(result.best_move)
    assert all_replies_lose(pos, n)
    assert len(line.pv) >= 1 and line.pv[0] == result.best_move


def test_mated_side_reports_negative_mate() -> None:
    # black to move, red threatens nothing yet black is mated next move whatever it does
    pos = Position("3k5/9/9/9/9/9/9/9/4R4/4K4 w")
    pos.push(Move(parse_square("e0"), parse_square("f0")))
    result = search(pos, depth=4)
    assert result.lines[0].mate is None or result.lines[0].mate < 0 or result.lines[0].score < 0


@pytest.mark.parametrize(
    ("fen", "good"),
    [
        # the red rook on c5 wins the undefended black rook on a5
        ("3k5/9/9/9/r1R6/9/9/9/9/4K4 w", {"c5a5"}),
        # the red rook on b3 is attacked by the black horse on c5 and must not stay there
        ("3k5/9/9/9/2n6/9/1R7/9/9/4K4 w", None),
        # black to move: the black rook on e5 wins the undefended red horse on e4
        ("4k4/9/9/9/4r4/4N4/9/9/9/3K5 b", {"e5e4"}),
    ],
)
def test_does_not_hang_material(fen: str, good: set[str] | None) -> None:
    pos = Position(fen)
    result = search(pos, depth=4)
    assert result.best_move is not None
    if good is not None:
        assert result.best_move.iccs() in good
    before = evaluate(pos)
    pos.push(result.best_move)
    reply = search(pos, depth=3)
    # after the opponent's best reply we have not lost a piece's worth of material
    assert -reply.lines[0].score >= before - 150


def test_null_move_does_not_hide_a_shorter_mate() -> None:
    # at depth 7 a null move at the mated side's nodes (beta a mated score) used to cut off the
    # mate in 3, so the search reported the mate in 4 it found first
    fen = MATES[3][0]
    line = search(Position(fen), depth=7).lines[0]
    assert line.mate == 3 and line.score == MATE - 5
    pos = Position(fen)
    pos.push(line.move)
    assert all_replies_lose(pos, 3)


def test_limits_by_nodes_and_depth() -> None:
    pos = Position()
    result = search(pos, nodes=3000)
    assert result.stopped and 3000 <= result.nodes < 3000 + 1100
    assert result.best_move in pos.legal_moves()
    result = search(pos, depth=2)
    assert result.depth == 2 and not result.stopped


def test_time_limit_is_respected() -> None:
    start = time.monotonic()
    result = search(Position(), time_limit=0.4)
    assert time.monotonic() - start < 2.0
    assert result.best_move in Position().legal_moves()


def test_cancel_from_another_thread() -> None:
    searcher = Searcher()
    out: list[object] = []
    worker = threading.Thread(target=lambda: out.append(searcher.search(Position())))
    worker.start()
    time.sleep(0.3)
    searcher.stop()
    worker.join(timeout=5)
    assert not worker.is_alive()
    result = out[0]
    assert result.stopped is True and result.best_move is not None

    event = threading.Event()
    timer = threading.Timer(0.2, event.set)
    timer.start()
    result2 = search(Position(), stop=event)
    assert result2.stopped and result2.best_move is not None


def test_multipv_and_info_callback() -> None:
    infos: list[SearchInfo] = []
    result = search(Position(), depth=3, multipv=3, on_info=infos.append)
    assert len(result.lines) == 3
    moves = [ln.move for ln in result.lines]
    assert len(set(moves)) == 3
    assert [ln.score for ln in result.lines] == sorted((ln.score for ln in result.lines), reverse=True)
    assert {i.depth for i in infos} == {1, 2, 3} and {i.multipv for i in infos} == {1, 2, 3}
    assert all(i.nodes > 0 and i.pv for i in infos)


def test_no_legal_move_returns_none() -> None:
    assert search(Position("3k5/9/9/9/9/9/9/9/3R5/4K4 b"), depth=3).best_move is None


def test_mate_in_helper() -> None:
    assert mate_in(MATE - 1) == 1 and mate_in(MATE - 3) == 2 and mate_in(-(MATE - 2)) == -1
    assert mate_in(120) is None


def test_repeating_a_game_position_scores_as_a_draw() -> None:
    # red is a rook up; the position after g0g1 already occurred in the game, so that move is a draw
    pos = Position("3k5/9/9/9/9/9/9/9/9/4K1R2 w - - 10 20")
    repeat = Move(parse_square("g0"), parse_square("g1"))
    pos.push(repeat)
    seen = pos.key
    pos.pop()
    lines = search(pos, depth=1, multipv=len(pos.legal_moves()), history=[seen, pos.key]).lines
    by_move = {ln.move: ln.score for ln in lines}
    assert by_move[repeat] == 0
    assert max(by_move.values()) > 500
    fresh = search(pos, depth=1, multipv=len(pos.legal_moves())).lines
    assert {ln.move: ln.score for ln in fresh}[repeat] > 500


def test_perpetual_check_inside_the_tree_loses_for_the_checker() -> None:
    searcher = Searcher()
    searcher.search(Position("3k5/9/9/9/9/9/9/9/9/4K1R2 w"), depth=1)
    # a 4-ply cycle where red (to move at plies 0 and 4) checked with every move: red loses it
    searcher.path_keys = [1, 2, 3, 4, 1]
    searcher.path_checks = [False, True, False, True, False]
    searcher.pos.halfmove = 10
    assert searcher._repetition(4) == -(MATE - 4)
    # black checked with every move instead: red, to move, wins it
    searcher.path_checks = [False, False, True, False, True]
    assert searcher._repetition(4) == MATE - 4
    searcher.path_checks = [False, False, False, False, False]
    assert searcher._repetition(4) == 0


def played(fen: str, moves: list[str]) -> Position:
    pos = Position(fen)
    for text in moves:
        move = Move(parse_square(text[:2]), parse_square(text[2:4]))
        assert pos.is_legal(move), text
        pos.push(move)
    return pos


def root_scores(pos: Position) -> dict[str, int]:
    lines = search(pos, depth=1, multipv=len(pos.legal_moves()), history=pos.key_history()).lines
    return {ln.move.iccs(): ln.score for ln in lines}


def test_perpetual_check_through_the_game_record_loses_for_the_checker() -> None:
    # red checked with every move of the game's last cycle (a7a8+, a8a9+); a9a8+ repeats the
    # position after a7a8+ with red still checking: perpetual check, a loss for red
    pos = played("9/4k4/R8/9/9/9/9/9/9/3K5 w - - 0 1", ["a7a8", "e8e9", "a8a9", "e9e8"])
    scores = root_scores(pos)
    assert scores["a9a8"] < -MATE_BOUND
    assert max(scores.values()) > 500  # any other move keeps red a rook up


def test_repeating_a_game_position_without_checks_stays_a_draw() -> None:
    pos = played("3k5/9/9/9/9/9/9/9/9/4K1R2 w - - 0 1", ["g0g1", "d9d8", "g1g0", "d8d9"])
    scores = root_scores(pos)
    assert scores["g0g1"] == 0 and max(scores.values()) > 500


def random_positions(count: int, seed: int) -> list[Position]:
    """Positions from seeded random playouts of the start position (a spread of middlegames)."""
    rng = random.Random(seed)
    out: list[Position] = []
    while len(out) < count:
        pos = Position()
        for _ in range(rng.randrange(4, 60)):
            moves = pos.generate_legal()
            if not moves:
                break
            pos.push(rng.choice(moves))
        if pos.generate_legal():
            out.append(pos)
    return out


def test_check_filter_never_misses_a_check() -> None:
    # the search skips the check test (and prunes quiet moves unplayed) when a move can neither land
    # on CHECK_TO nor leave SENSITIVE of the enemy king: that must hold for every checking move
    checks = 0
    for pos in random_positions(150, 21):
        enemy_king = pos.kings[1 - pos.turn]
        for frm, to in pos.generate_legal():
            if pos.gives_check((frm, to)):
                checks += 1
                assert frm in SENSITIVE[enemy_king] or to in CHECK_TO[enemy_king], (pos.fen(), frm, to)
    assert checks > 50  # the sample really contains checks


def test_shallow_pruning_cuts_the_tree(monkeypatch: pytest.MonkeyPatch) -> None:
    # reverse futility, futility and late-move pruning (test_finds_mate_in_n runs with them on):
    # at depth 4 on this middlegame they leave well under two thirds of the nodes (6.6k against 15.8k)
    fen = "r2akab1r/3n5/4b3n/p1p1pRp1p/9/2P3P2/P3P3c/N2C3C1/4A4/1RBAK1B2 w - - 0 1"
    pruned = search(Position(fen), depth=4).nodes
    monkeypatch.setattr(search_module, "RFP_MARGIN", (0, INF, INF, INF))
    monkeypatch.setattr(search_module, "FUTILITY_MARGIN", (0, INF, INF))
    monkeypatch.setattr(search_module, "LMP_COUNT", (0, 1000, 1000, 1000))
    assert pruned < 0.6 * search(Position(fen), depth=4).nodes


@pytest.mark.parametrize("fen", MATES[1])
def test_quiescence_sees_a_quiet_mating_check(fen: str) -> None:
    # the first quiescence ply also tries quiet checks: a mate in 1 by a non-capture is found there,
    # where captures alone only see the material
    searcher = Searcher()
    searcher.search(Position(fen), depth=1)
    with_checks = searcher._quiesce(-INF, INF, 1, False, True)
    captures_only = searcher._quiesce(-INF, INF, 1, False, False)
    assert mate_in(with_checks) == 1
    assert mate_in(captures_only) is None


def test_qsearch_skips_a_defended_pawn_taken_by_a_rook() -> None:
    # the red rook can take a pawn defended by a black rook: a cheap SEE refuses it in quiescence,
    # and the full search agrees it loses the rook
    pos = Position("3k5/9/9/4r4/9/4p4/9/9/4R4/5K3 w")
    result = search(pos, depth=3)
    assert result.best_move is not None and result.best_move.iccs() != "e1e4"
    assert result.lines[0].score > -300


def test_a_stopped_depth_keeps_the_best_move_first() -> None:
    # a search stopped inside a depth reports that depth's best move once the previous best was
    # searched first; fail-low bounds equal to alpha once sorted other moves ahead of it, and a stop
    # then reported a quiet move instead of taking the free rook
    pos = Position("3k5/9/9/9/r1R6/9/9/9/9/4K4 w")
    for nodes in range(200, 6000, 150):
        result = search(pos, nodes=nodes)
        assert result.best_move is not None and result.best_move.iccs() == "c5a5", nodes
