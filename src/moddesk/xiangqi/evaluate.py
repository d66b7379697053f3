"""Static evaluation: material plus piece-square tables, kept incrementally by the search."""

from __future__ import annotations

from moddesk.xiangqi.board import (
    ADVISOR,
    CANNON,
    ELEPHANT,
    HORSE,
    KING,
    PAWN,
    ROOK,
    Position,
    file_of,
    rank_of,
)

# Material in centipawns (a pawn before the river = 100); the king is priced by mate scores.
PIECE_VALUES = (0, 0, 200, 200, 400, 900, 450, 100)


def _red_bonus(kind: int, sq: int) -> int:
    """Value of a Red piece of ``kind`` on ``sq`` (material + placement)."""
    f, r = file_of(sq), rank_of(sq)
    centre = abs(f - 4)
    if kind == KING:
        return -15 * (r > 0) - 5 * centre  # stay home, stay central
    if kind in (ADVISOR, ELEPHANT):
        return PIECE_VALUES[kind] + (10 if f == 4 else 0)
    if kind == HORSE:
        advanced = 25 if 5 <= r <= 8 else 10 if r in (3, 4) else 0
        edge = 30 if f in (0, 8) else 0
        back = 20 if r == 0 else 0
        return PIECE_VALUES[kind] + advanced - 6 * centre - edge - back
    if kind == ROOK:
        return PIECE_VALUES[kind] + (15 if r >= 5 else 0) + (10 if r == 6 else 0) - 3 * centre
    if kind == CANNON:
        central = 20 if f == 4 else 0
        return PIECE_VALUES[kind] + central + (10 if r in (2, 7) else 0) - 2 * centre
    # pawn
    if r <= 4:
        return PIECE_VALUES[PAWN] + (15 if r == 4 and f == 4 else 0)
    if r == 9:
        return 130 - 5 * centre
    near_palace = 40 if 3 <= f <= 5 and r in (6, 7, 8) else 20 if 2 <= f <= 6 else 0
    return 200 + near_palace + 5 * (r - 5) - 4 * centre


def _build_pst() -> list[list[int]]:
    # PST[piece][sq], score from Red's point of view; negative pieces index from the end.
    pst = [[0] * 90 for _ in range(15)]
    for kind in (KING, ADVISOR, ELEPHANT, HORSE, ROOK, CANNON, PAWN):
        for sq in range(90):
            pst[kind][sq] = _red_bonus(kind, sq)
            pst[-kind][sq] = -_red_bonus(kind, 89 - sq)  # Black mirrors Red through the centre
    return pst


PST = _build_pst()


def evaluate_red(pos: Position) -> int:
    """Static score from Red's point of view (centipawns)."""
    board = pos.board
    return sum(PST[board[sq]][sq] for sq in range(90) if board[sq])


def evaluate(pos: Position) -> int:
    """Static score from the side to move's point of view (centipawns)."""
    return evaluate_red(pos) * pos.sign
