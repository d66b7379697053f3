"""Levels 1–10 of the local opponent: the builtin search held back by depth, time and random choice.

Level 10 is the full engine at the configured think time. Lower levels search shallower and pick among
the best few moves with a random bonus of up to ``noise`` centipawns, so they make the mistakes of
weaker players (and beginners can win). ``benchmarks/xiangqi_match.py --levels`` measures each level
against Fairy-Stockfish's ``UCI_Elo`` scale; the table is in ``benchmarks/RESULTS.md``.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Iterable
from dataclasses import dataclass

from moddesk.kit.errors import ServiceError
from moddesk.xiangqi.core import book, engine
from moddesk.xiangqi.core.board import Position

MIN_LEVEL, MAX_LEVEL = 1, 10
BOOK_FROM_LEVEL = 6  # the stronger levels open from the book like a club player; beginners improvise


@dataclass(frozen=True)
class Level:
    """How one level searches: depth cap (None = time only), share of the think time, choice width, noise."""

    depth: int | None
    time_share: float
    multipv: int
    noise: int


LEVELS: dict[int, Level] = {
    1: Level(1, 0.2, 10, 1000),
    2: Level(1, 0.2, 8, 700),
    3: Level(2, 0.3, 8, 450),
    4: Level(2, 0.3, 6, 300),
    5: Level(3, 0.4, 5, 180),
    6: Level(3, 0.5, 4, 110),
    7: Level(4, 0.6, 3, 60),
    8: Level(5, 0.8, 2, 25),
    9: Level(None, 0.6, 1, 0),
    10: Level(None, 1.0, 1, 0),
}

LABELS_ZH = {1: "入门", 2: "初学", 3: "业余初级", 4: "业余", 5: "业余中级", 6: "业余高级", 7: "棋协大师级以下",
             8: "强业余", 9: "高手", 10: "全力"}  # fmt: skip


def check_level(level: int) -> int:
    if not MIN_LEVEL <= level <= MAX_LEVEL:
        raise ServiceError(
            "INVALID_ARGUMENT",
            f"level must be {MIN_LEVEL}..{MAX_LEVEL}, not {level}",
            hint="1 = beginner … 10 = full strength",
        )
    return level


def choose_move(
    pos: Position,
    level: int,
    think_time: float,
    stop: threading.Event | None = None,
    history: Iterable[int] | None = None,
    rng: random.Random | None = None,
) -> str | None:
    """The move (ICCS) the local opponent plays at ``level``; None when there is no legal move."""
    plan = LEVELS[check_level(level)]
    if level >= BOOK_FROM_LEVEL:
        opening = book.book_move(pos, rng)
        if opening is not None:
            return opening
    result = engine.search(
        pos.copy(),
        depth=plan.depth,
        time_limit=max(0.02, think_time * plan.time_share),
        multipv=plan.multipv,
        stop=stop,
        history=history,
        # the depth-capped levels keep the quiescence they were calibrated with (captures only)
        quiet_checks=plan.depth is None,
    )
    if not result.lines:
        return None
    if plan.noise == 0 or len(result.lines) == 1:
        return result.lines[0].move.iccs()
    pick = rng or random.Random()
    best = max(result.lines, key=lambda ln: ln.score + pick.uniform(0, plan.noise))
    return best.move.iccs()
