"""The person's CLI: in-process (--local) and against a real `moddesk xiangqi serve` that is restarted mid-game."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from moddesk.xiangqi.cli import app


def env_for(tmp_path: Path) -> dict[str, str]:
    return {
        "MODDESK_XIANGQI_DB_PATH": str(tmp_path / "data dir" / "games.db"),
        "MODDESK_XIANGQI_CONFIG": str(tmp_path / "absent.toml"),
        "MODDESK_XIANGQI_THINK_TIME": "0.05",
        "MODDESK_XIANGQI_HINT_TIME": "0.1",
        "MODDESK_XIANGQI_REVIEW_TIME": "0.02",
        "MODDESK_XIANGQI_ENGINE": "builtin",
    }


def test_local_commands(tmp_path: Path) -> None:
    runner = CliRunner(env=env_for(tmp_path))

    def run(*args: str) -> str:
        result = runner.invoke(app, [*args, "--local"], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        return result.output

    created = json.loads(run("new", "--opponent", "local", "--json"))
    assert created["opponent"]["kind"] == "local" and created["plies"] == 0
    moved = json.loads(run("move", "炮二平五", "--json"))
    assert moved["played"] == "炮二平五" and moved["plies"] == 2  # --local waits for the engine's reply
    board = run("state")
    assert "炮C" in board and "九  八  七  六  五  四  三  二  一" in board and created["sessionId"] in board
    assert "１  ２  ３  ４  ５  ６  ７  ８  ９" in board  # Black's file numbers over the board
    assert "炮二平五" in run("export")
    hint = run("hint", "--count", "2")
    # scores in pawns ("+0.25 兵"), not raw centipawns, and the engine that answered
    assert "ICCS" in hint and re.search(r"[+-]\d+\.\d\d 兵", hint) and "引擎：builtin" in hint
    review = run("review")
    assert "评估曲线" in review
    undone = json.loads(run("undo", "--json"))
    assert undone["plies"] == 0

    bad = runner.invoke(app, ["move", "a0a5", "--local"])
    assert bad.exit_code == 1 and "ILLEGAL_MOVE" in bad.output and "炮二平五(h2e2)" in bad.output
    gone = runner.invoke(app, ["state", "--session", "ffffffffffffffff", "--local", "--json"])
    assert gone.exit_code == 1 and json.loads(gone.output)["error"]["code"] == "UNKNOWN_SESSION"
    resigned = json.loads(run("resign", "--json"))
    assert resigned["status"]["state"] == "resigned"


def test_cli_speaks_in_sentences_zh_first_en_on_request(tmp_path: Path) -> None:
    runner = CliRunner(env=env_for(tmp_path))

    def run(*args: str) -> str:
        result = runner.invoke(app, [*args, "--local"], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        return result.output

    said = run("new", "--opponent", "model")
    assert "新对局已开始。" in said and "轮到红方走。" in said and "game.new" not in said
    said = run("move", "h2e2")
    assert "你走了 炮二平五。" in said and "对手思考中" in said
    said = run("undo", "1", "--lang", "en")
    assert "Moves were taken back." in said and "Red to move." in said and "game.undone" not in said
    said = run("draw", "offer")
    assert "你已提和，等待对手答复。" in said and "draw.offered" not in said
    refused = runner.invoke(app, ["draw", "accept", "--local"])
    assert refused.exit_code == 1 and refused.output.startswith("DRAW_REFUSED：现在不能这样处理和棋")
    english = runner.invoke(app, ["draw", "accept", "--local", "--lang", "en"])
    assert "DRAW_REFUSED：there is no draw offer from the model to accept" in english.output.replace(
        "\n", " "
    )
    # every line the person reads ends as a sentence or is part of the board and tables
    for line in said.strip().splitlines()[-3:]:
        assert line.rstrip()[-1] in "。.", line


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_serve(tmp_path: Path, port: int, **extra_env: str) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "moddesk.cli", "xiangqi", "serve", "--port", str(port)],
        env={**os.environ, **env_for(tmp_path), **extra_env},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            # up, and guarded: a request without the person's login is turned away
            if httpx.get(f"http://127.0.0.1:{port}/xiangqi/", timeout=1).status_code == 401:
                return proc
        except httpx.HTTPError:
            time.sleep(0.1)
        if proc.poll() is not None:
            break
    proc.kill()
    out = proc.communicate()[0].decode(errors="replace")
    pytest.fail(f"serve did not start: {out}")


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def test_serve_restart_keeps_the_game(tmp_path: Path) -> None:
    runner = CliRunner(env=env_for(tmp_path))
    port = free_port()
    server = start_serve(tmp_path, port)
    try:
        created = runner.invoke(app, ["new", "--opponent", "model", "--json"])
        assert created.exit_code == 0, created.output
        session = json.loads(created.output)["sessionId"]
        moved = runner.invoke(app, ["move", "h2e2", "--json"])  # found through the endpoint file
        assert moved.exit_code == 0, moved.output
        assert json.loads(moved.output)["pending"] == "ai-thinking"
        before = json.loads(runner.invoke(app, ["state", "--json"]).output)
    finally:
        stop(server)
    assert not (tmp_path / "data dir" / "serve.json").exists()  # the endpoint file left with the server

    server = start_serve(tmp_path, port)
    try:
        url = f"http://127.0.0.1:{port}"
        endpoint_file = tmp_path / "data dir" / "serve.json"
        assert sys.platform == "win32" or stat.S_IMODE(endpoint_file.stat().st_mode) == 0o600
        endpoint = json.loads(endpoint_file.read_text())
        assert "key" not in endpoint  # the agent's endpoint file; the person key has its own file
        auth = _auth(tmp_path)
        after = json.loads(runner.invoke(app, ["state", "--session", session, "--url", url, "--json"]).output)
        assert after["history"] == before["history"] and after["revision"] == before["revision"]
        assert after["pending"] == "ai-thinking"
        reply = httpx.post(
            f"{url}/xiangqi-mate/fallback", json={"sessionId": session}, timeout=30, headers=auth
        ).json()
        assert reply["ok"], reply
        deadline = time.monotonic() + 20
        state = after
        while state["plies"] < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
            state = httpx.post(
                f"{url}/xiangqi-mate/state", json={"sessionId": session}, timeout=30, headers=auth
            ).json()["value"]
        assert state["plies"] == 2 and state["message"]["code"] == "ai.fallback.local"
    finally:
        stop(server)


def _auth(tmp_path: Path) -> dict[str, str]:
    """The person key of the running server, from its 0600 person file (what the CLI reads too)."""
    person = json.loads((tmp_path / "data dir" / "serve.person.json").read_text())
    return {"Authorization": f"Person {person['key']}"}


def test_server_killed_during_a_local_engine_think_resumes_after_restart(tmp_path: Path) -> None:
    runner = CliRunner(env=env_for(tmp_path))
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    server = start_serve(tmp_path, port, MODDESK_XIANGQI_THINK_TIME="30")
    try:
        created = runner.invoke(app, ["new", "--opponent", "local", "--level", "10", "--json"])
        assert created.exit_code == 0, created.output
        session = json.loads(created.output)["sessionId"]
        moved = httpx.post(
            f"{url}/xiangqi-mate/move",
            # 兵一进一 is out of the opening book (level 10 answers book moves at once, with no think)
            json={"sessionId": session, "move": "i3i4"},
            timeout=30,
            headers=_auth(tmp_path),
        )
        assert moved.json()["value"]["pending"] == "ai-thinking"  # the engine now thinks for 30 s
    finally:
        server.kill()  # no goodbye: the think dies with the process, the game stays ai-thinking
        server.wait()
    server = start_serve(tmp_path, port)
    try:
        auth = _auth(tmp_path)
        # no request needed: the new server's watchdog adopts the orphaned think and answers
        deadline = time.monotonic() + 30
        state: dict[str, object] = {"plies": 1}
        while state["plies"] != 2 and time.monotonic() < deadline:
            time.sleep(0.3)
            body = httpx.post(
                f"{url}/xiangqi-mate/state", json={"sessionId": session}, timeout=30, headers=auth
            )
            state = body.json()["value"]
        assert state["plies"] == 2 and state["pending"] is None and state["turn"] == "r"
        again = httpx.post(
            f"{url}/xiangqi-mate/move", json={"sessionId": session, "move": "h0g2"}, timeout=30, headers=auth
        )
        assert again.json()["ok"], again.json()
    finally:
        stop(server)


def test_cli_load_and_export_records(tmp_path: Path) -> None:
    from moddesk.xiangqi.gamefiles import records

    runner = CliRunner(env=env_for(tmp_path))
    sample = Path(__file__).with_name("records") / "cchess-test2.pgn"
    loaded = runner.invoke(app, ["load", str(sample), "--ply", "12", "--local", "--json"])
    assert loaded.exit_code == 0, loaded.output
    value = json.loads(loaded.output)
    assert value["plies"] == 12 and value["record"]["plies"] == 102
    out = tmp_path / "out dir" / "game.xqf"
    out.parent.mkdir()
    exported = runner.invoke(app, ["export", "--session", value["sessionId"], "--out", str(out), "--local"])
    assert exported.exit_code == 0, exported.output
    assert (
        records.read_record(out.read_bytes(), out.name).moves
        == records.read_record(sample.read_bytes()).moves[:12]
    )
    ubb = runner.invoke(app, ["export", "--session", value["sessionId"], "--format", "ubb", "--local"])
    assert "[DhtmlXQ_movelist]" in ubb.output
    missing = runner.invoke(app, ["load", str(tmp_path / "nope.pgn"), "--local"])
    assert missing.exit_code == 1 and "NOT_FOUND" in missing.output
    damaged = tmp_path / "damaged.xqf"
    damaged.write_bytes(out.read_bytes()[:900])
    refused = runner.invoke(app, ["load", str(damaged), "--local"])
    text = refused.output.replace("\n", "")  # rich wraps long lines
    assert refused.exit_code == 1 and "BAD_RECORD" in text and "棋谱损坏" in text


def test_serve_log_has_the_panel_link_whole_on_its_own_line(tmp_path: Path) -> None:
    """`moddesk xiangqi serve > log` at 40 columns: the panel link is one line and logs the browser in."""
    port = free_port()
    server = start_serve(tmp_path, port, COLUMNS="40", PYTHONUNBUFFERED="1")
    endpoint = json.loads((tmp_path / "data dir" / "serve.json").read_text())
    stop(server)
    log = server.communicate()[0].decode()
    lines = log.splitlines()
    links = [line for line in lines if "http" in line]
    assert len(links) == 2 and links[0] == f"http://127.0.0.1:{port}/mcp", log
    panel = links[1]  # the person's one-time login link, whole
    assert panel.startswith(f"http://127.0.0.1:{port}/login?code=") and panel.endswith("&next=/xiangqi/")
    assert "panel" in lines[lines.index(panel) - 1] and endpoint["token"] not in log
