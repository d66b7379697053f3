"""Export: sources, direct and MOD layouts, warnings, no-overwrite publishing, staleness."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from moddesk.kit.errors import ServiceError
from moddesk.pvf.archive import Archive
from moddesk.pvf.service import PvfService
from moddesk.pvf.transfer.exports import ExportService
from moddesk.pvf.transfer.writers import warning_id

from .conftest import Bench

NEW_LST = "#PVF_File\n1\t`weapon/w0.equ`\n2\t`weapon/w1.equ`\n3\t`weapon/w9.equ`\n"


def edit(bench: Bench) -> int:
    """Modify a script, add one with its list entry, delete one, touch the binary."""
    changes = {
        "equipment/weapon/w2.equ": "#PVF_File\n[name]\n`Weapon 2`\n[price]\n\t999\n",
        "equipment/weapon/w9.equ": "#PVF_File\n[name]\n`Weapon 9`\n",
        "equipment/equipment.lst": NEW_LST,
        "equipment/weapon/w5.equ": None,
    }
    return bench.service.apply_changes(bench.ws, bench.revision, changes)["revision"]


def out_dir(tmp_path: Path) -> Path:
    path = tmp_path / "exports here"
    path.mkdir(exist_ok=True)
    return path


def test_direct_selection_export(bench: Bench, tmp_path: Path) -> None:
    plan = bench.exports.prepare(bench.ws, bench.revision, "selection", ["equipment/weapon", "etc/blob.bin"])
    preview = bench.exports.preview(plan["planId"])
    assert preview["total"] == 7 and preview["warnings"] == []
    result = bench.exports.execute(plan["planId"], str(out_dir(tmp_path)), "dump", request_id="e1")
    root = Path(result["outputPath"])
    assert root == out_dir(tmp_path) / "dump" and result["files"] == 7
    assert (root / "etc" / "blob.bin").read_bytes() == bytes(range(32))
    assert "`Weapon 3`" in (root / "equipment" / "weapon" / "w3.equ").read_text()
    # a retry after a lost response answers the same, and writes nothing new
    assert bench.exports.execute(plan["planId"], str(out_dir(tmp_path)), "dump", request_id="e1") == result
    # a second export to the same name is refused, the first one untouched
    again = bench.exports.prepare(bench.ws, bench.revision, "selection", [""])
    with pytest.raises(ServiceError) as caught:
        bench.exports.execute(again["planId"], str(out_dir(tmp_path)), "dump")
    assert caught.value.code == "TARGET_EXISTS"
    assert sorted(p.name for p in out_dir(tmp_path).iterdir()) == ["dump"]


def test_memory_source_110usextend_layout(bench: Bench, tmp_path: Path) -> None:
    edit(bench)
    plan = bench.exports.prepare(
        bench.ws, bench.revision, "memory", mode="mod", fmt="110USextend", name="MyMod", version="2.1"
    )
    preview = bench.exports.preview(plan["planId"])
    keys = {e["entryKey"] for e in preview["entries"]}
    assert keys == {
        "pvf/equipment/weapon/w2.equ",
        "pvf/equipment/weapon/w9.equ",
        "merge/equipment/equipment.lst",
    }
    [skipped] = preview["skippedDeletes"]
    assert skipped["path"] == "equipment/weapon/w5.equ"
    assert skipped["reason"] == "110USextend cannot express deleting a file"
    # the skipped delete is a warning with a stable id that execute must be given back
    [warning] = [w for w in preview["warnings"] if w["code"] == "skipped-delete"]
    assert warning["warningId"] == skipped["warningId"] and "w5.equ" in warning["path"]
    assert skipped["warningId"] == warning_id(
        "skipped-delete", "equipment/weapon/w5.equ"
    )  # stable: by content
    lst_entry = next(e for e in preview["entries"] if e["entryKey"].startswith("merge/"))
    assert lst_entry["dependsOn"] == ["pvf/equipment/weapon/w9.equ"]
    with pytest.raises(ServiceError) as caught:
        bench.exports.execute(plan["planId"], str(out_dir(tmp_path)))
    assert caught.value.code == "WARNINGS_NOT_ACKNOWLEDGED"
    assert [w["warningId"] for w in caught.value.details["warnings"]] == [skipped["warningId"]]
    result = bench.exports.execute(
        plan["planId"], str(out_dir(tmp_path)), acknowledged_warning_ids=[skipped["warningId"]]
    )
    root = Path(result["outputPath"])
    assert root.name == "MyMod-2.1"
    pack = json.loads((root / "pack.json").read_text())
    assert pack == {
        "name": "MyMod",
        "version": "2.1",
        "priority": 100,
        "enabled": True,
        "types": {"equipment/weapon/w2.equ": 1, "equipment/weapon/w9.equ": 1},
        "baseSha256": {"equipment/weapon/w2.equ": pack["baseSha256"]["equipment/weapon/w2.equ"]},
    }
    assert len(pack["baseSha256"]["equipment/weapon/w2.equ"]) == 64, "w2 replaced a file; w9 is new"
    assert (root / "merge" / "equipment" / "equipment.lst").read_text() == "3\t`weapon/w9.equ`\n"
    assert "999" in (root / "pvf" / "equipment" / "weapon" / "w2.equ").read_text()


def test_deselecting_a_dependency_needs_acknowledgement(bench: Bench, tmp_path: Path) -> None:
    edit(bench)
    plan = bench.exports.prepare(
        bench.ws, bench.revision, "memory", mode="mod", fmt="110USextend", name="Deps"
    )
    keys = ["merge/equipment/equipment.lst", "pvf/equipment/weapon/w2.equ"]
    with pytest.raises(ServiceError) as caught:
        bench.exports.execute(plan["planId"], str(out_dir(tmp_path)), selected_entry_keys=keys)
    assert caught.value.code == "WARNINGS_NOT_ACKNOWLEDGED"
    by_code = {w["code"]: w["warningId"] for w in caught.value.details["warnings"]}
    assert set(by_code) == {"dependency-removed", "skipped-delete"}  # the deleted w5 is skipped too
    result = bench.exports.execute(
        plan["planId"],
        str(out_dir(tmp_path)),
        selected_entry_keys=keys,
        acknowledged_warning_ids=list(by_code.values()),
    )
    pack = json.loads((Path(result["outputPath"]) / "pack.json").read_text())
    assert pack["types"] == {"equipment/weapon/w2.equ": 1}, "metadata is rebuilt for the chosen entries"


def test_selection_tables_without_baseline_are_skipped_with_a_warning(bench: Bench, tmp_path: Path) -> None:
    plan = bench.exports.prepare(
        bench.ws, bench.revision, "selection", ["equipment"], mode="mod", fmt="110USextend", name="Whole"
    )
    preview = bench.exports.preview(plan["planId"])
    assert [w["code"] for w in preview["warnings"]] == ["no-baseline"]
    assert not any(e["entryKey"].startswith("merge/") for e in preview["entries"])
    ids = [w["warningId"] for w in preview["warnings"]]
    again_ids = None
    bench.exports.discard(plan["planId"])
    again = bench.exports.prepare(
        bench.ws, bench.revision, "selection", ["equipment"], mode="mod", fmt="110USextend", name="Whole"
    )
    again_ids = [w["warningId"] for w in bench.exports.preview(again["planId"])["warnings"]]
    assert again_ids == ids, "warning ids are stable"
    with pytest.raises(ServiceError):
        bench.exports.execute(again["planId"], str(out_dir(tmp_path)))
    bench.exports.execute(again["planId"], str(out_dir(tmp_path)), acknowledged_warning_ids=ids)


def test_115cn_mod_zip(bench: Bench, tmp_path: Path) -> None:
    edit(bench)
    with pytest.raises(ServiceError) as caught:
        bench.exports.prepare(bench.ws, bench.revision, "memory", mode="mod", fmt="115CN-mod", name="Zip")
    assert caught.value.code == "INVALID_ARGUMENT" and "modId" in caught.value.message
    plan = bench.exports.prepare(
        bench.ws, bench.revision, "memory", mode="mod", fmt="115CN-mod", name="Zip", mod_id="com.example.zip"
    )
    skipped = [d["warningId"] for d in bench.exports.preview(plan["planId"])["skippedDeletes"]]
    result = bench.exports.execute(plan["planId"], str(out_dir(tmp_path)), acknowledged_warning_ids=skipped)
    path = Path(result["outputPath"])
    assert path.name == "Zip-1.0.zip"
    with zipfile.ZipFile(path) as archive:
        names = archive.namelist()
        manifest = json.loads(archive.read("mod.json"))
    assert names[0] == "mod.json"
    assert "merge/equipment/equipment.lst" in names and "pvf/equipment/weapon/w9.equ" in names
    assert "pvf/equipment/equipment.lst" not in names, "a list ships its changed entries, not the whole table"
    assert manifest["modId"] == "com.example.zip" and manifest["format"] == "115CN-mod"
    assert {e["path"] for e in manifest["entries"]} == {
        "equipment/equipment.lst",
        "equipment/weapon/w2.equ",
        "equipment/weapon/w9.equ",
    }
    assert [e["path"] for e in manifest["entries"] if e.get("merge")] == ["equipment/equipment.lst"]


def test_direct_export_of_a_deletion_writes_previous_content(bench: Bench, tmp_path: Path) -> None:
    edit(bench)
    plan = bench.exports.prepare(bench.ws, bench.revision, "memory")
    preview = bench.exports.preview(plan["planId"])
    warning = next(w for w in preview["warnings"] if w["code"] == "deleted-as-file")
    result = bench.exports.execute(
        plan["planId"], str(out_dir(tmp_path)), "changes", acknowledged_warning_ids=[warning["warningId"]]
    )
    assert "`Weapon 5`" in (Path(result["outputPath"]) / "equipment" / "weapon" / "w5.equ").read_text()


def test_export_plan_blocks_and_goes_stale(bench: Bench, tmp_path: Path) -> None:
    plan = bench.exports.prepare(bench.ws, bench.revision, "selection", ["etc"])
    with pytest.raises(ServiceError) as caught:
        bench.exports.prepare(bench.ws, bench.revision, "selection", ["etc"])
    assert caught.value.code == "EXPORT_PLAN_PENDING"
    with pytest.raises(ServiceError) as caught:
        bench.service.close(bench.ws, bench.revision, "discard")
    assert caught.value.code == "EXPORT_PLAN_PENDING"
    edit(bench)  # edits are allowed, and make the plan stale
    with pytest.raises(ServiceError) as caught:
        bench.exports.execute(plan["planId"], str(out_dir(tmp_path)), "late")
    assert caught.value.code == "STALE_EXPORT"
    assert not (out_dir(tmp_path) / "late").exists()
    bench.exports.discard(plan["planId"])
    bench.wait(bench.service.close(bench.ws, bench.revision, "discard"))


def test_only_deletions_is_refused(bench: Bench) -> None:
    bench.service.apply_changes(bench.ws, bench.revision, {"equipment/weapon/w5.equ": None})
    with pytest.raises(ServiceError) as caught:
        bench.exports.prepare(bench.ws, bench.revision, "memory", mode="mod", fmt="110USextend", name="Empty")
    assert caught.value.code == "NOTHING_TO_EXPORT"
    assert caught.value.details["skippedDeletes"][0]["path"] == "equipment/weapon/w5.equ"


def test_bad_names_are_refused(bench: Bench, tmp_path: Path) -> None:
    for name in ("", ".hidden", "con", "CON", "a/b", "x:y", "bad name/..", "../x"):
        with pytest.raises(ServiceError) as caught:
            bench.exports.prepare(
                bench.ws, bench.revision, "selection", ["etc"], mode="mod", fmt="110USextend", name=name
            )
        assert caught.value.code == "INVALID_ARGUMENT", name
        assert caught.value.hint and "folder name" in caught.value.hint, name  # says what would do
        assert caught.value.to_payload()["errorZh"]
    # a direct export's outputName is checked the same way, with the same hint
    plan = bench.exports.prepare(bench.ws, bench.revision, "selection", ["etc"])
    for name in ("../x", "CON", "a/b"):
        with pytest.raises(ServiceError) as caught:
            bench.exports.execute(plan["planId"], str(out_dir(tmp_path)), name)
        assert caught.value.code == "INVALID_ARGUMENT" and caught.value.hint, name
    bench.exports.discard(plan["planId"])


def _export_fails(bench: Bench, parent: Path) -> ServiceError:
    plan = bench.exports.prepare(bench.ws, bench.revision, "selection", ["equipment/weapon", "etc/blob.bin"])
    with pytest.raises(ServiceError) as caught:
        bench.exports.execute(plan["planId"], str(parent), "dump")
    return caught.value


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX resource limits")
def test_an_os_failure_is_export_failed_with_the_reason(bench: Bench, tmp_path: Path) -> None:
    import resource

    parent = out_dir(tmp_path)
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    previous = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (16, hard))  # every file over 16 bytes fails: EFBIG
    try:
        error = _export_fails(bench, parent)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, previous)
    assert error.code == "EXPORT_FAILED" and "File too large" in error.message
    assert error.details["errno"] == "EFBIG"
    assert list(parent.iterdir()) == []  # nothing published, no temp left


def test_a_read_only_folder_is_export_failed(bench: Bench, tmp_path: Path) -> None:
    parent = out_dir(tmp_path)
    if os.name == "posix" and os.geteuid() == 0:
        # root ignores permission bits; the immutable flag still stops it (where chattr works)
        if subprocess.run(["chattr", "+i", str(parent)], capture_output=True).returncode != 0:
            pytest.skip("running as root without chattr: no way to make a read-only folder")
        undo = ["chattr", "-i", str(parent)]
    else:
        parent.chmod(0o555)
        undo = []
    try:
        error = _export_fails(bench, parent)
    finally:
        if undo:
            subprocess.run(undo, check=True)
        parent.chmod(0o755)
    assert error.code == "EXPORT_FAILED"
    assert any(
        reason in error.message for reason in ("Permission denied", "Operation not permitted", "Read-only")
    )
    assert list(parent.iterdir()) == []


def test_target_exists_names_real_parameters(bench: Bench, tmp_path: Path) -> None:
    (out_dir(tmp_path) / "dump").mkdir()
    error = _export_fails(bench, out_dir(tmp_path))
    assert error.code == "TARGET_EXISTS"
    assert error.hint is not None and "overwrite" not in error.hint.lower() and "outputName" in error.hint


def test_agents_export_within_the_seed_limits_the_person_beyond(tmp_path: Path) -> None:
    from moddesk.pvf.archive import Archive
    from moddesk.pvf.service import PvfService
    from moddesk.pvf.transfer.exports import ExportService
    from moddesk.pvf.transfer.sources import AGENT_EXPORT_LIMITS, PERSON_EXPORT_LIMITS

    assert (AGENT_EXPORT_LIMITS.files, AGENT_EXPORT_LIMITS.bytes) == (10_000, 128 << 20)  # seed 001
    path = tmp_path / "many.pvf"
    archive = Archive.new("classic")
    for i in range(AGENT_EXPORT_LIMITS.files + 1):
        archive.write_bytes(f"etc/many/f{i:05}.bin", b"x")
    archive.save_as(path)
    archive.close()
    service = PvfService()
    opened = service.tasks.wait(service.open(str(path), service.epoch)["taskId"], 120)["result"]
    exports = ExportService(service)
    ws, rev = opened["workspaceId"], opened["revision"]
    with pytest.raises(ServiceError) as caught:
        exports.prepare(ws, rev, "selection", ["etc/many"])  # what the MCP tool calls
    assert caught.value.code == "INVALID_ARGUMENT" and "at most 10000" in caught.value.message
    assert caught.value.hint and "moddesk pvf export" in caught.value.hint
    plan = exports.prepare(ws, rev, "selection", ["etc/many"], limits=PERSON_EXPORT_LIMITS)
    assert plan["entries"] == AGENT_EXPORT_LIMITS.files + 1
    service.shutdown()


def test_a_damaged_entry_is_exported_only_once_acknowledged(tmp_path: Path) -> None:
    """#35: an entry whose stored checksum fails is a warning execute must be given back."""
    path = tmp_path / "damaged archive" / "Script.pvf"
    path.parent.mkdir()
    pvf = Archive.new("classic", region="cn")
    pvf.write_text("equipment/a.equ", "#PVF_File\n[grade]\n\t74\n[price]\n\t1000\n")
    pvf.write_text("equipment/b.equ", "#PVF_File\n[grade]\n\t12\n")
    pvf.save_as(path)
    pvf.close()
    with Archive.open(path) as pvf:
        directory = pvf._classic
        assert directory is not None
        where = directory.base + int(directory.offsets[pvf.getinfo("equipment/a.equ").index]) + 8
    raw = bytearray(path.read_bytes())
    raw[where] ^= 0x01
    path.write_bytes(bytes(raw))

    service = PvfService()
    try:
        ws = service.tasks.wait(service.open(str(path), service.epoch)["taskId"], 60)["result"]["workspaceId"]
        exports = ExportService(service)
        revision = service.workspace.revision if service.workspace else 0
        plan = exports.prepare(ws, revision, "selection", ["equipment"])
        warnings = exports.preview(plan["planId"])["warnings"]
        damaged = [w for w in warnings if w["code"] == "damaged"]
        assert [w["path"] for w in damaged] == ["equipment/a.equ"]
        assert damaged[0]["warningId"] == warning_id("damaged", "equipment/a.equ")
        with pytest.raises(ServiceError) as caught:
            exports.execute(plan["planId"], str(out_dir(tmp_path)), "dump")
        assert caught.value.code == "WARNINGS_NOT_ACKNOWLEDGED"
        assert not (out_dir(tmp_path) / "dump").exists()
        result = exports.execute(
            plan["planId"], str(out_dir(tmp_path)), "dump", acknowledged_warning_ids=[damaged[0]["warningId"]]
        )
        assert result["files"] == 2
    finally:
        service.shutdown()
