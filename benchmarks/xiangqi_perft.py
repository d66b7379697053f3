"""Perft speed: our move generator beside cchess (pure-Python peer) and fairy-stockfish (native).

Run: .venv/bin/python benchmarks/xiangqi_perft.py [--quick] [--native-depth 5] [--rounds 2]
Targets (design/xiangqi.md): perft(3) >= 50x cchess; start-position perft(4) <= 10 s; the native
core's perft(5) >= 1.0x fairy-stockfish's ``go perft 5`` (issue #29), the two run alternately
``--rounds`` times and the best time of each counted (the box is shared: load hits both).
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import time
from typing import Any

from moddesk.xiangqi.core.board import START_FEN, Position, perft

EXPECTED = {1: 44, 2: 1920, 3: 79666, 4: 3290240, 5: 133312995}


def ours(depth: int) -> tuple[int, float]:
    pos = Position(START_FEN)
    start = time.perf_counter()
    nodes = perft(pos, depth)
    return nodes, time.perf_counter() - start


def cchess_perft(depth: int) -> tuple[int, float] | None:
    try:
        import cchess  # type: ignore[import-untyped]
    except ImportError:
        return None

    def walk(board: Any, d: int) -> int:
        total = 0
        for frm, to in board.create_moves():
            if board.is_checked_move(frm, to):  # cchess.move() does not reject self-check
                continue
            if d == 1:
                total += 1
                continue
            child = board.copy()
            child._move_piece(frm, to)
            child.move_player.next()
            total += walk(child, d - 1)
        return total

    board = cchess.ChessBoard(cchess.FULL_INIT_FEN)
    start = time.perf_counter()
    nodes = walk(board, depth)
    return nodes, time.perf_counter() - start


def fairy_perft(depth: int) -> tuple[int, float] | None:
    path = shutil.which("fairy-stockfish") or "/usr/games/fairy-stockfish"
    if not os.path.exists(path):
        return None
    from moddesk.xiangqi.engines import open_engine

    with open_engine(path) as engine:
        engine.ready()
        start = time.perf_counter()
        nodes = engine.perft(START_FEN, depth)
        return nodes, time.perf_counter() - start


def native_perft(depth: int) -> tuple[int, float] | None:
    """perft of the Rust core (moddesk_native), or None when its wheel is not installed."""
    try:
        from moddesk_native import xiangqi as nx
    except ImportError:
        return None
    start = time.perf_counter()
    nodes = nx.perft(START_FEN, depth)
    return nodes, time.perf_counter() - start


def native_versus_fairy(depth: int, rounds: int) -> None:
    """The native core's perft(depth) beside fairy-stockfish's, alternating, best of ``rounds``."""
    ours_best: float | None = None
    fairy_best: float | None = None
    for _ in range(rounds):
        mine = native_perft(depth)
        if mine is None:
            print("moddesk_native not installed (make native): no native perft")
            return
        assert mine[0] == EXPECTED[depth], mine
        ours_best = mine[1] if ours_best is None else min(ours_best, mine[1])
        peer = fairy_perft(depth)
        if peer is not None:
            assert peer[0] == mine[0], (peer, mine)
            fairy_best = peer[1] if fairy_best is None else min(fairy_best, peer[1])
    assert ours_best is not None
    n = EXPECTED[depth]
    print(
        f"native perft({depth}) start: {n:>11,} in {ours_best:6.2f} s  {rate(n, ours_best)}  (best of {rounds})"
    )
    if fairy_best is None:
        print("fairy-stockfish not installed: no peer for the native perft")
        return
    print(f"fairy-stockfish perft({depth}) start: {n:>11,} in {fairy_best:6.2f} s  {rate(n, fairy_best)}")
    print(f"ratio native/fairy-stockfish: {fairy_best / ours_best:.2f}x  (target >= 1.0x)")


def rate(nodes: int, seconds: float) -> str:
    return f"{nodes / seconds:,.0f} leaves/s"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--quick", action="store_true", help="smaller depths (cchess perft(2), ours perft(3))"
    )
    parser.add_argument("--native-depth", type=int, default=5, help="depth of the native-vs-fairy perft")
    parser.add_argument("--rounds", type=int, default=2, help="alternating runs of native and fairy perft")
    parser.add_argument("--native-only", action="store_true", help="only the native-vs-fairy perft")
    args = parser.parse_args()
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    native_versus_fairy(args.native_depth if not args.quick else 4, args.rounds)
    if args.native_only:
        return
    peer_depth = 2 if args.quick else 3
    deep = 3 if args.quick else 4
    print(f"machine: {platform.machine()} {os.cpu_count()} cpus, Python {platform.python_version()}")

    n, t = ours(peer_depth)
    assert n == EXPECTED[peer_depth], n
    print(f"ours   perft({peer_depth}) start: {n:>9,} in {t:6.2f} s  {rate(n, t)}")
    peer = cchess_perft(peer_depth)
    if peer is None:
        print("cchess not installed: no pure-Python peer (pip install cchess)")
    else:
        pn, pt = peer
        assert pn == n, (pn, n)
        print(f"cchess perft({peer_depth}) start: {pn:>9,} in {pt:6.2f} s  {rate(pn, pt)}")
        print(f"ratio ours/cchess: {pt / t:.1f}x  (target >= 50x)")

    n, t = ours(deep)
    assert n == EXPECTED[deep], n
    print(
        f"ours   perft({deep}) start: {n:>9,} in {t:6.2f} s  {rate(n, t)}"
        + ("  (target <= 10 s)" if deep == 4 else "")
    )
    native = fairy_perft(deep)
    if native is None:
        print("fairy-stockfish not installed: no native peer")
    else:
        fn, ft = native
        assert fn == n, (fn, n)
        print(f"fairy-stockfish perft({deep}) start: {fn:>9,} in {ft:6.2f} s  {rate(fn, ft)}")
        print(f"ratio ours/fairy-stockfish: {ft / t:.3f}x (native C++ bound)")


if __name__ == "__main__":
    main()
