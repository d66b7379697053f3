"""Legal moves equal pyffish's (Fairy-Stockfish rules) on 2,000+ random positions; every move of
those positions round-trips through every notation and renders uniquely; WXF equals pyffish's
where no tandem pieces are involved (pyffish disambiguates tandem pieces only when needed)."""

from __future__ import annotations

import random

import pytest

from moddesk.xiangqi.core.board import ADVISOR, ELEPHANT, PAWN, Move, Position
from moddesk.xiangqi.core.notation import (
    _same_kind_on_file,
    parse_chinese,
    parse_coords,
    parse_iccs,
    parse_wxf,
    to_chinese,
    to_iccs,
    to_wxf,
)

# pyffish is a dev dependency (moddesk[dev]); a plain environment without it skips this oracle
pyffish = pytest.importorskip("pyffish", reason="pyffish is not installed (pip install pyffish)")

VARIANT = "xiangqi"


def fsf_uci(move: Move) -> str:
    """pyffish writes ranks 1-10."""
    text = to_iccs(move)
    return f"{text[0]}{int(text[1]) + 1}{text[2]}{int(text[3]) + 1}"


def random_positions(count: int, seed: int) -> list[Position]:
    """Positions reached by random play (biased toward pawn moves to stack pawns on files)."""
    rng = random.Random(seed)
    out: list[Position] = []
    while len(out) < count:
        pos = Position()
        for _ in range(rng.randint(20, 160)):
            moves = pos.legal_moves()
            if not moves or pos.halfmove >= 120:
                break
            out.append(pos.copy())
            pawns = [m for m in moves if abs(pos.board[m.from_sq]) == PAWN]
            pos.push(rng.choice(pawns if pawns and rng.random() < 0.5 else moves))
    return out[:count]


POSITIONS = random_positions(2000, seed=20261129)


def test_legal_moves_equal_pyffish() -> None:
    for pos in POSITIONS:
        ours = sorted(fsf_uci(m) for m in pos.legal_moves())
        theirs = sorted(pyffish.legal_moves(VARIANT, pos.fen(), []))
        assert ours == theirs, pos.fen()


def test_every_move_round_trips_and_renders_uniquely() -> None:
    moves_checked = 0
    for pos in POSITIONS:
        moves = pos.legal_moves()
        zh = [to_chinese(pos, m) for m in moves]
        wxf = [to_wxf(pos, m) for m in moves]
        assert len(set(zh)) == len(moves), (pos.fen(), zh)
        assert len(set(wxf)) == len(moves), (pos.fen(), wxf)
        for move, z, w in zip(moves, zh, wxf, strict=True):
            assert parse_chinese(pos, z) == move
            assert parse_wxf(pos, w) == move
            assert parse_iccs(pos, to_iccs(move)) == move
            assert parse_coords(pos, {"from": move.from_sq, "to": move.to_sq}) == move
            moves_checked += 1
    assert moves_checked > 40_000


def test_wxf_matches_pyffish_without_tandem_pieces() -> None:
    compared = 0
    for pos in POSITIONS[::40]:
        fen = pos.fen()
        for move in pos.legal_moves():
            kind = abs(pos.board[move.from_sq])
            if len(_same_kind_on_file(pos, move.from_sq)) > 1 and kind not in (ADVISOR, ELEPHANT):
                continue
            expected = pyffish.get_san(VARIANT, fen, fsf_uci(move), False, pyffish.NOTATION_XIANGQI_WXF)
            assert to_wxf(pos, move) == expected, (fen, move)
            compared += 1
    assert compared > 1_000
