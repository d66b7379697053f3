"""Match runner: our engine against Debian fairy-stockfish at fixed UCI_Elo levels (fixed time per
move) and against hoixiangqi (Debian hoichess, xboard protocol, same sudden-death clock for both)
when installed; prints the score and an Elo difference with a 95% error bar.

Games start from a fixed set of short opening lines (``OPENINGS``), each played once with each
colour, so two runs with the same ``--games`` play the same starts and are comparable. ``--jobs``
plays games in parallel processes (each engine still gets the same wall clock per move); the load
average is printed before and after, since a loaded box weakens both engines unevenly.

Run: .venv/bin/python benchmarks/xiangqi_match.py [--quick] [--games N] [--movetime S] [--elo 1350,1800]
     .venv/bin/python benchmarks/xiangqi_match.py --elo 1800,2100 --games 20 --jobs 2 --book
     .venv/bin/python benchmarks/xiangqi_match.py --levels 1-10 --elo 1350,1500,1800 --games 2
     (the local opponent's levels, moddesk.xiangqi.core.levels, instead of the full engine: the level table)
"""

from __future__ import annotations

import argparse
import math
import os
import queue
import shutil
import subprocess
import threading
import time
from concurrent.futures import ProcessPoolExecutor

from moddesk.xiangqi.core import notation
from moddesk.xiangqi.core.board import START_FEN, Move, Position, parse_square
from moddesk.xiangqi.core.book import book_move
from moddesk.xiangqi.core.engine import engine_name, new_searcher
from moddesk.xiangqi.core.levels import choose_move
from moddesk.xiangqi.core.rules import game_status
from moddesk.xiangqi.engines import open_engine

# Short starts of the common openings (Chinese notation from the start position). Game i of a
# pairing starts from OPENINGS[i // 2 % len(OPENINGS)] with our side Red when i is even.
OPENINGS: tuple[str, ...] = (
    "炮二平五 马8进7",  # 中炮对屏风马
    "炮二平五 炮8平5",  # 顺炮
    "炮二平五 炮2平5",  # 列炮
    "相三进五 炮8平5",  # 飞相对左中炮
    "兵七进一 卒7进1",  # 仙人指路对卒底炮的对兵局
    "马二进三 卒7进1",  # 起马局
    "炮二平五 马8进7 马二进三 卒7进1",  # 中炮对屏风马进7卒
    "炮八平五 马2进3",  # 左中炮
    "兵七进一 炮2平3",  # 仙人指路对卒底炮
    "炮二平四 马8进7",  # 过宫炮
    "炮二平五 象3进5",  # 中炮对飞象
    "相三进五 卒7进1",  # 飞相对进卒
)


def opening_moves(index: int) -> list[str]:
    """The ICCS moves of ``OPENINGS[index]`` (checked against the rules)."""
    pos = Position(START_FEN)
    out = []
    for text in OPENINGS[index % len(OPENINGS)].split():
        move = notation.parse_move(pos, text)
        out.append(move.iccs())
        pos.push(move)
    return out


def play_game(
    engine_path: str,
    elo: int,
    ours_red: bool,
    movetime: float,
    max_plies: int,
    level: int | None = None,
    use_book: bool = False,
    start: list[str] | None = None,
) -> float:
    """One game; returns our score (1 win, 0.5 draw, 0 loss). ``level``: play as that local-opponent level.
    ``start``: ICCS moves played before either engine thinks."""
    pos = Position(START_FEN)
    moves: list[str] = []
    for iccs in start or []:
        pos.push(Move(parse_square(iccs[:2]), parse_square(iccs[2:4])))
        moves.append(iccs)
    searcher = new_searcher()
    # UCI_Elo 0 means full strength: no UCI_LimitStrength at all
    limits: dict[str, str | int] = {"UCI_LimitStrength": "true", "UCI_Elo": elo} if elo > 0 else {}
    with open_engine(engine_path, options=limits) as peer:
        for _ in range(max_plies):
            status = game_status(pos)
            if status.over:
                if status.winner is None:
                    return 0.5
                return 1.0 if (status.winner == 0) == ours_red else 0.0
            our_turn = (pos.turn == 0) == ours_red
            if our_turn and level is not None:
                chosen = choose_move(pos, level, movetime, history=[*pos.key_history(), pos.key])
                if chosen is None:
                    return 0.0
                iccs = chosen
            elif our_turn and use_book and (opening := book_move(pos)) is not None:
                iccs = opening
            elif our_turn:
                result = searcher.search(pos, time_limit=movetime, history=[*pos.key_history(), pos.key])
                if result.best_move is None:
                    return 0.0
                iccs = result.best_move.iccs()
            else:
                best = peer.best_move(START_FEN, moves, time_limit=movetime)
                if best is None:
                    return 1.0
                iccs = best
            move = Move(parse_square(iccs[:2]), parse_square(iccs[2:4]))
            if not pos.is_legal(move):
                return 1.0 if not our_turn else 0.0  # an illegal move forfeits
            pos.push(move)
            moves.append(iccs)
    return 0.5  # adjudicated draw at the ply limit


