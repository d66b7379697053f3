"""The engine behind the reference's interface: MODDESK_CORE picks it, the native search answers
like the reference (mates, legal PVs, MultiPV, repetition), stops on request and releases the GIL."""

from __future__ import annotations

import os
import threading
from types import ModuleType

import pytest

from moddesk.kit.errors import ServiceError
from moddesk.xiangqi.core import engine
from moddesk.xiangqi.core.board import START_FEN, Position, perft

# Mate-in-n positions (verified by brute force in test_search.py)
MATES = [
    (1, "9/9/1c3k3/9/9/5N3/6C2/9/4K4/p8 w"),
    (2, "3N1k3/9/9/7P1/2R6/9/6p2/9/3K5/9 w"),
    (2, "9/5k3/9/6c2/2R6/1n7/9/9/3N5/4K4 w"),
    (3, "9/3k3P1/4c4/9/9/5R3/9/9/5K2C/9 w"),
]


@pytest.fixture
def native(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.setenv("MODDESK_CORE", "auto")
    module = engine.native_xiangqi()
    if module is None:
        if os.environ.get("MODDESK_REQUIRE_EXTERNAL") == "1":
            pytest.fail("moddesk_native is not installed: `make native` did not run or failed")
        pytest.skip("moddesk_native is not installed (no cargo on this machine)")
    return module


def test_core_choice_picks_the_searcher(native: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    assert isinstance(engine.new_searcher(), engine.NativeSearcher)
    assert engine.engine_name() == "native"
    monkeypatch.setenv("MODDESK_CORE", "python")
    assert isinstance(engine.new_searcher(), engine.ReferenceSearcher)
    assert engine.engine_name() == "reference"


def test_native_without_the_wheel_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MODDESK_CORE", "native")
    monkeypatch.setitem(__import__("sys").modules, "moddesk_native", None)
    with pytest.raises(ServiceError) as caught:
        engine.new_searcher()
    assert caught.value.code == "NATIVE_CORE_MISSING"


@pytest.mark.parametrize(("n", "fen"), MATES)
def test_native_search_finds_the_mates(native: ModuleType, n: int, fen: str) -> None:
    result = engine.search(Position(fen), depth=2 * n + 2)
    assert result.lines[0].mate == n, result.lines[0]
    # the PV is legal and ends in mate
    pos = Position(fen)
    for move in result.lines[0].pv:
        assert pos.is_legal(move)
        pos.push(move)
    assert not pos.has_legal_move() or len(result.lines[0].pv) < 2 * n - 1


def test_multipv_lines_are_distinct_legal_and_sorted(native: ModuleType) -> None:
    pos = Position(START_FEN)
    seen: list[int] = []
    result = engine.search(pos, depth=4, multipv=4, on_info=lambda info: seen.append(info.multipv))
    moves = [line.move for line in result.lines]
    assert len(set(moves)) == 4 and all(pos.is_legal(m) for m in moves)
    assert [ln.score for ln in result.lines] == sorted((ln.score for ln in result.lines), reverse=True)
    assert result.best_move == result.lines[0].move and set(seen) == {1, 2, 3, 4}
    assert pos.fen() == START_FEN  # the caller's position is left as it was


def test_stop_event_ends_an_unlimited_search(native: ModuleType) -> None:
    stop = threading.Event()
    threading.Timer(0.3, stop.set).start()
    result = engine.new_searcher().search(Position(START_FEN), stop=stop)  # no limit: until stopped
    assert result.stopped and result.best_move is not None and result.depth >= 1


def test_the_search_releases_the_gil(native: ModuleType) -> None:
    """Python work in another thread finishes while a long native search is still running."""
    searcher = engine.new_searcher()
    done = threading.Event()
    results: list[object] = []

    def think() -> None:
        results.append(searcher.search(Position(START_FEN), time_limit=60.0))
        done.set()

    thread = threading.Thread(target=think)
    thread.start()
    try:
        # pure-Python work needs the GIL: it can only finish now if the search released it
        assert perft(Position(START_FEN), 2) == 1920
        assert not done.is_set(), "the 60 s search ended before the Python work (it held the GIL?)"
    finally:
        searcher.stop()
        thread.join(timeout=30)
    assert done.is_set() and results


def test_native_perft_and_bad_input(native: ModuleType) -> None:
    assert native.perft(START_FEN, 3) == 79_666
    with pytest.raises(ValueError) as caught:
        native.perft("not a fen", 1)
    assert caught.value.args[0] == "BAD_FEN"
    with pytest.raises(ValueError) as illegal:
        native.legal_moves(START_FEN, ["a0a5"])
    assert illegal.value.args[0] == "ILLEGAL_MOVE"
