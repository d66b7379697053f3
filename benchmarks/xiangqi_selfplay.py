"""Self-play between two source trees of moddesk (say main before and after a change), each engine a
``moddesk xiangqi uci`` subprocess with its own PYTHONPATH, from the same fixed openings as
``xiangqi_match.py`` (each opening once with each colour). Both engines run at the same time on the
same box, so load hits them alike; the score is A's, with an Elo difference and a 95% interval.

Run: .venv/bin/python benchmarks/xiangqi_selfplay.py /path/to/new/src /path/to/old/src --games 24 --jobs 2
     (--movetime S per move, or --depth N for a fixed depth: that compares evaluation without speed)
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from moddesk.xiangqi.core.board import START_FEN, Move, Position, parse_square
from moddesk.xiangqi.core.rules import game_status
from moddesk.xiangqi.engines import UciEngine, open_engine

sys.path.insert(0, str(Path(__file__).resolve().parent))
from xiangqi_match import describe, load_average, opening_moves


def engine_command(src: str) -> str:
    """Our UCI engine run from the source tree ``src``."""
    moddesk = shutil.which("moddesk") or str(Path(sys.executable).with_name("moddesk"))
    return f"env PYTHONPATH={src} {moddesk} xiangqi uci"


def _think(engine: UciEngine, moves: list[str], movetime: float, depth: int | None) -> str | None:
    if depth is not None:
        return engine.best_move(START_FEN, moves, depth=depth)
    return engine.best_move(START_FEN, moves, time_limit=movetime)


def play(job: tuple[str, str, int, float, int | None, int]) -> float:
    """Game ``i``: opening i // 2, A plays Red when i is even; A's score."""
    src_a, src_b, i, movetime, depth, max_plies = job
    a_red = i % 2 == 0
    moves = opening_moves(i // 2)
    pos = Position(START_FEN)
    for iccs in moves:
        pos.push(Move(parse_square(iccs[:2]), parse_square(iccs[2:4])))
    with open_engine(engine_command(src_a)) as a, open_engine(engine_command(src_b)) as b:
        for _ in range(max_plies):
            status = game_status(pos)
            if status.over:
                if status.winner is None:
                    return 0.5
                return 1.0 if (status.winner == 0) == a_red else 0.0
            a_turn = (pos.turn == 0) == a_red
            best = _think(a if a_turn else b, moves, movetime, depth)
            if best is None or not pos.is_legal(Move(parse_square(best[:2]), parse_square(best[2:4]))):
                return 0.0 if a_turn else 1.0  # no move or an illegal one loses
            pos.push(Move(parse_square(best[:2]), parse_square(best[2:4])))
            moves.append(best)
    return 0.5  # adjudicated draw at the ply limit


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("src_a", help="source tree of engine A (its src folder)")
    parser.add_argument("src_b", help="source tree of engine B")
    parser.add_argument("--games", type=int, default=24)
    parser.add_argument("--movetime", type=float, default=0.1)
    parser.add_argument("--depth", type=int, default=None, help="fixed depth instead of a time per move")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--max-plies", type=int, default=200)
    args = parser.parse_args()
    for src in (args.src_a, args.src_b):
        if not os.path.isdir(os.path.join(src, "moddesk")):
            parser.error(f"{src} holds no moddesk package")
    print(load_average(), flush=True)
    start = time.perf_counter()
    work = [(args.src_a, args.src_b, i, args.movetime, args.depth, args.max_plies) for i in range(args.games)]
    with ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        scores = list(pool.map(play, work))
    limit = f"depth {args.depth}" if args.depth else f"{args.movetime} s/move"
    print(f"A vs B ({limit}): A {describe(scores)}  ({time.perf_counter() - start:.0f} s)")
    print(load_average())


if __name__ == "__main__":
    main()
