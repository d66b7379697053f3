"""`moddesk pvf diff`, `pvf mod inspect|apply|merge` and `pvf table` on real archives."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from moddesk.pvf.archive import Archive
from moddesk.pvf.cli import app

runner = CliRunner()

LST = "#PVF_File\n1\t`weapon/w1.equ`\n2\t`weapon/w2.equ`\n3\t`weapon/w3.equ`\n"


@pytest.fixture(autouse=True)
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MODDESK_CACHE_DIR", str(tmp_path / "cache dir"))


def make_base(path: Path) -> Path:
    archive = Archive.new("classic")
    archive.write_text("n_string.lst", "#PVF_File\n1\t`equipment/names.str`\n")
    archive.write_text("equipment/names.str", "name_1>Sword of Links\n")
    archive.write_text("equipment/equipment.lst", LST)
    archive.write_text(
        "equipment/weapon/w1.equ", "#PVF_File\n[name]\n<1::name_1`Sword`>\n[grade]\n\t10\n[price]\n\t100\n"
    )
    archive.write_text("equipment/weapon/w2.equ", "#PVF_File\n[name]\n`Axe`\n[grade]\n\t20\n[rarity]\n\t2\n")
    archive.write_text("equipment/weapon/w3.equ", "#PVF_File\n[name]\n`Gone`\n")
    archive.write_bytes("etc/blob.bin", bytes(range(40)))
    path.parent.mkdir(parents=True, exist_ok=True)
    archive.save_as(path)
    archive.close()
    return path


def make_edited(base: Path, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(base, path)
    with Archive.open(path) as archive:
        archive.write_text(
            "equipment/weapon/w2.equ", "#PVF_File\n[name]\n`Axe`\n[grade]\n\t25\n[rarity]\n\t2\n"
        )
        archive.write_text("equipment/weapon/w4.equ", "#PVF_File\n[name]\n`New bow`\n")
        archive.delete("equipment/weapon/w3.equ")
        archive.write_text("equipment/equipment.lst", LST.replace("3\t`weapon/w3.equ`", "4\t`weapon/w4.equ`"))
        archive.save()
    return path


def test_diff_against_itself_is_empty_and_against_an_edit_lists_exactly_the_edits(tmp_path: Path) -> None:
    base = make_base(tmp_path / "a" / "Script.pvf")
    same = runner.invoke(app, ["diff", str(base), str(base), "--json"])
    assert same.exit_code == 0, same.output
    assert json.loads(same.output) == []
    edited = make_edited(base, tmp_path / "b" / "Script.pvf")
    result = runner.invoke(
        app, ["diff", str(base), str(edited), "--json", "--show", "equipment/weapon/w2.equ"]
    )
    assert result.exit_code == 0, result.output
    changes = json.loads(result.output.splitlines()[0])
    assert changes == [
        {
            "path": "equipment/equipment.lst",
            "status": "changed",
            "entries": {"added": ["4"], "removed": ["3"]},
        },
        {"path": "equipment/weapon/w2.equ", "status": "changed"},
        {"path": "equipment/weapon/w3.equ", "status": "removed"},
        {"path": "equipment/weapon/w4.equ", "status": "added"},
    ]
    assert "-\t20" in result.output and "+\t25" in result.output


def test_diff_exported_as_a_mod_and_applied_to_the_base_gives_the_edit(tmp_path: Path) -> None:
    base = make_base(tmp_path / "a" / "Script.pvf")
    edited = make_edited(base, tmp_path / "b" / "Script.pvf")
    out = tmp_path / "mods"
    out.mkdir()
    made = runner.invoke(
        app,
        [
            "diff",
            str(base),
            str(edited),
            "--export-mod",
            str(out),
            "--format",
            "115CN-mod",
            "--mod-id",
            "x.diff",
        ],
    )
    assert made.exit_code == 0, made.output
    assert "w3.equ" in made.output, "the deletion a MOD cannot carry is named"
    package = out / "diff-1.0.zip"
    with zipfile.ZipFile(package) as z:
        assert sorted(z.namelist()) == [
            "merge/equipment/equipment.lst",
            "mod.json",
            "pvf/equipment/weapon/w2.equ",
            "pvf/equipment/weapon/w4.equ",
        ]
    shown = runner.invoke(app, ["mod", "inspect", str(package)])
    assert shown.exit_code == 0 and "115CN-mod" in shown.output and "x.diff" in shown.output
    target = tmp_path / "c" / "Script.pvf"
    target.parent.mkdir()
    shutil.copyfile(base, target)
    # a real subprocess, as a modder runs it
    done = subprocess.run(
        [sys.executable, "-m", "moddesk", "pvf", "mod", "apply", str(target), str(package), "--yes"],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr
    with Archive.open(target) as got, Archive.open(edited) as want:
        for path in ("equipment/weapon/w2.equ", "equipment/weapon/w4.equ", "equipment/weapon/w1.equ"):
            assert got.read_text(path) == want.read_text(path)
        assert got.read_list("equipment/equipment.lst")[-1].path == "weapon/w4.equ"
        assert "equipment/weapon/w3.equ" in got.namelist(), "a MOD does not delete"


def _mod_folder(root: Path, name: str, entries: str) -> Path:
    folder = root / name
    (folder / "merge" / "equipment").mkdir(parents=True)
    (folder / "pack.json").write_text(json.dumps({"name": name, "version": "1"}))
    (folder / "merge" / "equipment" / "equipment.lst").write_text(entries)
    return folder


def test_merging_two_mods_refuses_collisions_unless_told(tmp_path: Path) -> None:
    first = _mod_folder(tmp_path, "one", "7\t`weapon/a.equ`\n")
    second = _mod_folder(tmp_path, "two", "7\t`weapon/b.equ`\n8\t`weapon/c.equ`\n")
    out = tmp_path / "out"
    out.mkdir()
    refused = runner.invoke(app, ["mod", "merge", str(first), str(second), "--out-dir", str(out)])
    assert refused.exit_code == 2 and "MOD_CONFLICTS_UNRESOLVED" in refused.output
    assert list(out.iterdir()) == []
    done = runner.invoke(
        app, ["mod", "merge", str(first), str(second), "--out-dir", str(out), "--prefer", "first"]
    )
    assert done.exit_code == 0, done.output
    merged = (out / "merged-1.0" / "merge" / "equipment" / "equipment.lst").read_text()
    assert merged == "7\t`weapon/a.equ`\n8\t`weapon/c.equ`\n"
    third = _mod_folder(tmp_path, "three", "9\t`weapon/d.equ`\n")
    clean = runner.invoke(
        app, ["mod", "merge", str(first), str(third), "--out-dir", str(out), "--name", "clean"]
    )
    assert clean.exit_code == 0, clean.output


@pytest.mark.parametrize("fmt", ["csv", "json", "xlsx"])
def test_item_table_names_resolve_through_string_links(tmp_path: Path, fmt: str) -> None:
    base = make_base(tmp_path / "a" / "Script.pvf")
    out = tmp_path / f"items.{fmt}"
    result = runner.invoke(app, ["table", "equipment", str(base), "--format", fmt, "--out", str(out)])
    assert result.exit_code == 0, result.output
    if fmt == "json":
        rows = json.loads(out.read_text())
        assert [(r["id"], r["name"], r["grade"], r["price"]) for r in rows] == [
            (1, "Sword of Links", 10, 100),
            (2, "Axe", 20, None),
            (3, "Gone", None, None),
        ]
    elif fmt == "csv":
        text = out.read_text(encoding="utf-8-sig")
        assert text.splitlines()[0] == "list,id,path,name,grade,rarity,minimum level,price,problem"
        assert "1,equipment/weapon/w1.equ,Sword of Links,10,,,100," in text
    else:
        with zipfile.ZipFile(out) as book:
            sheet = book.read("xl/worksheets/sheet1.xml").decode()
        assert "Sword of Links" in sheet and '<c r="B2"><v>1</v></c>' in sheet


def test_item_table_reports_a_missing_file_in_its_row(tmp_path: Path) -> None:
    base = make_base(tmp_path / "a" / "Script.pvf")
    edited = make_edited(base, tmp_path / "b" / "Script.pvf")
    with Archive.open(edited) as archive:
        archive.delete("equipment/weapon/w4.equ")
        archive.save()
    result = runner.invoke(app, ["table", "equipment", str(edited), "--format", "json"])
    rows = json.loads(result.output)
    assert [r["problem"] for r in rows] == [None, None, "missing"]
