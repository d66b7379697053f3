"""``moddesk demo kit``: the kit's end-to-end check on a real loopback MCP server."""

from __future__ import annotations

from typing import Any

import anyio
import httpx
from mcp import Client
from rich.console import Console

from moddesk.kit.links import print_link
from moddesk.kit.mcp import result_payload, serve_http
from moddesk.kit.selftest import build_server


def _check(condition: bool, what: str) -> None:
    if not condition:
        raise RuntimeError(f"kit demo failed: {what}")


async def _exercise(url: str, console: Console) -> None:
    events: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        events.append(progress)

    async with Client(url, read_timeout_seconds=30) as client:
        tools = (await client.list_tools()).tools
        console.print(f"tools: {', '.join(t.name for t in tools)}")
        page = await client.call_tool("notes_list", {})
        revision = page.structured_content["revision"] if page.structured_content else -1
        added = await client.call_tool("notes_add", {"text": "hello", "expectedRevision": revision})
        _check(not added.is_error, "notes_add succeeded")
        stale = await client.call_tool("notes_add", {"text": "again", "expectedRevision": revision})
        payload: dict[str, Any] = result_payload(stale)
        _check(stale.is_error and payload.get("error") == "STALE_NOTES", "stale revision is refused")
        console.print(f"stale write refused: {payload['error']} — hint: {payload['hint']}")
        counted = await client.call_tool("notes_count", {"steps": 20}, progress_callback=on_progress)
        await anyio.sleep(0.1)
        _check(not counted.is_error, "notes_count succeeded")
        console.print(f"background task counted {counted.structured_content}; progress events: {len(events)}")
    async with httpx.AsyncClient() as http:
        evil = await http.post(url, json={}, headers={"Host": "evil.example"})
        _check(evil.status_code == 421, "foreign Host is refused")
        console.print(f"Host: evil.example -> HTTP {evil.status_code} (DNS-rebinding guard)")


def run(console: Console) -> None:
    """Serve the self-test MCP server on 127.0.0.1, talk to it with the SDK client, check guards."""
    with serve_http(build_server(), 0) as server:
        url = f"{server.url}/mcp"
        print_link(console, "MCP server:", url)
        anyio.run(_exercise, url, console)
    console.print("[green]kit: MCP over Streamable HTTP, errors, ledger, cursors, tasks, guard — ok")
    from moddesk.kit.agents.demo import run as run_agents_demo

    run_agents_demo(console)
