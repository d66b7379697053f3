"""Fuzz: FEN and every move parser only ever succeed or raise the documented XiangqiError codes."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from moddesk.xiangqi.core.board import START_FEN, Position, XiangqiError
from moddesk.xiangqi.core.notation import (
    parse_chinese,
    parse_coords,
    parse_iccs,
    parse_move,
    parse_wxf,
    to_chinese,
)
from moddesk.xiangqi.engines import UciEngine, UciServer

FEN_CHARS = "KABNRCPEHkabnrcpeh123456789/ wrb-0"
MOVE_CHARS = (
    "abcdefghiABCDEFGHI0123456789-+=. "
    "一二三四五六七八九１２３４５６７８９进進退平前中后後"
    "帅帥将將仕士相象马馬傌车車俥炮砲包兵卒KAEBHNRCP"
)
NOTATION_CODES = {"BAD_NOTATION", "AMBIGUOUS_MOVE", "ILLEGAL_MOVE"}
POSITIONS = [
    Position(),
    Position("4k4/9/3P1P3/9/3P1P3/9/9/9/9/3K5 w"),
    Position("5k3/3P5/3P5/3P5/3P5/9/9/9/9/4K4 w"),
    Position("3k5/9/9/9/9/2p3p2/2p3p2/9/9/4K4 b"),
    Position("r1ba1a3/4kn3/2n1b4/pNp1p1p1p/4c4/6P2/P1P2R2P/1CcC5/9/2BAKAB2 w"),
]
FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def mutate(base: str, edits: list[tuple[int, str]]) -> str:
    text = list(base)
    for index, ch in edits:
        if text:
            text[index % len(text)] = ch
    return "".join(text)


@FUZZ
@given(st.text(alphabet=FEN_CHARS, max_size=90))
def test_fen_random_text(text: str) -> None:
    try:
        pos = Position(text)
    except XiangqiError as exc:
        assert exc.code == "BAD_FEN"
    else:
        assert Position(pos.fen()).fen() == pos.fen()


@FUZZ
@given(st.lists(st.tuples(st.integers(0, 200), st.sampled_from(FEN_CHARS)), max_size=4))
def test_fen_mutations_of_valid_positions(edits: list[tuple[int, str]]) -> None:
    try:
        pos = Position(mutate(START_FEN, edits))
    except XiangqiError as exc:
        assert exc.code == "BAD_FEN"
    else:
        # any accepted position is consistent: it round-trips and has a sane move list
        assert Position(pos.fen()).key == pos.key
        for move in pos.legal_moves()[:5]:
            to_chinese(pos, move)


@FUZZ
@given(st.text(max_size=80))
def test_fen_any_unicode(text: str) -> None:
    try:
        Position(text)
    except XiangqiError as exc:
        assert exc.code == "BAD_FEN"


@FUZZ
@given(st.integers(0, len(POSITIONS) - 1), st.text(alphabet=MOVE_CHARS, max_size=8))
def test_move_parsers(index: int, text: str) -> None:
    pos = POSITIONS[index]
    before = pos.fen()
    for parser in (parse_iccs, parse_chinese, parse_wxf, parse_move):
        try:
            move = parser(pos, text)
        except XiangqiError as exc:
            assert exc.code in NOTATION_CODES
        else:
            assert pos.is_legal(move)
    assert pos.fen() == before


@FUZZ
@given(st.integers(0, len(POSITIONS) - 1), st.text(max_size=70))
def test_move_parsers_any_unicode(index: int, text: str) -> None:
    pos = POSITIONS[index]
    try:
        parse_move(pos, text)
    except XiangqiError as exc:
        assert exc.code in NOTATION_CODES


JSONISH = st.one_of(
    st.none(), st.booleans(), st.integers(-5, 100), st.text(max_size=4), st.lists(st.integers(), max_size=2)
)


@FUZZ
@given(st.dictionaries(st.sampled_from(["from", "to", "x"]), JSONISH, max_size=3))
def test_coordinate_objects(value: dict[str, Any]) -> None:
    try:
        move = parse_coords(POSITIONS[0], value)
    except XiangqiError as exc:
        assert exc.code in NOTATION_CODES
    else:
        assert POSITIONS[0].is_legal(move)


@FUZZ
@given(st.text(alphabet="abcdefghi0123456789x", min_size=0, max_size=7), st.integers(0, 1))
def test_engine_move_reader(text: str, base: int) -> None:
    try:
        UciEngine._to_move(text, base)
    except XiangqiError as exc:
        assert exc.code in NOTATION_CODES


@FUZZ
@given(
    st.lists(
        st.text(alphabet="abcdefghi0123456789 ", max_size=12).map(lambda s: "position startpos moves " + s)
        | st.text(alphabet=FEN_CHARS, max_size=60).map(lambda s: "position fen " + s)
        | st.text(max_size=30).map(lambda s: "setoption name " + s),
        max_size=4,
    )
)
def test_uci_server_never_crashes_on_bad_commands(lines: list[str]) -> None:
    out: list[str] = []
    server = UciServer(out.append)
    for line in lines:
        assert server.handle(line)
    server.handle("go depth 1")
    server.handle("stop")
    assert any(ln.startswith("bestmove") for ln in out)
