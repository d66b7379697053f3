"""FEN validation per the rules: every piece on a point a game can reach, legal counts, reasons in two languages.

The oracle here is independent of ``board``/``placement``: it walks each piece's moves from its start points
on an empty board (the river and palace rules written out again), so a table error in the engine shows up.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from moddesk.xiangqi.core.board import Position, XiangqiError

LETTERS = "KABNRCP"
STARTS = {  # (file, rank) start points of Red's pieces; Black's mirror them across the river
    "K": [(4, 0)],
    "A": [(3, 0), (5, 0)],
    "B": [(2, 0), (6, 0)],
    "P": [(0, 3), (2, 3), (4, 3), (6, 3), (8, 3)],
}


def _steps(letter: str, f: int, r: int) -> list[tuple[int, int]]:
    if letter == "K":
        cand = [(f + 1, r), (f - 1, r), (f, r + 1), (f, r - 1)]
        return [(x, y) for x, y in cand if 3 <= x <= 5 and 0 <= y <= 2]
    if letter == "A":
        cand = [(f + dx, r + dy) for dx in (1, -1) for dy in (1, -1)]
        return [(x, y) for x, y in cand if 3 <= x <= 5 and 0 <= y <= 2]
    if letter == "B":
        cand = [(f + dx, r + dy) for dx in (2, -2) for dy in (2, -2)]
        return [(x, y) for x, y in cand if 0 <= x <= 8 and 0 <= y <= 4]
    cand = [(f, r + 1)] + ([(f + 1, r), (f - 1, r)] if r >= 5 else [])
    return [(x, y) for x, y in cand if 0 <= x <= 8 and 0 <= y <= 9]


def reachable(letter: str) -> set[tuple[int, int]]:
    """Points (file, rank) a Red piece can ever stand on; any point for horse, rook and cannon."""
    if letter not in STARTS:
        return {(f, r) for f in range(9) for r in range(10)}
    seen = set(STARTS[letter])
    todo = list(seen)
    while todo:
        f, r = todo.pop()
        for nxt in _steps(letter, f, r):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


REACH = {letter: reachable(letter) for letter in LETTERS}


def allowed(letter: str, red: bool, f: int, r: int) -> bool:
    return (f, r if red else 9 - r) in REACH[letter]


def fen_of(pieces: dict[tuple[int, int], str], turn: str) -> str:
    rows = []
    for rank in range(9, -1, -1):
        row, gap = "", 0
        for file in range(9):
            piece = pieces.get((file, rank))
            if piece is None:
                gap += 1
                continue
            row += (str(gap) if gap else "") + piece
            gap = 0
        rows.append(row + (str(gap) if gap else ""))
    return "/".join(rows) + f" {turn}"


def test_oracle_counts_match_the_rules() -> None:
    # the well-known numbers: 9 palace points, 5 advisor points, 7 elephant points, 55 pawn points
    assert (len(REACH["K"]), len(REACH["A"]), len(REACH["B"]), len(REACH["P"])) == (9, 5, 7, 55)


KINGS = {(3, 0): "K", (5, 9): "k"}  # on different files: never facing, neither in check


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(LETTERS[1:]), st.booleans(), st.integers(0, 8), st.integers(0, 9))
def test_one_piece_accepted_exactly_where_a_game_can_put_it(letter: str, red: bool, f: int, r: int) -> None:
    if (f, r) in KINGS:
        return
    pieces = dict(KINGS) | {(f, r): letter if red else letter.lower()}
    fen = fen_of(pieces, "b" if red else "w")  # the added piece may give check only to the side to move
    if allowed(letter, red, f, r):
        assert Position(fen).fen().split()[0] == fen.split()[0]
        return
    with pytest.raises(XiangqiError) as info:
        Position(fen)
    payload = info.value.to_payload()
    assert payload["error"] == "BAD_FEN"
    square = "abcdefghi"[f] + str(r)
    assert square in payload["message"] and square in payload["errorZh"]
    assert ("红方" if red else "黑方") in payload["errorZh"]


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(
        st.tuples(st.integers(0, 8), st.integers(0, 9)),
        st.sampled_from("KABNRCPkabnrcp"),
        min_size=2,
        max_size=14,
    ),
    st.sampled_from("wb"),
)
def test_random_placements_refused_with_a_reason_or_truly_possible(
    pieces: dict[tuple[int, int], str], turn: str
) -> None:
    try:
        position = Position(fen_of(pieces, turn))
    except XiangqiError as exc:
        payload = exc.to_payload()
        assert payload["error"] == "BAD_FEN" and payload["message"] and payload["errorZh"]
        return
    # accepted: every piece stands where a game can put it, with legal counts and one king a side
    assert sorted(position.fen().split()[0]) == sorted(fen_of(pieces, turn).split()[0])
    for (f, r), piece in pieces.items():
        assert allowed(piece.upper(), piece.isupper(), f, r), (piece, f, r)
    for piece in "KABNRCPkabnrcp":
        limit = {"K": 1, "P": 5}.get(piece.upper(), 2)
        assert sum(p == piece for p in pieces.values()) <= limit
    assert "K" in pieces.values() and "k" in pieces.values()


@pytest.mark.parametrize(
    ("fen", "english", "chinese"),
    [
        ("3k5/9/9/9/9/B8/9/9/9/4K4 w", "elephant on a4", "相在 a4"),  # the example
        ("4k4/9/9/9/9/9/9/9/3A5/4K4 w", "advisor on d1", "仕在 d1"),
        ("4k4/9/9/9/9/9/9/P8/9/4K4 w", "pawn on a2", "兵在 a2"),
        ("4k4/9/9/9/9/P8/P8/9/9/4K4 w", "two red pawns on a3/a4", "两个兵"),
        ("4k4/9/9/9/9/9/9/9/9/3KK4 w", "too many red kings", "红方帅过多"),
        ("4k4/9/9/9/9/9/9/9/9/9 w", "red has no king", "红方没有帅"),
        ("4k4/PPPPPP3/9/9/9/9/9/9/9/4K4 w", "too many red pawns", "红方兵过多"),
        ("4k4/9/9/9/9/9/9/9/9/K8 w", "red king on a0 is outside its palace", "不在九宫内"),
        ("4k4/9/9/9/9/9/9/9/9/4K4 w", "kings face each other", "照面"),
    ],
)
def test_reasons_in_english_and_chinese(fen: str, english: str, chinese: str) -> None:
    with pytest.raises(XiangqiError) as info:
        Position(fen)
    payload = info.value.to_payload()
    assert payload["error"] == "BAD_FEN"
    assert english in payload["message"], payload["message"]
    assert chinese in payload["errorZh"], payload["errorZh"]
