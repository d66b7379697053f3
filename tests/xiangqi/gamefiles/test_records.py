"""Game records: PGN / UBB (DhtmlXQ) / XQF read and written, checked against files and a reader by others.

Sample PGNs come from walker8088/cchess (see tests/xiangqi/records/PROVENANCE.md). XQF files by other programs could not
be obtained offline, so XQF is checked with cchess's independent reader (it reads what we write) and with
encrypted version-18 files built here by an encoder written from the format description.
"""

from __future__ import annotations

import base64
import random
import struct
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from moddesk.kit.errors import ServiceError
from moddesk.xiangqi.core.board import START_FEN, Position
from moddesk.xiangqi.game import GameService
from moddesk.xiangqi.gamefiles import model, records, xqf
from moddesk.xiangqi.gamefiles.games import export_record, load_record
from moddesk.xiangqi.rpc import dispatch
from moddesk.xiangqi.store import Settings

HERE = Path(__file__).resolve().parents[1] / "records"
SAMPLES = {"cchess-test2.pgn": (102, "1/2-1/2"), "cchess-zhongpao-liepao.pgn": (23, "*")}
ENDGAME_FEN = "1RN1k4/3P3rC/6n2/9/9/9/9/4p4/3p5/c1rAK4 w - - 0 1"


def _cchess() -> object:
    return pytest.importorskip("cchess", reason="cchess (dev dependency) is the independent reader")


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_sample_pgns_from_another_program(name: str, tmp_path: Path) -> None:
    _cchess()
    from cchess.read_pgn import read_from_pgn

    data = (HERE / name).read_bytes()
    record = records.read_record(data, name)
    plies, result = SAMPLES[name]
    assert len(record.moves) == plies and record.result == result
    theirs = read_from_pgn(str(HERE / name)).dump_iccs_moves()[0]
    assert record.moves == theirs  # the same game as the other program reads
    for style in ("chinese", "wxf", "iccs"):
        text = records.write_pgn(record, style)
        assert records.read_pgn(text).moves == record.moves
        out = tmp_path / f"ours-{style}.pgn"
        out.write_text(text, encoding="utf-8")
        if style == "chinese":  # cchess reads Chinese-move PGN: it must see our game too
            assert read_from_pgn(str(out)).dump_iccs_moves()[0] == record.moves
    ubb = records.write_ubb(record)
    assert records.read_ubb(ubb).moves == record.moves


def test_pgn_comments_variations_and_tags() -> None:
    text = '[Red "甲"]\n[Black "乙"]\n[Result "1-0"]\n1. 炮二平五 炮２平５ {中炮对中炮}\n2. 马二进三 (2. 马八进七 马８进７) 马８进７ 1-0\n'
    record = records.read_pgn(text)
    assert record.moves == ["h2e2", "b7e7", "h0g2", "h9g7"]
    assert record.comments == {2: "中炮对中炮"} and record.tags["Red"] == "甲"
    assert record.notes == ["1 variation(s) left out; the main line is kept"]
    again = records.read_pgn(records.write_pgn(record))
    assert again.comments == record.comments and again.result == "1-0"


def test_ubb_strings_as_dongping_writes_them() -> None:
    # the start of a game and an end-game set-up in DhtmlXQ form (examples from cchess's reader_dhtml)
    game = records.read_ubb("[DhtmlXQ_movelist]7747724279677062[/DhtmlXQ_movelist]")
    assert game.moves == ["h2e2", "h7e7", "h0g2", "h9g7"] and game.start_fen == START_FEN
    setup = records.read_ubb(
        "[DhtmlXQ][DhtmlXQ_binit]9999999949399920109981999999993129629999409999997109993847999999"
        "[/DhtmlXQ_binit][DhtmlXQ_movelist]31414050414050402032[/DhtmlXQ_movelist][/DhtmlXQ]"
    )
    assert setup.start_fen == ENDGAME_FEN and setup.moves == ["d8e8", "e9f9", "e8e9", "f9e9", "c9d7"]
    again = records.read_ubb(records.write_ubb(setup))
    assert again.start_fen == setup.start_fen and again.moves == setup.moves


def _game_record() -> model.Record:
    pgn = (HERE / "cchess-zhongpao-liepao.pgn").read_text(encoding="utf-8")
    record = records.read_pgn(pgn)
    record.tags.update({"Red": "红方棋手", "Black": "黑方棋手", "Event": "测试赛", "Result": "1-0"})
    record.comments = {0: "开局", 3: "炮打中卒"}
    return record


