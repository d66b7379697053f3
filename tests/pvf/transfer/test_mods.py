"""MOD packages read back and applied: round trip, merges, conflicts, refusals of bad packages."""

from __future__ import annotations

import hashlib
import json
import shutil
import zipfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from moddesk.kit.errors import ServiceError
from moddesk.pvf.archive import Archive
from moddesk.pvf.listtext import edit_list, list_entries
from moddesk.pvf.service import PvfService
from moddesk.pvf.transfer.modread import read_mod
from moddesk.pvf.transfer.mods import ModService

from .conftest import Bench, make_archive


def open_copy(base: Path, folder: Path) -> tuple[PvfService, ModService, str]:
    folder.mkdir(parents=True, exist_ok=True)
    copy = folder / "Script.pvf"
    shutil.copyfile(base, copy)
    service = PvfService()
    status = service.tasks.wait(service.open(str(copy), service.epoch)["taskId"], 60)
    assert status["state"] == "succeeded", status.get("error")
    return service, ModService(service), status["result"]["workspaceId"]


def revision(service: PvfService) -> int:
    assert service.workspace is not None
    return service.workspace.revision


def edit_a(bench: Bench, new_id: int = 7, new_name: str = "w9") -> None:
    """Archive A: a changed script, a new script with its list entry (edited in place)."""
    ws = bench.service.workspace
    assert ws is not None
    lst = ws.current_text_or_none("equipment/equipment.lst") or ""
    entries = {**list_entries(lst), new_id: f"weapon/{new_name}.equ"}
    changes: dict[str, str | bytes | None] = {
        "equipment/weapon/w2.equ": "#PVF_File\n[name]\n`Weapon 2`\n[price]\n\t999\n",
        f"equipment/weapon/{new_name}.equ": f"#PVF_File\n[name]\n`Weapon {new_name}`\n",
        "equipment/equipment.lst": edit_list(lst, entries),
    }
    bench.service.apply_changes(bench.ws, bench.revision, changes)


def export_mod(bench: Bench, out: Path, fmt: str, name: str = "Mod") -> Path:
    out.mkdir(parents=True, exist_ok=True)
    plan = bench.exports.prepare(
        bench.ws, bench.revision, "memory", mode="mod", fmt=fmt, name=name, mod_id=f"com.example.{name}"
    )
    preview = bench.exports.preview(plan["planId"])
    acks = [w["warningId"] for w in preview["warnings"]]
    result = bench.exports.execute(plan["planId"], str(out), acknowledged_warning_ids=acks)
    return Path(result["outputPath"])


def apply_all(mods: ModService, ws: str, service: PvfService, package: Path, **res: str) -> dict[str, Any]:
    plan = mods.prepare(ws, str(package))
    return mods.apply(plan["planId"], revision(service), res)


@pytest.mark.parametrize("fmt", ["110USextend", "115CN-mod"])
def test_a_mod_of_a_applied_to_a_copy_of_its_base_gives_a(bench: Bench, tmp_path: Path, fmt: str) -> None:
    base = tmp_path / "base.pvf"
    shutil.copyfile(bench.path, base)
    edit_a(bench)
    package = export_mod(bench, tmp_path / "mods", fmt)
    service, mods, ws = open_copy(base, tmp_path / "copy")
    plan = mods.prepare(ws, str(package))
    assert plan["conflicts"] == 0 and plan["counts"] == {"add": 1, "overwrite": 1, "merge": 1, "unchanged": 0}
    mods.apply(plan["planId"], revision(service), {})
    a, b = bench.service.workspace, service.workspace
    assert a is not None and b is not None
    assert sorted(a.paths()) == sorted(b.paths())
    for path in a.paths():
        assert a.read_bytes(path) == b.read_bytes(path), path
    service.shutdown()


