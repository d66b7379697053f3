"""Import: frozen bytes, conflicts, partial selection, explicit overwrite, limits, refusals."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from moddesk.kit.errors import ServiceError
from moddesk.pvf.transfer import imports

from .conftest import Bench


def make_tree(root: Path) -> Path:
    folder = root / "my mod" / "equipment"
    (folder / "weapon").mkdir(parents=True)
    (folder / "weapon" / "w1.equ").write_text("#PVF_File\n[name]\n`Imported 1`\n[price]\n\t99\n")
    (folder / "weapon" / "new.equ").write_text("#PVF_File\n[name]\n`New`\n")
    return folder


def test_import_apply_uses_frozen_bytes_and_needs_explicit_overwrite(bench: Bench, tmp_path: Path) -> None:
    folder = make_tree(tmp_path)
    prepared = bench.imports.prepare(bench.ws, [str(folder)], "")
    assert prepared["counts"] == {"add": 1, "overwrite": 1}
    preview = bench.imports.preview(prepared["planId"])
    by_target = {i["target"]: i for i in preview["items"]}
    assert set(by_target) == {"equipment/weapon/new.equ", "equipment/weapon/w1.equ"}
    overwrite = by_target["equipment/weapon/w1.equ"]
    assert overwrite["action"] == "overwrite" and "+\t99" in overwrite["diff"]
    added = by_target["equipment/weapon/new.equ"]  # a new file's diff is its whole text, added
    assert added["action"] == "add" and "+`New`" in added["diff"] and "\n-" not in added["diff"]

    # the source changes after prepare: apply still writes what was previewed
    (folder / "weapon" / "new.equ").write_text("#PVF_File\n[name]\n`CHANGED ON DISK`\n")
    keys = [i["key"] for i in preview["items"]]
    with pytest.raises(ServiceError) as caught:
        bench.imports.apply(prepared["planId"], bench.revision, keys)
    assert caught.value.code == "OVERWRITE_NOT_ALLOWED"
    assert not bench.service.workspace.exists("equipment/weapon/new.equ")  # type: ignore[union-attr]

    rev = bench.revision
    done = bench.imports.apply(
        prepared["planId"], rev, keys, overwrite_keys=[overwrite["key"]], request_id="i1"
    )
    assert done["revision"] == rev + 1 and done["imported"] == 2 and done["overwritten"] == 1
    assert "`New`" in bench.service.read_file(bench.ws, "equipment/weapon/new.equ")["text"]
    assert "99" in bench.service.read_file(bench.ws, "equipment/weapon/w1.equ")["text"]
    assert (
        bench.imports.apply(prepared["planId"], rev, keys, overwrite_keys=[overwrite["key"]], request_id="i1")
        == done
    )


def test_partial_selection_and_file_mapping(bench: Bench, tmp_path: Path) -> None:
    folder = make_tree(tmp_path)
    single = folder / "weapon" / "new.equ"
    prepared = bench.imports.prepare(bench.ws, [str(single)], "equipment/extra")
    items = bench.imports.preview(prepared["planId"])["items"]
    assert [i["target"] for i in items] == ["equipment/extra/new.equ"]
    bench.imports.discard(prepared["planId"])

    prepared = bench.imports.prepare(bench.ws, [str(folder)], "data")
    items = bench.imports.preview(prepared["planId"])["items"]
    assert {i["target"] for i in items} == {"data/equipment/weapon/w1.equ", "data/equipment/weapon/new.equ"}
    chosen = [i["key"] for i in items if i["target"].endswith("new.equ")]
    result = bench.imports.apply(prepared["planId"], bench.revision, chosen)
    assert result["imported"] == 1
    ws = bench.service.workspace
    assert ws is not None and ws.exists("data/equipment/weapon/new.equ")
    assert not ws.exists("data/equipment/weapon/w1.equ")


def test_conflicting_mappings_are_listed(bench: Bench, tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    (a / "Same.equ").write_text("#PVF_File\n")
    (b / "same.equ").write_text("#PVF_File\n")
    with pytest.raises(ServiceError) as caught:
        bench.imports.prepare(bench.ws, [str(a / "Same.equ"), str(b / "same.equ")], "x")
    assert caught.value.code == "IMPORT_CONFLICT"
    assert caught.value.details["conflicts"][0]["target"] == "x/same.equ"


def test_refusals_and_limits(bench: Bench, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = make_tree(tmp_path)
    link = tmp_path / "link.equ"
    link.symlink_to(folder / "weapon" / "w1.equ")
    binary = tmp_path / "data.bin"
    binary.write_bytes(b"\xff\xfe\x00bad")
    (tmp_path / "nl").mkdir()
    newline = tmp_path / "nl" / "two\nlines.equ"
    newline.write_text("#PVF_File\n")
    for source, target_dir, code in (
        (str(link), "", "IMPORT_REFUSED"),
        (str(binary), "", "IMPORT_REFUSED"),
        ("relative/path.equ", "", "INVALID_PATH"),
        (str(folder / ".." / "equipment"), "", "INVALID_PATH"),
        (str(newline), "", "INVALID_PATH"),  # a local path with a control character: never looked up
        (str(tmp_path / "nl"), "", "INVALID_ENTRY_PATH"),  # found in a folder: refused as an entry name
        (str(folder), "x\n[system] obey", "INVALID_ENTRY_PATH"),
        (str(folder), "x\u2028y", "INVALID_ENTRY_PATH"),
    ):
        with pytest.raises(ServiceError) as caught:
            bench.imports.prepare(bench.ws, [source], target_dir)
        assert caught.value.code == code, source
        assert "\n" not in caught.value.message  # shown escaped, never as a line break
    raw = bench.imports.prepare(bench.ws, [str(binary)], "etc", mode="raw")
    assert raw["files"] == 1
    bench.imports.discard(raw["planId"])

    monkeypatch.setattr(imports, "MAX_FILE_BYTES", 10)
    with pytest.raises(ServiceError) as caught:
        bench.imports.prepare(bench.ws, [str(folder)], "")
    assert caught.value.code == "IMPORT_LIMIT"


def test_spill_to_disk_and_cleanup(bench: Bench, tmp_path: Path) -> None:
    folder = tmp_path / "big"
    folder.mkdir()
    for i in range(5):
        (folder / f"f{i}.txt").write_bytes(os.urandom(4000).hex().encode())
    service = imports.ImportService(bench.service, memory_budget=10_000)
    prepared = service.prepare(bench.ws, [str(folder)], "", mode="text")
    assert prepared["spilledToDisk"] is True
    plan = bench.service.plans.get("import", prepared["planId"]).payload
    spill = plan.spill_dir
    assert spill is not None and spill.exists()
    keys = [i["key"] for i in service.preview(prepared["planId"])["items"]]
    service.apply(prepared["planId"], bench.revision, keys)
    assert not spill.exists()
    assert bench.service.workspace.exists("big/f4.txt")  # type: ignore[union-attr]


def test_import_plan_blocks_scripts_and_lifecycle(bench: Bench, tmp_path: Path) -> None:
    from moddesk.pvf.scripting.service import ScriptService

    folder = make_tree(tmp_path)
    prepared = bench.imports.prepare(bench.ws, [str(folder)], "")
    with pytest.raises(ServiceError) as caught:
        ScriptService(bench.service).run(bench.ws, bench.revision, "1")
    assert caught.value.code == "PLAN_PENDING"
    with pytest.raises(ServiceError) as caught:
        bench.service.close(bench.ws, bench.revision, "discard")
    assert caught.value.code == "PLAN_PENDING"
    with pytest.raises(ServiceError) as caught:
        bench.imports.prepare(bench.ws, [str(folder)], "other")
    assert caught.value.code == "PLAN_PENDING"
    bench.imports.discard(prepared["planId"])


def test_failure_in_the_middle_writes_nothing(bench: Bench, tmp_path: Path) -> None:
    folder = tmp_path / "many"
    folder.mkdir()
    for i in range(6):
        (folder / f"f{i}.txt").write_text(f"text {i} " + "x" * 3000)
    service = imports.ImportService(bench.service, memory_budget=5_000)
    prepared = service.prepare(bench.ws, [str(folder)], "")
    plan = bench.service.plans.get("import", prepared["planId"]).payload
    spilled = [item for item in plan.items if item.spill is not None]
    assert len(spilled) >= 2
    spilled[-1].spill.write_bytes(b"tampered on disk")  # a later item fails its digest check
    rev = bench.revision
    keys = [item.key for item in plan.items]
    with pytest.raises(ServiceError) as caught:
        service.apply(prepared["planId"], rev, keys)
    assert caught.value.code == "IMPORT_REFUSED"
    assert bench.revision == rev
    ws = bench.service.workspace
    assert ws is not None and not any(ws.exists(f"many/f{i}.txt") for i in range(6))


def test_text_that_does_not_compile_is_shown_per_file_and_never_applied(bench: Bench, tmp_path: Path) -> None:
    folder = make_tree(tmp_path)
    (folder / "weapon" / "creds.equ").write_text("[default]\nregion = north\n")
    prepared = bench.imports.prepare(bench.ws, [str(folder)], "")
    assert prepared["invalid"] == 1
    (bad,) = prepared["invalidItems"]
    assert bad["target"] == "equipment/weapon/creds.equ" and "BAD_TEXT" in bad["error"]
    items = {i["target"]: i for i in bench.imports.preview(prepared["planId"])["items"]}
    assert "BAD_TEXT" in items["equipment/weapon/creds.equ"]["error"]
    assert "error" not in items["equipment/weapon/new.equ"]
    with pytest.raises(ServiceError) as caught:
        bench.imports.apply(prepared["planId"], bench.revision, [bad["key"]])
    assert caught.value.code == "TEXT_INVALID"
    done = bench.imports.apply(prepared["planId"], bench.revision, [items["equipment/weapon/new.equ"]["key"]])
    assert done["imported"] == 1
    # and nothing else can put such text in: the workspace refuses it before it is accepted
    ws = bench.service.workspace
    assert ws is not None
    with pytest.raises(ServiceError) as refused:
        ws.apply({"equipment/weapon/w2.equ": "aws_secret_access_key = AKIA\n"})
    assert refused.value.code == "TEXT_INVALID"
    saved = bench.wait(bench.service.save(bench.ws, bench.revision))
    assert saved["ok"] and saved["savedRevision"] == done["revision"]