def test_xqf_we_write_is_read_by_cchess(tmp_path: Path) -> None:
    _cchess()
    from cchess.read_xqf import read_from_xqf

    for record in (_game_record(), records.read_ubb(records.write_ubb(_endgame()))):
        path = tmp_path / "ours game.xqf"
        path.write_bytes(xqf.write_xqf(record))
        theirs = read_from_xqf(str(path))
        assert theirs.dump_iccs_moves()[0] == record.moves
        assert theirs.init_board.to_fen().split()[0] == record.start_fen.split()[0]
        back = xqf.read_xqf(path.read_bytes())
        assert back.moves == record.moves and back.start_fen.split()[0] == record.start_fen.split()[0]
        assert back.tags.get("Red") == record.tags.get("Red") and back.result == record.result
        assert back.comments == record.comments


def _endgame() -> model.Record:
    return model.Record(start_fen=ENDGAME_FEN, moves=["d8e8", "e9f9", "e8e9", "f9e9", "c9d7"])


def _scramble(b: int, prev: int) -> int:
    # written the way the Pascal original states it, not like our reader: (((((b²)·3+9)·3+8)·2+1)·3+8)·prev
    return ((((((b * b) * 3 + 9) * 3 + 8) * 2 + 1) * 3 + 8) * prev) & 0xFF


def encrypted_xqf(record: model.Record, seed: int, version: int = 18) -> bytes:
    """An XQF file in the encrypted layout (versions 11-18), built from the format description."""
    rng = random.Random(seed)
    head = bytearray(1024)
    head[0:3] = bytes([ord("X"), ord("Q"), version])
    head[3] = rng.randrange(256)  # mask
    for i in range(8, 16):
        head[i] = rng.randrange(256)
    key_xy = _scramble(head[13], head[13])
    key_f = _scramble(head[14], key_xy)
    key_t = _scramble(head[15], key_f)
    comment_key = ((head[12] * 256 + head[13]) % 32000 + 767) & 0xFFFF
    stream = [
        ((head[8 + i % 4] | (head[12 + i % 4] & head[3])) & b"[(C) Copyright Mr. Dong Shiwei.]"[i])
        for i in range(32)
    ]
    pos = Position(record.start_fen)
    setup = record.start_fen.split()[0] != START_FEN.split()[0]
    plain = [0xFF if sq is None else (sq % 9) * 10 + 9 - sq // 9 for sq in model.piece_slots(pos)]
    for i in range(32):
        head[0x10 + i] = (plain[(key_xy + 1 + i) % 32] + key_xy) & 0xFF
    head[0x40] = 3 if setup else 0
    head[0x33] = {"1-0": 1, "0-1": 2, "1/2-1/2": 3}.get(record.result, 0)
    red = record.tags.get("Red", "").encode("gb18030")
    head[0x130] = len(red)
    head[0x131 : 0x131 + len(red)] = red
    body = bytearray()

    def node(frm: int, to: int, more: bool, comment: str) -> None:
        text = comment.encode("gb18030")
        flags = (0x80 if more else 0) | (0x20 if text else 0)
        body.extend([(frm + 24 + key_f) & 0xFF, (to + 32 + key_t) & 0xFF, flags, 0])
        if text:
            body.extend(struct.pack("<i", len(text) + comment_key))
            body.extend(text)

    node(0, 0, bool(record.moves), record.comments.get(0, ""))
    for ply, m in enumerate(record.moves, start=1):
        node("abcdefghi".index(m[0]) * 10 + int(m[1]), "abcdefghi".index(m[2]) * 10 + int(m[3]),
             ply < len(record.moves), record.comments.get(ply, ""))  # fmt: skip
    return bytes(head) + bytes((b + stream[i % 32]) & 0xFF for i, b in enumerate(body))


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_encrypted_xqf_read_like_cchess_reads_it(seed: int, tmp_path: Path) -> None:
    _cchess()
    from cchess.read_xqf import read_from_xqf

    for record in (_game_record(), _endgame()):
        data = encrypted_xqf(record, seed)
        path = tmp_path / f"enc{seed}.xqf"
        path.write_bytes(data)
        theirs = read_from_xqf(str(path))
        ours = records.read_record(data, "x.xqf")
        assert ours.moves == record.moves == theirs.dump_iccs_moves()[0]
        assert (
            ours.start_fen.split()[0] == record.start_fen.split()[0] == theirs.init_board.to_fen().split()[0]
        )
        assert ours.comments == record.comments and ours.result == record.result


def test_damaged_records_say_what_is_wrong() -> None:
    data = xqf.write_xqf(_game_record())
    cut = records.read_record
    for broken, code in (
        (data[:700], "BAD_RECORD"),  # header cut short
        (data[:-3], "BAD_RECORD"),  # move data cut in the middle of a record
        (b"XQ\x63" + data[3:], "UNSUPPORTED_RECORD"),  # a version nobody wrote
        (b"\x00\x01\x02garbage" * 10, "UNSUPPORTED_RECORD"),
    ):
        with pytest.raises(model.RecordError) as info:
            cut(broken, "game.xqf" if broken.startswith(b"XQ") else "game.bin")
        assert info.value.code == code and info.value.details["errorZh"]
    illegal = bytearray(VALID_XQF)  # no comment before move 4: record n sits at 0x400 + 8n
    illegal[0x400 + 8 * 3] = 24 + 44  # move 3 now starts on e4, an empty point
    with pytest.raises(model.RecordError) as info:
        cut(bytes(illegal), "x.xqf")
    assert info.value.code == "BAD_RECORD" and info.value.details["ply"] == 3
    with pytest.raises(model.RecordError) as info:
        records.read_pgn("1. 炮二平五 炮8平5 2. 车一进五")
    assert info.value.details["ply"] == 3 and "第 3 步" in info.value.details["errorZh"]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=3000), st.sampled_from(["a.xqf", "a.pgn", ""]))
