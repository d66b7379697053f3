"""Notations: ICCS, Chinese (前/中/后, xqbase pawn numbering), WXF and {from,to}; errors."""

from __future__ import annotations

import random

import pytest

from moddesk.xiangqi.core.board import Move, Position, XiangqiError, parse_square
from moddesk.xiangqi.core.notation import (
    describe_move,
    parse_chinese,
    parse_coords,
    parse_iccs,
    parse_move,
    parse_wxf,
    to_chinese,
    to_iccs,
    to_wxf,
)


def mv(iccs: str) -> Move:
    return Move(parse_square(iccs[:2]), parse_square(iccs[2:]))


def render(fen: str) -> dict[str, tuple[str, str]]:
    pos = Position(fen)
    return {m.iccs(): (to_chinese(pos, m), to_wxf(pos, m)) for m in pos.legal_moves()}


@pytest.mark.parametrize(
    ("fen", "iccs", "zh", "wxf"),
    [
        (None, "h2e2", "炮二平五", "C2=5"),
        (None, "h0g2", "马二进三", "H2+3"),
        (None, "c0e2", "相七进五", "E7+5"),
        (None, "d0e1", "仕六进五", "A6+5"),
        (None, "a3a4", "兵九进一", "P9+1"),
        ("rnbakabnr/9/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C5C1/9/RNBAKABNR b", "h9g7", "马8进7", "H8+7"),
        ("rnbakabnr/9/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C5C1/9/RNBAKABNR b", "h7e7", "炮8平5", "C8=5"),
        ("rnbakabnr/9/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C5C1/9/RNBAKABNR b", "e9e8", "将5进1", "K5+1"),
    ],
)
def test_standard_moves(fen: str | None, iccs: str, zh: str, wxf: str) -> None:
    pos = Position(fen) if fen else Position()
    move = mv(iccs)
    assert (to_chinese(pos, move), to_wxf(pos, move), to_iccs(move)) == (zh, wxf, iccs)
    for text in (zh, wxf, iccs):
        assert parse_move(pos, text) == move


def test_tandem_rooks_use_front_and_rear() -> None:
    names = render("3k5/9/9/9/9/9/4R4/9/4R4/5K3 w")
    assert names["e3e4"] == ("前车进一", "R++1")
    assert names["e1e2"] == ("后车进一", "R-+1")
    assert names["e3d3"] == ("前车平六", "R+=6")


def test_black_tandem_cannons() -> None:
    names = render("4k4/4c4/4c4/9/9/9/9/9/9/3K5 b")
    assert names["e7e6"] == ("前炮进1", "C++1")
    assert names["e8f8"] == ("后炮平6", "C-=6")


def test_advisors_and_elephants_on_one_file_keep_the_file() -> None:
    assert render("3k5/9/9/9/9/9/9/3A5/9/3AK4 w")["d2e1"] == ("仕六退五", "A6-5")
    assert render("3k5/9/9/9/9/2B6/9/9/9/2B1K4 w")["c4e2"] == ("相七退五", "E7-5")


def test_three_pawns_on_a_file_are_front_middle_rear() -> None:
    names = render("3k5/9/3P5/3P5/3P5/9/9/9/9/4K4 w")
    assert names["d7d8"] == ("前兵进一", "16+1")
    assert names["d6c6"] == ("中兵平七", "26=7")
    assert names["d5e5"] == ("后兵平五", "36=5")


def test_four_pawns_on_a_file_are_numbered_from_the_front() -> None:
    names = render("5k3/3P5/3P5/3P5/3P5/9/9/9/9/4K4 w")
    assert names["d8c8"][0] == "一兵平七"
    assert names["d7c7"][0] == "二兵平七"
    assert names["d6c6"][0] == "三兵平七"
    assert names["d5c5"] == ("四兵平七", "46=7")


def test_two_tandem_pawn_files_use_xqbase_numbering() -> None:
    # the xqbase table: red pawns on files 四 (f) and 六 (d); f first (nearer Red's right), front first
    names = render("4k4/9/3P1P3/9/3P1P3/9/9/9/9/3K5 w")
    assert names["f7e7"][0] == "一兵平五"
    assert names["f5e5"][0] == "二兵平五"
    assert names["d7e7"][0] == "三兵平五"
    assert names["d5e5"][0] == "四兵平五"
    assert names["d7d8"][1] == "16+1" and names["f5f6"][1] == "24+1"


def test_black_pawn_ordinals_stay_chinese_numerals() -> None:
    names = render("3k5/9/9/9/9/2p3p2/2p3p2/9/9/4K4 b")
    # black counts files from its own right: c = 3, g = 7; front = lower rank for black
    assert names["c3d3"][0] == "一卒平4"
    assert names["c4b4"][0] == "二卒平2"
    assert names["g3f3"][0] == "三卒平6"
    assert names["c3c2"][1] == "13+1" and names["g4h4"][1] == "27=8"


