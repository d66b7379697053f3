"""UCI/UCCI both ways: our `moddesk xiangqi uci` driven by the adapter, and Debian fairy-stockfish."""

from __future__ import annotations

import os
import shutil
import sys
import threading
import time

import pytest

from moddesk.kit.errors import ServiceError
from moddesk.xiangqi.core.board import START_FEN, Move, Position, parse_square, perft
from moddesk.xiangqi.core.rules import game_status
from moddesk.xiangqi.engines import UciEngine, UciServer, open_engine

OUR_ENGINE = [sys.executable, "-m", "moddesk", "xiangqi", "uci"]
FAIRY = shutil.which("fairy-stockfish") or (
    "/usr/games/fairy-stockfish" if os.path.exists("/usr/games/fairy-stockfish") else None
)


def need_fairy() -> str:
    if FAIRY is None:
        if os.environ.get("MODDESK_REQUIRE_EXTERNAL") == "1":
            pytest.fail("fairy-stockfish is required (MODDESK_REQUIRE_EXTERNAL=1) but not installed")
        pytest.skip("fairy-stockfish is not installed (apt-get install fairy-stockfish)")
    return FAIRY


def to_move(iccs: str) -> Move:
    return Move(parse_square(iccs[:2]), parse_square(iccs[2:4]))


def test_self_play_through_our_uci_server() -> None:
    """Two processes of `moddesk xiangqi uci` play a short game through the adapter."""
    with (
        UciEngine(OUR_ENGINE, timeout=20) as red,
        UciEngine(OUR_ENGINE, protocol="ucci", timeout=20) as black,
    ):
        assert red.name == "moddesk-xiangqi" and red.protocol == "uci" and black.protocol == "ucci"
        assert red.rank_base == 0 and black.rank_base == 0
        pos = Position()
        moves: list[str] = []
        for ply in range(12):
            engine = red if ply % 2 == 0 else black
            best = engine.best_move(START_FEN, moves, depth=2)
            assert best is not None
            move = to_move(best)
            assert pos.is_legal(move), (moves, best)
            pos.push(move)
            moves.append(best)
            if game_status(pos).over:
                break
        assert len(moves) >= 10
        lines = red.analyse(START_FEN, moves, depth=2, multipv=2)
        assert len(lines) == 2 and lines[0].pv and lines[1].pv and lines[0].pv[0] != lines[1].pv[0]
        assert red.proc.poll() is None
    assert red.proc.poll() is not None and black.proc.poll() is not None  # clean shutdown


def test_stop_ends_an_infinite_search() -> None:
    with UciEngine(OUR_ENGINE, timeout=20) as engine:
        engine.send(f"position fen {START_FEN}")
        engine.send("go infinite")
        threading.Timer(0.5, lambda: engine.send("stop")).start()
        line = engine._expect(lambda ln: ln.startswith("bestmove"), 30)
        assert Position().is_legal(to_move(line.split()[1]))


def test_server_protocol_lines() -> None:
    out: list[str] = []
    server = UciServer(out.append)
    for line in (
        "uci",
        "setoption name MultiPV value 2",
        "position fen 3k5/9/9/9/9/9/9/9/4R4/4K4 w - - 0 1",
        "go depth 3",
        "isready",
    ):
        assert server.handle(line)
    assert server._thread is not None
    server._thread.join(timeout=30)  # let depth 3 finish instead of stopping it
    server.handle("stop")
    assert "uciok" in out and "readyok" in out
    infos = [ln for ln in out if ln.startswith("info depth")]
    assert any(" multipv 2 " in ln for ln in infos)
    assert any("score mate 1" in ln for ln in infos)
    assert out[-1].startswith("bestmove ") or any(ln.startswith("bestmove ") for ln in out)
    out.clear()
    server.handle("position startpos moves h2e2 z9z9")
    assert out and out[0].startswith("info string bad position")
    out.clear()
    server.handle("position fen 3k5/9/9/9/9/9/9/9/3R5/4K4 b")
    server.handle("go depth 2")
    server.handle("isready")
    server.handle("stop")
    assert "bestmove (none)" in out
    # a new position during an infinite search stops it first (its bestmove is still printed)
    out.clear()
    server.handle("position startpos")
    server.handle("go infinite")
    server.handle("position startpos moves h2e2")
    assert sum(ln.startswith("bestmove ") for ln in out) == 1
    assert not server.handle("quit")


def test_adapter_reports_engines_that_fail() -> None:
    with pytest.raises(ServiceError) as err:
        open_engine("/nonexistent/engine-binary")
    assert err.value.code == "ENGINE_FAILED"
    with pytest.raises(ServiceError) as err:
        UciEngine([sys.executable, "-c", "import time; time.sleep(30)"], protocol="uci", timeout=0.5)
    assert err.value.code == "ENGINE_FAILED" and "timed out" in err.value.message


def test_fairy_stockfish_analysis_with_rank_translation() -> None:
    path = need_fairy()
    with open_engine(path, timeout=10) as engine:
        assert "fairy-stockfish" in engine.name.lower()
        assert engine.rank_base == 1  # UCI mode numbers ranks 1-10; we translate to 0-9
        moves = ["h2e2", "h9g7"]
        lines = engine.analyse(START_FEN, moves, time_limit=0.5, multipv=2)
        assert len(lines) >= 2
        pos = Position()
        for m in moves:
            pos.push(to_move(m))
        for line in lines:
            board = pos.copy()
            for iccs in line.pv[:4]:
                move = to_move(iccs)
                assert board.is_legal(move), (line.pv, iccs)
                board.push(move)
        # fairy-stockfish's perft agrees with ours
        fen = "r1ba1a3/4kn3/2n1b4/pNp1p1p1p/4c4/6P2/P1P2R2P/1CcC5/9/2BAKAB2 w - - 0 1"
        assert engine.perft(fen, 3) == perft(Position(fen), 3) == 43929


def test_fairy_stockfish_finds_the_mate_we_find() -> None:
    path = need_fairy()
    fen = "3k5/9/9/9/9/9/9/9/4R4/4K4 w - - 0 1"
    with open_engine(path, timeout=10) as engine:
        lines = engine.analyse(fen, [], depth=4)
    assert lines and lines[0].mate == 1
    pos = Position(fen)
    pos.push(to_move(lines[0].pv[0]))
    assert not pos.has_legal_move()


def test_stop_right_after_go_is_never_lost(monkeypatch: pytest.MonkeyPatch) -> None:
    """A GUI may send `stop` before the search thread has started searching: it must still stop."""
    from moddesk.xiangqi.core.search import Searcher

    original = Searcher.search

    def late_start(self: Searcher, *args: object, **kwargs: object) -> object:
        time.sleep(0.2)  # the thread is scheduled late, as on a loaded machine
        return original(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Searcher, "search", late_start)
    out: list[str] = []
    server = UciServer(out.append)
    server.handle("position startpos")
    server.handle("go infinite")
    stopper = threading.Thread(target=server.handle, args=("stop",), daemon=True)
    stopper.start()  # `stop` joins the search: it hangs if the stop was lost
    stopper.join(15)
    hung = stopper.is_alive()
    server.searcher.stop()  # end a lost infinite search either way
    assert not hung, "stop sent right after go was lost"
    assert any(line.startswith("bestmove ") for line in out)
