"""Atomic writes survive SIGKILL; no-overwrite publishing has exactly one winner; file identity."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from moddesk.kit.errors import ServiceError
from moddesk.kit.files import (
    FileIdentity,
    atomic_write_bytes,
    atomic_write_text,
    is_temp_name,
    publish_bytes_no_overwrite,
    publish_no_overwrite,
)

SLOW_WRITER = textwrap.dedent(
    """
    import sys, time
    from moddesk.kit.files import atomic_writer
    with atomic_writer(sys.argv[1]) as out:
        for i in range(10_000):
            out.write(b"N" * 65536)
            out.flush()
            if i == 3:
                print("writing", flush=True)
            time.sleep(0.01)
    """
)


def test_sigkill_mid_write_leaves_the_old_file(tmp_path: Path) -> None:
    target = tmp_path / "Script with spaces.pvf"
    old = os.urandom(100_000)
    target.write_bytes(old)
    child = subprocess.Popen(
        [sys.executable, "-c", SLOW_WRITER, str(target)], stdout=subprocess.PIPE, stdin=subprocess.DEVNULL
    )
    assert child.stdout is not None
    assert child.stdout.readline().strip() == b"writing"
    time.sleep(0.05)
    child.send_signal(signal.SIGKILL)
    child.wait(10)
    assert target.read_bytes() == old
    leftovers = [p.name for p in tmp_path.iterdir() if p.name != target.name]
    assert leftovers, "the killed writer should have left its temp file behind"
    assert all(is_temp_name(name) for name in leftovers)


def test_atomic_write_replaces_and_keeps_mode(tmp_path: Path) -> None:
    target = tmp_path / "config.toml"
    target.write_text("old")
    target.chmod(0o640)
    atomic_write_text(target, "new ✓")
    assert target.read_text(encoding="utf-8") == "new ✓"
    assert target.stat().st_mode & 0o777 == 0o640
    atomic_write_bytes(target, iter([b"a", b"b"]))
    assert target.read_bytes() == b"ab"
    assert [p.name for p in tmp_path.iterdir()] == ["config.toml"]


def test_new_file_gets_the_umask_mode_not_0600(tmp_path: Path) -> None:
    target = tmp_path / "new.json"
    atomic_write_text(target, "{}")
    previous = os.umask(0o022)
    os.umask(previous)
    assert target.stat().st_mode & 0o777 == 0o666 & ~previous


def test_failed_write_leaves_nothing(tmp_path: Path) -> None:
    target = tmp_path / "x.bin"
    target.write_bytes(b"keep")

    def chunks() -> object:
        yield b"partial"
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        atomic_write_bytes(target, chunks())  # type: ignore[arg-type]
    assert target.read_bytes() == b"keep"
    assert [p.name for p in tmp_path.iterdir()] == ["x.bin"]


RACER = textwrap.dedent(
    """
    import os, sys, time
    from pathlib import Path
    from moddesk.kit.errors import ServiceError
    from moddesk.kit.files import publish_no_overwrite
    src, dst, start, kind = Path(sys.argv[1]), Path(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
    if kind == "dir":
        src.mkdir()
        (src / "pack.json").write_text(sys.argv[1])
    else:
        src.write_text(sys.argv[1])
    while time.time() < start:
        pass
    try:
        publish_no_overwrite(src, dst)
        print("won")
    except ServiceError as exc:
        print(exc.code)
    """
)


@pytest.mark.parametrize("kind", ["file", "dir"])
def test_racing_no_overwrite_publishes_have_one_winner(tmp_path: Path, kind: str) -> None:
    dst = tmp_path / "My Mod"
    start = time.time() + 1.0
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", RACER, str(tmp_path / f"src{i}"), str(dst), str(start), kind],
            stdout=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
        )
        for i in range(2)
    ]
    outcomes = sorted(p.communicate(timeout=30)[0].strip() for p in procs)
    assert outcomes == ["TARGET_EXISTS", "won"]
    winner = dst / "pack.json" if kind == "dir" else dst
    assert winner.read_text().startswith(str(tmp_path / "src"))


def test_publish_refuses_existing_target(tmp_path: Path) -> None:
    dst = tmp_path / "out.zip"
    dst.write_bytes(b"user data")
    with pytest.raises(ServiceError) as caught:
        publish_bytes_no_overwrite(dst, b"new")
    assert caught.value.code == "TARGET_EXISTS"
    assert dst.read_bytes() == b"user data"
    assert [p.name for p in tmp_path.iterdir()] == ["out.zip"]
    src = tmp_path / "new.zip"
    src.write_bytes(b"x")
    with pytest.raises(ServiceError):
        publish_no_overwrite(src, dst)
    assert src.exists()


def test_file_identity(tmp_path: Path) -> None:
    path = tmp_path / "a.pvf"
    path.write_bytes(b"one")
    first = FileIdentity.of(path)
    link = tmp_path / "hard.pvf"
    os.link(path, link)
    sym = tmp_path / "sym.pvf"
    sym.symlink_to(path)
    assert FileIdentity.of(link).same_file(first)
    assert FileIdentity.of(sym).same_file(first)
    assert first.unchanged(FileIdentity.of(path))
    path.write_bytes(b"two")
    changed = FileIdentity.of(path)
    assert not first.unchanged(changed)
    assert not first.same_content(changed)
    other = tmp_path / "b.pvf"
    other.write_bytes(b"two")
    assert not FileIdentity.of(other).same_file(changed)
    assert FileIdentity.of(other).same_content(changed)
