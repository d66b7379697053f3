"""SIGKILL in the middle of a write, then restart: no leftovers, an answer within 2 s, old or new data.

Each scenario runs a real service process (``driver.py``) that loops one write — save, save with a
history commit, export, import apply, ra3 snapshot — and kills it the moment a temp it owns is on
disk (so the kill lands mid-write). A new process then starts on the same port; it must bind at
once (no PORT_IN_USE while old connections sit in TIME_WAIT), answer, and have removed what the
dead one left.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from moddesk.kit.leftovers import TEMP_MARKER
from moddesk.pvf.archive import Archive
from moddesk.pvf.samples.generate import generate_archive

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")

DRIVER = str(Path(__file__).with_name("driver.py"))
RESTART_SECONDS = 2.0


@dataclass
class Proc:
    """A driver process and the lines it printed."""

    popen: subprocess.Popen[str]
    lines: list[str] = field(default_factory=list)

    def wait_for(self, prefix: str, timeout: float) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in list(self.lines):
                if line.startswith(prefix):
                    return line
            if self.popen.poll() is not None:
                break
            time.sleep(0.01)
        self.popen.kill()
        err = self.popen.stderr.read() if self.popen.stderr else ""
        pytest.fail(f"no {prefix!r} from the driver: {self.lines[-5:]} {err[-2000:]}")

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.popen.poll() is None:
            self.popen.send_signal(sig)
            try:
                self.popen.wait(20)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()


def _spawn(env: dict[str, str], *args: str) -> Proc:
    popen = subprocess.Popen(
        [sys.executable, DRIVER, *args],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    proc = Proc(popen)

    def pump() -> None:
        assert popen.stdout is not None
        for line in popen.stdout:
            proc.lines.append(line.strip())

    threading.Thread(target=pump, daemon=True).start()
    return proc


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _temps(folder: Path, pid: int | None = None) -> list[Path]:
    if not folder.is_dir():
        return []
    found = [p for p in folder.iterdir() if TEMP_MARKER in p.name]
    return [p for p in found if pid is None or f"{TEMP_MARKER}{pid}-" in p.name]


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    folders = {
        "MODDESK_CONFIG_DIR": "config",
        "MODDESK_CACHE_DIR": "cache",
        "MODDESK_DATA_DIR": "data",
        "TMPDIR": "tmp",
        "RA3MODXML_HOME": "ra3 home",
    }
    for name in folders.values():
        (tmp_path / name).mkdir()
    return {**os.environ, **{k: str(tmp_path / v) for k, v in folders.items()}}


def kill_mid_write(env: dict[str, str], watch: Path, *args: str, attempts: int = 4) -> list[Path]:
    """Run the driver until a temp of its own shows in ``watch``, SIGKILL it; returns what it left.

    A kill can land just after the rename; it is tried again until one leaves a temp behind.
    """
    for _ in range(attempts):
        proc = _spawn(env, *args)
        proc.wait_for("READY", 120)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not _temps(watch, proc.popen.pid):
            assert proc.popen.poll() is None, proc.popen.stderr.read() if proc.popen.stderr else ""
            time.sleep(0.002)
        proc.popen.send_signal(signal.SIGKILL)
        proc.popen.wait()
        left = _temps(watch, proc.popen.pid)
        if left:
            return left
    pytest.fail(f"no kill landed mid-write in {attempts} attempts")


def restart(env: dict[str, str], mode: str, port: int, *args: str) -> tuple[Proc, float]:
    """Start the service again on the same port; returns it and its own start-to-serving seconds."""
    spawned = time.monotonic()
    proc = _spawn(env, mode, str(port), *args)
    ready = proc.wait_for("READY", 60)
    answered = False
    while time.monotonic() - spawned < 60 and not answered:
        try:
            httpx.get(f"http://127.0.0.1:{port}/", timeout=1)  # any HTTP answer (even 401/404) counts
            answered = True
        except httpx.HTTPError:
            time.sleep(0.02)
    assert answered
    seconds = float(json.loads(ready.split(" ", 1)[1])["startSeconds"])
    print(f"RESTART-SECONDS {mode} {seconds:.2f}")
    return proc, seconds


@pytest.fixture
def archive(tmp_path: Path) -> Iterator[Path]:
    folder = tmp_path / "my archives"
    folder.mkdir()
    path = folder / "Script big.pvf"
    generate_archive(path, files=20_000)
    yield path


def _round_of(text: str) -> str:
    return text.split("`")[1] if text.count("`") >= 2 and "round" in text else "original"


def test_sigkill_during_save(env: dict[str, str], archive: Path) -> None:
    with Archive.open(archive) as before:
        names = [n for n in before.namelist() if n.endswith(".equ")][:5]
        original = {n: before.read_text(n) for n in names}
    port = _free_port()
    left = kill_mid_write(env, archive.parent, "save", str(port), str(archive))
    assert all(p.name.startswith(f".{archive.name}") for p in left)
    server, seconds = restart(env, "serve-pvf", port, str(archive))
    try:
        assert seconds < RESTART_SECONDS
        assert _temps(archive.parent) == []
    finally:
        server.stop()
    with Archive.open(archive) as after:  # old or new, never a mix: the 5 files of one save agree
        rounds = {
            _round_of(after.read_text(n)) if after.read_text(n) != original[n] else "original" for n in names
        }
    assert len(rounds) == 1, rounds


def test_sigkill_during_history_commit(env: dict[str, str], archive: Path) -> None:
    port = _free_port()
    repo = archive.with_name(archive.name + ".moddesk")
    proc = _spawn(env, "history", str(port), str(archive))
    proc.wait_for("SAVED 2", 180)
    # the commit follows the file's rename: kill while SQLite writes it (its WAL grows)
    wal = repo / "repo.db-wal"
    start_size = wal.stat().st_size if wal.exists() else 0
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (not wal.exists() or wal.stat().st_size == start_size):
        time.sleep(0.001)
    proc.popen.send_signal(signal.SIGKILL)
    proc.popen.wait()
    server, seconds = restart(env, "serve-pvf", port, str(archive))
    try:
        assert seconds < RESTART_SECONDS
        assert _temps(archive.parent) == [] and _temps(repo) == []
    finally:
        server.stop()
    with sqlite3.connect(repo / "repo.db") as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        heads = db.execute("SELECT value FROM meta WHERE key = 'head'").fetchone()
        assert heads is not None
    with Archive.open(archive) as after:
        assert after.namelist()


def test_sigkill_during_export(env: dict[str, str], archive: Path, tmp_path: Path) -> None:
    out = tmp_path / "exports here"
    out.mkdir()
    port = _free_port()
    left = kill_mid_write(env, out, "export", str(port), str(archive), str(out))
    assert left and all(p.is_dir() for p in left)
    server, seconds = restart(env, "serve-pvf", port)  # remembered export folders are swept at start
    try:
        assert seconds < RESTART_SECONDS
        assert _temps(out) == []
    finally:
        server.stop()
    with Archive.open(archive) as source:
        expected = sum(1 for name in source.namelist() if name.startswith("stackable/"))
    for dump in out.iterdir():  # every published export is whole
        assert sum(1 for p in dump.rglob("*") if p.is_file()) == expected, dump


def test_sigkill_during_import_apply(env: dict[str, str], archive: Path, tmp_path: Path) -> None:
    source = tmp_path / "to import"
    (source / "equipment").mkdir(parents=True)
    for i in range(200):
        (source / "equipment" / f"new{i}.equ").write_text(f"#PVF_File\n[name]\n`imported {i}`\n")
    before = archive.read_bytes()
    spill_root = Path(env["TMPDIR"])
    port = _free_port()
    # the driver prepares (spilling every frozen file) and applies in a loop; an apply ends by
    # removing its spill, so kill while a plan's spill is on disk. The spill can go between the
    # look and the kill (the apply ended): then the run is tried again, as in ``kill_mid_write``.
    for _ in range(4):
        proc = _spawn(env, "import", str(port), str(archive), str(source))
        proc.wait_for("APPLYING", 120)
        deadline = time.monotonic() + 60
        while not _temps(spill_root, proc.popen.pid):
            assert time.monotonic() < deadline, "the frozen files never spilled"
            assert proc.popen.poll() is None, proc.popen.stderr.read() if proc.popen.stderr else ""
            time.sleep(0.002)
        proc.popen.send_signal(signal.SIGKILL)
        proc.popen.wait()
        if _temps(spill_root, proc.popen.pid):
            break
    else:
        pytest.fail("no kill landed while a plan's spill was on disk in 4 attempts")
    server, seconds = restart(env, "serve-pvf", port, str(archive))
    try:
        assert seconds < RESTART_SECONDS
        assert _temps(spill_root) == []
    finally:
        server.stop()
    assert archive.read_bytes() == before  # an unsaved apply never reaches the file


def test_sigkill_during_ra3_snapshot_writing(env: dict[str, str], tmp_path: Path) -> None:
    from moddesk.ra3.core.sample import write_sample_project
    from moddesk.ra3.core.snapshot import load_snapshot

    project = write_sample_project(tmp_path / "sdk")
    snapshots = Path(env["RA3MODXML_HOME"]) / "snapshots"
    left = kill_mid_write(env, snapshots, "snapshot", "0", str(project), attempts=10)
    assert left
    port = _free_port()
    server, seconds = restart(env, "serve-ra3", port, str(project))
    try:
        assert seconds < RESTART_SECONDS
        assert _temps(snapshots) == []
    finally:
        server.stop()
    # the current snapshot or the previous one, whole
    data, status = load_snapshot(project, Path(env["RA3MODXML_HOME"]))
    assert data.stats()["assetCount"] > 0 and status.source == "snapshot"


def test_sigterm_cleans_up_and_leaves_no_endpoint(env: dict[str, str], tmp_path: Path) -> None:
    from moddesk.ra3.core.sample import write_sample_project

    project = write_sample_project(tmp_path / "sdk")
    port = _free_port()
    server, _ = restart(env, "serve-ra3", port, str(project))
    endpoints = Path(env["RA3MODXML_HOME"]) / "endpoints"
    assert list(endpoints.glob("*.json"))
    server.stop(signal.SIGTERM)
    assert server.popen.returncode == 0
    assert list(endpoints.glob("*.json")) == []
