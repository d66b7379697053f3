"""Scripts through the workbench service: run → status → preview → apply → save → reopen."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from moddesk.kit.errors import ServiceError
from moddesk.kit.plans import PlanRegistry
from moddesk.pvf.archive import Archive
from moddesk.pvf.scripting.help import EXAMPLES
from moddesk.pvf.scripting.service import ScriptService
from moddesk.pvf.service import PvfService

RAISE = EXAMPLES["raise-price"][1]


def make_archive(path: Path) -> Path:
    archive = Archive.new("classic")
    for i in range(12):
        price = 5 if i % 3 == 0 else 100 + i
        archive.write_text(
            f"equipment/weapon/w{i:02}.equ",
            f"#PVF_File\n[name]\n`Weapon {i}`\n[grade]\n\t{i % 4}\n[price]\n\t{price}\n",
        )
    archive.write_text("equipment/equipment.lst", "#PVF_File\n1\t`weapon/w00.equ`\n")
    archive.write_bytes("etc/blob.bin", bytes(range(64)))
    archive.save_as(path)
    archive.close()
    return path


def wait(service: PvfService, started: dict[str, Any]) -> dict[str, Any]:
    status = service.tasks.wait(started["taskId"], 60)
    assert status["state"] == "succeeded", status.get("error")
    return status["result"]


@pytest.fixture
def opened(tmp_path: Path) -> tuple[PvfService, ScriptService, str, int, Path]:
    path = make_archive(tmp_path / "My Script.pvf")
    service = PvfService()
    result = wait(service, service.open(str(path), service.epoch))
    scripts = ScriptService(service)
    return service, scripts, result["workspaceId"], result["revision"], path


def run_to_plan(
    scripts: ScriptService, ws: str, rev: int, source: str, scope: str = "local"
) -> dict[str, Any]:
    started = scripts.run(ws, rev, source, scope=scope)
    scripts.service.tasks.wait(started["taskId"], 60)
    return scripts.status(started["taskId"])


def test_seed_flow_end_to_end(opened: tuple[PvfService, ScriptService, str, int, Path]) -> None:
    service, scripts, ws, rev, path = opened
    status = run_to_plan(scripts, ws, rev, RAISE)
    assert status["state"] == "succeeded"
    assert status["logs"] == ["raised 4 prices"]
    plan_id = status["planId"]
    assert status["result"]["changes"] == {"add": 0, "modify": 4, "delete": 0}

    page = scripts.preview(plan_id, limit=3)
    assert page["total"] == 4 and len(page["items"]) == 3 and page["nextCursor"]
    rest = scripts.preview(plan_id, limit=3, cursor=page["nextCursor"])
    items = page["items"] + rest["items"]
    assert all("-\t5" in i["diff"] and "+\t10" in i["diff"] for i in items)

    chosen = [i["changeKey"] for i in items[:2]]
    applied = scripts.apply(plan_id, rev, chosen, request_id="apply-1")
    assert applied["applied"] == {"add": 0, "modify": 2, "delete": 0} and applied["skipped"] == 2
    new_rev = applied["revision"]
    assert new_rev == rev + 1
    # replaying the same request gives the recorded answer, the plan is gone for new ones
    assert scripts.apply(plan_id, rev, chosen, request_id="apply-1") == applied
    with pytest.raises(ServiceError) as caught:
        scripts.apply(plan_id, new_rev, chosen)
    assert caught.value.code == "PLAN_NOT_FOUND"

    edited = items[0]["path"]
    untouched = items[3]["path"]
    assert "[price]\n\t10" in service.read_file(ws, edited)["text"]
    assert "[price]\n\t5" in service.read_file(ws, untouched)["text"]

    wait(service, service.save(ws, new_rev))
    service.shutdown()
    again = PvfService()
    reopened = wait(again, again.open(str(path), again.epoch))
    assert "[price]\n\t10" in again.read_file(reopened["workspaceId"], edited)["text"]
    assert "[price]\n\t5" in again.read_file(reopened["workspaceId"], untouched)["text"]
    again.shutdown()


def test_read_only_query_leaves_no_plan(opened: tuple[PvfService, ScriptService, str, int, Path]) -> None:
    service, scripts, ws, rev, _ = opened
    status = run_to_plan(scripts, ws, rev, 'pvf.log(pvf.glob("**/*.equ").length);')
    assert status["logs"] == ["12"]
    assert status["planId"] is None
    assert service.plans.pending("script") is None


def test_stale_plan_pending_plan_and_failed_runs(
    opened: tuple[PvfService, ScriptService, str, int, Path],
) -> None:
    service, scripts, ws, rev, _ = opened
    status = run_to_plan(scripts, ws, rev, RAISE)
    plan_id = status["planId"]
    with pytest.raises(ServiceError) as caught:
        scripts.run(ws, rev, RAISE)
    assert caught.value.code == "PLAN_PENDING"
    # someone else edits the workspace meanwhile
    moved = service.apply_changes(ws, rev, {"equipment/new.equ": "#PVF_File\n[price]\n\t1\n"})["revision"]
    keys = [i["changeKey"] for i in scripts.preview(plan_id)["items"]]
    with pytest.raises(ServiceError) as caught:
        scripts.apply(plan_id, moved, keys)
    assert caught.value.code == "STALE_PLAN"
    with pytest.raises(ServiceError) as caught:
        scripts.apply(plan_id, rev, keys)
    assert caught.value.code == "STALE_WORKSPACE"
    scripts.discard(plan_id)

    failed = scripts.run(ws, moved, "pvf.log('before');\nnull.boom;")
    status = service.tasks.wait(failed["taskId"], 60)
    assert status["state"] == "failed"
    assert status["error"]["error"] == "SCRIPT_FAILED"
    assert status["error"]["diagnostics"][0]["line"] == 2
    assert status["logs"] == ["before"]
    assert service.plans.pending("script") is None
    # the service stays healthy and serves the next run
    assert run_to_plan(scripts, ws, moved, "pvf.log('next');")["logs"] == ["next"]


def test_cancel_only_own_task(opened: tuple[PvfService, ScriptService, str, int, Path]) -> None:
    service, scripts, ws, rev, _ = opened
    started = scripts.run(ws, rev, "while (true) {}", scope="client:a")
    with pytest.raises(ServiceError) as caught:
        scripts.cancel(started["taskId"], scope="client:b")
    assert caught.value.code == "TASK_NOT_OWNED"
    with pytest.raises(ServiceError) as caught:
        scripts.run(ws, rev, "1")
    assert caught.value.code == "TASK_BUSY"
    scripts.cancel(started["taskId"], scope="client:a")
    assert service.tasks.wait(started["taskId"], 30)["state"] == "cancelled"


def test_plan_expires(tmp_path: Path) -> None:
    clock = [0.0]
    service = PvfService(plans=PlanRegistry(ttl_seconds=60, clock=lambda: clock[0]))
    path = make_archive(tmp_path / "a.pvf")
    opened = wait(service, service.open(str(path), service.epoch))
    scripts = ScriptService(service)
    status = run_to_plan(scripts, opened["workspaceId"], opened["revision"], RAISE)
    clock[0] += 61
    with pytest.raises(ServiceError) as caught:
        scripts.preview(status["planId"])
    assert caught.value.code == "PLAN_EXPIRED"
    service.shutdown()


def test_fileset_changes_are_refused_over_mcp(
    opened: tuple[PvfService, ScriptService, str, int, Path],
) -> None:
    _service, scripts, ws, rev, _ = opened
    status = run_to_plan(scripts, ws, rev, 'pvf.createFileset("cheap", ["equipment/weapon/w00.equ"]);')
    assert status["planId"] is not None
    assert status["result"]["filesetChanges"] == ["cheap"]
    with pytest.raises(ServiceError) as caught:
        scripts.apply(status["planId"], rev, ["none"], caller="mcp")
    assert caught.value.code == "UNSUPPORTED_CHANGE"
    assert "filesets" in caught.value.message


def test_plan_size_limits_have_their_own_code(tmp_path: Path) -> None:
    from moddesk.pvf.scripting.runtime import ScriptLimits

    path = make_archive(tmp_path / "Limits.pvf")
    service = PvfService()
    opened = wait(service, service.open(str(path), service.epoch))
    ws, rev = opened["workspaceId"], opened["revision"]
    many = 'for (let i = 0; i < 8; i++) pvf.createFile(`new/f${i}.equ`, 1, "#PVF_File\\n[name]\\n`x`\\n");'
    big = 'pvf.createFile("new/big.equ", 1, "#PVF_File\\n[name]\\n`" + "y".repeat(5000) + "`\\n");'
    for source, limits, words in [
        (many, ScriptLimits(max_plan_files=5), "more than 5 files"),
        (big, ScriptLimits(max_plan_bytes=4000), "the limit is 4000"),
    ]:
        scripts = ScriptService(service, limits)
        started = scripts.run(ws, rev, source)
        status = service.tasks.wait(started["taskId"], 60)
        assert status["state"] == "failed"
        assert status["error"]["error"] == "PLAN_TOO_LARGE" and words in status["error"]["message"]
        assert service.plans.pending("script") is None
    within = ScriptService(service, ScriptLimits(max_plan_files=8))
    assert wait(service, within.run(ws, rev, many))["changes"]["add"] == 8


def test_logs_dropped_counts_every_line(opened: tuple[PvfService, ScriptService, str, int, Path]) -> None:
    from moddesk.pvf.scripting.runtime import ScriptLimits

    service, _, ws, rev, _ = opened
    scripts = ScriptService(service, ScriptLimits(max_log_lines=100))
    started = scripts.run(ws, rev, "for (let i = 0; i < 15100; i++) pvf.log(`line ${i}`);")
    status = service.tasks.wait(started["taskId"], 120)
    assert status["state"] == "succeeded", status.get("error")
    assert status["logsTotal"] == 101  # 100 lines and the note saying how many were dropped
    assert status["logsDropped"] == 15000


def test_the_agent_learns_what_the_person_did_with_its_plan(
    opened: tuple[PvfService, ScriptService, str, int, Path],
) -> None:
    _, scripts, ws, rev, _ = opened
    status = run_to_plan(scripts, ws, rev, RAISE)
    assert status["planState"] == "pending" and not status["appliedByPerson"]
    # the person applies it on the page (caller "ui"): the agent's status says so, with the revision
    keys = [i["changeKey"] for i in scripts.preview(status["planId"])["items"]]
    applied = scripts.apply(status["planId"], rev, keys, caller="ui")
    after = scripts.status(status["taskId"])
    assert after["planState"] == "applied" and after["appliedByPerson"] is True
    assert after["discardedByPerson"] is False and after["resultingRevision"] == applied["revision"]
    # the next plan is discarded by the person: discardedByPerson, at the revision it was dropped at
    second = run_to_plan(scripts, ws, applied["revision"], RAISE.replace("< 10", "< 999"))
    scripts.discard(second["planId"], by="person")
    dropped = scripts.status(second["taskId"])
    assert dropped["planState"] == "discarded" and dropped["discardedByPerson"] is True
    assert dropped["resultingRevision"] == applied["revision"]
    # an agent's own discard is not reported as the person's
    third = run_to_plan(scripts, ws, applied["revision"], RAISE.replace("< 10", "< 999"))
    scripts.discard(third["planId"])
    mine = scripts.status(third["taskId"])
    assert mine["planState"] == "discarded" and mine["discardedByPerson"] is False
