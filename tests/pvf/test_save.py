"""Saving on real files: outside changes, copies, aliases, overwrite identity, crash safety."""

from __future__ import annotations

import contextlib
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from moddesk.kit.errors import ServiceError
from moddesk.kit.files import FileIdentity
from moddesk.kit.local_service import http_client
from moddesk.pvf.archive import Archive
from moddesk.pvf.samples.demo import write_sample_archive
from moddesk.pvf.service import PvfService
from moddesk.pvf.workbench.history import History

EDIT = {"skill/s2.skl": "#PVF_File\n[name]\n`Saved Skill`\n"}


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    path = tmp_path / "save here"
    path.mkdir()
    return path


@pytest.fixture
def archive(folder: Path) -> Path:
    return write_sample_archive(folder / "Script main.pvf", files=30)


def finish(service: PvfService, handle: dict[str, Any]) -> dict[str, Any]:
    status = service.tasks.wait(handle["taskId"], 60)
    if status["state"] != "succeeded":
        error = status["error"]
        details = {k: v for k, v in error.items() if k not in ("ok", "error", "message", "hint")}
        raise ServiceError(error["error"], error["message"], error.get("hint"), **details)
    return dict(status["result"])


def opened(service: PvfService, path: Path) -> tuple[str, int]:
    result = finish(service, service.open(str(path), service.info()["workspaceEpoch"]))
    return result["workspaceId"], result["revision"]


def error_of(fn: Any) -> ServiceError:
    with pytest.raises(ServiceError) as err:
        fn()
    return err.value


