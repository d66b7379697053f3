"""Static evaluation: material plus piece-square tables, kept incrementally by the search, and
positional terms (mobility, king safety, coordination) the search adds near the leaves."""

from __future__ import annotations

from moddesk.xiangqi.core.board import (
    ADVISOR,
    CANNON,
    ELEPHANT,
    HORSE,
    HORSE_MOVES,
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


# ----- positional terms beyond the tables (not incremental: the search caches them by key) -----

_CROSSED = (
    tuple(sq // 9 <= 4 for sq in range(90)),  # a Red piece on the Black half
    tuple(sq // 9 >= 5 for sq in range(90)),  # a Black piece on the Red half
)
HORSE_MOBILITY = 6  # per free horse move, around a typical 4
HORSE_TRAPPED = 30  # a horse with at most one move (legs blocked, on the rim)
HOLLOW_CANNON = 60  # 空头炮: a cannon facing the enemy king with nothing between
SCREENED_CANNON = 15  # a cannon on the king's file with one screen (pressure, a pinned screen)
# Attack units of a piece across the river; each unit makes a missing guard of the other side cost
# more (the value of advisors and elephants grows with the attack they face).
ATTACK_UNITS = (0, 0, 0, 0, 3, 4, 2, 1)
MISSING_ADVISOR = 4  # per attack unit
MISSING_ELEPHANT = 2  # per attack unit
CONNECTED_PAWNS = 12  # a crossed pawn with a crossed neighbour on its rank


def positional(board: list[int], pieces: list[set[int]], kings: list[int]) -> int:
    """Horse mobility, king safety and coordination, from Red's point of view (centipawns)."""
    score = 0
    units = [0, 0]
    guards = [[0, 0], [0, 0]]  # [advisors, elephants] per colour
    for color in (0, 1):
        sign = 1 if color == 0 else -1
        crossed = _CROSSED[color]
        enemy_king = kings[1 - color]
        king_file = enemy_king % 9
        s = 0
        u = 0
        for sq in pieces[color]:
            kind = board[sq] * sign
            if kind == ROOK:
                if crossed[sq]:
                    u += 4
            elif kind == HORSE:
                n = 0
                for leg, to in HORSE_MOVES[sq]:
                    if not board[leg] and board[to] * sign <= 0:
                        n += 1
                s += HORSE_MOBILITY * (n - 4) - (HORSE_TRAPPED if n <= 1 else 0)
                if crossed[sq]:
                    u += 3
            elif kind == CANNON:
                if sq % 9 == king_file:
                    step = 9 if sq < enemy_king else -9
                    screens = 0
                    for between in range(sq + step, enemy_king, step):
                        if board[between]:
                            screens += 1
                            if screens > 1:
                                break
                    s += HOLLOW_CANNON if screens == 0 else SCREENED_CANNON if screens == 1 else 0
                if crossed[sq]:
                    u += 2
            elif kind == PAWN:
                if crossed[sq]:
                    if 2 <= sq % 9 <= 6:
                        u += 1
                    f = sq % 9
                    if (f > 0 and board[sq - 1] == board[sq]) or (f < 8 and board[sq + 1] == board[sq]):
                        s += CONNECTED_PAWNS
            elif kind == ADVISOR:
                guards[color][0] += 1
            elif kind == ELEPHANT:
                guards[color][1] += 1
        units[color] = u
        score += s * sign
    for color in (0, 1):
        attack = units[1 - color]
        missing = MISSING_ADVISOR * (2 - guards[color][0]) + MISSING_ELEPHANT * (2 - guards[color][1])
        score -= attack * missing * (1 if color == 0 else -1)
    return score


def evaluate_full(pos: Position) -> int:
    """Tables plus positional terms, from the side to move's point of view (centipawns)."""
    return (evaluate_red(pos) + positional(pos.board, pos.pieces, pos.kings)) * pos.sign
