"""Which placements a real game can reach: piece counts and the points each piece may stand on.

A FEN that breaks these rules describes no position of a xiangqi game (an elephant on a4, an advisor
on d1, a pawn behind its start rank, two kings of one colour …). ``placement_problem`` names the first
problem in English and Chinese so the person sees why a position was refused. Squares use the board's
numbering ``sq = (9 - rank) * 9 + file``; pieces are signed kinds (Red positive), as in ``board``.
"""

from __future__ import annotations

from collections.abc import Sequence

RED, BLACK = 0, 1
KING, ADVISOR, ELEPHANT, HORSE, ROOK, CANNON, PAWN = 1, 2, 3, 4, 5, 6, 7
MAX_COUNT = (0, 1, 2, 2, 2, 2, 2, 5)
NAMES_EN = ("", "king", "advisor", "elephant", "horse", "rook", "cannon", "pawn")
NAMES_ZH = (("", "帅", "仕", "相", "马", "车", "炮", "兵"), ("", "将", "士", "象", "马", "车", "炮", "卒"))
SIDE_EN = ("red", "black")
SIDE_ZH = ("红方", "黑方")


def _sq(file: int, rank: int) -> int:
    return (9 - rank) * 9 + file


def _mirror(points: Sequence[tuple[int, int]]) -> tuple[frozenset[int], frozenset[int]]:
    """Red's points and Black's (the same points seen from the other side of the river)."""
    return frozenset(_sq(f, r) for f, r in points), frozenset(_sq(f, 9 - r) for f, r in points)


PALACE = _mirror([(f, r) for f in (3, 4, 5) for r in (0, 1, 2)])
ADVISOR_POINTS = _mirror([(3, 0), (5, 0), (4, 1), (3, 2), (5, 2)])
ELEPHANT_POINTS = _mirror([(2, 0), (6, 0), (0, 2), (4, 2), (8, 2), (2, 4), (6, 4)])
# a pawn in its own half stands where it started or one step ahead; across the river it may be anywhere
PAWN_POINTS = _mirror(
    [(f, r) for f in (0, 2, 4, 6, 8) for r in (3, 4)] + [(f, r) for f in range(9) for r in range(5, 10)]
)
ALLOWED = {KING: PALACE, ADVISOR: ADVISOR_POINTS, ELEPHANT: ELEPHANT_POINTS, PAWN: PAWN_POINTS}


def square_name(sq: int) -> str:
    return "abcdefghi"[sq % 9] + str(9 - sq // 9)


def placement_problem(board: Sequence[int]) -> tuple[str, str] | None:
    """The first rule the placement breaks as ``(english, chinese)``, or None when a game can reach it."""
    counts = [[0] * 8, [0] * 8]
    for sq, piece in enumerate(board):
        if not piece:
            continue
        color, kind = (RED, piece) if piece > 0 else (BLACK, -piece)
        counts[color][kind] += 1
        allowed = ALLOWED.get(kind)
        if allowed is not None and sq not in allowed[color]:
            return _misplaced(color, kind, sq)
    for color in (RED, BLACK):
        for kind in range(1, 8):
            if counts[color][kind] > MAX_COUNT[kind]:
                return (
                    f"too many {SIDE_EN[color]} {NAMES_EN[kind]}s ({counts[color][kind]}, at most {MAX_COUNT[kind]})",
                    f"{SIDE_ZH[color]}{NAMES_ZH[color][kind]}过多（{counts[color][kind]} 个，最多 {MAX_COUNT[kind]} 个）",
                )
        if counts[color][KING] == 0:
            return (
                f"{SIDE_EN[color]} has no king",
                f"{SIDE_ZH[color]}没有{NAMES_ZH[color][KING]}",
            )
    return _pawn_files(board)


def _misplaced(color: int, kind: int, sq: int) -> tuple[str, str]:
    where = square_name(sq)
    name_en, name_zh = f"{SIDE_EN[color]} {NAMES_EN[kind]}", f"{SIDE_ZH[color]}{NAMES_ZH[color][kind]}"
    if kind == KING:
        return f"{name_en} on {where} is outside its palace", f"{name_zh}在 {where}，不在九宫内"
    if kind == ADVISOR:
        return (
            f"{name_en} on {where}: an advisor stands only on the five points of its palace's diagonals",
            f"{name_zh}在 {where}：仕（士）只能在九宫斜线的五个点上",
        )
    if kind == ELEPHANT:
        return (
            f"{name_en} on {where}: an elephant stands only on its seven points on its own side of the river",
            f"{name_zh}在 {where}：相（象）只能在本方的七个相位上，不能过河",
        )
    return (
        f"{name_en} on {where}: a pawn never stands behind its start rank or off its file before the river",
        f"{name_zh}在 {where}：兵（卒）过河前不会退到起始线之后，也不会离开原来的纵线",
    )


def _pawn_files(board: Sequence[int]) -> tuple[str, str] | None:
    """Before the river a pawn never leaves its file, so one file holds at most one of its side's pawns there."""
    for color, sign, ranks in ((RED, 1, (3, 4)), (BLACK, -1, (5, 6))):
        for file in (0, 2, 4, 6, 8):
            if all(board[_sq(file, r)] == sign * PAWN for r in ranks):
                where = f"{square_name(_sq(file, ranks[0]))}/{square_name(_sq(file, ranks[1]))}"
                return (
                    f"two {SIDE_EN[color]} pawns on {where}: before the river a file holds one pawn",
                    f"{SIDE_ZH[color]}两个{NAMES_ZH[color][PAWN]}同在 {where}：过河前一条纵线只有一个{NAMES_ZH[color][PAWN]}",
                )
    return None