class XboardPeer:
    """A minimal xboard client for hoixiangqi: it plays the side it is told to, moves in ICCS 0-9."""

    def __init__(self, path: str, game_seconds: int) -> None:
        self.proc = subprocess.Popen(
            [path],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            bufsize=1,
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        for line in ("xboard", "protover 2"):
            self.send(line)
        self.expect(lambda ln: "done=1" in ln, 10)
        for line in ("new", "variant xiangqi", "post", "easy", f"level 0 0:{game_seconds:02d} 0", "force"):
            self.send(line)

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line.strip())
        self.lines.put(None)

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def expect(self, done: object, timeout: float) -> str:
        deadline = time.monotonic() + timeout
        while True:
            line = self.lines.get(timeout=max(0.01, deadline - time.monotonic()))
            if line is None:
                raise RuntimeError("hoixiangqi exited")
            if callable(done) and done(line):
                return line

    def think(self, own_cs: int, other_cs: int) -> str:
        """Let the engine move for the side to move; returns its move text."""
        self.send(f"time {max(own_cs, 1)}")
        self.send(f"otim {max(other_cs, 1)}")
        self.send("go")
        line = self.expect(lambda ln: ln.startswith("move ") or "resign" in ln.lower(), 120)
        self.send("force")
        return line.split()[1] if line.startswith("move ") else ""

    def close(self) -> None:
        if self.proc.poll() is None:
            self.send("quit")
            try:
                self.proc.wait(timeout=3)
            except subprocess.TimeoutExpired:
                self.proc.kill()


def play_hoixiangqi(path: str, ours_red: bool, game_seconds: int, max_plies: int) -> float:
    """One sudden-death game (``game_seconds`` per side) against hoixiangqi; our score."""
    pos = Position(START_FEN)
    peer = XboardPeer(path, game_seconds)
    searcher = new_searcher()
    clocks = {True: game_seconds * 1.0, False: game_seconds * 1.0}  # keyed by "is ours"
    try:
        for _ in range(max_plies):
            status = game_status(pos)
            if status.over:
                if status.winner is None:
                    return 0.5
                return 1.0 if (status.winner == 0) == ours_red else 0.0
            ours = (pos.turn == 0) == ours_red
            start = time.monotonic()
            if ours:
                budget = max(0.02, clocks[True] / 30)
                result = searcher.search(pos, time_limit=budget, history=[*pos.key_history(), pos.key])
                if result.best_move is None:
                    return 0.0
                iccs = result.best_move.iccs()
            else:
                iccs = peer.think(int(clocks[False] * 100), int(clocks[True] * 100))
                if not iccs:
                    return 1.0  # resigned
            clocks[ours] -= time.monotonic() - start
            if clocks[ours] < 0:
                return 0.0 if ours else 1.0  # lost on time
            move = Move(parse_square(iccs[:2]), parse_square(iccs[2:4]))
            if not pos.is_legal(move):
                return 1.0 if not ours else 0.0
            pos.push(move)
            if ours:
                peer.send(iccs)
        return 0.5
    finally:
        peer.close()


def elo_estimate(scores: list[float]) -> tuple[float, float, float]:
    """Elo difference with a 95% interval from per-game scores (clamped for perfect results)."""
    n = len(scores)
    mean = sum(scores) / n
    var = sum((s - mean) ** 2 for s in scores) / max(n - 1, 1)
    se = math.sqrt(var / n) if n > 1 else 0.5

    def elo(p: float) -> float:
        p = min(max(p, 0.5 / n), 1 - 0.5 / n)
        return -400 * math.log10(1 / p - 1)

    return elo(mean), elo(mean - 1.96 * se), elo(mean + 1.96 * se)


def _game_job(job: tuple[str, int, int, float, int, int | None, bool]) -> float:
    """Game ``i`` of a pairing (opening i // 2, our colour Red when i is even), for a process pool."""
    path, elo, i, movetime, plies, level, use_book = job
    start = opening_moves(i // 2)
    return play_game(path, elo, i % 2 == 0, movetime, plies, level, use_book, start)


def play_pairing(
    path: str, elo: int, games: int, movetime: float, plies: int, level: int | None, use_book: bool, jobs: int
) -> list[float]:
    """Our scores of ``games`` games against ``elo``, in game order."""
    work = [(path, elo, i, movetime, plies, level, use_book) for i in range(games)]
    if jobs <= 1:
        return [_game_job(job) for job in work]
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(_game_job, work))


