"""A small opening book: the main lines of the common openings, so the engine opens like a player.

The lines are the standard openings every xiangqi primer teaches (中炮 against 屏风马 and 顺炮, 飞相局,
仙人指路, 起马局); the weights only rank how often each move is played in master games, roughly (central
cannon first by far, then the elephant, pawn and horse openings). They are not measured from a game
database here. Every line is checked against the rules when the module loads.
"""

from __future__ import annotations

import random

from moddesk.xiangqi.core import notation
from moddesk.xiangqi.core.board import START_FEN, Position

# (weight, line in Chinese notation from the start position)
LINES: tuple[tuple[int, str], ...] = (
    (6, "炮二平五 马8进7 马二进三 车9平8 车一平二 马2进3 兵七进一 卒7进1 车二进六 炮8平9"),
    (4, "炮二平五 马8进7 马二进三 车9平8 车一平二 马2进3 马八进七 卒7进1 兵七进一 象3进5"),
    (3, "炮二平五 马8进7 马二进三 卒7进1 车一平二 车9平8 兵七进一 马2进3"),
    (3, "炮二平五 炮8平5 马二进三 马8进7 车一平二 车9平8 马八进七 马2进3"),
    (2, "炮二平五 马2进3 马二进三 马8进7 车一平二 车9平8"),
    (2, "相三进五 卒7进1 兵七进一 马8进7 马八进七 车9平8"),
    (1, "相三进五 马8进7 马二进三 车9平8 车一平二 卒7进1"),
    (2, "兵七进一 卒7进1 马八进七 马8进7 马二进三 象3进5"),
    (1, "兵七进一 炮2平3 炮二平五 象3进5 马二进三 马2进1"),
    (1, "马二进三 卒7进1 兵七进一 马8进7 马八进七 车9平8"),
)


def _board_key(pos: Position) -> str:
    return " ".join(pos.fen().split()[:2])


def _build() -> dict[str, dict[str, int]]:
    book: dict[str, dict[str, int]] = {}
    for weight, line in LINES:
        pos = Position(START_FEN)
        for text in line.split():
            move = notation.parse_move(pos, text)  # raises if a line is wrong: a bug in this table
            moves = book.setdefault(_board_key(pos), {})
            moves[move.iccs()] = moves.get(move.iccs(), 0) + weight
            pos.push(move)
    return book


BOOK = _build()


def book_moves(pos: Position) -> dict[str, int]:
    """The book's moves (ICCS → weight) for this position; empty when it is out of the book."""
    return dict(BOOK.get(_board_key(pos), {}))


def book_move(pos: Position, rng: random.Random | None = None) -> str | None:
    """A book move chosen by weight, or None out of the book."""
    moves = book_moves(pos)
    if not moves:
        return None
    pick = rng or random.Random()
    return pick.choices(list(moves), weights=list(moves.values()))[0]
