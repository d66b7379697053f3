"""The opening book: legal lines, weighted choices, used by the stronger levels only."""

from __future__ import annotations

import random

from moddesk.xiangqi.core import book, levels, notation
from moddesk.xiangqi.core.board import START_FEN, Position


def test_book_answers_the_central_cannon_like_a_player() -> None:
    pos = Position(START_FEN)
    first = book.book_moves(pos)
    assert max(first, key=first.__getitem__) == "h2e2"  # 炮二平五 is the most played opening
    pos.push(notation.parse_move(pos, "炮二平五"))
    replies = book.book_moves(pos)
    assert "h9g7" in replies and "h7g7" not in replies  # 马8进7, never the 炮8平7
    assert all(pos.is_legal(notation.parse_iccs(pos, m)) for m in replies)


def test_book_choice_is_weighted_and_ends() -> None:
    pos = Position(START_FEN)
    picks = {book.book_move(pos, random.Random(seed)) for seed in range(40)}
    assert "h2e2" in picks and len(picks) >= 2
    assert book.book_move(Position("3k5/9/9/9/9/9/9/9/4R4/5K3 w")) is None


def test_strong_levels_open_from_the_book_beginners_do_not_need_to() -> None:
    pos = Position(START_FEN)
    pos.push(notation.parse_move(pos, "炮二平五"))
    strong = {levels.choose_move(pos, 8, 0.05, rng=random.Random(s)) for s in range(10)}
    assert strong <= set(book.book_moves(pos))