def describe(scores: list[float]) -> str:
    """``+w =d -l  score s/n (p%)  Elo diff [low, high]``."""
    n = len(scores)
    diff, low, high = elo_estimate(scores)
    w, d, lost = scores.count(1.0), scores.count(0.5), scores.count(0.0)
    return (
        f"+{w} ={d} -{lost}  score {sum(scores)}/{n} ({100 * sum(scores) / n:.0f}%)  "
        f"Elo diff {diff + 0.0:+.0f} [{low:+.0f}, {high:+.0f}]"
    )


def parse_levels(text: str) -> list[int]:
    """``1-10`` or ``1,5,10``."""
    if "-" in text:
        lo, hi = text.split("-")
        return list(range(int(lo), int(hi) + 1))
    return [int(x) for x in text.split(",")]


def level_table(
    path: str, our_levels: list[int], elos: list[int], games: int, movetime: float, plies: int, jobs: int
) -> None:
    """The score of each local-opponent level against each UCI_Elo (openings and colours alternate)."""
    print(f"level table: {games} games per cell, {movetime} s/move, adjudicated draw at {plies} plies")
    for level in our_levels:
        cells = []
        for elo in elos:
            start = time.perf_counter()
            scores = play_pairing(path, elo, games, movetime, plies, level, level >= 6, jobs)
            w, d, lost = scores.count(1.0), scores.count(0.5), scores.count(0.0)
            cells.append(f"vs {elo}: +{w} ={d} -{lost} ({time.perf_counter() - start:.0f} s)")
        print(f"level {level:2d}  " + "  ".join(cells), flush=True)


def load_average() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} ({os.cpu_count()} cores)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="2 games at one level, 0.05 s per move")
    parser.add_argument("--games", type=int, default=4, help="games per level (colours alternate)")
    parser.add_argument("--movetime", type=float, default=0.1, help="seconds per move for both engines")
    parser.add_argument(
        "--elo", default="1350,1800", help="comma-separated UCI_Elo levels (0 = full strength)"
    )
    parser.add_argument("--max-plies", type=int, default=160)
    parser.add_argument(
        "--book", action="store_true", help="our full engine opens from moddesk.xiangqi.core.book"
    )
    parser.add_argument("--levels", default="", help="local-opponent levels to measure: 1-10 or 1,5,10")
    parser.add_argument("--jobs", type=int, default=1, help="games played at once (processes)")
    parser.add_argument("--no-hoi", action="store_true", help="skip the hoixiangqi games")
    args = parser.parse_args()
    path = shutil.which("fairy-stockfish") or "/usr/games/fairy-stockfish"
    if not os.path.exists(path):
        print("fairy-stockfish not installed (apt-get install fairy-stockfish): no match")
        return
    levels = [int(x) for x in args.elo.split(",")]
    games, movetime = args.games, args.movetime
    if args.quick:
        levels, games, movetime = levels[:1], 2, 0.05
    print(load_average(), flush=True)
    print(f"our engine: {engine_name()} (MODDESK_CORE picks it: python = the reference)", flush=True)
    if args.levels:
        level_table(path, parse_levels(args.levels), levels, games, movetime, args.max_plies, args.jobs)
        print(load_average())
        return
    for elo in levels:
        start = time.perf_counter()
        scores = play_pairing(path, elo, games, movetime, args.max_plies, None, args.book, args.jobs)
        diff, _, _ = elo_estimate(scores)
        peer = f"UCI_Elo {elo}" if elo > 0 else "full strength"
        estimate = f" => ours ~{elo + diff:.0f}" if elo > 0 else ""
        print(
            f"vs fairy-stockfish {peer}: {describe(scores)}{estimate}  "
            f"({movetime} s/move, {time.perf_counter() - start:.0f} s)",
            flush=True,
        )
    print(load_average())
    hoi = shutil.which("hoixiangqi") or "/usr/games/hoixiangqi"
    if args.no_hoi:
        return
    if os.path.exists(hoi):
        game_seconds = 10 if args.quick else 20
        n = 2 if args.quick else games
        start = time.perf_counter()
        scores = [play_hoixiangqi(hoi, i % 2 == 0, game_seconds, args.max_plies) for i in range(n)]
        diff, low, high = elo_estimate(scores)
        w, d, lost = scores.count(1.0), scores.count(0.5), scores.count(0.0)
        print(
            f"vs hoixiangqi (xboard, {game_seconds} s per side): +{w} ={d} -{lost}  score {sum(scores)}/{n}  "
            f"Elo diff {diff + 0.0:+.0f} [{low:+.0f}, {high:+.0f}]  ({time.perf_counter() - start:.0f} s)"
        )
    else:
        print("hoixiangqi not installed (apt-get install hoichess): skipped")


if __name__ == "__main__":
    main()
