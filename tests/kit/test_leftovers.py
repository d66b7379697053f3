"""Temp names carry their owner; sweeps remove only what dead owners left; doctor --clean."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from moddesk.kit.files import atomic_writer
from moddesk.kit.leftovers import (
    find_leftovers,
    owner_alive,
    owner_of,
    remember_place,
    remembered_places,
    sweep_remembered,
    sweep_stale,
    temp_sibling,
)

KILLED_WRITER = textwrap.dedent(
    """
    import sys, time
    from moddesk.kit.files import atomic_writer
    from moddesk.kit.leftovers import make_temp_dir
    make_temp_dir(sys.argv[2], "export")
    with atomic_writer(sys.argv[1]) as out:
        out.write(b"x" * 1000)
        out.flush()
        print("writing", flush=True)
        time.sleep(60)
    """
)


def _killed_writer(folder: Path) -> int:
    """Run a writer that leaves a temp file and a temp folder, SIGKILL it; returns its pid."""
    proc = subprocess.Popen(
        [sys.executable, "-c", KILLED_WRITER, str(folder / "data.bin"), str(folder)],
        stdout=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == b"writing"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    return proc.pid


def test_names_carry_this_process_as_owner(tmp_path: Path) -> None:
    name = temp_sibling(tmp_path / "a.pvf").name
    owner = owner_of(name)
    assert owner is not None and owner[0] == os.getpid()
    assert owner_alive(*owner)
    assert not owner_alive(owner[0], owner[1] + 500)  # same pid, other start time: a reused pid
    with atomic_writer(tmp_path / "b.bin") as out:
        out.write(b"1")
        (temp,) = [p for p in tmp_path.iterdir() if p.name.startswith(".b.bin")]
        assert owner_of(temp.name) == owner


def test_own_temps_stay_alive_when_the_clock_moves(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """psutil's start time follows the kernel's boot time, which a stepped wall clock moves."""
    import psutil

    live = temp_sibling(tmp_path / "export")
    live.mkdir()
    (live / "file.equ").write_bytes(b"half written")
    real = psutil.Process.create_time
    monkeypatch.setattr(psutil.Process, "create_time", lambda self: real(self) + 3.0)
    assert sweep_stale([tmp_path]) == [] and (live / "file.equ").exists()
    # another live process read 1.5 s off is still alive; 5 s off is another process with its pid
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        start = round(real(psutil.Process(child.pid)) * 100)
        monkeypatch.setattr(psutil.Process, "create_time", lambda self: real(self) + 1.5)
        assert owner_alive(child.pid, start)
        monkeypatch.setattr(psutil.Process, "create_time", lambda self: real(self) + 5.0)
        assert not owner_alive(child.pid, start)
    finally:
        child.kill()
        child.wait()


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")
def test_sweep_removes_dead_owners_only(tmp_path: Path) -> None:
    pid = _killed_writer(tmp_path)
    (tmp_path / "data.bin").write_bytes(b"real data")
    live = temp_sibling(tmp_path / "mine")
    live.write_bytes(b"in use")
    legacy = tmp_path / ".old.moddesk-tmp-abcdef"
    legacy.write_bytes(b"unknown owner")
    states = {item.path.name: (item.owner, item.pid) for item in find_leftovers([tmp_path])}
    assert sorted(v[0] for v in states.values()) == ["alive", "dead", "dead", "unknown"]
    assert {v[1] for v in states.values() if v[0] == "dead"} == {pid}
    removed = sweep_stale([tmp_path])
    assert len(removed) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [".old.moddesk-tmp-abcdef", "data.bin", live.name]
    )
    assert (tmp_path / "data.bin").read_bytes() == b"real data"


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")
def test_remembered_places_are_swept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MODDESK_DATA_DIR", str(tmp_path / "data"))
    target = tmp_path / "exports here"
    target.mkdir()
    remember_place(target)
    remember_place(target)  # once per process
    assert remembered_places() == [target]
    _killed_writer(target)
    assert len(sweep_remembered()) == 2
    assert sorted(p.name for p in target.iterdir()) == []


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")
def test_doctor_clean_lists_and_removes(tmp_path: Path) -> None:
    folder = tmp_path / "some folder"
    folder.mkdir()
    _killed_writer(folder)
    live = temp_sibling(folder / "mine")
    live.write_bytes(b"in use")
    old = folder / ".x.moddesk-tmp-legacy"
    old.write_bytes(b"")
    os.utime(old, (time.time() - 7200, time.time() - 7200))
    isolated = {
        "MODDESK_DATA_DIR": "data",
        "RA3MODXML_HOME": "ra3",
        "TMPDIR": "tmp",
        "XDG_CONFIG_HOME": "config",
        "XDG_CACHE_HOME": "cache",
    }
    for name in isolated.values():
        (tmp_path / name).mkdir()
    env = {**os.environ, "COLUMNS": "300", **{k: str(tmp_path / v) for k, v in isolated.items()}}
    cmd = [sys.executable, "-m", "moddesk.cli", "doctor", "--clean", str(folder)]
    dry = subprocess.run([*cmd, "--dry-run"], env=env, capture_output=True, text=True, timeout=60)
    assert dry.returncode == 0, dry.stderr
    assert dry.stdout.count("would remove") == 3 and "kept (in use)" in dry.stdout
    assert len(list(folder.iterdir())) == 4
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("removed") == 3
    assert [p.name for p in folder.iterdir()] == [live.name]


@given(st.text(max_size=80))
def test_owner_of_any_name_is_a_pair_or_none(name: str) -> None:
    found = owner_of(name)
    assert found is None or (found[0] >= 0 and found[1] >= 0)


@given(st.text(alphabet=st.characters(blacklist_characters="/\x00"), min_size=1, max_size=40))
def test_owner_round_trips_through_any_base_name(base: str) -> None:
    assert owner_of(temp_sibling(Path("/x") / base).name) == owner_of(temp_sibling(Path("/x/y")).name)


def test_the_places_list_stays_small(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from moddesk.kit import leftovers

    monkeypatch.setenv("MODDESK_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setattr(leftovers, "_places_noted", set())
    folders = []
    for i in range(700):  # 700 lines of ~100 bytes: past the compaction size
        folder = tmp_path / f"{'x' * 60} {i:04d}"
        folder.mkdir()
        folders.append(folder)
        remember_place(folder)
    assert leftovers.places_file().stat().st_size <= leftovers.PLACES_COMPACT_BYTES + 200
    kept = remembered_places()
    assert len(kept) <= leftovers.MAX_PLACES and kept[-1] == folders[-1]
