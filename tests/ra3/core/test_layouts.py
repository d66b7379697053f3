"""SDK layouts found by themselves: each test writes a small tree shaped like the real one.

- the Kane's Wrath SDK 2020 (WrathEd): `BuildMod.bat` at the SDK root compiling
  `Mods/<mod>/Data/Static.xml` with `-bps:"static_common_2.manifest,%cd%\\Game Files\\Manifest\\..."`,
  the C&C3 schema under `_CnC3_SDK/Schemas/xsd`;
- the C&C3 SDK: `Schemas/xsd`, base XML under `CnC3Xml`, compiled streams under `BuiltMods/CnC3Xml`.
"""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from rich.console import Console

from moddesk.ra3.agent.setup import run_enable
from moddesk.ra3.core.index import ModIndex
from moddesk.ra3.core.query import QueryApi
from moddesk.ra3.core.sample import NS, sample_files
from moddesk.ra3.core.settings import PROJECT_FILE, configure, read_settings
from moddesk.ra3.index_cli import run_index


@pytest.fixture(autouse=True)
def _home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RA3MODXML_HOME", str(tmp_path / "ra3 home"))
    monkeypatch.setenv("HOME", str(tmp_path / "user home"))
    monkeypatch.setenv("USERPROFILE", str(tmp_path / "user home"))


def manifest_bytes(assets: list[str], refs: dict[int, list[int]]) -> bytes:
    """A v5 `.manifest` holding `Type:Id` assets (ids 1..n) and compiled reference edges by index."""
    names = b"".join(a.encode() + b"\0" for a in assets)
    sources = b"DATA:base.xml\0"
    ref_buf = b""
    entries = b""
    name_off = 0
    for i, name in enumerate(assets):
        targets = refs.get(i, [])
        off = len(ref_buf)
        for t in targets:
            ref_buf += struct.pack("<II", t + 1, t + 1)
        entries += struct.pack("<11I", i + 1, i + 1, 0, 0, off, len(targets), name_off, 0, 0, 0, 0)
        name_off += len(name) + 1
    header = struct.pack("<BBH", 0, 0, 5) + struct.pack(
        "<11I", 0, 0, len(assets), 0, 0, 0, 0, len(ref_buf), 0, len(names), len(sources)
    )
    return header + entries + ref_buf + names + sources


def _write(path: Path, data: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, bytes):
        path.write_bytes(data)
    else:
        path.write_text(data, encoding="utf-8")
    return path


def _doc(body: str, includes: str = "") -> str:
    return (
        '<?xml version="1.0" encoding="utf-8"?>\n'
        f"<AssetDeclaration {NS}>\n  <Includes>\n{includes}  </Includes>\n{body}</AssetDeclaration>\n"
    )


def _schema(into: Path) -> None:
    """The sample SDK's schema set, written where a layout keeps its XSDs."""
    for rel, text in sample_files().items():
        if rel.startswith("Schemas/xsd/"):
            _write(into / rel[len("Schemas/xsd/") :], text)


# lines shaped like the Kane's Wrath SDK 2020's BuildMod.bat (WrathEd 1.08)
KW_BUILDMOD = r"""@echo off
cd /D "%~dp0"
set modname=%~1
set streamversion=_mod
if exist "%cd%\Mods\%modname%\Data\Static.xml" "%cd%\Tools\WrathEd.exe" -gameDefinition:"Kane's Wrath" -compile:"%cd%\Mods\%modname%\Data\Static.xml" -art:"..\Art" -audio:"..\Audio" -out:"%cd%\Compilation\Mods\%modname%\Data" -version:"%streamversion%" -bps:"static_common_2.manifest,%cd%\Game Files\Manifest\static_common_2.manifest" -lowlod:"static%streamversion%.manifest"
if exist "%cd%\Mods\%modname%\Data\MapMetaData.xml" "%cd%\Tools\WrathEd.exe" -gameDefinition:"Kane's Wrath" -compile:"%cd%\Mods\%modname%\Data\MapMetaData.xml" -out:"%cd%\Compilation\Mods\%modname%\Data" -version:"%streamversion%" -bps:"mapmetadata.manifest,%cd%\Game Files\Manifest\mapmetadata.manifest"
setlocal EnableDelayedExpansion
set sdk=!cd!
cd /D "!sdk!\Game Files\Manifest\AptUI"
for %%A in ("*.manifest") do (
	if exist "!sdk!\Mods\%modname%\Data\AptUI\%%~nA.xml" "!sdk!\Tools\WrathEd.exe" -gameDefinition:"Kane's Wrath" -compile:"!sdk!\Mods\%modname%\Data\AptUI\%%~nA.xml" -bps:"aptui\%%~nA.manifest,!sdk!\Game Files\Manifest\AptUI\%%~nA.manifest" -version:"%streamversion%"
)
"""


