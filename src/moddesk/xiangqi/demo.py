"""`moddesk demo` for xiangqi: a short game — the model over MCP (Streamable HTTP) vs the person over RPC."""

from __future__ import annotations

import logging
import tempfile
from pathlib import Path
from typing import Any

import anyio
import httpx
from rich.console import Console

from moddesk.kit.links import print_link
from moddesk.kit.mcp import result_payload
from moddesk.xiangqi.cli import board_text
from moddesk.xiangqi.game import GameService
from moddesk.xiangqi.serving import XiangqiHttp
from moddesk.xiangqi.store import Settings

PERSON_MOVES = ["炮二平五", "马二进三", "车一平二", "兵七进一"]


class DemoFailed(RuntimeError):
    """The demo saw something other than what the service promises."""


def _check(condition: bool, what: str) -> None:
    if not condition:
        raise DemoFailed(what)


async def _play(http: XiangqiHttp, console: Console) -> dict[str, Any]:
    """The model holds the agent's token (MCP only); the person holds the person key (RPC only)."""
    rpc = f"{http.url}/xiangqi-mate"
    async with (
        http.client() as model,
        httpx.AsyncClient(timeout=60, headers=http.person_headers()) as person,
    ):
        new = await model.call_tool("xiangqi_new", {"side": "r"})
        game = result_payload(new)
        session = game["sessionId"]
        console.print(f"model: xiangqi_new → session {session}")
        print_link(console, "panel:", game["panelUrl"])

        refused = await model.call_tool("xiangqi_move", {"move": "h7e7"})
        payload = result_payload(refused)
        _check(refused.is_error and payload.get("error") == "NOT_YOUR_TURN", "the model moved for the person")
        console.print(
            f"model tries to move first → {payload['error']} ({payload['errorZh']}), {len(payload['legalMoves'])} legal moves listed"
        )

        for ply, text in enumerate(PERSON_MOVES):
            body = (await person.post(f"{rpc}/move", json={"sessionId": session, "move": text})).json()
            if not body["ok"]:  # the scripted move is not legal in this game: take the engine's advice
                _check(body["error"]["code"] == "ILLEGAL_MOVE", f"person move {text}: {body}")
                advice = (await person.post(f"{rpc}/hint", json={"sessionId": session, "count": 1})).json()
                first = advice["value"]["candidates"][0]
                body = (
                    await person.post(
                        f"{rpc}/move", json={"sessionId": session, "from": first["from"], "to": first["to"]}
                    )
                ).json()
                _check(body["ok"], f"person move {first['iccs']}: {body}")
            console.print(f"person (RPC): {body['value']['played']}")
            if ply == 0:
                wrong = await model.call_tool("xiangqi_move", {"move": "马8进9进", "sessionId": session})
                info = result_payload(wrong)
                _check(
                    wrong.is_error and bool(info.get("legalMoves")),
                    "a bad move was not refused with legalMoves",
                )
                console.print(f"model writes nonsense → {info['error']}; retries from legalMoves")
            hint = await model.call_tool("xiangqi_hint", {"count": 1, "sessionId": session})
            best = result_payload(hint)["candidates"][0]
            played = await model.call_tool(
                "xiangqi_move", {"move": best["zh"], "reason": "engine hint", "sessionId": session}
            )
            _check(not played.is_error, f"model move {best['zh']} failed: {played.content}")
            console.print(f"model (MCP): {result_payload(played)['played']}  (hint score {best['score']})")

        board = await model.call_tool("xiangqi_board", {"sessionId": session, "includeMoves": False})
        final = result_payload(board)
        _check(final["plies"] == 2 * len(PERSON_MOVES), "the game lost a move")
        console.print(board_text(final))
        review = (await person.post(f"{rpc}/review", json={"sessionId": session})).json()
        _check(review["ok"], f"review failed: {review}")
        curve = review["value"]["review"]["curve"]
        console.print("eval curve (Red, cp): " + " ".join(str(p["scoreRed"]) for p in curve))
        exported = (await person.post(f"{rpc}/export", json={"sessionId": session})).json()["value"]
        console.print(exported["pgn"].splitlines()[-1])
        return final


def run(console: Console) -> None:
    """Play a short game end to end and print the board, the evaluation curve and the record."""
    for name in ("httpx", "httpx2", "mcp", "uvicorn"):  # request logs would bury the game
        logging.getLogger(name).setLevel(logging.WARNING)
    with tempfile.TemporaryDirectory(prefix="moddesk-xiangqi-demo-") as tmp:
        settings = Settings(db_path=Path(tmp) / "games.db", think_time=0.2, hint_time=0.3, review_time=0.1)
        service = GameService(settings)
        http = XiangqiHttp(service, 0)
        try:
            with http:
                print_link(console, "service (MCP at /mcp, panel at /xiangqi/):", http.url)
                try:
                    anyio.run(_play, http, console)
                except BaseExceptionGroup as group:  # the MCP client wraps failures in task groups
                    failed = group.subgroup(DemoFailed)
                    if failed is None:
                        raise
                    first: BaseException = failed
                    while isinstance(first, BaseExceptionGroup):
                        first = first.exceptions[0]
                    raise first from None
        finally:
            service.close()
