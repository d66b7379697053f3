"""stdio is JSON-RPC only: every stdio server writes nothing else on stdout, even when the
service it would conflict with is already running (diagnostics go to stderr).

`moddesk xiangqi mcp` started while `xiangqi serve` ran printed "another xiangqi service (pid …)"
on stdout before the first reply: SDK clients logged "Invalid JSON", strict ones dropped it.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from moddesk.pvf.samples.demo import write_sample_archive
from moddesk.ra3.agent.demo import write_demo_mod

MODDESK = [sys.executable, "-m", "moddesk.cli"]


def _env(tmp_path: Path) -> dict[str, str]:
    return {
        **os.environ,
        "MODDESK_CONFIG_DIR": str(tmp_path / "config"),
        "MODDESK_CACHE_DIR": str(tmp_path / "cache"),
        "MODDESK_DATA_DIR": str(tmp_path / "data"),
        "MODDESK_XIANGQI_DB_PATH": str(tmp_path / "games" / "games.db"),
        "MODDESK_XIANGQI_CONFIG": str(tmp_path / "none.toml"),
        "RA3MODXML_HOME": str(tmp_path / "ra3 home"),
    }


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def running(command: list[str], env: dict[str, str], ready: Path) -> Iterator[subprocess.Popen[bytes]]:
    """A long-running service, up once ``ready`` (its endpoint file) exists; SIGINT at the end."""
    proc = subprocess.Popen(
        command, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 60
        while not ready.exists():
            assert proc.poll() is None, f"{command} exited with {proc.returncode}"
            assert time.monotonic() < deadline, f"{command} never wrote {ready}"
            time.sleep(0.1)
        yield proc
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _message(id_: int | None, method: str, params: dict[str, Any]) -> bytes:
    body: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
    if id_ is not None:
        body["id"] = id_
    return (json.dumps(body) + "\n").encode()


def stdio_session(command: list[str], env: dict[str, str]) -> tuple[list[bytes], bytes]:
    """initialize, tools/list, then close stdin: every stdout line and the whole stderr."""
    proc = subprocess.Popen(
        command, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    lines: queue.Queue[bytes] = queue.Queue()
    errors: list[bytes] = []
    threading.Thread(
        target=lambda: [lines.put(line) for line in iter(proc.stdout.readline, b"")], daemon=True
    ).start()  # type: ignore[union-attr,func-returns-value]
    threading.Thread(target=lambda: errors.append(proc.stderr.read()), daemon=True).start()  # type: ignore[union-attr]
    seen: list[bytes] = []

    def until_reply(id_: int) -> None:
        deadline = time.monotonic() + 60
        while True:
            line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
            seen.append(line)
            if _json_rpc(line).get("id") == id_:
                return

    try:
        init = {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "purity", "version": "1"},
        }
        proc.stdin.write(_message(1, "initialize", init))
        proc.stdin.flush()
        until_reply(1)
        proc.stdin.write(_message(None, "notifications/initialized", {}))
        proc.stdin.write(_message(2, "tools/list", {}))
        proc.stdin.flush()
        until_reply(2)
        proc.stdin.close()
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    time.sleep(0.2)  # the reader threads drain what is left
    while not lines.empty():
        seen.append(lines.get())
    return seen, b"".join(errors)


def _json_rpc(line: bytes) -> dict[str, Any]:
    try:
        message = json.loads(line)
    except ValueError:
        raise AssertionError(f"not JSON-RPC on stdout: {line[:200]!r}") from None
    assert isinstance(message, dict) and message.get("jsonrpc") == "2.0", line[:200]
    return message


def assert_json_rpc_only(lines: list[bytes], stderr: bytes) -> None:
    assert lines, stderr.decode(errors="replace")[-2000:]
    for line in lines:
        _json_rpc(line)
    tools = next(json.loads(line) for line in lines if json.loads(line).get("id") == 2)
    assert tools["result"]["tools"], tools


def test_xiangqi_mcp_and_connect_beside_a_running_serve(tmp_path: Path) -> None:
    env = _env(tmp_path)
    endpoint = tmp_path / "games" / "serve.json"
    with running([*MODDESK, "xiangqi", "serve", "--port", "0"], env, endpoint):
        lines, stderr = stdio_session([*MODDESK, "xiangqi", "mcp"], env)
        assert_json_rpc_only(lines, stderr)
        assert b"another xiangqi service" in stderr  # the notice is still given, on stderr
        lines, stderr = stdio_session([*MODDESK, "xiangqi", "connect"], env)
        assert_json_rpc_only(lines, stderr)


def test_pvf_connect_beside_a_running_serve(tmp_path: Path) -> None:
    env = _env(tmp_path)
    archive = write_sample_archive(tmp_path / "stdio archive.pvf", files=10)
    command = [*MODDESK, "pvf", "serve", str(archive), "--port", str(_free_port())]
    with running(command, env, tmp_path / "config" / "endpoints" / "pvf.json"):
        lines, stderr = stdio_session([*MODDESK, "pvf", "connect"], env)
        assert_json_rpc_only(lines, stderr)


def test_ra3_mcp_beside_a_running_watch(tmp_path: Path) -> None:
    env = _env(tmp_path)
    project = write_demo_mod(tmp_path / "mod A")
    home = tmp_path / "ra3 home"
    with running([*MODDESK, "ra3", "watch", str(project), "--no-snapshot"], env, home):
        deadline = time.monotonic() + 60
        while not any(home.rglob("*.json")) and time.monotonic() < deadline:
            time.sleep(0.1)  # the live server's endpoint file
        lines, stderr = stdio_session([*MODDESK, "ra3", "mcp", "--project", str(project)], env)
        assert_json_rpc_only(lines, stderr)
