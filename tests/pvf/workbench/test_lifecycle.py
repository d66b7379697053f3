"""Lifecycle rules of the shared service on real archive files: dirty policies, drafts, occupancy."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from moddesk.kit.errors import ServiceError
from moddesk.pvf.archive import Archive
from moddesk.pvf.samples.demo import write_sample_archive
from moddesk.pvf.service import PvfService

EDIT = {"skill/s1.skl": "#PVF_File\n[name]\n`Edited Skill`\n"}


@pytest.fixture
def archive(tmp_path: Path) -> Path:
    folder = tmp_path / "with spaces"
    folder.mkdir()
    return write_sample_archive(folder / "Script a.pvf", files=40)


@pytest.fixture
def other(tmp_path: Path) -> Path:
    return write_sample_archive(tmp_path / "with spaces" / "Script b.pvf", files=10)


def finish(service: PvfService, handle: dict[str, Any]) -> dict[str, Any]:
    """Wait for a lifecycle task; its result, or its error raised."""
    status = service.tasks.wait(handle["taskId"], 60)
    if status["state"] != "succeeded":
        error = status["error"]
        details = {k: v for k, v in error.items() if k not in ("ok", "error", "message", "hint")}
        raise ServiceError(error["error"], error["message"], error.get("hint"), **details)
    return dict(status["result"])


def open_now(service: PvfService, path: Path, **kwargs: Any) -> dict[str, Any]:
    info = service.info()
    if info["open"]:
        kwargs.setdefault("workspace_id", info["workspaceId"])
        kwargs.setdefault("expected_revision", info["revision"])
    return finish(service, service.open(str(path), info["workspaceEpoch"], **kwargs))


def code_of(fn: Any) -> str:
    with pytest.raises(ServiceError) as err:
        fn()
    return err.value.code


def test_dirty_policy_reject_save_discard(archive: Path, other: Path) -> None:
    service = PvfService()
    first = open_now(service, archive)
    edited = service.apply_changes(first["workspaceId"], first["revision"], EDIT)
    assert service.info()["sourceDirty"] is True

    assert code_of(lambda: open_now(service, other)) == "UNSAVED_CHANGES"
    assert service.info()["workspaceId"] == first["workspaceId"]  # still the same workspace

    discarded = open_now(service, other, dirty_policy="discard")
    assert discarded["previousSaved"] is None
    with Archive.open(archive) as unchanged:
        assert "Edited Skill" not in unchanged.read_text("skill/s1.skl")

    back = open_now(service, archive)
    edited = service.apply_changes(back["workspaceId"], back["revision"], EDIT)
    switched = open_now(service, other, dirty_policy="save", expected_revision=edited["revision"])
    assert switched["previousSaved"]["writtenPath"] == str(archive)
    with Archive.open(archive) as saved:
        assert "Edited Skill" in saved.read_text("skill/s1.skl")

    # close follows the same rules
    ws = service.info()
    service.apply_changes(ws["workspaceId"], ws["revision"], EDIT)
    rev = service.info()["revision"]
    assert code_of(lambda: finish(service, service.close(ws["workspaceId"], rev))) == "UNSAVED_CHANGES"
    closed = finish(service, service.close(ws["workspaceId"], rev, dirty_policy="discard"))
    assert closed["open"] is False and closed["workspaceEpoch"] == service.info()["workspaceEpoch"]


def test_dirty_save_failure_keeps_the_workspace(archive: Path, other: Path) -> None:
    service = PvfService()
    first = open_now(service, archive)
    edited = service.apply_changes(first["workspaceId"], first["revision"], EDIT)
    archive.write_bytes(archive.read_bytes() + b"outside edit")
    code = code_of(
        lambda: open_now(service, other, dirty_policy="save", expected_revision=edited["revision"])
    )
    assert code == "SOURCE_CHANGED"
    info = service.info()
    assert info["workspaceId"] == first["workspaceId"] and info["sourceDirty"] is True


def test_drafts_block_lifecycle(archive: Path) -> None:
    service = PvfService()
    service.drafts.ack_timeout = 0.3
    first = open_now(service, archive)
    ws, rev = first["workspaceId"], first["revision"]
    service.drafts.register("main-editor")

    # a window that never answers the prepare: UI_NOT_READY, not "no drafts"
    assert code_of(lambda: finish(service, service.save(ws, rev))) == "UI_NOT_READY"

    def answer(dirty: bool) -> threading.Thread:
        def loop() -> None:
            for _ in range(200):
                pending = service.drafts.pending("main-editor")
                if pending:
                    service.drafts.ack(pending[0], "main-editor", dirty)
                    return
                threading.Event().wait(0.01)

        thread = threading.Thread(target=loop)
        thread.start()
        return thread

    service.drafts.ack_timeout = 5.0
    thread = answer(dirty=True)
    assert (
        code_of(lambda: finish(service, service.close(ws, rev, dirty_policy="discard"))) == "UI_DRAFT_PENDING"
    )
    thread.join()
    assert service.info()["open"] is True

    thread = answer(dirty=False)
    saved = finish(service, service.save(ws, rev))
    thread.join()
    assert saved["diskCommitted"] is True
    assert not service.drafts.frozen


def test_occupancy_task_busy_and_plan_pending(archive: Path) -> None:
    service = PvfService()
    first = open_now(service, archive)
    ws, rev = first["workspaceId"], first["revision"]
    with service.begin_write("script-apply", ws, rev):
        assert code_of(lambda: service.save(ws, rev)) == "TASK_BUSY"
    plan = service.plans.create("script", {"changes": 1})
    assert code_of(lambda: service.close(ws, rev)) == "PLAN_PENDING"
    service.plans.discard("script", plan.plan_id)
    export = service.plans.create("export", {})
    assert code_of(lambda: service.save(ws, rev)) == "EXPORT_PLAN_PENDING"
    service.plans.discard("export", export.plan_id)
    finish(service, service.save(ws, rev))


def test_lifecycle_is_mutually_exclusive(archive: Path, tmp_path: Path) -> None:
    service = PvfService()
    service.drafts.ack_timeout = 1.0
    first = open_now(service, archive)
    ws, rev = first["workspaceId"], first["revision"]
    service.drafts.register("slow-window")  # holds the save in its prepare phase
    handle = service.save(ws, rev)
    assert code_of(lambda: service.save_as(ws, rev, str(tmp_path / "x.pvf"))) == "LIFECYCLE_BUSY"
    assert code_of(lambda: service.apply_changes(ws, rev, EDIT)) == "LIFECYCLE_BUSY"
    assert service.info()["lifecycleTask"] == handle["taskId"]
    assert code_of(lambda: finish(service, handle)) == "UI_NOT_READY"
    service.drafts.unregister("slow-window")
    assert service.info()["lifecycleTask"] is None
    finish(service, service.save(ws, rev))


def test_not_ready_while_the_index_builds(archive: Path) -> None:
    service = PvfService(index_wait=0.0)
    opened = open_now(service, archive)
    ws = service.workspace
    assert ws is not None
    service._index = None  # the next search starts a new build
    with ws.lock:  # the build reads the archive under this lock, so it cannot finish yet
        err = code_of(lambda: service.search(opened["workspaceId"], "sword"))
        assert err == "NOT_READY"
        assert service.info()["indexStatus"] == "building"
    service.index_wait = 30.0
    assert service.search(opened["workspaceId"], "sword")["hits"]


def test_edits_are_found_by_search_and_read(archive: Path) -> None:
    service = PvfService(index_wait=30.0)
    opened = open_now(service, archive)
    ws, rev = opened["workspaceId"], opened["revision"]
    assert service.search(ws, "sword of trial 8")["hits"]
    moved = service.apply_changes(
        ws,
        rev,
        {
            "equipment/weapon/sword/00008.equ": "#PVF_File\n[name]\n`Wooden Plank`\n",
            "new/added file.equ": "#PVF_File\n[name]\n`Brand New Thing`\n",
            "skill/s3.skl": None,
        },
    )
    assert [h["path"] for h in service.search(ws, "wooden plank")["hits"]] == [
        "equipment/weapon/sword/00008.equ"
    ]
    assert [h["path"] for h in service.search(ws, "brand new")["hits"]] == ["new/added file.equ"]
    assert service.search(ws, "skill 3", extensions=(".skl",))["hits"] == []
    assert "sword/00008" not in str(service.search(ws, "sword of trial 8")["hits"])
    assert service.read_file(ws, "new/added file.equ")["text"].endswith("`Brand New Thing`\n")
    assert code_of(lambda: service.read_file(ws, "skill/s3.skl")) == "NOT_FOUND"
    assert service.info()["fileCount"] == opened["fileCount"]  # one added, one deleted
    assert moved["revision"] == rev + 1


def test_index_cache_makes_the_second_open_warm(archive: Path, tmp_path: Path) -> None:
    cache = tmp_path / "index cache"
    service = PvfService(index_wait=30.0, index_cache=cache)
    first = open_now(service, archive)
    cold = service.tasks.wait(service.info()["indexTaskId"], 30)["result"]
    hits = service.search(first["workspaceId"], "axe of trial")["hits"]
    assert cold["cached"] is False and len(list(cache.glob("*.idx"))) == 1
    second = open_now(service, archive)
    warm = service.tasks.wait(service.info()["indexTaskId"], 30)["result"]
    assert warm["cached"] is True
    assert service.search(second["workspaceId"], "axe of trial")["hits"] == hits
    # a damaged cache file is rebuilt, not trusted
    cached_file = next(cache.glob("*.idx"))
    cached_file.write_bytes(cached_file.read_bytes()[:100])
    third = open_now(service, archive)
    rebuilt = service.tasks.wait(service.info()["indexTaskId"], 30)["result"]
    assert rebuilt["cached"] is False
    assert service.search(third["workspaceId"], "axe of trial")["hits"] == hits
