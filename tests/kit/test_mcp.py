"""The kit's MCP bootstrap, reached by the official SDK Client over stdio and Streamable HTTP."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client, StdioServerParameters
from mcp.server.mcpserver import Context
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from moddesk.kit.mcp import result_payload, serve_http
from moddesk.kit.selftest import build_server


async def _exercise(target: Any) -> None:
    progress: list[tuple[float, float | None]] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append((done, total))

    async with Client(target, read_timeout_seconds=60) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert set(tools) == {"notes_list", "notes_add", "notes_count"}
        listing = tools["notes_list"]
        assert listing.annotations is not None and listing.annotations.read_only_hint is True
        assert tools["notes_add"].annotations is not None
        assert tools["notes_add"].annotations.read_only_hint is False
        assert tools["notes_add"].annotations.destructive_hint is False
        assert listing.output_schema is not None
        assert "notes" in listing.output_schema["properties"]
        # pydantic's generated titles are stripped: they restate names and cost tokens in every chat
        assert "title" not in listing.input_schema["properties"]["limit"]
        assert "title" not in listing.output_schema["properties"]["notes"]

        first = await client.call_tool("notes_list", {"limit": 5})
        assert not first.is_error
        assert first.structured_content == {"ok": True, "revision": 0, "notes": [], "nextCursor": None}
        assert len(first.content) == 1 and first.content[0].text == "0 notes"

        for i in range(3):
            added = await client.call_tool("notes_add", {"text": f"n{i}", "expectedRevision": i})
            assert added.structured_content == {"ok": True, "revision": i + 1, "index": i}

        stale = await client.call_tool("notes_add", {"text": "late", "expectedRevision": 0})
        assert stale.is_error
        # errors carry no structuredContent (the TypeScript SDK would check it against the
        # outputSchema and throw); the error object is the text block, as JSON
        assert stale.structured_content is None and len(stale.content) == 1
        payload = json.loads(stale.content[0].text)
        assert payload == result_payload(stale)
        assert payload["ok"] is False and payload["error"] == "STALE_NOTES"
        assert payload["revision"] == 3 and "retry" in payload["hint"]

        # arguments the input schema rejects follow the same contract, naming the field path
        bad = await client.call_tool("notes_list", {"limit": 0})
        assert bad.is_error and bad.structured_content is None
        refused = result_payload(bad)
        assert refused["error"] == "INVALID_ARGUMENT" and refused["fields"][0]["path"] == "limit"
        assert "hint" in refused and "pydantic" not in bad.content[0].text

        page = await client.call_tool("notes_list", {"limit": 2})
        assert page.structured_content is not None
        assert page.structured_content["notes"] == ["n0", "n1"]
        cursor = page.structured_content["nextCursor"]
        rest = await client.call_tool("notes_list", {"limit": 2, "cursor": cursor})
        assert rest.structured_content is not None and rest.structured_content["notes"] == ["n2"]
        foreign = await client.call_tool("notes_list", {"limit": 3, "cursor": cursor})
        assert foreign.is_error and result_payload(foreign)["error"] == "INVALID_CURSOR"

        counted = await client.call_tool("notes_count", {"steps": 8}, progress_callback=on_progress)
        with anyio.move_on_after(5):  # notifications may race the result over a real transport
            while not progress or progress[-1][0] < 8:
                await anyio.sleep(0.02)
        assert counted.structured_content is not None and counted.structured_content["counted"] == 3
        assert progress, "no progress notification arrived"
        assert progress[-1] == (8, 8)
        assert [p for p, _ in progress] == sorted(p for p, _ in progress)


def test_stdio_transport() -> None:
    # the SDK passes only a few safe variables to a stdio server; PYTHONPATH must reach it so the
    # subprocess runs this checkout
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "moddesk.kit.selftest", "stdio"], env=dict(os.environ)
    )
    anyio.run(_exercise, params)


def test_streamable_http_transport() -> None:
    with serve_http(build_server(), 0) as server:
        anyio.run(_exercise, f"{server.url}/mcp")


def test_port_in_use_is_a_clear_error() -> None:
    from moddesk.kit.errors import ServiceError

    with serve_http(build_server(), 0) as server:
        with pytest.raises(ServiceError) as caught:
            serve_http(build_server(), server.port)
        assert caught.value.code == "PORT_IN_USE"
        assert str(server.port) in caught.value.message


async def _status(request: Request) -> JSONResponse:
    return JSONResponse({"ok": True})


def _post(url: str, headers: dict[str, str]) -> int:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"},
        },
    }
    base = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    return httpx.post(url, json=body, headers={**base, **headers}, timeout=10).status_code


def test_host_origin_and_token_guards() -> None:
    routes = [Route("/status", _status)]
    from moddesk.kit.http import LoopbackServer
    from moddesk.kit.mcp import http_app

    token = "s3cret-token"
    server = LoopbackServer(
        lambda port: http_app(build_server(), port, extra_routes=routes, bearer_token=token)
    )
    with server:
        auth = {"Authorization": f"Bearer {token}"}
        mcp_url, status_url = f"{server.url}/mcp", f"{server.url}/status"
        assert _post(mcp_url, auth) == 200
        assert httpx.get(status_url, headers=auth).status_code == 200
        # DNS rebinding: a foreign Host, on the MCP endpoint and on our own route
        assert _post(mcp_url, {**auth, "Host": "evil.example"}) == 421
        assert httpx.get(status_url, headers={**auth, "Host": "evil.example"}).status_code == 421
        # a page from another origin
        assert _post(mcp_url, {**auth, "Origin": "http://evil.example"}) == 403
        assert httpx.get(status_url, headers={**auth, "Origin": "http://evil.example"}).status_code == 403
        assert httpx.get(status_url, headers={**auth, "Origin": server.url}).status_code == 200
        # the bearer token
        assert httpx.get(status_url).status_code == 401
        assert httpx.get(status_url, headers={"Authorization": "Bearer wrong"}).status_code == 401
        assert _post(mcp_url, {}) == 401


def test_mcp_endpoint_checks_host_without_our_guard_too() -> None:
    """The SDK's own transport security is set explicitly: it refuses foreign Host/Origin by itself."""
    from moddesk.kit.http import LoopbackServer
    from moddesk.kit.mcp import transport_security

    mcp_server = build_server()
    server = LoopbackServer(
        lambda port: mcp_server.streamable_http_app(
            streamable_http_path="/mcp", transport_security=transport_security(port)
        )
    )
    with server:
        url = f"{server.url}/mcp"
        assert _post(url, {}) == 200
        assert _post(url, {"Host": "evil.example"}) == 421
        assert _post(url, {"Origin": "http://evil.example"}) == 403


