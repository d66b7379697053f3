"""The board as text a Chinese player reads: Chinese piece names, Chinese file numbers on both sides.

One drawing for every reader: the model's text block (``marks=True``: each piece carries its FEN
letter, upper case Red, since 马车炮 are spelled the same for both sides) and the terminal (colour
tells the sides apart; the letters come back when the output has no colour). Red's files are
九…一 from left to right under the board, Black's 1…9 above it (the numbers Chinese notation
uses: 炮二平五, 马8进7); ICCS files a…i and ranks 0…9 are drawn too, so either notation can be
read off the same picture. ``parse_diagram`` reads a drawing back (tests compare it square by square).
"""

from __future__ import annotations

from collections.abc import Sequence

PIECE_ZH = {
    "K": "帅", "A": "仕", "B": "相", "N": "马", "R": "车", "C": "炮", "P": "兵",
    "k": "将", "a": "士", "b": "象", "n": "马", "r": "车", "c": "炮", "p": "卒",
}  # fmt: skip
RED_FILES = "九八七六五四三二一"  # Red counts its files from its right: file a is 九
BLACK_FILES = "１２３４５６７８９"  # Black counts from its right (Red's left): file a is 1
EMPTY = "．"  # full-width, so every cell is as wide as a Chinese character
RIVER = "楚河        汉界"


def cell(letter: str, marks: bool) -> str:
    """One point: ``车R`` / ``车r`` with ``marks``, else ``车`` (both three columns wide)."""
    if not letter:
        return EMPTY + " "
    return PIECE_ZH[letter] + (letter if marks else " ")


def diagram_rows(board: Sequence[str], marks: bool = True) -> list[str]:
    """The drawing as plain lines, rank 9 (Black's back rank) at the top."""
    return [text for text, _styles in styled_rows(board, marks, set())]


def styled_rows(
    board: Sequence[str], marks: bool, highlight: set[int]
) -> list[tuple[str, list[tuple[str, str]]]]:
    """Each line as plain text and as ``(text, style)`` runs (Red red, Black bold, last move reversed)."""
    if len(board) != 90:
        raise ValueError("a board has 90 points")
    rows: list[tuple[str, list[tuple[str, str]]]] = []
    top = "    " + "  ".join(BLACK_FILES) + "   黑方路数"
    rows.append((top, [(top, "dim")]))
    for r in range(10):
        runs: list[tuple[str, str]] = [(f" {9 - r}  ", "dim")]
        for f in range(9):
            sq = r * 9 + f
            letter = board[sq]
            style = ("bold red" if letter.isupper() else "bold") if letter else "dim"
            if sq in highlight:
                style += " reverse"
            runs.append((cell(letter, marks), style))
            if f < 8:
                runs.append((" ", ""))
        if runs[-1][0].endswith(" "):  # no trailing blank after an empty last point
            runs[-1] = (runs[-1][0].rstrip(), runs[-1][1])
        rows.append(("".join(t for t, _ in runs), runs))
        if r == 4:
            river = "    ─────── " + RIVER + " ───────"
            rows.append((river, [(river, "dim")]))
    bottom = "    " + "  ".join(RED_FILES) + "   红方路数"
    iccs = "    " + "   ".join("abcdefghi") + "    ICCS"
    rows.append((bottom, [(bottom, "dim")]))
    rows.append((iccs, [(iccs, "dim")]))
    return rows


def parse_diagram(lines: Sequence[str]) -> list[str]:
    """The 90 FEN letters of a drawing made with ``marks=True`` (``""`` for an empty point)."""
    board: list[str] = []
    for line in lines:
        head = line[:4].strip()
        if not (head.isdigit() and len(head) == 1):
            continue
        cells = line[4:].split(" ")
        points = [c for c in cells if c]
        if len(points) != 9:
            raise ValueError(f"rank {head}: expected 9 points, got {len(points)}")
        board.extend("" if p == EMPTY else p[1] for p in points)
    if len(board) != 90:
        raise ValueError(f"expected 10 ranks, got {len(board) // 9}")
    return board