def test_fuzz_any_bytes(data: bytes, name: str) -> None:
    try:
        records.read_record(data, name)
    except ServiceError as exc:
        assert exc.code in ("BAD_RECORD", "UNSUPPORTED_RECORD", "BAD_FEN")


VALID_XQF = xqf.write_xqf(records.read_pgn("1. 炮二平五 马8进7 2. 马二进三 车9平8 {注} 3. 车一平二"))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, len(VALID_XQF) - 1), st.integers(0, 255)), min_size=1, max_size=6))
def test_fuzz_damaged_xqf(edits: list[tuple[int, int]]) -> None:
    data = bytearray(VALID_XQF)
    for at, value in edits:
        data[at] = value
    try:
        record = records.read_record(bytes(data), "x.xqf")
    except ServiceError as exc:
        assert exc.code in ("BAD_RECORD", "UNSUPPORTED_RECORD")
    else:
        record.positions()  # whatever was read is a playable game


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet='1. 炮马车兵卒二五八平进退{}()[]"FEN 2h7e0-=+*', max_size=200))
def test_fuzz_pgn_and_ubb_text(text: str) -> None:
    for reader in (records.read_pgn, records.read_ubb):
        try:
            reader(text)
        except ServiceError as exc:
            assert exc.code in ("BAD_RECORD", "UNSUPPORTED_RECORD", "BAD_FEN")


@pytest.fixture
def service(tmp_path: Path) -> GameService:
    svc = GameService(
        Settings(db_path=tmp_path / "g.db", engine="builtin", think_time=0.05, review_time=0.01)
    )
    yield svc  # type: ignore[misc]
    svc.close()


def test_load_a_record_play_on_review_and_export(service: GameService) -> None:
    data = (HERE / "cchess-test2.pgn").read_bytes()
    value = load_record(service, data, "cchess-test2.pgn", ply=10)
    assert value["plies"] == 10 and value["hero"] == "r" and value["turn"] == "r"
    assert value["record"]["plies"] == 102 and value["history"][0]["zh"] == "相七进五"
    played = service.move("hero", "兵三进一")  # play on from move 10 (the game went 马二进三)
    assert played["plies"] == 11
    reviewed = load_record(service, data, "cchess-test2.pgn", ply=20, review=True)
    assert len(reviewed["review"]["curve"]) == 21 and reviewed["review"]["moves"][0]["zh"] == "相七进五"
    for fmt in ("pgn", "pgn-wxf", "pgn-iccs", "ubb", "xqf"):
        out = export_record(service, reviewed["sessionId"], fmt)
        raw = base64.b64decode(out["base64"]) if fmt == "xqf" else out["text"].encode("utf-8")
        again = records.read_record(raw, out["fileName"])
        assert again.moves == [h["iccs"] for h in reviewed["history"]]
        # XQF keeps 15 bytes of a name (GB18030), cut at a character: "永远在路上(北斗" + ")" is 16
        assert again.tags.get("Red") == ("永远在路上(北斗" if fmt == "xqf" else "永远在路上(北斗)")


def test_rpc_load_and_bad_upload(service: GameService) -> None:
    blob = base64.b64encode(records.write_ubb(_endgame()).encode()).decode()
    value = dispatch(service, "load", {"data": blob, "name": "end.txt", "ply": 0, "opponent": "local"})
    assert value["fen"].split()[0] == ENDGAME_FEN.split()[0] and value["plies"] == 0
    with pytest.raises(ServiceError) as info:
        dispatch(service, "load", {"data": "not base64!"})
    assert info.value.code == "INVALID_ARGUMENT"
    with pytest.raises(ServiceError) as info:
        dispatch(service, "load", {"data": base64.b64encode(b"\x00\x01binary").decode()})
    assert info.value.code == "UNSUPPORTED_RECORD"