def test_caller_scope_is_the_declared_client_name() -> None:
    from moddesk.kit.ledger import LOCAL_SCOPE
    from moddesk.kit.mcp import add_tool, caller_scope, new_server

    server = new_server("scope-probe", "probe")

    def whoami(ctx: Context[Any]) -> dict[str, Any]:
        """Report the caller scope."""
        return {"scope": caller_scope(ctx)}

    add_tool(server, whoami, title="Who am I", read_only=True)

    async def main() -> Any:
        async with Client(server) as client:
            return (await client.call_tool("whoami", {})).structured_content

    assert anyio.run(main) == {"scope": "client:mcp"}
    assert caller_scope(None) == LOCAL_SCOPE


def test_custom_error_text_renders_the_one_block() -> None:
    from moddesk.kit.errors import ServiceError
    from moddesk.kit.mcp import add_tool, new_server

    server = new_server("error-probe", "probe")

    def move(text: str) -> dict[str, Any]:
        """Refuse every move."""
        raise ServiceError("ILLEGAL_MOVE", f"{text} is illegal", hint="pick one", legalMoves=["h2e2"])

    add_tool(
        server,
        move,
        title="Move",
        read_only=False,
        error_text=lambda e: f"{e.code}; legal: {', '.join(e.details['legalMoves'])}",
    )

    async def main() -> Any:
        async with Client(server) as client:
            return await client.call_tool("move", {"text": "a0a9"})

    result = anyio.run(main)
    assert result.is_error
    assert result.content[0].text == "ILLEGAL_MOVE; legal: h2e2"
    assert result.structured_content is None


def test_set_level_sends_server_logs_as_notifications() -> None:
    """logging/setLevel (handshake-era clients): moddesk.* records at or above it reach the client."""
    import logging
    import warnings

    from moddesk.kit.selftest import build_server

    got: list[Any] = []

    async def on_log(params: Any) -> None:
        got.append(params)

    async def main() -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the SDK flags logging as deprecated for 2026-07-28
            async with Client(build_server(), logging_callback=on_log, mode="legacy") as client:
                assert client.server_capabilities.logging is not None
                await client.set_logging_level("warning")
                logging.getLogger("moddesk.probe").warning("disk almost full")
                logging.getLogger("moddesk.probe").info("below the level")
                with anyio.fail_after(5):
                    while not any(p.logger == "moddesk.probe" for p in got):
                        await anyio.sleep(0.02)
                await anyio.sleep(0.1)

    anyio.run(main)
    probe = [p for p in got if p.logger == "moddesk.probe"]
    assert [(p.level, p.data["message"]) for p in probe] == [("warning", "disk almost full")]
