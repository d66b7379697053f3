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
                assert_error_object(answer, "UNAUTHORIZED")
        good = {"Authorization": f"Bearer {record['token']}"}
        assert http.post("/xiangqi-mate/state", json={}, headers=good).status_code == 200
        deep = http.post("/xiangqi-mate/state", content=b"[" * 20_000 + b"]" * 20_000, headers=good)
        assert deep.status_code == 400 and deep.json()["ok"] is False  # never a 500
        assert_error_object(deep, "INVALID_ARGUMENT")
        # every refusal is the JSON error object with errorZh: a foreign page, a foreign Host, too big a body
        foreign = http.post("/xiangqi-mate/state", json={}, headers={**good, "Origin": "http://evil.example"})
        assert foreign.status_code == 403
        assert_error_object(foreign, "ORIGIN_REJECTED")
        rebound = http.post("/xiangqi-mate/state", json={}, headers={**good, "Host": "evil.example"})
        assert rebound.status_code == 421
        assert_error_object(rebound, "HOST_REJECTED")
        three_mb = {"data": "A" * (3 << 20), "name": "big.pgn"}
        huge = http.post("/xiangqi-mate/load", json=three_mb, headers=good)
        assert huge.status_code == 413
        assert_error_object(huge, "BODY_TOO_LARGE")
        small_cap = http.post("/xiangqi-mate/state", json={"pad": "x" * (100 << 10)}, headers=good)
        assert small_cap.status_code == 413
        assert_error_object(small_cap, "BODY_TOO_LARGE")
        wrong = http.post("/xiangqi-mate/move", json={"move": 12}, headers=good).json()
        assert (
            wrong["error"]["code"] == "INVALID_ARGUMENT" and "must be a string" in wrong["error"]["message"]
        )
        assert wrong["error"]["errorZh"].startswith("着法必须是字符串")


def assert_error_object(answer: httpx.Response, code: str) -> None:
    """A JSON body that names the code and says it in Chinese, in either of the two shapes: the
    guard's ``{ok, error: CODE, message, errorZh}`` or the RPC's ``{ok, error: {code, message, errorZh}}``."""
    assert answer.headers["content-type"].startswith("application/json"), answer.text[:200]
    body = answer.json()
    assert body["ok"] is False
    error = body["error"] if isinstance(body["error"], dict) else body
    assert (error.get("code") or body["error"]) == code, body
    assert (
        error["message"] and error["errorZh"] and any("\u4e00" <= ch <= "\u9fff" for ch in error["errorZh"])
    )


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