@pytest.mark.parametrize(
    ("fen", "text", "iccs"),
    [
        (None, "炮2平5", "h2e2"),
        (None, "砲二平五", "h2e2"),
        (None, "傌二進三", "h0g2"),
        (None, "馬２進３", "h0g2"),
        (None, " 炮 二 平 五 ", "h2e2"),
        (None, "c2.5", "h2e2"),
        (None, "N2+3", "h0g2"),
        (None, "B3+5", "g0e2"),
        (None, "H2-E2", "h2e2"),
        (None, "h2-e2", "h2e2"),
        ("3k5/9/9/9/9/9/4R4/9/4R4/5K3 w", "前俥进一", "e3e4"),
        ("3k5/9/9/9/9/9/4R4/9/4R4/5K3 w", "後車進一", "e1e2"),
        # two tandem pawn files: the traditional 前兵九平八 form with the file restored, and 前九平八
        ("4k4/9/3P1P3/9/3P1P3/9/9/9/9/3K5 w", "前兵六平五", "d7e7"),
        ("4k4/9/3P1P3/9/3P1P3/9/9/9/9/3K5 w", "后六平七", "d5c5"),
        # 4 on a file written the DhtmlXQ way (前/二/三/后)
        ("5k3/3P5/3P5/3P5/3P5/9/9/9/9/4K4 w", "前兵平七", "d8c8"),
        ("5k3/3P5/3P5/3P5/3P5/9/9/9/9/4K4 w", "后兵平七", "d5c5"),
        # plain file form is accepted when only one pawn on the file can make that move
        ("3k5/9/3P5/3P5/3P5/9/9/9/9/4K4 w", "兵六进一", "d7d8"),
        # WXF: file + front mark for two tandem files
        ("4k4/9/3P1P3/9/3P1P3/9/9/9/9/3K5 w", "6+.5", "d7e7"),
    ],
)
def test_tolerant_parsing(fen: str | None, text: str, iccs: str) -> None:
    pos = Position(fen) if fen else Position()
    assert parse_move(pos, text) == mv(iccs)


@pytest.mark.parametrize(
    ("fen", "text", "code"),
    [
        (None, "炮二平", "BAD_NOTATION"),
        (None, "hello", "BAD_NOTATION"),
        (None, "z9z9", "BAD_NOTATION"),
        (None, "", "BAD_NOTATION"),
        (None, "炮二进五", "ILLEGAL_MOVE"),
        (None, "h2h8", "ILLEGAL_MOVE"),
        (None, "e3e5", "ILLEGAL_MOVE"),
        (None, "车9平5", "ILLEGAL_MOVE"),
        (None, "C9=5", "ILLEGAL_MOVE"),
        # two tandem pawn files: 前兵 names two pawns that can both go forward
        ("4k4/9/3P1P3/9/3P1P3/9/9/9/9/3K5 w", "前兵进一", "AMBIGUOUS_MOVE"),
        ("3k5/9/3P5/3P5/3P5/9/9/9/9/4K4 w", "兵六平五", "AMBIGUOUS_MOVE"),
        ("3k5/9/3P5/3P5/3P5/9/9/9/9/4K4 w", "P6=5", "AMBIGUOUS_MOVE"),
    ],
)
def test_errors_name_what_was_wrong(fen: str | None, text: str, code: str) -> None:
    pos = Position(fen) if fen else Position()
    with pytest.raises(XiangqiError) as err:
        parse_move(pos, text)
    assert err.value.code == code
    if code == "AMBIGUOUS_MOVE":
        assert len(err.value.details["candidates"]) >= 2


def test_coordinate_objects() -> None:
    pos = Position()
    assert parse_coords(pos, {"from": 70, "to": 67}) == mv("h2e2")
    assert parse_move(pos, {"from": "h2", "to": "e2"}) == mv("h2e2")
    for bad in ({"from": 70}, {"from": 90, "to": 1}, {"from": True, "to": 1}, {"from": [1], "to": 2}):
        with pytest.raises(XiangqiError) as err:
            parse_coords(pos, bad)
        assert err.value.code == "BAD_NOTATION"
    with pytest.raises(XiangqiError) as err:
        parse_coords(pos, {"from": 70, "to": 16})
    assert err.value.code == "ILLEGAL_MOVE"


def test_describe_move_has_the_projection_shape() -> None:
    assert describe_move(Position(), mv("h2e2")) == {
        "from": 70,
        "to": 67,
        "iccs": "h2e2",
        "zh": "炮二平五",
        "wxf": "C2=5",
    }


def test_every_move_round_trips_and_renders_uniquely_in_random_games() -> None:
    rng = random.Random(7)
    positions = 0
    for _ in range(6):
        pos = Position()
        for _ply in range(120):
            moves = pos.legal_moves()
            if not moves:
                break
            positions += 1
            zh = [to_chinese(pos, m) for m in moves]
            wxf = [to_wxf(pos, m) for m in moves]
            assert len(set(zh)) == len(moves) and len(set(wxf)) == len(moves), pos.fen()
            for m, z, w in zip(moves, zh, wxf, strict=True):
                assert parse_chinese(pos, z) == m
                assert parse_wxf(pos, w) == m
                assert parse_iccs(pos, m.iccs()) == m
            pawn_moves = [m for m in moves if abs(pos.board[m.from_sq]) == 7]
            pos.push(rng.choice(pawn_moves if pawn_moves and rng.random() < 0.6 else moves))
    assert positions > 400
