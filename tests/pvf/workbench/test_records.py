"""Annotation explain over the open workspace: rendered .lst texts are reused per revision, never stale."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from moddesk.pvf.archive import Archive
from moddesk.pvf.service import PvfService
from moddesk.pvf.workbench.records import ListTexts

from .test_lifecycle import open_now

LIST = "equipment/equipment.lst"
BLADE = "equipment/weapon/blade.equ"
BLADE_TEXT = "#PVF_File\n\n[name]\n\t`Blade`\n\n[set item]\n\t100\t101\n[/set item]\n"


def _archive(path: Path) -> Path:
    archive = Archive.new("90CN")
    archive.write_text(LIST, "#PVF_File\n\n100\n`weapon/blade.equ`\n")
    archive.write_text(BLADE, BLADE_TEXT)
    archive.write_text("equipment/weapon/bow.equ", "#PVF_File\n\n[name]\n\t`Bow`\n")
    archive.save_as(path)
    archive.close()
    return path


def _set_refs(service: PvfService, ws: str, revision: int) -> dict[str, Any]:
    explained = service.annotation_explain(ws, BLADE, expected_revision=revision, limit=100)
    return {a["value"]: a["reference"] for a in explained["annotations"] if a["ruleIds"] == ["equ.set-item"]}


def test_list_text_is_rendered_once_per_revision_and_follows_edits(tmp_path: Path) -> None:
    service = PvfService()
    try:
        opened = open_now(service, _archive(tmp_path / "Script.pvf"))
        ws, revision = opened["workspaceId"], opened["revision"]
        workspace = service.workspace
        assert workspace is not None

        first = _set_refs(service, ws, revision)
        assert first["100"]["resolutionStatus"] == "resolved" and first["100"]["name"] == "Blade"
        assert first["101"]["resolutionStatus"] == "missing"
        # the same revision: the very text object explain read before, not a new rendering
        cached = service._list_texts.read(workspace, LIST)
        assert cached is not None and service._list_texts.read(workspace, LIST) is cached
        assert _set_refs(service, ws, revision) == first

        # an edit of the list moves the revision: explain sees the new list at once
        edited = service.apply_changes(
            ws, revision, {LIST: "#PVF_File\n\n100\n`weapon/blade.equ`\n101\n`weapon/bow.equ`\n"}
        )["revision"]
        second = _set_refs(service, ws, edited)
        assert second["101"]["resolutionStatus"] == "resolved" and second["101"]["name"] == "Bow"
        assert service._list_texts.read(workspace, LIST) is not cached

        # deleting the list: the relation reports the list as absent
        gone = service.apply_changes(ws, edited, {LIST: None})["revision"]
        third = _set_refs(service, ws, gone)
        assert (
            third["100"]["resolutionStatus"] == "missing" and "not in the archive" in third["100"]["reason"]
        )
    finally:
        service.shutdown()


def test_list_texts_keep_only_the_open_workspace_and_the_newest_revision(tmp_path: Path) -> None:
    service = PvfService()
    lists = ListTexts(capacity=2)
    try:
        first = open_now(service, _archive(tmp_path / "a.pvf"))
        ws_a = service.workspace
        assert ws_a is not None
        text_a = lists.read(ws_a, LIST)
        assert text_a is not None and "weapon/blade.equ" in text_a
        assert lists.read(ws_a, "equipment/none.lst") is None  # absent: None, and that is kept too
        assert lists.read(ws_a, "equipment/none.lst") is None

        service.apply_changes(first["workspaceId"], first["revision"], {LIST: "#PVF_File\n\n7\n`x.equ`\n"})
        newer = lists.read(ws_a, LIST)
        assert newer is not None and "x.equ" in newer
        assert len(lists._items) == 2  # the older revision of the list was dropped

        open_now(service, _archive(tmp_path / "b.pvf"), dirty_policy="discard")
        ws_b = service.workspace
        assert ws_b is not None and ws_b is not ws_a
        assert lists.read(ws_b, LIST) == text_a
        assert [key[0] for key in lists._items] == [ws_b.workspace_id]  # the closed workspace's lists went
    finally:
        service.shutdown()
