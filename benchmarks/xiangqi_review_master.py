"""Review a real master game with an external engine and print its turning points with the engine's lines.

Not a speed figure: the record of what `xiangqi_review` says about a game whose outcome is known.
The game is read from a file (ICCS moves, one game, whitespace separated; `#` lines are notes), so
no third-party record is copied into the repository; benchmarks/RESULTS.md names the source.

    python benchmarks/xiangqi_review_master.py GAME.txt --engine uci:/usr/games/fairy-stockfish --seconds 0.5
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from moddesk.xiangqi.core.board import START_FEN
from moddesk.xiangqi.game import Game
from moddesk.xiangqi.gametext import record_lines, review_move_line
from moddesk.xiangqi.review import Analyst, review_game


def replay(start: str, moves: list[str]) -> Game:
    return Game.replay(start, moves, "asian", 120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("game", type=Path, help="ICCS moves of one game from the start position")
    parser.add_argument("--engine", default="uci:/usr/games/fairy-stockfish")
    parser.add_argument("--seconds", type=float, default=0.5, help="engine time per position")
    args = parser.parse_args()
    text = "\n".join(
        ln for ln in args.game.read_text(encoding="utf-8").splitlines() if not ln.startswith("#")
    )
    moves = text.split()
    analyst = Analyst(args.engine)
    started = time.monotonic()
    try:
        review = review_game(analyst, START_FEN, moves, args.seconds, "all", budget=1e9)
    finally:
        analyst.close()
    took = time.monotonic() - started
    final = replay(START_FEN, moves)
    print(f"engine {review['engine']}, {review['secondsPerPosition']} s a position, {took:.0f} s in all")
    print(f"{len(moves)} plies; {review['flagged']} moves flagged; rule: {review['rule']}")
    print("record:")
    print("\n".join(record_lines(final.history())))
    print("curve (Red's expected score %, every 10th ply):")
    print(" ".join(f"{p['ply']}:{p['winRed']}" for p in review["curve"][::10]))
    print("turning points:")
    for tp in review["turningPoints"]:
        print(f"  {review_move_line(tp)}  [{tp['judgementZh']}]")


if __name__ == "__main__":
    main()