def test_two_mods_on_one_list_merge_or_conflict(tmp_path: Path) -> None:
    base = make_archive(tmp_path / "base.pvf")
    packages = []
    for n, (new_id, name) in enumerate([(7, "w7"), (8, "w8"), (7, "w77")]):
        service = PvfService()
        copy = tmp_path / f"a{n}" / "Script.pvf"
        copy.parent.mkdir()
        shutil.copyfile(base, copy)
        status = service.tasks.wait(service.open(str(copy), service.epoch)["taskId"], 60)
        from moddesk.pvf.transfer.exports import ExportService
        from moddesk.pvf.transfer.imports import ImportService

        bench = Bench(
            service, ImportService(service), ExportService(service), status["result"]["workspaceId"], copy
        )
        edit_a(bench, new_id, name)
        packages.append(export_mod(bench, tmp_path / f"out{n}", "110USextend", name=f"m{n}"))
        service.shutdown()
    service, mods, ws = open_copy(base, tmp_path / "target")
    apply_all(mods, ws, service, packages[0])
    # the second MOD adds another id to the same list: no conflict, both entries present
    plan = mods.prepare(ws, str(packages[1]))
    assert plan["conflicts"] == 0
    page = mods.preview(plan["planId"])
    lst = next(
        r["change"] for r in page["rows"] if r.get("change", {}).get("path") == "equipment/equipment.lst"
    )
    changed = [x for x in lst["diff"].splitlines() if x[:1] in "+-" and not x.startswith(("+++", "---"))]
    # the archive renders lists a value a line: the new entry is exactly its two lines
    assert changed == ["+8", "+`weapon/w8.equ`"], "a list merge shows only its entries"
    mods.apply(plan["planId"], revision(service), {})
    assert service.workspace is not None
    entries = list_entries(service.workspace.current_text_or_none("equipment/equipment.lst"))
    assert entries[7] == "weapon/w7.equ" and entries[8] == "weapon/w8.equ"
    # the third uses id 7 for another file: a conflict that must be resolved
    plan = mods.prepare(ws, str(packages[2]))
    page = mods.preview(plan["planId"])
    conflicts = [r["conflict"] for r in page["rows"] if "conflict" in r]
    assert [(c["kind"], c["entry"], c["mine"], c["theirs"]) for c in conflicts] == [
        ("entry-collision", "7", "weapon/w7.equ", "weapon/w77.equ")
    ]
    before = revision(service)
    with pytest.raises(ServiceError) as caught:
        mods.apply(plan["planId"], before, {})
    assert caught.value.code == "MOD_CONFLICTS_UNRESOLVED" and revision(service) == before
    mods.apply(plan["planId"], before, {conflicts[0]["conflictId"]: "mine"})
    entries = list_entries(service.workspace.current_text_or_none("equipment/equipment.lst"))
    assert entries[7] == "weapon/w7.equ", "mine kept"
    assert service.workspace.exists("equipment/weapon/w77.equ"), "the MOD's other files still arrive"
    service.shutdown()


def test_a_file_changed_locally_since_the_mods_base_is_a_conflict(bench: Bench, tmp_path: Path) -> None:
    base = tmp_path / "base.pvf"
    shutil.copyfile(bench.path, base)
    edit_a(bench)
    package = export_mod(bench, tmp_path / "mods", "115CN-mod")
    service, mods, ws = open_copy(base, tmp_path / "copy")
    local = "#PVF_File\n[name]\n`My own weapon 2`\n"
    service.apply_changes(ws, revision(service), {"equipment/weapon/w2.equ": local})
    plan = mods.prepare(ws, str(package))
    rows = mods.preview(plan["planId"])["rows"]
    (conflict,) = [r["conflict"] for r in rows if "conflict" in r]
    assert conflict["kind"] == "file-changed-locally" and conflict["path"] == "equipment/weapon/w2.equ"
    mods.apply(plan["planId"], revision(service), {conflict["conflictId"]: "theirs"})
    assert service.workspace is not None
    assert "999" in (service.workspace.current_text_or_none("equipment/weapon/w2.equ") or "")
    service.shutdown()


def _zip(path: Path, members: dict[str, bytes], manifest: dict[str, Any] | None = None) -> Path:
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        if manifest is not None:
            archive.writestr("mod.json", json.dumps(manifest))
        for name, data in members.items():
            archive.writestr(name, data)
    return path


