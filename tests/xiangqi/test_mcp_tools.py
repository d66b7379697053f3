"""The xiangqi MCP server through the official SDK Client, over stdio (subprocess) and Streamable HTTP."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client, StdioServerParameters

from moddesk.kit.mcp import result_payload
from moddesk.kit.person import login_like_a_browser
from moddesk.xiangqi.game import GameService
from moddesk.xiangqi.serving import XiangqiHttp
from moddesk.xiangqi.store import Settings

TOOLS = {
    "xiangqi_new",
    "xiangqi_board",
    "xiangqi_move",
    "xiangqi_undo",
    "xiangqi_hint",
    "xiangqi_review",
    "xiangqi_draw",
    "xiangqi_result_page",
}


def fast_settings(tmp_path: Path) -> Settings:
    return Settings(db_path=tmp_path / "games.db", think_time=0.05, hint_time=0.1, review_time=0.02)


async def call(client: Client, name: str, args: dict[str, Any]) -> tuple[bool, dict[str, Any], str]:
    result = await client.call_tool(name, args)
    assert len(result.content) == 1, "one text block per result"
    # a success is structured; an error is the JSON error object in the text block only
    assert (result.structured_content is None) == bool(result.is_error)
    return bool(result.is_error), result_payload(result), result.content[0].text  # type: ignore[union-attr]


PersonMove = Callable[[str], Awaitable[None]]


async def game_flow(client: Client, person_move: PersonMove) -> None:
    tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) == TOOLS
    read_only = {n for n, t in tools.items() if t.annotations is not None and t.annotations.read_only_hint}
    assert read_only == {"xiangqi_board", "xiangqi_result_page"}
    for tool in tools.values():
        # no outputSchema: it was 73% of the list's tokens, and the text block carries everything
        assert tool.output_schema is None, tool.name
        assert len(tool.description or "") < 200
    assert "includeMoves" in tools["xiangqi_board"].input_schema["properties"]
    prompts = {p.name for p in (await client.list_prompts()).prompts}
    assert "xiangqi" in prompts

    failed, value, _ = await call(client, "xiangqi_new", {"side": "r"})
    assert (
        not failed
        and value["hero"] == "r"
        and value["opponent"]["kind"] == "model"
        and value["revision"] >= 1
    )
    start_revision = value["revision"]

    failed, err, text = await call(client, "xiangqi_move", {"move": "h7e7"})
    assert failed and err["ok"] is False and err["error"] == "NOT_YOUR_TURN"
    assert len(err["legalMoves"]) == 44 and err["errorZh"]
    assert json.loads(text) == err and '{"iccs":"h2e2","zh":"炮二平五"}' in text

    # input the schema rejects keeps the game contract: code, field path, errorZh, legal moves
    failed, err, _ = await call(client, "xiangqi_move", {"move": 12345})
    assert failed and err["error"] == "INVALID_ARGUMENT" and err["errorZh"]
    assert {f["path"].split(".")[0] for f in err["fields"]} == {"move"} and len(err["legalMoves"]) == 44

    # the prompt is text for the model: fetching it never acts for the person
    for command in ("move 炮二平五", "resign", "undo 2"):
        prompt = await client.get_prompt("xiangqi", {"command": command})
        said = prompt.messages[0].content.text  # type: ignore[union-attr]
        assert "Only the person" in said, said
    _failed, untouched, _ = await call(client, "xiangqi_board", {"includeMoves": False})
    assert (
        untouched["plies"] == 0
        and untouched["phase"] == "playing"
        and untouched["status"]["state"] == "playing"
    )
    await person_move("炮二平五")
    prompt = await client.get_prompt("xiangqi", {"command": "state"})
    said = prompt.messages[0].content.text  # type: ignore[union-attr]
    assert "your turn" in said and "炮二平五" in said

    failed, err, text = await call(client, "xiangqi_move", {"move": "a9a5"})
    assert failed and err["error"] == "ILLEGAL_MOVE" and {"iccs": "h9g7", "zh": "马8进7"} in err["legalMoves"]
    assert '{"iccs":"h9g7","zh":"马8进7"}' in text
    failed, err, _ = await call(client, "xiangqi_move", {"move": "knight to the moon"})
    assert failed and err["error"] == "BAD_NOTATION" and err["legalMoves"]

    failed, value, text = await call(client, "xiangqi_move", {"move": "马8进7", "reason": "develop"})
    assert not failed and value["played"] == "马8进7" and value["playedIccs"] == "h9g7"
    assert value["revision"] > start_revision and value["turn"] == "r" and value["pending"] is None
    assert "played: 马8进7 (h9g7)" in text and "reason: develop" in text

    failed, board, text = await call(client, "xiangqi_board", {"includeEval": True})
    assert not failed and board["legalMoves"] and board["evaluation"]["depth"] >= 0
    assert board["history"] == [
        {"zh": "炮二平五", "wxf": "C2=5", "iccs": "h2e2", "captured": "", "side": "r"},
        {"zh": "马8进7", "wxf": "H8+7", "iccs": "h9g7", "captured": "", "side": "b"},
    ]
    assert "九  八  七  六  五  四  三  二  一" in text and board["fen"] in text
    assert "  1. 炮二平五(h2e2)  马8进7(h9g7)" in text  # the record, numbered, both sides

    failed, hint, _ = await call(client, "xiangqi_hint", {"count": 2})
    assert not failed and 1 <= len(hint["candidates"]) <= 2 and hint["candidates"][0]["zh"]

    failed, review, _ = await call(client, "xiangqi_review", {"highlight": "all"})
    assert not failed and len(review["review"]["curve"]) == 3 and len(review["review"]["moves"]) == 2

    failed, undone, _ = await call(client, "xiangqi_undo", {})
    assert not failed and [u["iccs"] for u in undone["undone"]] == ["h2e2", "h9g7"] and undone["plies"] == 0

    bad = await client.call_tool("xiangqi_hint", {"count": 99})
    assert bad.is_error  # rejected by the input schema, not by a crash


def test_stdio(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "MODDESK_XIANGQI_DB_PATH": str(tmp_path / "stdio games" / "games.db"),
        "MODDESK_XIANGQI_CONFIG": str(tmp_path / "none.toml"),
        "MODDESK_XIANGQI_THINK_TIME": "0.05",
        "MODDESK_XIANGQI_HINT_TIME": "0.1",
        "MODDESK_XIANGQI_REVIEW_TIME": "0.02",
    }
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "moddesk.cli", "xiangqi", "mcp"], env=env
    )

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "moddesk.cli", "xiangqi", *args]
        return subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)

    async def person_move(move: str) -> None:
        # the person's own command finds the panel through the 0600 person file
        done = await anyio.to_thread.run_sync(lambda: cli("move", move, "--json"))
        assert done.returncode == 0, done.stdout + done.stderr

    async def run() -> None:
        async with Client(params, read_timeout_seconds=60) as client:
            await game_flow(client, person_move)
            # the stdio server also serves the person's panel, and tells the model where it is
            _failed, value, _text = await call(client, "xiangqi_board", {"includeMoves": False})
            panel = value["panelUrl"]
            assert panel.startswith("http://127.0.0.1:") and value["sessionId"] in panel
            base = panel.split("/xiangqi/")[0]
            async with httpx.AsyncClient(timeout=10) as stranger:  # another local program, no login
                assert (await stranger.get(f"{base}/xiangqi/")).status_code == 401
                assert (await stranger.post(f"{base}/xiangqi-mate/state", json={})).status_code == 401
            # the person asks for a login link; it logs the browser in once (cookie + CSRF token)
            opened = await anyio.to_thread.run_sync(lambda: cli("open", "--no-browser"))
            link = next(line for line in opened.stdout.splitlines() if "/login?code=" in line)
            with httpx.Client(timeout=10) as http:
                login_like_a_browser(http, link)
                page = http.get(panel)
                assert page.status_code == 200 and "panel.js" in page.text
                state = http.post(f"{base}/xiangqi-mate/state", json={"sessionId": value["sessionId"]})
                assert state.json()["value"]["revision"] == value["revision"]
                foreign = http.post(f"{base}/xiangqi-mate/state", json={}, headers={"Host": "evil.example"})
                assert foreign.status_code == 421

    anyio.run(run)
    assert (tmp_path / "stdio games" / "games.db").is_file()


@pytest.fixture
def http_server(tmp_path: Path) -> Iterator[tuple[GameService, XiangqiHttp]]:
    service = GameService(fast_settings(tmp_path))
    with XiangqiHttp(service, 0) as server:
        yield service, server
    service.close()


def test_streamable_http(http_server: tuple[GameService, XiangqiHttp]) -> None:
    _service, server = http_server

    async def person_move(move: str) -> None:
        async with httpx.AsyncClient(timeout=30, headers=server.person_headers()) as person:
            answer = (await person.post(f"{server.url}/xiangqi-mate/move", json={"move": move})).json()
            assert answer["ok"], answer

    async def run() -> None:
        async with server.client() as client:
            await game_flow(client, person_move)
            _failed, value, text = await call(client, "xiangqi_new", {})
            assert (
                value["panelUrl"] == f"{server.url}/xiangqi/?session={value['sessionId']}"
                and f"panel for the person: {value['panelUrl']}" in text
            )

    anyio.run(run)


def test_concurrent_moves_and_reads(http_server: tuple[GameService, XiangqiHttp]) -> None:
    service, server = http_server

    async def run() -> None:
        async with server.client() as client:
            _, game, _ = await call(client, "xiangqi_new", {"side": "b"})  # the model (red) moves first
            assert game["pending"] == "ai-thinking"
            session, revision = game["sessionId"], game["revision"]
            outcomes: list[tuple[bool, dict[str, Any]]] = []

            async def move(text: str) -> None:
                failed, value, _ = await call(
                    client, "xiangqi_move", {"move": text, "sessionId": session, "expectedRevision": revision}
                )
                outcomes.append((failed, value))

            async def board() -> None:
                failed, value, _ = await call(client, "xiangqi_board", {"sessionId": session})
                outcomes.append((failed, value | {"board_read": True}))

            async with anyio.create_task_group() as tg:
                for text in ("h2e2", "b2e2", "h0g2", "b0c2", "c3c4", "g3g4"):
                    tg.start_soon(move, text)
                for _ in range(6):
                    tg.start_soon(board)
            moves = [(f, v) for f, v in outcomes if "board_read" not in v]
            reads = [v for f, v in outcomes if "board_read" in v and not f]
            assert len(reads) == 6
            applied = [v for failed, v in moves if not failed]
            assert len(applied) == 1, moves
            assert {v["error"] for failed, v in moves if failed} <= {"NOT_YOUR_TURN", "STALE_REVISION"}
            final = service.state(session)
            assert final["plies"] == 1 and final["history"][0]["iccs"] == applied[0]["playedIccs"]

    anyio.run(run)


def test_rpc_move_shapes_and_guards(http_server: tuple[GameService, XiangqiHttp]) -> None:
    service, server = http_server
    url = server.url
    rpc = f"{url}/xiangqi-mate"
    with httpx.Client(timeout=30) as http:
        login_like_a_browser(http, server.login_link())
        created = http.post(f"{rpc}/new", json={"side": "r", "opponent": "model"}).json()
        assert created["ok"] is True
        session = created["value"]["sessionId"]
        # the panel's shape: {from, to, iccs} by board index
        first = http.post(
            f"{rpc}/move", json={"sessionId": session, "from": 70, "to": 67, "iccs": "h2e2"}
        ).json()
        assert first["ok"] and first["value"]["played"] == "炮二平五"
        service.move("opponent", "h9g7", session)
        # a person's Chinese notation, winning over a conflicting iccs (priority move > iccs > from+to)
        second = http.post(
            f"{rpc}/move", json={"sessionId": session, "move": "马二进三", "iccs": "b0c2"}
        ).json()
        assert second["ok"] and second["value"]["playedIccs"] == "h0g2"
        service.move("opponent", "i9h9", session)
        third = http.post(
            f"{rpc}/move", json={"sessionId": session, "iccs": "i0h0", "from": 0, "to": 1}
        ).json()
        assert third["ok"] and third["value"]["played"] == "车一平二"

        refused = http.post(f"{rpc}/state", json={"sessionId": "0123456789abcdef"}).json()
        assert refused == {
            "ok": False,
            "error": {
                "code": "UNKNOWN_SESSION",
                "message": "no game with session id '0123456789abcdef'",
                "messageZh": "没有这个会话的对局",
                "errorZh": "没有这个会话的对局",
                "hint": refused["error"]["hint"],
                "details": refused["error"]["details"],
            },
        }
        illegal = http.post(f"{rpc}/move", json={"sessionId": session, "move": "a3a5"}).json()
        assert illegal["ok"] is False and illegal["error"]["code"] == "NOT_YOUR_TURN"
        assert "legalMoves" not in illegal["error"]["details"]  # those would be the opponent's moves

        assert http.post(f"{rpc}/state", json={}, headers={"Host": "evil.example"}).status_code == 421
        assert (
            http.post(f"{rpc}/state", json={}, headers={"Origin": "http://evil.example"}).status_code == 403
        )
        own_origin = http.post(f"{rpc}/state", json={"sessionId": session}, headers={"Origin": url})
        assert own_origin.status_code == 200 and own_origin.json()["ok"]
        assert http.get(f"{url}/xiangqi/").status_code == 200
        assert "panel.js" in http.get(f"{url}/xiangqi/").text
        assert http.post(f"{rpc}/nope", json={}).status_code == 404
        assert http.post(f"{rpc}/state", content=b"{not json").status_code == 400
