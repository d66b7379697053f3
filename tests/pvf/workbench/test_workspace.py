"""Workspace overlay and history through the service, on real archives and a real repo.db."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from moddesk.kit.errors import ServiceError
from moddesk.pvf.archive import Archive
from moddesk.pvf.samples.demo import write_sample_archive
from moddesk.pvf.service import PvfService
from moddesk.pvf.workbench.workspace import DraftRegistry, Workspace

SWORD = "equipment/weapon/sword/00000.equ"


def finish(service: PvfService, handle: dict[str, Any]) -> dict[str, Any]:
    status = service.tasks.wait(handle["taskId"], 60)
    assert status["state"] == "succeeded", status.get("error")
    return dict(status["result"])


@pytest.fixture
def archive(tmp_path: Path) -> Path:
    folder = tmp_path / "history test"
    folder.mkdir()
    return write_sample_archive(folder / "Script h.pvf", files=24)


def text_of(path: Path, entry: str) -> str | None:
    with Archive.open(path) as archive:
        return archive.read_text(entry) if entry in archive else None


def test_history_commit_log_diff_checkout_and_save(archive: Path, tmp_path: Path) -> None:
    service = PvfService()
    opened = finish(service, service.open(str(archive), service.epoch))
    ws, rev = opened["workspaceId"], opened["revision"]
    original = text_of(archive, SWORD)
    assert original is not None

    assert service.history_init(ws)["versionStatus"] == "attached"
    rev = service.apply_changes(ws, rev, {SWORD: "#PVF_File\n[name]\n`First Edit`\n"})["revision"]
    first = service.history_commit(ws, "first edit")["commit"]
    rev = service.apply_changes(
        ws, rev, {SWORD: "#PVF_File\n[name]\n`Second Edit`\n", "new/thing.equ": "#PVF_File\n[name]\n`New`\n"}
    )["revision"]
    rev = service.apply_changes(ws, rev, {"skill/s0.skl": None})["revision"]
    second = finish(service, service.save(ws, rev))  # saving commits the working changes
    log = service.history_log()["commits"]
    assert [c["message"] for c in log] == [f"save revision {rev}", "first edit"]
    head = log[0]["id"]

    diff = {c["path"]: c["kind"] for c in service.history_diff(first["id"], head)["changes"]}
    assert diff == {SWORD: "modified", "new/thing.equ": "added", "skill/s0.skl": "deleted"}
    assert second["diskCommitted"] is True and "Second Edit" in (text_of(archive, SWORD) or "")

    # checkout rebuilds the first commit in memory; the file changes only on save
    checked = service.history_checkout(ws, service.info()["revision"], first["id"])
    assert checked["sourceDirty"] is True
    assert "Second Edit" in (text_of(archive, SWORD) or "")
    assert "First Edit" in service.read_file(ws, SWORD)["text"]
    assert service.read_file(ws, "skill/s0.skl")["totalLines"] > 1
    with pytest.raises(ServiceError) as err:
        service.read_file(ws, "new/thing.equ")
    assert err.value.code == "NOT_FOUND"

    copy = tmp_path / "as of first.pvf"
    finish(service, service.save_as(ws, checked["revision"], str(copy)))
    assert "First Edit" in (text_of(copy, SWORD) or "")
    assert text_of(copy, "new/thing.equ") is None and text_of(copy, "skill/s0.skl") is not None

    finish(service, service.save(ws, checked["revision"]))
    assert "First Edit" in (text_of(archive, SWORD) or "")

    # checkout of the base (before any commit) gives the original text back, after a reopen too
    reopened = finish(
        service,
        service.open(str(archive), service.epoch, ws, service.info()["revision"]),
    )
    assert reopened["versionStatus"] == "attached"
    ws2 = reopened["workspaceId"]
    oldest = service.history_log()["commits"][-1]["id"]
    undo = service.history_undo(ws2, reopened["revision"], oldest)
    assert undo["commit"]["message"].startswith("undo ")
    assert service.read_file(ws2, SWORD)["text"] == original
    finish(service, service.save(ws2, undo["revision"]))
    assert text_of(archive, SWORD) == original


def test_history_refuses_a_file_changed_outside(archive: Path) -> None:
    service = PvfService()
    opened = finish(service, service.open(str(archive), service.epoch))
    service.history_init(opened["workspaceId"])
    finish(service, service.close(opened["workspaceId"], opened["revision"]))
    archive.write_bytes(write_sample_archive(archive.with_name("other.pvf"), files=3).read_bytes())
    again = finish(service, service.open(str(archive), service.epoch))
    assert again["versionStatus"] == "detached: HISTORY_DETACHED"
    with pytest.raises(ServiceError) as err:
        service.history_log()
    assert err.value.code == "HISTORY_NOT_ENABLED"


def test_workspace_overlay_and_dirty(archive: Path) -> None:
    ws = Workspace.open(archive)
    assert ws.dirty is False and ws.revision == 1
    assert ws.kind(SWORD) == "script" and ws.kind("etc/blob.bin") == "binary"
    ws.apply({SWORD: "#PVF_File\n[name]\n`Edited`\n"})
    assert ws.dirty is True and ws.revision == 2
    with pytest.raises(ServiceError):
        ws.apply({"etc/blob.bin": "text into a binary entry"})
    with pytest.raises(ServiceError):
        ws.apply({"no/such.equ": None})
    assert ws.revision == 2  # a refused change-set changes nothing
    ws.discard()
    assert ws.dirty is False and ws.current_text_or_none(SWORD) == ws.base_text(SWORD)
    ws.close()


def test_open_failure_is_open_failed(tmp_path: Path) -> None:
    bad = tmp_path / "bad archive.pvf"
    bad.write_bytes(b"this is not a pvf archive" * 8)
    with pytest.raises(ServiceError) as err:
        Workspace.open(bad)
    assert err.value.code == "OPEN_FAILED" and err.value.details.get("formatError")


def test_draft_registry_generations() -> None:
    drafts = DraftRegistry(ack_timeout=0.1)
    drafts.register("w1", "script")
    drafts.report("w1", True, 2)
    drafts.report("w1", False, 1)  # an older report does not win
    assert drafts.snapshot() == [{"windowId": "w1", "kind": "script", "dirty": True, "generation": 2}]
    with pytest.raises(ServiceError) as err:
        drafts.prepare("save")
    assert err.value.code == "UI_NOT_READY" and not drafts.frozen
    drafts.unregister("w1")
    operation = drafts.prepare("save")
    assert drafts.frozen
    drafts.release(operation)
    assert not drafts.frozen
