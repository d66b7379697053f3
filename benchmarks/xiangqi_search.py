"""Search speed: nodes/s and time-to-depth on middlegame FENs, beside fairy-stockfish on the same
positions in the same run, plus the mate-suite solve rate.

Run: .venv/bin/python benchmarks/xiangqi_search.py [--quick]
"""

from __future__ import annotations

import argparse
import os
import shutil
import time

from moddesk.xiangqi.core.board import Position
from moddesk.xiangqi.core.search import search

# Middlegame positions from the CPW perft list (also Pikafish's benchmark.cpp defaults).
MIDDLEGAMES = [
    "r1ba1a3/4kn3/2n1b4/pNp1p1p1p/4c4/6P2/P1P2R2P/1CcC5/9/2BAKAB2 w - - 0 1",
    "1cbak4/9/n2a5/2p1p3p/5cp2/2n2N3/6PCP/3AB4/2C6/3A1K1N1 w - - 0 1",
    "r2akab1r/3n5/4b3n/p1p1pRp1p/9/2P3P2/P3P3c/N2C3C1/4A4/1RBAK1B2 w - - 0 1",
    "1rbaka2R/5r3/6n2/2p1p1p2/4P1bP1/PpC3Bc1/1nPR2P2/2N2AN2/1c2K1p2/2BAC4 w - - 0 1",
    "1C2ka3/9/C1Nab1n2/p3p3p/6p2/9/P3P3P/3AB4/3p2c2/c1BAK4 w - - 0 1",
    "rnbakabnr/9/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C5C1/9/RNBAKABNR w - - 0 1",
]
# Mate-in-n positions (verified by brute force in tests/xiangqi/core/test_search.py).
MATES = [
    (1, "9/9/1c3k3/9/9/5N3/6C2/9/4K4/p8 w"),
    (1, "9/n8/3k5/9/2R6/9/9/9/9/1C2K4 w"),
    (2, "3N1k3/9/9/7P1/2R6/9/6p2/9/3K5/9 w"),
    (2, "9/5k3/9/6c2/2R6/1n7/9/9/3N5/4K4 w"),
    (2, "3kN4/9/9/9/8n/9/1R6R/9/9/5K3 w"),
    (2, "9/N2k5/1C6R/9/9/9/8n/9/9/4K3c w"),
    (3, "9/1P3k3/4c4/9/9/3R5/9/9/C2K5/9 w"),
    (3, "9/3k3P1/4c4/9/9/5R3/9/9/5K2C/9 w"),
    (3, "4k4/9/9/9/9/8R/9/1pCK5/9/9 w"),
    (3, "4k4/9/b8/9/9/8P/9/C2K5/9/6R2 w"),
]


def load_average() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="depth 3 instead of 5")
    parser.add_argument("--depth", type=int, default=None)
    args = parser.parse_args()
    depth = args.depth or (3 if args.quick else 5)
    fens = MIDDLEGAMES[:3] if args.quick else MIDDLEGAMES

    total_nodes, total_time, total_cpu = 0, 0.0, 0.0
    print(f"ours: fixed depth {depth}")
    for fen in fens:
        start, cpu = time.perf_counter(), time.process_time()
        result = search(Position(fen), depth=depth)
        elapsed = time.perf_counter() - start
        total_cpu += time.process_time() - cpu
        total_nodes += result.nodes
        total_time += elapsed
        best = result.best_move.iccs() if result.best_move else "-"
        print(
            f"  {elapsed:6.2f} s  {result.nodes:>8,} nodes  {result.nodes / elapsed:>8,.0f} nps  {best}  {fen[:40]}"
        )
    our_nps = total_nodes / total_time
    print(
        f"ours: {total_nodes:,} nodes in {total_time:.2f} s = {our_nps:,.0f} nodes/s, {total_time / len(fens):.2f} s per position to depth {depth}"
    )
    # CPU time is what a loaded box distorts least: compare versions by it
    print(f"ours: {total_cpu:.2f} s CPU to depth {depth} on {len(fens)} positions, {load_average()}")

    path = shutil.which("fairy-stockfish") or "/usr/games/fairy-stockfish"
    if os.path.exists(path):
        from moddesk.xiangqi.engines import open_engine

        with open_engine(path) as engine:
            engine.setoption("Threads", 1)
            engine.setoption("Hash", 16)
            f_nodes, f_time, f_depth_time = 0, 0.0, 0.0
            for fen in fens:
                engine.send("ucinewgame")
                engine.ready()
                start = time.perf_counter()
                lines = engine.analyse(fen, [], depth=depth)
                f_depth_time += time.perf_counter() - start
                engine.ready()
                start = time.perf_counter()
                timed = engine.analyse(fen, [], time_limit=0.5)
                f_time += time.perf_counter() - start
                f_nodes += max((i.nodes for i in timed), default=0)
                del lines
            f_nps = f_nodes / f_time if f_time else 0.0
            print(
                f"fairy-stockfish: {f_nps:,.0f} nodes/s (0.5 s per position), {f_depth_time / len(fens):.3f} s per position to depth {depth}"
            )
            print(
                f"ratio nodes/s ours/fairy-stockfish: {our_nps / f_nps:.3f}x; time-to-depth {depth}: {(total_time / len(fens)) / max(f_depth_time / len(fens), 1e-6):.0f}x slower"
            )
    else:
        print("fairy-stockfish not installed: no peer")

    solved = 0
    start = time.perf_counter()
    for n, fen in MATES:
        result = search(Position(fen), depth=2 * n)
        if result.lines and result.lines[0].mate == n:
            solved += 1
    print(f"mate suite: {solved}/{len(MATES)} solved at depth 2n in {time.perf_counter() - start:.2f} s")


if __name__ == "__main__":
    main()