def _two_game_pgn() -> bytes:
    """Two real games from another program, one after the other in one file (as collections are written)."""
    first = (HERE / "cchess-test2.pgn").read_text(encoding="utf-8")
    second = (HERE / "cchess-zhongpao-liepao.pgn").read_text(encoding="utf-8")
    return (first.rstrip() + "\n\n" + second).encode("utf-8")


def test_a_pgn_with_two_games_lists_both_and_loads_the_one_asked_for(tmp_path: Path) -> None:
    data = _two_game_pgn()
    games = records.read_games(data, "two.pgn")
    assert [len(g.moves) for g in games if isinstance(g, model.Record)] == [102, 23]
    service = GameService(Settings(db_path=tmp_path / "games.db", engine="builtin"))
    try:
        first = load_record(service, data, "two.pgn")  # default: the first game, and the count said
        rec = first["record"]
        assert rec["game"] == 1 and rec["count"] == 2 and rec["plies"] == 102
        assert rec["notes"][0].startswith("文件里共有 2 局，已载入第 1 局")
        assert [g["plies"] for g in rec["games"]] == [102, 23]
        assert rec["games"][0]["red"] == "永远在路上(北斗)" and rec["games"][0]["result"] == "1/2-1/2"
        second = dispatch(
            service, "load", {"data": base64.b64encode(data).decode(), "name": "two.pgn", "game": 2}
        )
        assert second["record"]["game"] == 2 and second["plies"] == 23
        missing = dispatch_error(service, {"data": base64.b64encode(data).decode(), "game": 3})
        assert missing.code == "BAD_RECORD" and "共有 2 局" in missing.details["errorZh"]
    finally:
        service.close()


def dispatch_error(service: GameService, payload: dict[str, object]) -> ServiceError:
    with pytest.raises(ServiceError) as caught:
        dispatch(service, "load", payload)
    return caught.value


def test_a_damaged_game_in_a_collection_does_not_hide_the_others() -> None:
    good = '[Red "甲"]\n[Black "乙"]\n1. 炮二平五 马8进7 *\n'
    bad = '[Red "丙"]\n[Black "丁"]\n1. 炮二平五 车1进5 *\n'  # the rook runs into its own pawn
    games = records.read_games((good + "\n" + bad + "\n" + good).encode(), "three.pgn")
    assert isinstance(games[0], model.Record) and isinstance(games[2], model.Record)
    assert isinstance(games[1], model.RecordError) and games[1].message.startswith("game 2: move 2")
    assert records.game_summary(2, games[1])["errorZh"].startswith("第 2 局：第 2 步")
    assert records.read_record((good + bad).encode(), "two.pgn", 1).tags["Red"] == "甲"


def test_ubb_with_several_blocks() -> None:
    one = records.write_ubb(model.Record(moves=["h2e2", "h9g7"], tags={"Red": "甲", "Black": "乙"}))
    two = records.write_ubb(model.Record(moves=["b0c2"], tags={"Red": "丙", "Black": "丁", "Result": "0-1"}))
    games = records.read_games((one + "\n" + two).encode(), "x.txt")
    assert [g.tags["Red"] for g in games if isinstance(g, model.Record)] == ["甲", "丙"]
    assert records.read_record((one + two).encode(), "", 2).result == "0-1"


def test_result_event_date_players_round_trip_through_a_loaded_game(tmp_path: Path) -> None:
    pgn = (
        '[Event "全国象棋个人赛"]\n[Site "北京"]\n[Date "1991.11.02"]\n[Round "7"]\n[Red "刘大华"]\n'
        '[Black "黄勇"]\n[Result "1/2-1/2"]\n1. 炮二平五 马8进7 2. 马二进三 车9平8 1/2-1/2\n'
    ).encode()
    service = GameService(Settings(db_path=tmp_path / "games.db", engine="builtin"))
    try:
        session = load_record(service, pgn, "g.pgn", opponent="model")["sessionId"]
        for fmt in ("pgn", "pgn-wxf", "ubb"):
            text = export_record(service, session, fmt)["text"]
            back = records.read_record(text.encode("utf-8"), f"x.{fmt}")
            for key in ("Event", "Date", "Red", "Black", "Result"):
                assert back.tags.get(key) == records.read_pgn(pgn.decode()).tags[key], (fmt, key)
        plain = service.export(session)
        assert plain["result"] == "1/2-1/2" and '[Result "1/2-1/2"]' in plain["pgn"]
        assert '[Event "全国象棋个人赛"]' in plain["pgn"] and '[Red "刘大华"]' in plain["pgn"]
        assert plain["pgn"].rstrip().endswith("1/2-1/2")
        # play on past the record's end: the record's result no longer describes the game
        service.move("hero", "b0c2", session)  # the person plays the side to move at the record's end
        assert service.export(session)["result"] == "*"
    finally:
        service.close()


