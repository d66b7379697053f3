"""Perft speed: our move generator beside cchess (pure-Python peer) and fairy-stockfish (native).

Run: .venv/bin/python benchmarks/xiangqi_perft.py [--quick]
Targets (design/xiangqi.md): perft(3) >= 50x cchess; start-position perft(4) <= 10 s.
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


def rate(nodes: int, seconds: float) -> str:
    return f"{nodes / seconds:,.0f} leaves/s"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--quick", action="store_true", help="smaller depths (cchess perft(2), ours perft(3))"
    )
    args = parser.parse_args()
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
