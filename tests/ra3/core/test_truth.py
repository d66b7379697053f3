"""What the index claims is true: stated incompleteness, include containment, cycles, symlinked mods.

Each test writes a small hand-made layout (the built-in sample SDK plus the case at hand) and
checks what a modder or an agent would see.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from moddesk.ra3.agent.mcp import Answer, _summary
from moddesk.ra3.core.errors import Ra3Error
from moddesk.ra3.core.index import ModIndex
from moddesk.ra3.core.project import detect_project, find_project_root
from moddesk.ra3.core.query import QueryApi
from moddesk.ra3.core.sample import _doc, write_sample_project
from moddesk.ra3.core.snapshot import SnapshotSource, write_snapshot

MOD = "Mods/Sample Mod"


def _build(project: Path, **kw: object) -> tuple[ModIndex, QueryApi]:
    index = ModIndex(detect_project(project, **kw))  # type: ignore[arg-type]
    index.build()
    return index, QueryApi(index)


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


# --- no schema ----------------------------------------------------------------------------------
def test_no_schema_is_stated_on_every_answer(tmp_path: Path) -> None:
    sdk = tmp_path / "sdk"
    write_sample_project(sdk)
    lonely = tmp_path / "elsewhere" / "Mods" / "Sample Mod"
    shutil.copytree(sdk / MOD, lonely)  # outside any SDK: no CnC3Types.xsd anywhere above it
    index, q = _build(lonely)
    status = q.get_status()["index"]
    assert status["state"] == "ready" and status["final"] is True
    assert status["complete"] is False
    assert [r["reason"] for r in status["incomplete"]] == ["NO_SCHEMA"]
    refs = q.find_references("SampleTankGun")
    # the weapon is referenced by FireWeaponNugget@WeaponName, which cannot be typed without a schema
    assert refs["total"] == 0
    assert refs["index"]["complete"] is False and refs["index"]["incomplete"][0]["reason"] == "NO_SCHEMA"
    text = _summary(Answer(source="snapshot", index=refs["index"], result=refs))
    assert "references cannot be typed" in text.splitlines()[1]
    # a snapshot keeps saying so
    home = tmp_path / "home"
    assert index.data is not None
    write_snapshot(index.data, index.status(), home)
    snap = QueryApi(SnapshotSource.load(lonely, home))
    assert snap.find_asset("SampleTank")["index"]["incomplete"][0]["reason"] == "NO_SCHEMA"
    # with the schema the reason is gone and the reference is found; only the sample's own gaps
    # (a broken file, a missing include) keep it incomplete
    _i, typed = _build(lonely, schema_path=sdk / "Schemas/xsd/CnC3Types.xsd")
    typed_index = typed.get_status()["index"]
    assert typed_index["incomplete"] == [] and typed_index["final"] is True
    assert typed_index["complete"] is False and set(typed_index["gaps"]) == {
        "INCLUDE_NOT_FOUND",
        "XML_MALFORMED",
    }
    assert typed.find_references("SampleTankGun")["total"] == 1


def test_skipped_content_is_a_caveat_with_counts(tmp_path: Path) -> None:
    project = write_sample_project(tmp_path)
    _i, q = _build(project)
    refs = q.find_references("SampleScout")
    codes = {c["code"]: c["places"] for c in refs["caveats"]}
    # Broken.xml is malformed, Missing/Nowhere.xml is not found
    assert codes["UNPARSABLE_FILES"] == 1 and codes["UNRESOLVED_INCLUDES"] == 1
    miss = q.find_asset("NoSuchThing")
    assert {c["code"] for c in miss["caveats"]} == {"UNPARSABLE_FILES", "UNRESOLVED_INCLUDES"}
    text = _summary(Answer(source="live", index=refs["index"], result=refs))
    assert "caveat (UNRESOLVED_INCLUDES): 1 includes" in text


# --- include cycles -----------------------------------------------------------------------------
def test_include_cycle_is_reported(tmp_path: Path) -> None:
    project = write_sample_project(tmp_path)
    mod = project / "Data" / "Mod.xml"
    mod.write_text(
        mod.read_text("utf-8").replace(
            '<Include type="all" source="Weapons.xml"/>',
            '<Include type="all" source="Weapons.xml"/>\n    <Include type="all" source="Loop/A.xml"/>',
        ),
        "utf-8",
    )
    _write(
        project / "Data/Loop/A.xml",
        _doc('  <GameObject id="LoopA"/>\n', '    <Include type="all" source="B.xml"/>\n'),
    )
    _write(
        project / "Data/Loop/B.xml",
        _doc('  <GameObject id="LoopB"/>\n', '    <Include type="all" source="A.xml"/>\n'),
    )
    _i, q = _build(project)
    cycles = q.list_diagnostics(code="INCLUDE_CYCLE")["diagnostics"]
    assert len(cycles) == 1
    assert cycles[0]["file"] == "Data/Loop/B.xml" and cycles[0]["line"] == 5
    assert "Data/Loop/A.xml -> Data/Loop/B.xml -> Data/Loop/A.xml" in cycles[0]["message"]
    assert q.find_asset("LoopB")["found"]


# --- containment (issue 14, ra3) ----------------------------------------------------------------
def test_outside_includes_are_refused_and_never_read(tmp_path: Path) -> None:
    sdk = tmp_path / "sdk"
    project = write_sample_project(sdk)
    secret = _write(
        tmp_path / "outside" / "x.xml",
        _doc("", defines='    <Define name="SECRET" value="leaked"/>\n'),
    )
    os.symlink(tmp_path / "outside", project / "Data" / "linked")
    mod = project / "Data" / "Mod.xml"
    mod.write_text(
        mod.read_text("utf-8").replace(
            '<Include type="all" source="Weapons.xml"/>',
            '<Include type="all" source="Weapons.xml"/>\n'
            '    <Include type="all" source="DATA:../outside/x.xml"/>\n'
            f'    <Include type="all" source="{secret}"/>\n'
            '    <Include type="all" source="linked/x.xml"/>',
        ),
        "utf-8",
    )
    _i, q = _build(project)
    assert q.find_define("SECRET")["found"] is False
    refused = q.list_diagnostics(code="INCLUDE_OUTSIDE_ROOTS")["diagnostics"]
    assert sorted(d["line"] for d in refused) == [8, 9, 10]
    assert all(d["severity"] == "error" for d in refused)
    # the answer for an outside path does not depend on whether it exists
    exists = q.resolve_include("DATA:../../../outside/x.xml")
    absent = q.resolve_include("DATA:../../../outside/nothing-here.xml")
    assert exists["resolved"] is None and absent["resolved"] is None
    assert exists["error"].startswith("INCLUDE_OUTSIDE_ROOTS")
    assert exists["error"].replace("x.xml", "?") == absent["error"].replace("nothing-here.xml", "?")
    assert q.resolve_include("DATA:../../../../../../../../etc/passwd")["error"].startswith(
        "INCLUDE_OUTSIDE_ROOTS"
    )
    # inside the roots everything still resolves
    assert q.resolve_include("DATA:SageXml/BaseObjects/BaseVehicle.xml")["resolved"] is not None


# --- symlinked mod ------------------------------------------------------------------------------
def test_mod_symlinked_into_sdk_keeps_its_sdk(tmp_path: Path) -> None:
    sdk = tmp_path / "sdk"
    write_sample_project(sdk)
    real = tmp_path / "my mods" / "Sample Mod"
    real.parent.mkdir()
    shutil.move(str(sdk / MOD), real)
    os.symlink(real, sdk / MOD)
    root = find_project_root(sdk / MOD / "Data")
    assert root == sdk / MOD  # the link is not resolved before looking for the SDK above it
    index, q = _build(sdk / MOD)
    assert index.config.sdk_dir == sdk
    assert q.get_status()["index"]["final"] is True
    codes = q.get_status()["diagnosticsByCode"]
    assert codes.get("INCLUDE_NOT_FOUND") == 1  # only the sample's deliberate Missing/Nowhere.xml
    assert "INCLUDE_OUTSIDE_ROOTS" not in codes
    assert q.find_references("SampleTankGun")["total"] == 1
    # snapshots are named after the real folder, so `mcp --project <either spelling>` finds them
    home = tmp_path / "home"
    assert index.data is not None
    write_snapshot(index.data, index.status(), home)
    assert SnapshotSource.load(real, home).data is not None
    with pytest.raises(Ra3Error, match="no snapshot"):
        SnapshotSource.load(tmp_path / "my mods", home)


# --- Kane's Wrath / WrathEd layout, the project file, kept snapshots ------------------------------
BUILDMOD = r"""@echo off
rem compile every stream of the mod
set WE=%~dp0..\WrathEd\WrathEd.exe
"%WE%" -gameDefinition:"Kane's Wrath" -compile:Data\Static.xml -out:BuiltMod\data
"%WE%" -gameDefinition:"Kane's Wrath" -compile:"C:\Mods\Tiberium Rising\Data\AdditionalMaps\MapMetaData_Global.xml"
"%WE%" -compile:Data\AdditionalMaps\MapMetaData_GlobalOverrides.xml
"%WE%" -compile:Data\WorldBuilder.xml
"%WE%" -compile:Data\MapMetaData.xml
"""


def _wrathed_mod(root: Path) -> Path:
    """A WrathEd-style mod outside any SDK: five entries named by BuildMod.bat, no Data/Mod.xml."""
    mod = root / "Tiberium Rising"
    _write(mod / "BuildMod.bat", BUILDMOD)
    _write(
        mod / "Data/Static.xml",
        _doc("", '    <Include type="all" source="Units/Tank.xml"/>\n'),
    )
    _write(mod / "Data/Units/Tank.xml", _doc('  <GameObject id="KWTank"/>\n  <WeaponTemplate id="KWGun"/>\n'))
    _write(mod / "Data/AdditionalMaps/MapMetaData_Global.xml", _doc('  <MpGameRules id="GlobalRules"/>\n'))
    _write(
        mod / "Data/AdditionalMaps/MapMetaData_GlobalOverrides.xml", _doc('  <MpGameRules id="Overrides"/>\n')
    )
    _write(mod / "Data/WorldBuilder.xml", _doc('  <GameObject id="WBOnly"/>\n'))
    _write(mod / "Data/MapMetaData.xml", _doc('  <MpGameRules id="MapRules"/>\n'))
    return mod


def test_wrathed_entries_come_from_buildmod_bat(tmp_path: Path) -> None:
    mod = _wrathed_mod(tmp_path)
    assert find_project_root(mod / "Data" / "Units") == mod
    cfg = detect_project(mod)
    assert cfg.game == "kw"
    assert [(e.stream, e.path.relative_to(mod).as_posix()) for e in cfg.entries] == [
        ("static", "Data/Static.xml"),
        ("global:MapMetaData_Global", "Data/AdditionalMaps/MapMetaData_Global.xml"),
        ("global:MapMetaData_GlobalOverrides", "Data/AdditionalMaps/MapMetaData_GlobalOverrides.xml"),
        ("entry:WorldBuilder", "Data/WorldBuilder.xml"),
        ("global:MapMetaData", "Data/MapMetaData.xml"),
    ]
    (mod / "BuildMod.bat").unlink()  # the usual WrathEd set is found without the script too
    assert len(detect_project(mod).entries) == 5


def test_project_file_is_remembered_and_a_worse_build_keeps_the_snapshot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from moddesk.ra3.agent.watch import WatchedProject
    from moddesk.ra3.core.settings import read_settings
    from moddesk.ra3.index_cli import run_index

    home = tmp_path / "home"
    monkeypatch.setenv("RA3MODXML_HOME", str(home))
    sdk = tmp_path / "sdk"
    write_sample_project(sdk)
    schema = sdk / "Schemas/xsd/CnC3Types.xsd"
    mod = _wrathed_mod(tmp_path / "mods")
    first = run_index(mod, schema=schema, quiet=True)
    saved = read_settings(mod)
    assert saved is not None and saved.source is not None and saved.source.parent == home / "projects"
    assert saved.game == "kw" and saved.schema == schema and len(saved.entries) == 5
    assert first.data is not None and first.status().is_final
    write_snapshot(first.data, first.status(), replace=False)
    # a later run with no options indexes the same way (the schema and entries come from the file)
    again = run_index(mod, quiet=True)
    assert again.config.schema_path == schema and again.status().is_final
    assert again.data is not None and again.data.stats()["assetCount"] == 6
    # a run with other settings that finds less does not silently replace the snapshot
    narrow = run_index(mod, entry=[Path("Data/WorldBuilder.xml")], quiet=True)
    assert narrow.data is not None
    with pytest.raises(Ra3Error) as kept:
        write_snapshot(narrow.data, narrow.status(), replace=False)
    assert kept.value.code == "SNAPSHOT_KEPT" and kept.value.details["changedSettings"] == ["entries"]
    assert SnapshotSource.load(mod).data is not None
    assert SnapshotSource.load(mod).data.stats()["assetCount"] == 6  # type: ignore[union-attr]
    # `watch --entry` takes the same option; without it watch reads the project file
    assert [
        e.path.name for e in WatchedProject(mod, entries=[Path("Data/WorldBuilder.xml")]).config.entries
    ] == ["WorldBuilder.xml"]
    assert len(WatchedProject(mod).config.entries) == 5


# --- misses say where -----------------------------------------------------------------------------
def test_a_miss_in_an_unincluded_file_says_where_and_why(tmp_path: Path) -> None:
    project = write_sample_project(tmp_path)
    _i, q = _build(project)
    miss = q.find_asset("NeverBuilt")
    assert miss["found"] is False
    assert (
        "'NeverBuilt' is defined in Data/Units/Unused.xml:6, which no stream includes "
        "(its include at Data/Mod.xml:9 is commented out)"
    ) in miss["note"]
    assert "base game" not in miss["note"]
    assert "Data/Units/Unused.xml:6" in q.get_definition("GameObject", "NeverBuilt")["note"]
    active = q.is_file_active("Data/Units/Unused.xml")
    assert active["active"] is False
    assert active["commentedOutIncludes"] == [
        {"file": "Data/Mod.xml", "line": 9, "source": "Units/Unused.xml", "includerActive": True}
    ]
    listed = q.list_inactive_files()
    assert [f["path"] for f in listed["files"]] == ["Data/Units/Unused.xml"]
    assert listed["files"][0]["commentedOutIncludes"][0]["line"] == 9


# --- Kane's Wrath-only modules: inferred references -------------------------------------------------
def test_references_inside_undeclared_modules_are_inferred(tmp_path: Path) -> None:
    project = write_sample_project(tmp_path)
    mod = project / "Data" / "Mod.xml"
    mod.write_text(
        mod.read_text("utf-8").replace(
            '<Include type="all" source="Weapons.xml"/>',
            '<Include type="all" source="Weapons.xml"/>\n    <Include type="all" source="KW.xml"/>',
        ),
        "utf-8",
    )
    _write(
        project / "Data" / "KW.xml",
        _doc(
            '  <GameObject id="KWUnit">\n'
            "    <Behaviors>\n"
            '      <DominateEnemySpecialPower id="ModuleTag_Dominate" Flavor="Mind">\n'
            "        <Filter><IncludeThing>SampleScout</IncludeThing></Filter>\n"
            '        <FireWeaponNugget WeaponName="SampleTankGun"/>\n'
            "      </DominateEnemySpecialPower>\n"
            "    </Behaviors>\n"
            "  </GameObject>\n"
        ),
    )
    _i, q = _build(project)
    scout = [r for r in q.find_references("SampleScout")["references"] if r["from"]["id"] == "KWUnit"]
    assert len(scout) == 1
    assert (
        scout[0]["inferred"] is True and scout[0]["element"] == "IncludeThing" and scout[0]["kind"] == "weak"
    )
    assert scout[0]["line"] == 9 and scout[0]["resolution"] == "resolved"
    gun = [r for r in q.find_references("SampleTankGun")["references"] if r["from"]["id"] == "KWUnit"]
    assert len(gun) == 1 and gun[0]["attribute"] == "WeaponName" and gun[0]["inferred"] is True
    # declared references never carry the flag; `id` (declared both as a plain id and a Poid) is not guessed
    assert all(
        "inferred" not in r
        for r in q.find_references("SampleScout")["references"]
        if r["from"]["id"] != "KWUnit"
    )
    assert not [r for r in q.find_references("ModuleTag_Dominate")["references"]]
    unknown = q.list_diagnostics(code="UNKNOWN_ELEMENT", file="Data/KW.xml")["diagnostics"]
    # Flavor="Mind" names no asset: a value guess, counted apart and never a reference that resolves
    assert len(unknown) == 1 and "2 references inferred" in unknown[0]["message"]
    assert "1 values that may name an asset" in unknown[0]["message"]
    caveat = {c["code"]: c["places"] for c in q.find_references("SampleScout")["caveats"]}
    assert caveat["UNKNOWN_ELEMENTS"] == 1


# --- diagnostics triage -------------------------------------------------------------------------------
def test_diagnostics_are_triaged_with_a_summary_first(tmp_path: Path) -> None:
    project = write_sample_project(tmp_path)
    mod = project / "Data" / "Mod.xml"
    mod.write_text(
        mod.read_text("utf-8").replace(
            '<Include type="all" source="Weapons.xml"/>',
            '<Include type="all" source="Weapons.xml"/>\n'
            '    <Include type="reference" source="DATA:global.xml"/>\n'
            '    <Include type="all" source="Typos.xml"/>',
        ),
        "utf-8",
    )
    _write(
        project / "Data" / "Typos.xml",
        _doc(
            '  <GameObject id="TypoTank">\n'
            "    <Behaviors>\n"
            '      <FireWeaponUpdate id="ModuleTag_F"><FireWeaponNugget WeaponName="SampleTankGn"/></FireWeaponUpdate>\n'
            '      <CreateObjectDie id="ModuleTag_D" CreationList="OCL_VanillaDebris"/>\n'
            "    </Behaviors>\n"
            "  </GameObject>\n"
        ),
    )
    _i, q = _build(project)
    answer = q.list_diagnostics(limit=200)
    assert list(answer)[:3] == ["index", "summary", "diagnostics"]
    rows = answer["diagnostics"]
    ranks = [{"error": 0, "warning": 1, "expected": 2}[r["severity"]] for r in rows]
    assert ranks == sorted(ranks) and rows[0]["severity"] == "error"
    by_message = {r["message"]: r for r in rows}
    typo = next(r for m, r in by_message.items() if "'SampleTankGn'" in m)
    assert (
        typo["severity"] == "warning"
        and typo["group"] == "mod-local"
        and typo["didYouMean"] == "SampleTankGun"
    )
    vanilla = next(r for m, r in by_message.items() if "'OCL_VanillaDebris'" in m)
    assert vanilla["severity"] == "expected" and vanilla["group"] == "base-game"
    ref_include = next(r for r in rows if r["code"] == "INCLUDE_NOT_FOUND" and "global.xml" in r["message"])
    assert ref_include["severity"] == "expected"
    missing = next(r for r in rows if r["code"] == "INCLUDE_NOT_FOUND" and "Nowhere" in r["message"])
    assert missing["severity"] == "error"
    summary = answer["summary"]
    assert summary["unresolvedReferences"] == {"mod-local": 1, "base-game": 1}
    assert sum(summary["bySeverity"].values()) == answer["total"]
    # one number everywhere
    status = q.get_status()
    assert status["stats"]["diagnosticCount"] == answer["total"] == sum(status["diagnosticsByCode"].values())
    assert q.list_diagnostics(severity="expected")["total"] == summary["bySeverity"]["expected"]


def test_cli_index_says_incomplete_without_a_schema(tmp_path: Path) -> None:
    import subprocess
    import sys

    env = {**os.environ, "RA3MODXML_HOME": str(tmp_path / "home"), "COLUMNS": "400"}
    sdk = tmp_path / "sdk"
    write_sample_project(sdk)
    lonely = tmp_path / "elsewhere" / "Mods" / "Sample Mod"
    shutil.copytree(sdk / MOD, lonely)

    def run(*args: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "moddesk.ra3.cli", *args],
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    out = run("index", str(lonely))
    assert "incomplete (NO_SCHEMA)" in out and "references cannot be typed" in out
    refs = run("query", "refs", "SampleScout", "-p", str(lonely))
    assert "incomplete (NO_SCHEMA)" in refs and "caveat (UNPARSABLE_FILES)" in refs
