"""`complete` is a fact of the index: each gap kind makes it false and `gaps` says exactly what.

Every test writes a small mod into the built-in sample SDK (whose schema is found above it), with
one kind of gap at a time, and reads the status as an agent would: the query answer, the snapshot,
and the MCP text block.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from moddesk.ra3.agent.mcp import Answer, _summary
from moddesk.ra3.core.index import ModIndex
from moddesk.ra3.core.project import detect_project
from moddesk.ra3.core.query import QueryApi
from moddesk.ra3.core.sample import NS, write_sample_project
from moddesk.ra3.core.settings import configure, read_settings
from moddesk.ra3.core.snapshot import SnapshotSource, write_snapshot


@pytest.fixture(autouse=True)
def _home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RA3MODXML_HOME", str(tmp_path / "ra3 home"))


CLEAN_UNIT = '  <GameObject id="CleanTank"/>\n  <WeaponTemplate id="CleanGun"/>\n'


def _doc(body: str, includes: str = "") -> str:
    return (
        '<?xml version="1.0" encoding="utf-8"?>\n'
        f"<AssetDeclaration {NS}>\n  <Includes>\n{includes}  </Includes>\n{body}</AssetDeclaration>\n"
    )


def _mod(sdk: Path, name: str, files: dict[str, str]) -> Path:
    project = sdk / "Mods" / name
    for rel, text in files.items():
        path = project / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return project


def _status(project: Path) -> tuple[ModIndex, QueryApi, dict[str, object]]:
    index = ModIndex(detect_project(project))
    index.build()
    api = QueryApi(index)
    return index, api, api.get_status()["index"]


def _sdk(tmp_path: Path) -> Path:
    sdk = tmp_path / "sdk root"
    write_sample_project(sdk)
    return sdk


def test_a_clean_mod_is_complete_with_no_gaps(tmp_path: Path) -> None:
    sdk = _sdk(tmp_path)
    project = _mod(sdk, "Clean", {"Data/Mod.xml": _doc(CLEAN_UNIT)})
    _i, _q, status = _status(project)
    assert status["complete"] is True and status["gaps"] == {}


def test_each_gap_kind_makes_the_index_incomplete_and_names_it(tmp_path: Path) -> None:
    sdk = _sdk(tmp_path)
    cases = {
        "INCLUDE_NOT_FOUND": {
            "Data/Mod.xml": _doc(CLEAN_UNIT, '    <Include type="all" source="Units/Missing.xml"/>\n')
        },
        "XML_MALFORMED": {
            "Data/Mod.xml": _doc(CLEAN_UNIT, '    <Include type="all" source="Bad.xml"/>\n'),
            "Data/Bad.xml": f'<AssetDeclaration {NS}>\n  <GameObject id="Half">\n  </Oops>\n',
        },
        "UNKNOWN_ELEMENT": {
            "Data/Mod.xml": _doc(
                '  <GameObject id="Typo"><Behaviours/><Bogus Weapon="CleanGun"/></GameObject>\n'
            )
        },
        "FILE_UNREACHED": {
            "Data/Mod.xml": _doc(CLEAN_UNIT, '    <Include type="all" source="../../../../outside.xml"/>\n')
        },
    }
    (tmp_path / "outside.xml").write_text(_doc(CLEAN_UNIT), encoding="utf-8")
    for kind, files in cases.items():
        project = _mod(sdk, f"Gap {kind}", files)
        _i, q, status = _status(project)
        assert status["final"] is True, kind
        assert status["complete"] is False, kind
        gaps = status["gaps"]
        assert isinstance(gaps, dict) and list(gaps) == [kind], (kind, gaps)
        gap = gaps[kind]
        assert gap["blocking"] is True and gap["count"] >= 1 and gap["files"] == 1
        assert gap["top"][0]["file"] == ("Data/Bad.xml" if kind == "XML_MALFORMED" else "Data/Mod.xml")
        # every answer carries the same block, not only get_status
        assert q.find_asset("CleanTank")["index"]["gaps"] == gaps
    malformed = _status(sdk / "Mods" / "Gap XML_MALFORMED")[2]["gaps"]["XML_MALFORMED"]  # type: ignore[index]
    assert malformed["fix"].startswith("fix the XML at Data/Bad.xml:")
    unreached = _status(sdk / "Mods" / "Gap FILE_UNREACHED")[2]["gaps"]["FILE_UNREACHED"]  # type: ignore[index]
    assert "--data-path" in unreached["fix"]


def test_an_asset_type_without_schema_is_named_but_covered_by_inference(tmp_path: Path) -> None:
    sdk = _sdk(tmp_path)
    ui = _doc(
        '  <UIJoypadCommandBarStances id="Btn_Power" Weapon="CleanGun">\n'
        '    <Data><Power Image="Button_X"/></Data>\n'
        "  </UIJoypadCommandBarStances>\n"
    )
    project = _mod(
        sdk,
        "Untyped",
        {
            "Data/Mod.xml": _doc(CLEAN_UNIT, '    <Include type="all" source="UI/Buttons.xml"/>\n'),
            "Data/UI/Buttons.xml": ui,
        },
    )
    _i, q, status = _status(project)
    gap = status["gaps"]["NO_SCHEMA_FOR_TYPE"]  # type: ignore[index]
    assert (
        gap["blocking"] is False
        and gap["count"] == 1
        and gap["top"] == [{"file": "Data/UI/Buttons.xml", "count": 1}]
    )
    assert gap["types"] == [{"type": "UIJoypadCommandBarStances", "count": 1}]
    assert status["complete"] is True  # covered by inference: reported, not blocking
    # its reference is inferred from the value naming an existing asset, and marked so
    users = q.find_references("CleanGun")["references"]
    guessed = [r for r in users if r["from"]["id"] == "Btn_Power"]
    assert (
        len(guessed) == 1 and guessed[0]["inferred"] is True and guessed[0]["inferredBy"] in ("name", "value")
    )
    forward = q.get_asset_references("UIJoypadCommandBarStances", "Btn_Power")["edges"]
    assert [e["inferred"] for e in forward if e["to"]] == [True]
    named = q.list_diagnostics(code="NO_SCHEMA_FOR_TYPE")["diagnostics"]
    assert [d["file"] for d in named] == ["Data/UI/Buttons.xml"]


def test_gaps_survive_the_snapshot_and_reach_the_mcp_text(tmp_path: Path) -> None:
    sdk = _sdk(tmp_path)
    project = _mod(
        sdk,
        "Snap",
        {"Data/Mod.xml": _doc(CLEAN_UNIT, '    <Include type="all" source="Units/Missing.xml"/>\n')},
    )
    index, _q, status = _status(project)
    home = tmp_path / "home"
    assert index.data is not None
    write_snapshot(index.data, index.status(), home)
    snap = QueryApi(SnapshotSource.load(project, home))
    answer = snap.find_references("CleanGun")
    assert answer["index"]["complete"] is False and answer["index"]["gaps"] == status["gaps"]
    text = _summary(Answer(source="snapshot", index=answer["index"], result=answer))
    assert "incomplete" in text.splitlines()[0]
    assert "gap INCLUDE_NOT_FOUND: 1 in 1 files" in text and "Data/Mod.xml (1)" in text


def test_a_mod_outside_the_sdk_found_by_the_name_its_includes_use(tmp_path: Path) -> None:
    sdk = _sdk(tmp_path)
    files = {
        "Data/Mod.xml": _doc(
            "",
            '    <Include type="all" source="DATA:RA3 Undecided/Data/Units/Tank.xml"/>\n'
            '    <Include type="all" source="DATA:RA3 Undecided/Data/Units/Gun.xml"/>\n'
            '    <Include type="all" source="DATA:RA3 Undecided/Data/Units/Scout.xml"/>\n',
        ),
        "Data/Units/Tank.xml": _doc('  <GameObject id="Tank"/>\n'),
        "Data/Units/Gun.xml": _doc('  <WeaponTemplate id="Gun"/>\n'),
        "Data/Units/Scout.xml": _doc('  <GameObject id="Scout"/>\n'),
    }
    copy = _mod(sdk, "Undecided copy", files)  # inside the SDK, under another name
    _i, q, status = _status(copy)
    assert status["complete"] is True and q.find_asset("Scout")["found"] is True
    # a person's project file records what was found
    cfg, _saved, written = configure(copy, remember="project")
    assert written is not None and cfg.mod_names == ["RA3 Undecided"]
    saved = read_settings(copy)
    assert saved is not None and saved.mod_names == ["RA3 Undecided"]
    # the same mod outside any SDK: found the same way
    elsewhere = tmp_path / "work" / "my mod"
    shutil.copytree(copy, elsewhere)
    _i, q2, _s = _status(elsewhere)
    assert q2.find_asset("Tank")["found"] is True


def test_missing_includes_name_where_the_mod_is_expected(tmp_path: Path) -> None:
    sdk = _sdk(tmp_path)
    includes = "".join(
        f'    <Include type="all" source="DATA:RA3 Undecided/Data/Units/U{i}.xml"/>\n' for i in range(4)
    )
    project = _mod(sdk, "Elsewhere", {"Data/Mod.xml": _doc(CLEAN_UNIT, includes)})  # the files are gone
    _i, _q, status = _status(project)
    gap = status["gaps"]["INCLUDE_NOT_FOUND"]  # type: ignore[index]
    assert gap["count"] == 4
    assert f"`{sdk}/Mods/RA3 Undecided`" in gap["fix"] and 'mod_name = "RA3 Undecided"' in gap["fix"]