def _manifest(members: dict[str, bytes], **extra: Any) -> dict[str, Any]:
    entries = [
        {"path": name.split("/", 1)[1], "size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
        for name, data in members.items()
    ]
    return {"modId": "x.y", "name": "Bad", "version": "1", "format": "115CN-mod", "entries": entries, **extra}


GOOD = {"pvf/equipment/weapon/x.equ": b"#PVF_File\n[name]\n`X`\n"}


def bad_packages(tmp: Path) -> dict[str, Path]:
    out: dict[str, Path] = {}
    missing = _manifest({**GOOD, "pvf/equipment/weapon/gone.equ": b"x"})
    out["missing file"] = _zip(tmp / "missing.zip", GOOD, missing)
    out["unlisted file"] = _zip(tmp / "unlisted.zip", {**GOOD, "pvf/extra.equ": b"e"}, _manifest(GOOD))
    escape = {"pvf/../../escape.equ": b"x"}
    out["path escaping"] = _zip(tmp / "escape.zip", escape, _manifest(escape))
    wrong = _manifest(GOOD)
    wrong["entries"][0]["sha256"] = "0" * 64
    out["wrong digest"] = _zip(tmp / "digest.zip", GOOD, wrong)
    out["no modId"] = _zip(tmp / "noid.zip", GOOD, {k: v for k, v in _manifest(GOOD).items() if k != "modId"})
    out["not json"] = _zip(tmp / "json.zip", {**GOOD, "mod.json": b"{nope"})
    bomb = {"pvf/bomb.equ": b"\0" * (7 << 20)}
    out["zip bomb"] = _zip(tmp / "bomb.zip", bomb, _manifest(bomb))
    with zipfile.ZipFile(tmp / "dup.zip", "w") as archive:
        archive.writestr("mod.json", json.dumps(_manifest(GOOD)))
        for data in (b"one", b"two"):
            archive.writestr("pvf/equipment/weapon/x.equ", data)
    out["duplicate entry"] = tmp / "dup.zip"
    out["not a zip"] = tmp / "garbage.zip"
    out["not a zip"].write_bytes(b"PK\x03\x04 garbage")
    folder = tmp / "no-pack"
    (folder / "pvf").mkdir(parents=True)
    (folder / "pvf" / "a.equ").write_text("#PVF_File\n")
    out["110USextend without pack.json"] = folder
    folder = tmp / "pack-lists-missing"
    (folder / "pvf").mkdir(parents=True)
    (folder / "pack.json").write_text(json.dumps({"name": "P", "version": "1", "types": {"gone.equ": 1}}))
    out["110USextend missing file"] = folder
    folder = tmp / "linked"
    (folder / "pvf").mkdir(parents=True)
    (folder / "pack.json").write_text(json.dumps({"name": "P", "version": "1"}))
    (folder / "pvf" / "secret.equ").symlink_to("/etc/hostname")
    out["symlink in folder"] = folder
    return out


#: what each refusal must name (so a package refused for the wrong reason fails the test)
WHY = {
    "missing file": "1 listed files missing",
    "unlisted file": "1 unlisted",
    "path escaping": "not a plain relative archive path",
    "wrong digest": "does not match its sha256",
    "no modId": "no modId",
    "not json": "not valid JSON",
    "zip bomb": "claims to expand",
    "duplicate entry": "twice",
    "not a zip": "not a readable zip",
    "110USextend without pack.json": "no pack.json",
    "110USextend missing file": "lists 1 files the folder lacks",
    "symlink in folder": "symbolic link",
}


@pytest.mark.filterwarnings("ignore:Duplicate name")
def test_bad_mods_are_refused_and_nothing_is_written(bench: Bench, tmp_path: Path) -> None:
    mods = ModService(bench.service)
    before = bench.revision
    tmp = tmp_path / "bad"
    tmp.mkdir()
    for what, package in bad_packages(tmp).items():
        with pytest.raises(ServiceError) as caught:
            mods.prepare(bench.ws, str(package))
        assert caught.value.code == "MOD_INVALID", (what, caught.value.code, caught.value.message)
        assert WHY[what] in caught.value.message and caught.value.hint, what
        assert bench.service.plans.pending("mod") is None and bench.revision == before, what
    with Archive.open(bench.path) as untouched:
        assert "equipment/weapon/x.equ" not in untouched.namelist()


def test_read_mod_reports_what_a_package_holds(bench: Bench, tmp_path: Path) -> None:
    edit_a(bench)
    package = read_mod(export_mod(bench, tmp_path / "mods", "115CN-mod", name="Shown"))
    summary = package.summary()
    assert (summary["format"], summary["name"], summary["modId"]) == (
        "115CN-mod",
        "Shown",
        "com.example.Shown",
    )
    assert [t.path for t in package.tables] == ["equipment/equipment.lst"]
    assert package.tables[0].lst == {7: "weapon/w9.equ"}
    assert sorted(f.path for f in package.files) == ["equipment/weapon/w2.equ", "equipment/weapon/w9.equ"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    manifest=st.one_of(
        st.binary(max_size=200),
        st.dictionaries(
            st.sampled_from(["modId", "name", "version", "format", "entries"]),
            st.one_of(
                st.text(max_size=10),
                st.integers(),
                st.lists(st.dictionaries(st.text(max_size=6), st.text(max_size=10)), max_size=3),
            ),
        ).map(lambda d: json.dumps(d).encode()),
    ),
    members=st.dictionaries(
        st.text(alphabet="pvfmerge/.\\`\x01abc", min_size=1, max_size=20), st.binary(max_size=60), max_size=4
    ),
)
def test_fuzzed_packages_are_read_or_refused_with_mod_invalid(
    tmp_path: Path, manifest: bytes, members: dict[str, bytes]
) -> None:
    path = tmp_path / "fuzz.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("mod.json", manifest)
        for name, data in members.items():
            if name != "mod.json":
                archive.writestr(name, data)
    try:
        package = read_mod(path)
    except ServiceError as error:
        assert error.code == "MOD_INVALID"
    else:
        assert package.format == "115CN-mod" and package.mod_id
