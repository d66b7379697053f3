"""Evaluation: colour symmetry of every term, and each positional term pointing the right way."""

from __future__ import annotations

import random

from moddesk.xiangqi.core.board import Position
from moddesk.xiangqi.core.evaluate import (
    HOLLOW_CANNON,
    evaluate_full,
    evaluate_red,
    positional,
)


def mirrored(pos: Position) -> Position:
    """The same position with the colours swapped (board turned round, side to move swapped)."""
    rows = pos.fen().split()[0].split("/")
    turned = "/".join(row[::-1].swapcase() for row in reversed(rows))
    return Position(f"{turned} {'b' if pos.turn == 0 else 'w'}")


def test_every_term_is_colour_symmetric() -> None:
    rng = random.Random(7)
    for _ in range(60):
        pos = Position()
        for _ in range(rng.randrange(2, 70)):
            moves = pos.generate_legal()
            if not moves:
                break
            pos.push(rng.choice(moves))
        other = mirrored(pos)
        assert positional(other.board, other.pieces, other.kings) == -positional(
            pos.board, pos.pieces, pos.kings
        )
        assert evaluate_red(other) == -evaluate_red(pos)
        assert evaluate_full(other) == evaluate_full(pos)  # same score for the side to move


def score(fen: str) -> int:
    pos = Position(fen)
    return positional(pos.board, pos.pieces, pos.kings)


def test_hollow_cannon_and_missing_guards() -> None:
    # a red cannon on the black king's file with nothing between: the hollow cannon bonus
    open_file = score("4k4/9/9/9/9/9/9/4C4/9/3K5 w")
    blocked = score("4k4/9/9/4p4/9/9/4P4/4C4/9/3K5 w")
    assert open_file - blocked >= HOLLOW_CANNON - 20
    # the same attack costs more against a king without advisors
    guarded = score("3aka3/9/4b4/9/9/2R3R2/9/9/9/3K5 w")
    bare = score("4k4/9/4b4/9/9/2R3R2/9/9/9/3K5 w")
    # (the rooks are on Red's half: no attack units yet; move them across the river)
    assert guarded == bare
    guarded = score("3aka3/9/4b4/2R3R2/9/9/9/9/9/3K5 w")
    bare = score("4k4/9/4b4/2R3R2/9/9/9/9/9/3K5 w")
    assert bare > guarded


def test_trapped_horse_costs() -> None:
    free = score("3k5/9/9/9/9/9/9/4N4/R8/1r2K4 w")
    cornered = score("3k5/9/9/9/9/9/9/9/R8/Nr2K4 w")
    assert free > cornered
