"""Position: FEN in/out, validation, make/unmake, Zobrist, check and flying general, perft."""

from __future__ import annotations

import pytest

from moddesk.xiangqi.core.board import (
    BLACK,
    RED,
    START_FEN,
    Move,
    Position,
    XiangqiError,
    parse_square,
    perft,
    perft_divide,
    square,
    square_name,
)

# Published perft values (CPW "Chinese Chess Perft Results", Fairy-Stockfish tests/perft.sh),
# re-run with fairy-stockfish 11.1 in ../shared/specs/xiangqi.md §3; depth 1..3 here.
PERFT_TABLE = [
    ("1cbak4/9/n2a5/2p1p3p/5cp2/2n2N3/6PCP/3AB4/2C6/3A1K1N1 w", (7, 281, 8620)),
    ("5a3/3k5/3aR4/9/5r3/5n3/9/3A1A3/5K3/2BC2B2 w", (25, 424, 9850)),
    ("CRN1k1b2/3ca4/4ba3/9/2nr5/9/9/4B4/4A4/4KA3 w", (28, 516, 14808)),
    ("R1N1k1b2/9/3aba3/9/2nr5/2B6/9/4B4/4A4/4KA3 w", (21, 364, 7626)),
    ("C1nNk4/9/9/9/9/9/n1pp5/B3C4/9/3A1K3 w", (28, 222, 6241)),
    ("4ka3/4a4/9/9/4N4/p8/9/4C3c/7n1/2BK5 w", (23, 345, 8124)),
    ("2b1ka3/9/b3N4/4n4/9/9/9/4C4/2p6/2BK5 w", (21, 195, 3883)),
    ("1C2ka3/9/C1Nab1n2/p3p3p/6p2/9/P3P3P/3AB4/3p2c2/c1BAK4 w", (30, 830, 22787)),
    ("CnN1k1b2/c3a4/4ba3/9/2nr5/9/9/4C4/4A4/4KA3 w", (19, 583, 11714)),
]


def test_square_numbering_matches_the_projection() -> None:
    assert parse_square("h2") == 70 == square(7, 2)
    assert parse_square("e2") == 67
    assert square_name(0) == "a9" and square_name(89) == "i0"


def test_start_position_round_trips() -> None:
    pos = Position()
    assert pos.fen() == START_FEN
    assert pos.turn == RED and not pos.is_check()
    assert len(pos.legal_moves()) == 44


@pytest.mark.parametrize(
    ("fen", "canonical"),
    [
        ("rheakaehr/9/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C5C1/9/RHEAKAEHR r", START_FEN),
        ("rnbakabnr/9/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C5C1/9/RNBAKABNR w", START_FEN),
        ("4k4/9/9/9/9/9/9/9/9/3K5 b - - 7 30", "4k4/9/9/9/9/9/9/9/9/3K5 b - - 7 30"),
    ],
)
def test_fen_accepts_r_side_and_eh_letters(fen: str, canonical: str) -> None:
    assert Position(fen).fen() == canonical


@pytest.mark.parametrize(
    ("fen", "why"),
    [
        ("", "empty"),
        ("rnbakabnr/9/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C5C1/RNBAKABNR w", "ranks"),
        ("rnbakabnr/9/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C5C1/9/RNBAKABNRR w", "files"),
        ("rnbakabnr/9/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C5C1/9/RNBAKABNR x", "side"),
        ("rnbakabnr/9/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C5C1/9/RNBAQABNR w", "letter"),
        ("3k5/9/9/9/9/9/9/9/9/3K5 w", "kings face each other"),
        ("4k4/9/9/9/9/9/9/9/9/9 w", "missing king"),
        ("4k4/9/9/9/9/9/9/9/K8/9 w", "king outside palace"),
        ("4k4/9/9/9/9/9/9/9/9/B3K4 w", "elephant off its points"),
        ("4k4/9/9/9/9/9/P8/P8/9/4K4 w", "pawn behind its start"),
        ("4k4/4R4/9/9/9/9/9/9/9/3K5 w", "side not to move in check"),
        ("4k4/9/9/9/9/9/9/9/9/3K5 w - - x 1", "counter"),
    ],
)
def test_bad_fens_raise_bad_fen(fen: str, why: str) -> None:
    with pytest.raises(XiangqiError) as err:
        Position(fen)
    assert err.value.code == "BAD_FEN", why


def test_push_pop_restores_everything() -> None:
    pos = Position("r1ba1a3/4kn3/2n1b4/pNp1p1p1p/4c4/6P2/P1P2R2P/1CcC5/9/2BAKAB2 w - - 0 1")
    before = (pos.fen(), pos.key, [set(s) for s in pos.pieces], pos.kings[:])
    for move in pos.legal_moves():
        captured = pos.push(move)
        assert pos.turn == BLACK
        assert (captured != 0) == (pos.halfmove == 0)
        assert pos.key == Position(pos.fen()).key  # incremental key equals a fresh one
        assert pos.pop() == move
        assert (pos.fen(), pos.key, pos.pieces, pos.kings) == before


def test_flying_general_is_an_attack() -> None:
    # the e-file is open below the black king: the red king may not step onto it
    pos = Position("4k4/9/9/9/9/9/9/9/9/3K5 w")
    assert Move(square(3, 0), square(4, 0)) not in pos.legal_moves()
    # the advisor shields the kings: it may not leave the file
    pos = Position("4k4/9/9/9/9/9/9/9/4A4/4K4 w")
    assert all(m.from_sq != parse_square("e1") for m in pos.legal_moves())


def test_cannon_and_horse_double_check_answered_by_capture() -> None:
    # cannon e9 checks through the advisor screen e1 and the horse d2 checks e0 (spec §1.1)
    pos = Position("3kc4/9/9/9/9/9/9/3n5/4A4/4K4 w")
    assert pos.is_check()
    assert sorted(m.iccs() for m in pos.legal_moves()) == ["e0d0", "e0f0", "e1d2"]


def test_stalemate_and_facing_kings_positions_have_no_moves() -> None:
    assert Position("4k4/3P1P3/9/9/9/9/9/9/9/3K5 b").legal_moves() == []


def test_start_position_captures_are_the_two_cannon_jumps() -> None:
    pos = Position()
    captures = sorted(Move(*m).iccs() for m in pos.generate_legal(captures_only=True))
    assert captures == ["b2b9", "h2h9"]


@pytest.mark.parametrize(("fen", "counts"), PERFT_TABLE)
def test_perft_published_table(fen: str, counts: tuple[int, int, int]) -> None:
    pos = Position(fen)
    assert tuple(perft(pos, d) for d in (1, 2, 3)) == counts
    assert pos.fen().startswith(fen.split()[0])


def test_perft_divide_sums_to_perft() -> None:
    pos = Position()
    divide = perft_divide(pos, 2)
    assert len(divide) == 44 and sum(divide.values()) == 1920
    assert divide["h2e2"] == perft(_after(pos, "h2e2"), 1)


def _after(pos: Position, iccs: str) -> Position:
    child = pos.copy()
    child.push(Move(parse_square(iccs[:2]), parse_square(iccs[2:])))
    return child