def test_xqf_says_what_does_not_fit(tmp_path: Path) -> None:
    long_name = "一位名字很长很长的象棋特级大师"  # 15 characters = 30 GB18030 bytes: XQF keeps 15
    record = model.Record(
        moves=["h2e2"],
        tags={"Red": long_name, "Black": "乙", "Round": "3", "Event": "e" * 80, "Result": "1-0"},
    )
    warnings = xqf.lost_in_xqf(record)
    assert len(warnings) == 3
    assert any("超过 XQF 的 15 字节" in w and "一位名字很长很" in w for w in warnings)
    assert any("Round" in w for w in warnings) and any("63 字节" in w for w in warnings)
    back = xqf.read_xqf(xqf.write_xqf(record))
    assert back.tags["Red"] == "一位名字很长很" and back.result == "1-0"
    assert xqf.lost_in_xqf(model.Record(moves=["h2e2"], tags={"Red": "甲"})) == []
    service = GameService(Settings(db_path=tmp_path / "games.db", engine="builtin"))
    try:
        pgn = f'[Red "{long_name}"]\n[Black "乙"]\n1. 炮二平五 *\n'.encode()
        session = load_record(service, pgn, "g.pgn", opponent="model")["sessionId"]
        exported = export_record(service, session, "xqf")
        assert exported["warnings"] and "15 字节" in exported["warnings"][0]
    finally:
        service.close()


@settings(max_examples=80, deadline=None)
@given(
    st.lists(
        st.text(alphabet='1. 炮马车二五八平进退{}()[]"Red FEN 2h7e0*\n', max_size=60)
        | st.sampled_from(['[Red "甲"]\n', "[DhtmlXQ]", "[/DhtmlXQ]", "1. 炮二平五 马8进7 *\n"]),
        max_size=8,
    ),
    st.integers(1, 4),
)
def test_fuzz_collections(parts: list[str], game: int) -> None:
    data = "".join(parts).encode("utf-8")
    try:
        games = records.read_games(data, "c.pgn")
    except ServiceError as exc:
        assert exc.code in ("BAD_RECORD", "UNSUPPORTED_RECORD", "BAD_FEN")
        return
    assert games and all(isinstance(g, model.Record | model.RecordError) for g in games)
    summaries = [records.game_summary(n, g) for n, g in enumerate(games, 1)]
    assert [s["game"] for s in summaries] == list(range(1, len(games) + 1))
    try:
        records.read_record(data, "c.pgn", game)
    except ServiceError as exc:
        assert exc.code in ("BAD_RECORD", "UNSUPPORTED_RECORD", "BAD_FEN")


BIG5_PGN = (
    '[Game "Chinese Chess"]\n[Event "全國象棋個人賽"]\n[Red "紅方選手"]\n[Black "黑方選手"]\n[Result "1-0"]\n\n'
    "1. 炮二平五 馬８進７ 2. 馬二進三 車９平８ 3. 車一平二 馬２進３ 1-0\n"
)


@pytest.mark.parametrize("codec", ["big5", "gb18030", "utf-8", "utf-8-sig"])
def test_a_record_reads_in_the_code_page_it_was_written_in(codec: str) -> None:
    """Taiwan/Hong Kong programs write Big5, mainland ones GB18030: both read back, names and moves."""
    text = (
        BIG5_PGN if codec == "big5" else BIG5_PGN.replace("車", "车").replace("馬", "马").replace("進", "进")
    )
    record = records.read_record(text.encode(codec), "game.pgn")
    assert record.tags["Red"] == "紅方選手"
    assert record.tags["Event"] == "全國象棋個人賽"
    assert len(record.moves) == 6


@settings(max_examples=60, deadline=None)
@given(st.binary(max_size=400).filter(lambda b: b"\x00" not in b))
def test_any_bytes_decode_or_refuse_clearly(data: bytes) -> None:
    try:
        text = records.decode_text(data)
    except model.RecordError as exc:
        assert exc.code == "BAD_RECORD"
    else:
        assert isinstance(text, str)
