"""`moddesk xiangqi serve` as a real process: its token guards every route; `connect` bridges stdio to it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client, StdioServerParameters

from moddesk.kit.mcp import result_payload
from moddesk.xiangqi.rpc import ENDPOINTS


def _env(tmp_path: Path) -> dict[str, str]:
    return {
        **os.environ,
        "MODDESK_XIANGQI_DB_PATH": str(tmp_path / "games dir" / "games.db"),
        "MODDESK_XIANGQI_CONFIG": str(tmp_path / "none.toml"),
        "MODDESK_XIANGQI_THINK_TIME": "0.05",
    }


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[dict[str, Any], dict[str, str], Path]]:
    env = _env(tmp_path)
    proc = subprocess.Popen(
        [sys.executable, "-m", "moddesk.cli", "xiangqi", "serve", "--port", "0"],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    endpoint = tmp_path / "games dir" / "serve.json"
    deadline = time.monotonic() + 30
    record: dict[str, Any] = {}
    while time.monotonic() < deadline and not record:
        try:
            record = json.loads(endpoint.read_text())
        except (OSError, ValueError):
            time.sleep(0.1)
        if proc.poll() is not None:
            break
    try:
        assert record, "serve did not publish its endpoint file"
        yield record, env, endpoint
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_every_route_needs_the_token(served: tuple[dict[str, Any], dict[str, str], Path]) -> None:
    record, _, endpoint = served
    assert sys.platform == "win32" or endpoint.stat().st_mode & 0o777 == 0o600
    routes = [("GET", "/"), ("GET", "/favicon.ico"), ("GET", "/xiangqi/"), ("GET", "/xiangqi/panel.js")]
    routes += [("POST", f"/xiangqi-mate/{name}") for name in (*ENDPOINTS, "nope")]
    routes += [("POST", "/mcp"), ("GET", "/mcp"), ("DELETE", "/mcp"), ("GET", "/nothing")]
    with httpx.Client(base_url=record["url"], timeout=10) as http:
        for method, path in routes:
            for headers in ({}, {"Authorization": "Bearer wrong"}, {"Cookie": "moddesk_token=wrong"}):
                answer = http.request(method, path, headers=headers, json={})
                assert answer.status_code == 401, (method, path, headers, answer.status_code)
        good = {"Authorization": f"Bearer {record['token']}"}
        assert http.post("/xiangqi-mate/state", json={}, headers=good).status_code == 200
        deep = http.post("/xiangqi-mate/state", content=b"[" * 20_000 + b"]" * 20_000, headers=good)
        assert deep.status_code == 400 and deep.json()["ok"] is False  # never a 500


def test_connect_bridges_a_stdio_client(served: tuple[dict[str, Any], dict[str, str], Path]) -> None:
    _record, env, _endpoint = served
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "moddesk.cli", "xiangqi", "connect"], env=env
    )

    async def flow() -> None:
        async with Client(params, read_timeout_seconds=60) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            assert {"xiangqi_new", "xiangqi_move", "xiangqi_undo"} <= names
            created = result_payload(await client.call_tool("xiangqi_new", {"side": "r"}))
            assert created["sessionId"] and created["hero"] == "r"
            # the model's undo has nothing of its own to take back yet
            refused = await client.call_tool("xiangqi_undo", {})
            assert refused.is_error

    anyio.run(flow)