def test_source_changed_outside_is_never_overwritten(archive: Path) -> None:
    service = PvfService()
    ws, rev = opened(service, archive)
    rev = service.apply_changes(ws, rev, EDIT)["revision"]
    outside = archive.read_bytes()[:-4] + b"XXXX"  # same size, other content
    stat = archive.stat()
    archive.write_bytes(outside)
    os.utime(archive, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # even with the old mtime
    err = error_of(lambda: finish(service, service.save(ws, rev)))
    assert err.code == "SOURCE_CHANGED" and err.hint
    assert err.details["expectedIdentity"]["sha256"] != err.details["currentIdentity"]["sha256"]
    assert archive.read_bytes() == outside
    assert service.info()["sourceDirty"] is True
    # a copy is still possible: it is built from the content opened, not from the changed file
    copy = archive.with_name("rescued copy.pvf")
    finish(service, service.save_as(ws, rev, str(copy)))
    with Archive.open(copy) as rescued:
        assert "Saved Skill" in rescued.read_text("skill/s2.skl") and len(rescued.namelist()) == 38


def test_touch_alone_is_not_a_change(archive: Path) -> None:
    service = PvfService()
    ws, rev = opened(service, archive)
    rev = service.apply_changes(ws, rev, EDIT)["revision"]
    os.utime(archive, ns=(time.time_ns(), time.time_ns() + 5_000_000_000))
    result = finish(service, service.save(ws, rev))
    assert result["diskCommitted"] is True


def test_save_writes_backup_and_new_identity(archive: Path) -> None:
    service = PvfService()
    before = archive.read_bytes()
    ws, rev = opened(service, archive)
    rev = service.apply_changes(ws, rev, EDIT)["revision"]
    result = finish(service, service.save(ws, rev))
    assert Path(result["backupPath"]).read_bytes() == before
    assert result["identity"] == FileIdentity.of(archive).to_dict()
    assert result["savedRevision"] == rev and result["sourceDirty"] is False
    with Archive.open(archive) as reread:
        assert "Saved Skill" in reread.read_text("skill/s2.skl")
    # a second edit and save goes on from the saved file
    rev = service.apply_changes(ws, rev, {"skill/s2.skl": None})["revision"]
    finish(service, service.save(ws, rev))
    with Archive.open(archive) as reread:
        assert "skill/s2.skl" not in reread


def test_save_as_is_a_copy(archive: Path, folder: Path) -> None:
    service = PvfService()
    ws, rev = opened(service, archive)
    rev = service.apply_changes(ws, rev, EDIT)["revision"]
    target = folder / "copy one.pvf"
    result = finish(service, service.save_as(ws, rev, str(target)))
    assert result["sourcePath"] == str(archive) and result["writtenPath"] == str(target)
    assert result["sourceDirty"] is True and result["snapshotRevision"] == rev
    info = service.info()
    assert info["sourcePath"] == str(archive) and info["sourceDirty"] is True and info["workspaceId"] == ws
    with Archive.open(target) as copy, Archive.open(archive) as source:
        assert "Saved Skill" in copy.read_text("skill/s2.skl")
        assert "Saved Skill" not in source.read_text("skill/s2.skl")
    # a save afterwards still writes the source
    assert finish(service, service.save(ws, rev))["writtenPath"] == str(archive)


def test_save_as_target_rules(archive: Path, folder: Path) -> None:
    service = PvfService()
    ws, rev = opened(service, archive)
    target = folder / "existing.pvf"
    target.write_bytes(b"precious")

    exists = error_of(lambda: finish(service, service.save_as(ws, rev, str(target))))
    assert exists.code == "TARGET_EXISTS" and target.read_bytes() == b"precious"
    observed = exists.details["targetIdentity"]
    assert observed["sha256"] == FileIdentity.of(target).sha256

    target.write_bytes(b"precious, edited again")
    changed = error_of(lambda: finish(service, service.save_as(ws, rev, str(target), True, observed)))
    assert changed.code == "TARGET_CHANGED" and target.read_bytes() == b"precious, edited again"

    # the full identity of a file that is not an archive still never lets it be replaced
    current = changed.details["currentIdentity"]
    refused = error_of(lambda: finish(service, service.save_as(ws, rev, str(target), True, current)))
    assert refused.code == "NOT_AN_ARCHIVE" and target.read_bytes() == b"precious, edited again"

    # an older archive at the target: replaced with its full identity, never with a part of it
    write_sample_archive(target, files=3)
    observed = error_of(lambda: finish(service, service.save_as(ws, rev, str(target)))).details[
        "targetIdentity"
    ]
    for partial in ({"size": observed["size"]}, {k: v for k, v in observed.items() if k != "sha256"}):
        refused = error_of(lambda p=partial: finish(service, service.save_as(ws, rev, str(target), True, p)))
        assert refused.code == "TARGET_CHANGED"
    finish(service, service.save_as(ws, rev, str(target), True, observed))
    with Archive.open(target) as copy:
        assert len(copy.namelist()) == service.info()["fileCount"]

    missing = error_of(lambda: service.save_as(ws, rev, str(target), True, None))
    assert missing.code == "INVALID_ARGUMENT"
    assert error_of(lambda: service.save_as(ws, rev, "relative.pvf")).code == "INVALID_PATH"
    assert (
        error_of(lambda: service.save_as(ws, rev, str(folder / "no such dir" / "x.pvf"))).code
        == "INVALID_PATH"
    )
    assert error_of(lambda: service.save_as(ws, rev, str(folder))).code == "INVALID_PATH"


def test_same_as_source_through_aliases(archive: Path, folder: Path) -> None:
    service = PvfService()
    ws, rev = opened(service, archive)
    symlink = folder / "link to main.pvf"
    symlink.symlink_to(archive)
    hardlink = folder / "hard link.pvf"
    os.link(archive, hardlink)
    dotted = folder / "sub" / ".." / archive.name
    (folder / "sub").mkdir()
    for alias in (archive, symlink, hardlink):
        err = error_of(lambda alias=alias: service.save_as(ws, rev, str(alias)))
        assert err.code == "SAME_AS_SOURCE", alias
    # '..' is never collapsed (kit.roots refuses it before any lookup)
    assert error_of(lambda: service.save_as(ws, rev, str(dotted))).code == "INVALID_PATH"


def test_disk_committed_when_upkeep_fails(archive: Path) -> None:
    History.init(archive).close()
    service = PvfService()
    ws, rev = opened(service, archive)
    assert service.info()["versionStatus"] == "attached"
    rev = service.apply_changes(ws, rev, EDIT)["revision"]
    with sqlite3.connect(archive.with_name(archive.name + ".moddesk") / "repo.db") as db:
        db.execute("DROP TABLE changes")  # the history cannot record commits any more
    result = finish(service, service.save(ws, rev))
    assert result["diskCommitted"] is True
    assert result["warnings"] and "history" in result["warnings"][0]
    with Archive.open(archive) as reread:
        assert "Saved Skill" in reread.read_text("skill/s2.skl")


DRIVER = """
import sys
from pathlib import Path
from moddesk.pvf.agent.serve import Workbench
from moddesk.pvf.service import PvfService

bench = Workbench(PvfService(), port=0)
opened = bench.open_at_start(Path(sys.argv[1]))
ws = bench.service.workspace
changes = {p: ws.base_text(p).replace("Trial", "Changed") for p in ws.paths() if p.endswith(".equ")}
edit = bench.service.apply_changes(opened["workspaceId"], opened["revision"], changes)
print(bench.url, bench.token, opened["workspaceId"], edit["revision"], flush=True)
bench.serve_forever()
"""


@pytest.mark.slow
def test_sigkill_during_save_leaves_the_old_archive(folder: Path) -> None:
    archive = write_sample_archive(folder / "Script big.pvf", files=2500)
    original = archive.read_bytes()
    proc = subprocess.Popen(
        [sys.executable, "-c", DRIVER, str(archive)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        url, token, ws, revision = proc.stdout.readline().split()
        seen: list[str] = []
        killed = False

        async def save_then_kill() -> None:
            try:
                await drive()
            except Exception:
                # closing a client whose server was just killed may fail (the session's DELETE or
                # its event stream meets a dead socket): expected then, a failure before the kill
                if not killed:
                    raise

        async def drive() -> None:
            nonlocal killed
            async with http_client(url, token) as client:

                async def save() -> None:
                    # the call never answers: the server is killed while it runs
                    with contextlib.suppress(Exception):
                        await client.call_tool(
                            "pvf_archive_save", {"workspaceId": ws, "expectedRevision": int(revision)}
                        )

                async with anyio.create_task_group() as group:
                    group.start_soon(save)  # not cancelled: a cancel could stop the save before it starts
                    deadline = time.monotonic() + 60
                    while time.monotonic() < deadline:
                        info = await client.call_tool("pvf_workspace_info", {})
                        task = (info.structured_content or {}).get("lifecycleTask")
                        if task:
                            status = await client.call_tool("pvf_task_status", {"taskId": task})
                            phase = (status.structured_content or {}).get("phase", "")
                            seen.append(phase)
                            if phase == "write":
                                os.kill(proc.pid, signal.SIGKILL)
                                killed = True
                                group.cancel_scope.cancel()
                                return
                        await anyio.sleep(0.005)
                    group.cancel_scope.cancel()

        anyio.run(save_then_kill)
        proc.wait(30)
        assert proc.returncode == -signal.SIGKILL, seen
        assert "write" in seen
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert archive.read_bytes() == original
    with Archive.open(archive) as reread:
        assert "Changed" not in reread.read_text(reread.namelist()[5])
    leftovers = [p.name for p in folder.iterdir() if p.name not in ("Script big.pvf",)]
    assert all("moddesk-tmp" in name or name.endswith(".bak") for name in leftovers), leftovers
