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
        stdout=(tmp_path / "serve terminal.txt").open("w"),
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


def test_every_route_needs_the_right_principal(
    served: tuple[dict[str, Any], dict[str, str], Path], tmp_path: Path
) -> None:
    record, env, endpoint = served
    assert sys.platform == "win32" or endpoint.stat().st_mode & 0o777 == 0o600
    person_file = endpoint.with_name("serve.person.json")
    assert sys.platform == "win32" or person_file.stat().st_mode & 0o777 == 0o600
    assert "key" not in json.loads(endpoint.read_text())  # the endpoint file holds the agent's token only
    routes = [("GET", "/"), ("GET", "/xiangqi/"), ("GET", "/xiangqi/panel.js")]
    routes += [("POST", f"/xiangqi-mate/{name}") for name in (*ENDPOINTS, "nope")]
    routes += [("POST", "/mcp"), ("GET", "/mcp"), ("DELETE", "/mcp"), ("GET", "/nothing")]
    agent = {"Authorization": f"Bearer {record['token']}"}
    person = {"Authorization": f"Person {json.loads(person_file.read_text())['key']}"}
    with httpx.Client(base_url=record["url"], timeout=10) as http:
        for method, path in routes:
            for headers in ({}, {"Authorization": "Bearer wrong"}, {"Cookie": "moddesk_person_1=wrong"}):
                answer = http.request(method, path, headers=headers, json={})
                assert answer.status_code == 401, (method, path, headers, answer.status_code)
                if method == "GET" and not path.startswith(("/mcp", "/nothing")):
                    # a page the browser opens: a Chinese page saying how to log in
                    assert (
                        answer.headers["content-type"].startswith("text/html")
                        and "moddesk xiangqi open" in answer.text
                    )
                else:
                    assert_error_object(answer, "UNAUTHORIZED" if path == "/mcp" else "LOGIN_REQUIRED")
        # the agent's token: /mcp only; the person's moves and resignation are refused with it
        for name in ("move", "resign", "undo", "draw", "state"):
            refused = http.post(f"/xiangqi-mate/{name}", json={}, headers=agent)
            assert refused.status_code == 403, name
            assert_error_object(refused, "PERSON_ONLY")
        good = person
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

    # the serve terminal shows the person's login link alone on its line; it logs a browser in once
    lines = (tmp_path / "serve terminal.txt").read_text().splitlines()
    links = [line for line in lines if "/login?code=" in line]
    assert len(links) == 1 and links[0].startswith(record["url"] + "/login?code=")
    assert record["token"] not in "\n".join(lines)
    with httpx.Client(timeout=10) as browser:
        assert browser.get(links[0]).status_code == 200
        assert browser.get(links[0]).status_code == 403
    # `moddesk xiangqi open` mints a fresh one from the person file
    opened = subprocess.run(
        [sys.executable, "-m", "moddesk.cli", "xiangqi", "open", "--no-browser"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    fresh = [line for line in opened.stdout.splitlines() if "/login?code=" in line]
    assert opened.returncode == 0 and len(fresh) == 1 and fresh[0] != links[0]
    with httpx.Client(timeout=10) as browser:
        assert browser.get(fresh[0]).status_code == 200


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


def test_stdio_mcp_prints_no_credential_on_stderr(tmp_path: Path) -> None:
    """Clients keep a stdio server's stderr in their logs (the model may read them): `xiangqi mcp`
    names the panel and `moddesk xiangqi open` there, never a login link, the person key or a token."""
    env = _env(tmp_path)
    proc = subprocess.Popen(
        [sys.executable, "-m", "moddesk.cli", "xiangqi", "mcp"],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdin is not None
    hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    proc.stdin.write(
        (json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello}) + "\n").encode()
    )
    proc.stdin.flush()
    person_file = tmp_path / "games dir" / "serve.person.json"
    deadline = time.monotonic() + 60
    # the file is first created empty with mode 0600, then its content is renamed into place
    while not (person_file.exists() and person_file.read_text().strip()):
        assert proc.poll() is None and time.monotonic() < deadline, "the panel never started"
        time.sleep(0.1)
    key = json.loads(person_file.read_text())["key"]
    out, err = proc.communicate(timeout=60)  # closes stdin: the server ends
    said = err.decode()
    assert "xiangqi panel: http://127.0.0.1:" in said and "moddesk xiangqi open" in said
    assert key not in said and key not in out.decode()
    assert "/login?code=" not in said and "token=" not in said
