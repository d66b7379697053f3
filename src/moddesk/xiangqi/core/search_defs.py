"""Search definitions: score bounds, pruning margins, move-ordering and check tables, the result
types and mate-distance helpers of ``moddesk.xiangqi.core.search`` (kept apart to keep that module small).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from moddesk.xiangqi.core.board import HORSE_ATTACKS, LINES, Move, Position

MATE = 30000
MATE_BOUND = MATE - 500  # scores beyond this are mates
INF = 32000
MAX_PLY = 96
EXACT, LOWER, UPPER = 0, 1, 2
_ORDER_VALUE = (0, 10000, 200, 200, 400, 900, 450, 100)  # the king first in MVV-LVA
# MVV_LVA[victim kind][attacker kind]: most valuable victim first, then the cheapest attacker
MVV_LVA = tuple(tuple(_ORDER_VALUE[v] * 16 - _ORDER_VALUE[a] // 16 for a in range(8)) for v in range(8))
# Shallow-depth pruning margins (centipawns) by remaining depth: a static score this far past the
# bound is not expected to come back within a few plies (reverse futility / futility pruning).
RFP_MARGIN = (0, 150, 300, 450)
RFP_MAX = 800
FUTILITY_MARGIN = (0, 200, 400)
# Late-move pruning: at depth d (non-PV, not in check) quiet moves after the first LMP_COUNT[d]
# that give no check are skipped; the ordering (hash, captures, killers, history) put them last.
LMP_COUNT = (0, 10, 16, 24)
# Lazy evaluation: the positional terms rarely move the score this far, so a table score this far
# outside the window decides without them (they cost ~30 µs, a node ~10 µs).
LAZY_MARGIN = 250
POSITIONAL_CACHE = 1 << 18
# A move can give check only by landing on the king's lines or a horse square that attacks the king
# (CHECK_TO), or by leaving a line or a horse leg next to the king (SENSITIVE, a discovered check).
CHECK_TO = tuple(LINES[sq] | frozenset(src for _, src in HORSE_ATTACKS[sq]) for sq in range(90))


@dataclass
class Line:
    """One principal variation: its first move, score (cp, side to move), mate in moves (+ wins)."""

    move: Move
    score: int
    mate: int | None
    depth: int
    pv: list[Move] = field(default_factory=list)


@dataclass
class SearchInfo:
    """Progress reported after every finished depth (and every MultiPV line)."""

    depth: int
    seldepth: int
    multipv: int
    score: int
    mate: int | None
    nodes: int
    nps: int
    time: float
    pv: list[Move]


@dataclass
class SearchResult:
    """Outcome of a search: best move (None when there is no legal move) and the lines found."""

    best_move: Move | None
    lines: list[Line]
    depth: int
    nodes: int
    time: float
    stopped: bool = False


class SearchStopped(Exception):
    """Raised inside the tree when a limit is hit or stop was requested."""


def mate_in(score: int) -> int | None:
    """Moves to mate for a mate score (+ the side to move mates, - it is mated), else None."""
    if score > MATE_BOUND:
        return (MATE - score + 1) // 2
    if score < -MATE_BOUND:
        return -((MATE + score) // 2)
    return None


def cycle_score(checks: list[bool], offset: int, ply: int, j: int) -> int:
    """Score of the cycle from the position at ply ``j`` back to ``ply`` (``checks[offset + i]`` is
    whether the side to move at ply ``i`` is in check): perpetual check loses, else a draw."""
    # positions ply-1, ply-3 … follow the side to move's own moves; ply, ply-2 … the opponent's
    we_checked = all(checks[offset + i] for i in range(ply - 1, j, -2))
    they_checked = all(checks[offset + i] for i in range(ply, j + 1, -2))
    if we_checked and not they_checked:
        return -(MATE - ply)  # perpetual check loses for the checker
    if they_checked and not we_checked:
        return MATE - ply
    return 0


def game_checks(root: Position, recent: list[int]) -> list[bool]:
    """Whether the side to move was in check in each of the last game positions of ``recent``
    (oldest first), read off ``root``'s own moves for as far as they match ``recent``."""
    pos = root.copy()
    checks: list[bool] = []
    for key in reversed(recent):
        if not pos.ply:
            break
        pos.pop()
        if pos.key != key:
            break
        checks.append(pos.is_check())
    checks.reverse()
    return checks


def principal_variation(
    pos: Position,
    tt: dict[int, tuple[int, int, int, tuple[int, int] | None]],
    first: tuple[int, int],
    depth: int,
) -> list[Move]:
    """The principal variation: ``first`` then best moves from the transposition table ``tt``
    (``pos`` is left as it was)."""
    line = [Move(*first)]
    pos.push(first)
    seen = {pos.key}
    pushed = 1
    try:
        while len(line) < max(depth, 1) + 4:
            entry = tt.get(pos.key)
            if entry is None or entry[3] is None:
                break
            move = entry[3]
            if move not in pos.generate_legal(False, (move[0],)):
                break
            pos.push(move)
            pushed += 1
            line.append(Move(*move))
            if pos.key in seen:
                break
            seen.add(pos.key)
    finally:
        for _ in range(pushed):
            pos.pop()
    return line
