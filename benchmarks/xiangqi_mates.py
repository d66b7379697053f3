"""Mate suite: how many checkmate exercises each engine solves at the same time per position.

The suite is the 殺局_殺法_練習題 (checkmate tactics and exercises) folder of the Chinese Chess
Practical Dataset (`Yvonne761/Chinese-Chess-Practical-Dataset`, CC BY 4.0, Yu-Han Tseng 2026):
127 PGN records, each a start FEN from a master game and the winning line. It is read from a
folder (never copied into this repository): clone the dataset and pass
``--dir <clone>/Dataset/殺局_殺法_練習題``. Records are UTF-8 or Big5 (the dataset's encoding).

Solved = the engine reports a forced mate for the side to move within the time (``score mate N``,
N > 0); positions whose record does not end in a forced mate are unsolvable for both, so the two
counts compare. Our engine (the native core unless MODDESK_CORE=python) and Fairy-Stockfish take
turns on each position, so load on the shared box hits both alike.

Run: .venv/bin/python benchmarks/xiangqi_mates.py --dir DIR [--seconds 1.0] [--limit N]
"""

from __future__ import annotations

import argparse
import os
import shutil
import time
from pathlib import Path

from moddesk.xiangqi.core.board import Position
from moddesk.xiangqi.core.engine import engine_name, new_searcher
from moddesk.xiangqi.engines import open_engine
from moddesk.xiangqi.gamefiles.records import read_record


def load_suite(folder: Path) -> list[tuple[str, str, int]]:
    """(name, start FEN, plies of the recorded line) of every readable record in ``folder``."""
    suite = []
    for path in sorted(folder.glob("*.pgn")):
        raw = path.read_bytes()
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            text = raw.decode("big5hkscs", errors="replace")
        try:
            record = read_record(text.encode("utf-8"), path.name)
        except Exception as exc:
            print(f"skipped {path.name}: {exc}")
            continue
        suite.append((path.name, record.start_fen, len(record.moves)))
    return suite


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dir", required=True, type=Path, help="folder of the suite's PGN records")
    parser.add_argument("--seconds", type=float, default=1.0, help="time per position for each engine")
    parser.add_argument("--limit", type=int, default=0, help="only the first N positions")
    args = parser.parse_args()
    suite = load_suite(args.dir)
    if args.limit:
        suite = suite[: args.limit]
    fairy = shutil.which("fairy-stockfish") or "/usr/games/fairy-stockfish"
    print(
        f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}; {len(suite)} positions, {args.seconds} s each"
    )
    ours_solved = fairy_solved = both = 0
    searcher = new_searcher()
    start = time.perf_counter()
    with open_engine(fairy) as peer:
        for name, fen, plies in suite:
            searcher.clear()
            result = searcher.search(Position(fen), time_limit=args.seconds)
            mine = bool(result.lines and result.lines[0].mate is not None and result.lines[0].mate > 0)
            peer.send("ucinewgame")
            infos = peer.analyse(fen, [], time_limit=args.seconds)
            theirs = bool(infos and infos[0].mate is not None and infos[0].mate > 0)
            ours_solved += mine
            fairy_solved += theirs
            both += mine and theirs
            if mine != theirs:
                print(
                    f"  {name} ({plies} plies): ours {'mate' if mine else '-'}, fairy {'mate' if theirs else '-'}"
                )
    elapsed = time.perf_counter() - start
    print(
        f"ours ({engine_name()}): {ours_solved}/{len(suite)} mates found; fairy-stockfish: {fairy_solved}/{len(suite)}; both: {both}  ({elapsed:.0f} s)"
    )
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
