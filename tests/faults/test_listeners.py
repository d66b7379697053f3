"""Listeners after a crash: immediate restart, a held port named with its pid, no traceback,
endpoint files gone on SIGTERM/SIGINT and removed only by their writer, two servers side by side."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")


def _env(tmp_path: Path) -> dict[str, str]:
    return {
        **os.environ,
        "MODDESK_XIANGQI_DB_PATH": str(tmp_path / "data dir" / "games.db"),
        "MODDESK_XIANGQI_CONFIG": str(tmp_path / "absent.toml"),
        "MODDESK_XIANGQI_THINK_TIME": "0.05",
    }


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _serve(tmp_path: Path, port: int) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "moddesk.cli", "xiangqi", "serve", "--port", str(port)],
        env=_env(tmp_path),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )


def _answers(port: int, proc: subprocess.Popen[bytes], timeout: float) -> float:
    """Seconds until the panel answers; fails with the server's output if it never does."""
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        try:
            # up and guarded: without the run's bearer token the panel answers 401
            if httpx.get(f"http://127.0.0.1:{port}/xiangqi/", timeout=1).status_code == 401:
                return time.monotonic() - start
        except httpx.HTTPError:
            time.sleep(0.05)
        if proc.poll() is not None:
            break
    proc.kill()
    pytest.fail(f"no answer on {port}: {proc.communicate()[0].decode(errors='replace')}")


def _endpoint(tmp_path: Path) -> dict[str, object]:
    data = json.loads((tmp_path / "data dir" / "serve.json").read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def _stop(proc: subprocess.Popen[bytes], sig: int = signal.SIGTERM) -> str:
    proc.send_signal(sig)
    try:
        out = proc.communicate(timeout=20)[0]
    except subprocess.TimeoutExpired:
        proc.kill()
        out = proc.communicate()[0]
    return out.decode(errors="replace")


def test_restart_after_sigkill_with_a_request_in_flight_answers_at_once(tmp_path: Path) -> None:
    port = _free_port()
    first = _serve(tmp_path, port)
    _answers(port, first, 30)
    # connections the killed server held go to TIME_WAIT on its side: without address reuse the
    # restarted server could not bind for about a minute
    held = [socket.create_connection(("127.0.0.1", port)) for _ in range(3)]
    for sock in held:
        sock.sendall(b"GET /xiangqi/ HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n" % port)  # half a request
    first.send_signal(signal.SIGKILL)
    first.wait()
    for sock in held:
        sock.close()
    second = _serve(tmp_path, port)
    try:
        assert _answers(port, second, 20) < 20
        assert _endpoint(tmp_path)["pid"] == second.pid  # the dead writer's file was replaced
    finally:
        out = _stop(second)
    assert "PORT_IN_USE" not in out


def test_a_held_port_is_named_with_its_pid_and_no_traceback(tmp_path: Path) -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen(1)
        port = holder.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", "moddesk.cli", "xiangqi", "serve", "--port", str(port)],
            env={**_env(tmp_path), "COLUMNS": "300"},
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=60,
        )
    out = done.stdout + done.stderr
    assert done.returncode == 2, out
    assert "PORT_IN_USE" in out and f"pid {os.getpid()}" in out
    assert "Traceback" not in out
    assert not (tmp_path / "data dir" / "serve.json").exists()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signals_remove_the_endpoint_file(tmp_path: Path, sig: int) -> None:
    port = _free_port()
    proc = _serve(tmp_path, port)
    _answers(port, proc, 30)
    assert _endpoint(tmp_path)["pid"] == proc.pid
    out = _stop(proc, sig)
    assert proc.returncode == 0, out
    assert "Traceback" not in out
    assert not (tmp_path / "data dir" / "serve.json").exists()


def test_two_servers_side_by_side(tmp_path: Path) -> None:
    port_a, port_b = _free_port(), _free_port()
    first = _serve(tmp_path, port_a)
    second = None
    try:
        _answers(port_a, first, 30)
        second = _serve(tmp_path, port_b)
        _answers(port_b, second, 30)
        assert _endpoint(tmp_path)["pid"] == first.pid  # the second does not take the first's file
        out = _stop(second)
        assert "another xiangqi service" in out
        assert _endpoint(tmp_path)["pid"] == first.pid  # nor remove it when it stops
        state = subprocess.run(
            [sys.executable, "-m", "moddesk.cli", "xiangqi", "new", "--opponent", "local", "--json"],
            env=_env(tmp_path),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert state.returncode == 0, state.stdout + state.stderr  # reached the first server
        session = json.loads(state.stdout)["sessionId"]
        # the person key of the first server, from its 0600 person file (what the CLI used above)
        person = json.loads((tmp_path / "data dir" / "serve.person.json").read_text())
        auth = {"Authorization": f"Person {person['key']}"}
        listed = httpx.post(
            f"http://127.0.0.1:{port_a}/xiangqi-mate/state", json={"sessionId": session}, headers=auth
        )
        assert listed.json()["ok"] is True
    finally:
        if second is not None and second.poll() is None:
            second.kill()
        _stop(first)
    assert not (tmp_path / "data dir" / "serve.json").exists()


def test_pvf_serve_answers_while_opening_and_stops_cleanly(tmp_path: Path) -> None:
    from moddesk.pvf.samples.generate import generate_archive

    archive = tmp_path / "Script big.pvf"
    generate_archive(archive, files=20_000)
    env = {
        **os.environ,
        "MODDESK_CONFIG_DIR": str(tmp_path / "config"),
        "MODDESK_CACHE_DIR": str(tmp_path / "cache"),
        "MODDESK_DATA_DIR": str(tmp_path / "data"),
        "COLUMNS": "200",
    }
    port = _free_port()
    command = [sys.executable, "-m", "moddesk.cli", "pvf", "serve", str(archive), "--port", str(port)]
    first = subprocess.Popen(
        command, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    _answers_http(port, first, 60)
    held = socket.create_connection(("127.0.0.1", port))
    held.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # a request in flight
    first.send_signal(signal.SIGKILL)
    first.wait()
    held.close()
    second = subprocess.Popen(
        command, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    try:
        _answers_http(port, second, 60)  # no PORT_IN_USE, and it answers while the archive opens
    finally:
        out = _stop(second)  # SIGTERM, most likely while the 20,000-file archive still opens
    assert second.returncode == 0, out
    assert "Traceback" not in out and "PORT_IN_USE" not in out


def _answers_http(port: int, proc: subprocess.Popen[bytes], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            httpx.get(f"http://127.0.0.1:{port}/", timeout=1)
            return
        except httpx.HTTPError:
            if proc.poll() is not None:
                break
            time.sleep(0.05)
    proc.kill()
    pytest.fail(f"no answer on {port}: {proc.communicate()[0].decode(errors='replace')}")