def _kw_sdk(root: Path) -> tuple[Path, Path]:
    sdk = root / "KW Mod SDK 2020"
    _write(sdk / "BuildMod.bat", KW_BUILDMOD)
    _write(sdk / "Tools" / "Version.txt", "1.08\n")
    base = manifest_bytes(
        ["WeaponTemplate:BaseCannon", "GameObject:BaseTank", "WeaponTemplate:BaseGun"], {1: [2]}
    )
    _write(sdk / "Game Files" / "Manifest" / "static_common_2.manifest", base)
    _write(sdk / "Game Files" / "Manifest" / "mapmetadata.manifest", manifest_bytes(["MpGameRules:Base"], {}))
    _write(
        sdk / "Game Files" / "Manifest" / "AptUI" / "MainMenu.manifest", manifest_bytes(["Texture:Apt"], {})
    )
    _schema(sdk / "_CnC3_SDK" / "Schemas" / "xsd")
    mod = sdk / "Mods" / "My Mod"
    _write(
        mod / "Data" / "Static.xml",
        _doc("", '    <Include type="all" source="Units.xml"/>\n'),
    )
    _write(
        mod / "Data" / "Units.xml",
        _doc(
            '  <WeaponTemplate id="ModGun" inheritFrom="BaseGun"/>\n'
            '  <GameObject id="ModTank" inheritFrom="GameObject:BaseTank"/>\n'
        ),
    )
    return sdk, mod


def test_kanes_wrath_sdk_2020_is_found_by_itself(tmp_path: Path) -> None:
    sdk, mod = _kw_sdk(tmp_path)
    cfg, _saved, written = configure(mod, remember="home")
    assert cfg.sdk_dir == sdk and cfg.game == "kw"
    assert cfg.schema_path == sdk / "_CnC3_SDK" / "Schemas" / "xsd" / "CnC3Types.xsd"
    assert [e.path for e in cfg.entries] == [mod / "Data" / "Static.xml"]
    # the literal -bps manifests, not the per-AptUI-file ones built from a loop variable
    assert cfg.base_manifests == [sdk / "Game Files" / "Manifest" / "static_common_2.manifest"]
    index = ModIndex(cfg)
    index.build()
    q = QueryApi(index)
    status = q.get_status()
    assert status["index"]["complete"] is True and status["index"]["incomplete"] == []
    base = q.find_asset("BaseGun", "WeaponTemplate")
    assert base["found"] is True and base["assets"][0]["origin"] == "manifest"
    users = q.find_references("BaseGun", "WeaponTemplate")
    owners = {(r["from"]["type"], r["from"]["id"]) for r in users["references"]}
    assert ("WeaponTemplate", "ModGun") in owners and ("GameObject", "BaseTank") in owners
    # the project file records what was found
    assert written is not None
    saved = read_settings(mod)
    assert saved is not None and saved.game == "kw" and saved.schema == cfg.schema_path
    assert saved.base_manifests == cfg.base_manifests


def test_enable_writes_the_project_file_into_the_mod_even_after_an_index(tmp_path: Path) -> None:
    _sdk, mod = _kw_sdk(tmp_path)
    run_index(mod, quiet=True)  # remembers its settings under the per-user home
    assert not (mod / PROJECT_FILE).exists()
    console = Console(record=True, width=200)
    run_enable(mod, clients=[], skill=False, skill_dirs=[], yes=True, console=console)
    text = (mod / PROJECT_FILE).read_text(encoding="utf-8")
    assert 'game = "kw"' in text and "static_common_2.manifest" in text
    assert "project file:" in console.export_text()
    # a second enable keeps the person's edits
    (mod / PROJECT_FILE).write_text(text + "# mine\n", encoding="utf-8")
    run_enable(mod, clients=[], skill=False, skill_dirs=[], yes=True, console=Console(record=True))
    assert (mod / PROJECT_FILE).read_text(encoding="utf-8").endswith("# mine\n")


def test_cnc3_sdk_is_found_by_itself(tmp_path: Path) -> None:
    sdk = tmp_path / "CnC3 Mod SDK"
    _schema(sdk / "Schemas" / "xsd")
    _write(sdk / "CnC3Xml" / "Static.xml", _doc('  <WeaponTemplate id="BaseGun"/>\n'))
    _write(sdk / "BuiltMods" / "CnC3Xml" / "static.manifest", manifest_bytes(["WeaponTemplate:BaseGun"], {}))
    mod = sdk / "Mods" / "Mine"
    _write(
        mod / "Data" / "Mod.xml",
        _doc(
            '  <WeaponTemplate id="MyGun" inheritFrom="BaseGun"/>\n',
            '    <Include type="reference" source="DATA:Static.xml"/>\n',
        ),
    )
    cfg, _saved, _written = configure(mod, remember=None)
    assert cfg.sdk_dir == sdk and cfg.game == "cnc3" and cfg.base_manifests == []
    assert cfg.schema_path == sdk / "Schemas" / "xsd" / "CnC3Types.xsd"
    index = ModIndex(cfg)
    index.build()
    q = QueryApi(index)
    assert q.get_status()["index"]["complete"] is True
    assert q.find_asset("BaseGun")["assets"][0]["origin"] == "manifest"
