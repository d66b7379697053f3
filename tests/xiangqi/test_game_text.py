"""The text block is the game: what a text-only client shows the model says everything the structured result does.

A real game over Streamable HTTP through the SDK client; each text block is read back field by field
(the board square by square, the record move by move) and compared with ``structuredContent``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from moddesk.kit.mcp import result_payload, serve_http
from moddesk.xiangqi.core.board import parse_square
from moddesk.xiangqi.core.diagram import PIECE_ZH, diagram_rows, parse_diagram
from moddesk.xiangqi.game import GameService
from moddesk.xiangqi.gametext import record_lines
from moddesk.xiangqi.mcp import build_server
from moddesk.xiangqi.rpc import panel_link, rpc_routes
from moddesk.xiangqi.store import Settings

SIDE = {"r": "Red", "b": "Black"}


async def call(client: Client, name: str, args: dict[str, Any]) -> tuple[bool, dict[str, Any], str]:
    result = await client.call_tool(name, args)
    assert len(result.content) == 1, "one text block per result"
    return bool(result.is_error), result_payload(result), result.content[0].text  # type: ignore[union-attr]


RECORD_MOVE = re.compile(r"(\S+?)\(([a-i]\d[a-i]\d)(?: 吃(\S))?\)")


def field(text: str, label: str) -> str:
    """The value of the one line that starts with ``label:``."""
    found = [line[len(label) + 2 :] for line in text.split("\n") if line.startswith(label + ": ")]
    assert len(found) == 1, f"{label!r} appears {len(found)} times in the text"
    return found[0]


def block(text: str, opener: str) -> list[str]:
    """The lines after the line that starts with ``opener``, up to the next unindented ``label:`` line."""
    lines = text.split("\n")
    start = next(i for i, line in enumerate(lines) if line.startswith(opener))
    out = []
    for line in lines[start + 1 :]:
        if re.match(r"^[a-z][a-z ()]*[:(]", line) and not line.startswith(" "):
            break
        out.append(line)
    return out


def parse_record(lines: list[str]) -> list[dict[str, str]]:
    moves: list[dict[str, str]] = []
    if lines == ["  (no move yet)"]:
        return moves
    for number, line in enumerate(lines, 1):
        assert line.lstrip().startswith(f"{number}. "), line
        for zh, iccs, taken in RECORD_MOVE.findall(line):
            moves.append({"zh": zh, "iccs": iccs, "captured": taken})
    return moves


def assert_text_is_the_game(value: dict[str, Any], text: str) -> None:
    """Every field of the projection, read back from the text block."""
    game = field(text, "game")
    assert game == (
        f"session {value['sessionId']}, revision {value['revision']}, "
        f"ply {value['plies']} of at most {value['maxPlies']}"
    )
    you = "b" if value["hero"] == "r" else "r"
    sides = field(text, "sides")
    assert f"you (the model) play {SIDE[you]}" in sides and f"the person plays {SIDE[value['hero']]}" in sides
    assert f"opponent kind {value['opponent']['kind']} ({value['opponent']['label']})" in sides
    turn = field(text, "turn")
    if value["phase"] == "over":
        assert turn.startswith("turn: none") or "over" in turn
    else:
        assert turn.startswith(f"{SIDE[value['turn']]} to move: ")
        assert ("YOUR move" in turn) == (value["turn"] == you)
    status = value["status"]
    winner = SIDE[status["winner"]] if status["winner"] else "none"
    assert field(text, "status") == (
        f"{status['state']}, winner {winner}, {status['reason'] or '-'}: {status['reasonZh']}"
    )
    assert field(text, "pending") == (value["pending"] or "none")
    clock = re.fullmatch(
        r"red ([\d.]+) s \(\d+:\d\d\), black ([\d.]+) s \(\d+:\d\d\) used", field(text, "clock")
    )
    assert clock and float(clock[1]) == value["clock"]["red"] and float(clock[2]) == value["clock"]["black"]
    wait = field(text, "wait")
    if value["wait"] is None:
        assert wait == "none"
    else:
        assert f"waiting {value['wait']['waited']} s" in wait
        if value["wait"]["timeout"]:
            assert f"in {value['wait']['remaining']} s (timeout {value['wait']['timeout']} s)" in wait
    usage = value["usage"]
    assert field(text, "usage (estimated)") == (
        f"{usage['calls']} calls, {usage['inputTokens']} input + {usage['outputTokens']} output "
        f"= {usage['totalTokens']} tokens"
    )
    if value["message"]:
        message = field(text, "message")
        assert message.startswith(f"{value['message']['code']} ({value['message']['tone']}): ")
        assert not message.endswith(value["message"]["code"]), "a message is said as a sentence"
    else:
        assert "\nmessage: " not in text
    if value["lastMove"]:
        assert field(text, "last move") == f"{value['lastMove']['zh']} ({value['lastMove']['iccs']})"
    assert field(text, "FEN") == value["fen"]
    assert field(text, "next")
    if value.get("panelUrl"):
        assert field(text, "panel for the person") == value["panelUrl"]
    if "ascii" in value:
        board_lines = block(text, "board (")
        assert parse_diagram(board_lines) == value["board"]
        assert "九  八  七  六  五  四  三  二  一" in text and "１  ２  ３" in text
    record = parse_record(block(text, "record ("))
    assert record == [
        {"zh": h["zh"], "iccs": h["iccs"], "captured": PIECE_ZH[h["captured"]] if h["captured"] else ""}
        for h in value["history"]
    ]
    assert f"\nrecord ({len(value['history'])} plies, Chinese notation with ICCS):\n" in text
    if value.get("legalMoves"):
        listed = field(text, f"legal moves ({len(value['legalMoves'])})").split(" ")
        assert listed == [f"{m['iccs']}={m['zh']}" for m in value["legalMoves"]]
    if value.get("evaluation"):
        ev = value["evaluation"]
        assert field(text, "evaluation (side to move)").startswith(
            f"{ev['score']} cp, mate {ev['mate']}, depth {ev['depth']}"
        )


def assert_review_text(review: dict[str, Any], text: str) -> None:
    """Every turning point with its loss and the better line, and the whole curve."""
    curve = field(text, "curve (Red's expected score %, by ply)").split(" ")
    assert curve == [f"{p['ply']}:{p['winRed']}" for p in review["curve"]]
    assert len(review["mistakes"]) == review["flagged"] >= len(review["turningPoints"])
    assert all(tp in review["mistakes"] for tp in review["turningPoints"])
    for tp in review["mistakes"]:  # every flagged move, turning point or not, with its better line
        line = next(x for x in text.split("\n") if x.startswith(f"  ply {tp['ply']} "))
        assert f"{tp['zh']} ({tp['iccs']})" in line and f"(-{tp['winLoss']}%)" in line
        assert f"better {tp['best']['zh']} ({tp['best']['iccs']}): {' '.join(tp['best']['lineZh'])}" in line


@pytest.fixture
def http_server(tmp_path: Path):  # type: ignore[no-untyped-def]
    settings = Settings(
        db_path=tmp_path / "games.db", think_time=0.05, hint_time=0.1, review_time=0.02, engine="builtin"
    )
    service = GameService(settings)
    holder: dict[str, str] = {}
    server = serve_http(
        build_server(service, lambda s: panel_link(holder["url"])(s)), 0, extra_routes=rpc_routes(service)
    )
    holder["url"] = server.url
    with server:
        yield service, server.url
    service.close()


def pick(legal: list[dict[str, str]], board: list[str]) -> str:
    """A capture if there is one (so the record has some), else the first legal move."""

    for m in legal:
        if board[parse_square(m["iccs"][2:])]:
            return m["iccs"]
    return legal[0]["iccs"]


def test_board_text_carries_every_field(http_server: tuple[GameService, str]) -> None:
    service, url = http_server

    async def run() -> None:
        async with Client(f"{url}/mcp", read_timeout_seconds=60) as client:
            failed, value, text = await call(client, "xiangqi_new", {"side": "r"})
            assert not failed
            assert_text_is_the_game(value, text)
            session = value["sessionId"]
            for _ in range(14):  # the person (in process) and the model (over MCP) take turns
                person = service.board(session)
                if person["phase"] == "over":
                    break
                service.move("hero", pick(person["legalMoves"], person["board"]), session)
                failed, board, text = await call(client, "xiangqi_board", {"sessionId": session})
                assert not failed and "YOUR move" in text
                assert_text_is_the_game(board, text)
                if board["phase"] == "over":
                    break
                failed, played, text = await call(
                    client,
                    "xiangqi_move",
                    {"move": pick(board["legalMoves"], board["board"]), "sessionId": session},
                )
                assert not failed and text.startswith(f"played: {played['played']} ({played['playedIccs']})")
                assert_text_is_the_game(played, text)
            failed, board, text = await call(
                client, "xiangqi_board", {"sessionId": session, "includeEval": True}
            )
            assert not failed and board["plies"] >= 20 and any(h["captured"] for h in board["history"])
            assert_text_is_the_game(board, text)
            assert text.count("\n  1. ") == 1  # the record starts once, at move 1
            failed, review, text = await call(client, "xiangqi_review", {"sessionId": session})
            assert not failed
            assert_text_is_the_game(review, text)
            assert_review_text(review["review"], text)

    anyio.run(run)


def test_record_numbering_from_a_black_start() -> None:
    history = [
        {"zh": "马8进7", "iccs": "h9g7", "captured": "", "side": "b"},
        {"zh": "炮二平五", "iccs": "h2e2", "captured": "", "side": "r"},
        {"zh": "炮8进4", "iccs": "h7h3", "captured": "P", "side": "b"},
    ]
    assert record_lines(history) == ["  1. …  马8进7(h9g7)", "  2. 炮二平五(h2e2)  炮8进4(h7h3 吃兵)"]


def test_diagram_reads_back_and_names_the_files() -> None:
    from moddesk.xiangqi.core.board import START_FEN, Position, piece_letter

    board = [piece_letter(p) if p else "" for p in Position(START_FEN).board]
    rows = diagram_rows(board)
    assert parse_diagram(rows) == board
    assert rows[1].split()[1:] == ["车r", "马n", "象b", "士a", "将k", "士a", "象b", "马n", "车r"]
    assert rows[-2].split()[:9] == list("九八七六五四三二一")


def test_a_long_review_is_paged_not_cut(tmp_path: Path) -> None:
    """A review of every move of a 500-ply game is larger than one result: it comes in pages, whole."""
    import random

    from moddesk.kit.pages import CONTINUES, TEXT_BUDGET
    from moddesk.xiangqi.game import Game

    game = Game("rnbakabnr/9/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C5C1/9/RNBAKABNR w - - 0 1", "draw", 1000)
    rng = random.Random(32)
    moves: list[str] = []
    while len(moves) < 500:
        quiet = [m["iccs"] for m in game.legal_moves() if not game.board()[parse_square(m["iccs"][2:])]]
        if not quiet:
            break
        moves.append(rng.choice(quiet))
        game.play(moves[-1])
    settings = Settings(
        db_path=tmp_path / "games.db", review_time=0.02, engine="builtin", no_capture_limit=1000,
        max_plies=2000, rule_set="draw",
    )  # fmt: skip
    service = GameService(settings)
    session = service.new("hero", "r", "model", moves=moves)["sessionId"]
    server = serve_http(build_server(service), 0, extra_routes=rpc_routes(service))

    async def run(url: str) -> None:
        async with Client(f"{url}/mcp", read_timeout_seconds=120) as client:
            result = await client.call_tool("xiangqi_review", {"highlight": "all", "sessionId": session})
            page = result.content[0].text  # type: ignore[union-attr]
            marker = re.search(r"\[page 1/(\d+) of result (r[0-9a-f]+);", page)
            assert marker and int(marker[1]) >= 2, page[-300:]
            pages = [page]
            for number in range(2, int(marker[1]) + 1):
                more = await client.call_tool("xiangqi_result_page", {"resultId": marker[2], "page": number})
                pages.append(more.content[0].text)  # type: ignore[union-attr]
            assert all(len(p.encode()) <= TEXT_BUDGET for p in pages)
            whole = "".join(p.rsplit("\n[page ", 1)[0] + "\n" for p in pages).replace(CONTINUES + "\n", "")
            assert whole.startswith("game: session ") and f"record ({len(moves)} plies" in whole
            for ply in range(1, len(moves) + 1):  # every move's line, none cut
                assert f"\n  move ply {ply} " in whole, ply

    try:
        with server:
            anyio.run(run, server.url)
    finally:
        service.close()
