"""A Kane's Wrath mod under the real C&C3 schema: its KW-only asset types keep their references.

The Kane's Wrath SDK 2020 ships the Tiberium Wars schema, which lacks `PlayerPowerButtonTemplate`,
`UnitAbilityButtonTemplate`, `ButtonSingleStateData` and `MetaGameStaticData`. The tree below is
shaped like that SDK (schema under `_CnC3_SDK/Schemas/xsd`, the mod under `Mods/`), with the real
C&C3 schema copied into it; the mod's XML is written the way KW mods write these types.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from moddesk.ra3.core.index import ModIndex
from moddesk.ra3.core.project import detect_project
from moddesk.ra3.core.query import QueryApi

CORPORA = Path(os.environ.get("MODDESK_CORPORA") or "/work/shared/corpora")
SCHEMAS = CORPORA / "sage" / "cnc3-sdk" / "Schemas" / "xsd"
pytestmark = [
    pytest.mark.corpus,
    pytest.mark.skipif(not SCHEMAS.is_dir(), reason="SAGE corpora absent (set MODDESK_CORPORA)"),
]

NS = 'xmlns="uri:ea.com:eala:asset"'
BUTTONS = f"""<?xml version="1.0" encoding="utf-8"?>
<AssetDeclaration {NS}>
  <ButtonSingleStateData id="ButtonState_Reaper17Swarm">
    <State Image="Button_Reaper17Swarm" Title="NAME:Reaper17Swarm" Description="DESC:Reaper17Swarm"/>
  </ButtonSingleStateData>
  <PlayerPowerButtonTemplate id="Button_Reaper17Swarm" SpecialPower="SpecialPower_Reaper17Swarm">
    <Data>
      <TargetedPower StateData="ButtonState_Reaper17Swarm" RadiusCursor="TargetingDecalSwarm"/>
    </Data>
  </PlayerPowerButtonTemplate>
  <UnitAbilityButtonTemplate id="Button_Deploy" LogicCommand="Command_Deploy">
    <Data><SpecialPower StateData="ButtonState_Reaper17Swarm"/></Data>
  </UnitAbilityButtonTemplate>
  <StrikeForceBuildTemplate id="SF_Nod" LightMapRep="NodBuggy" Side="Nod">
    <Vehicles><StrikeForceElementTemplate Object="NodBuggy" Cost="500"/></Vehicles>
  </StrikeForceBuildTemplate>
  <MetaGameStaticData id="TheMetaGameStaticData" SFBuildLightPowerTemplate="SpecialPower_Reaper17Swarm">
    <ColorOfOPSpendText r="255" g="0" b="0" a="255"/>
  </MetaGameStaticData>
</AssetDeclaration>
"""
POWERS = f"""<?xml version="1.0" encoding="utf-8"?>
<AssetDeclaration {NS}>
  <SpecialPowerTemplate id="SpecialPower_Reaper17Swarm" ReloadTime="60s"/>
  <LogicCommand id="Command_Deploy" Type="SPECIAL_POWER"/>
  <GameObject id="NodBuggy"/>
</AssetDeclaration>
"""
STATIC = f"""<?xml version="1.0" encoding="utf-8"?>
<AssetDeclaration {NS}>
  <Includes>
    <Include type="all" source="Powers.xml"/>
    <Include type="all" source="UI/PlayerPowerButtonTemplates.xml"/>
  </Includes>
</AssetDeclaration>
"""


@pytest.fixture(scope="module")
def kw_mod(tmp_path_factory: pytest.TempPathFactory) -> tuple[ModIndex, QueryApi]:
    sdk = tmp_path_factory.mktemp("KW SDK 2020")
    shutil.copytree(SCHEMAS, sdk / "_CnC3_SDK" / "Schemas" / "xsd")
    mod = sdk / "Mods" / "KW Mod"
    for rel, text in {
        "Data/Static.xml": STATIC,
        "Data/Powers.xml": POWERS,
        "Data/UI/PlayerPowerButtonTemplates.xml": BUTTONS,
    }.items():
        (mod / rel).parent.mkdir(parents=True, exist_ok=True)
        (mod / rel).write_text(text, encoding="utf-8")
    cfg = detect_project(mod)
    assert cfg.game == "kw" and cfg.schema_path is not None and "_CnC3_SDK" in str(cfg.schema_path)
    index = ModIndex(cfg, cache_dir=tmp_path_factory.mktemp("cache"))
    index.build()
    return index, QueryApi(index)


def test_kw_only_types_keep_their_references_schema_backed(kw_mod: tuple[ModIndex, QueryApi]) -> None:
    _index, q = kw_mod
    users = q.find_references("SpecialPower_Reaper17Swarm", "SpecialPowerTemplate")["references"]
    by_owner = {(r["from"]["type"], r["from"]["id"]): r for r in users}
    button = by_owner[("PlayerPowerButtonTemplate", "Button_Reaper17Swarm")]
    assert button["file"] == "Data/UI/PlayerPowerButtonTemplates.xml" and "inferred" not in button
    assert ("MetaGameStaticData", "TheMetaGameStaticData") in by_owner
    state_users = q.find_references("ButtonState_Reaper17Swarm", "ButtonSingleStateData")["references"]
    assert {(r["from"]["type"], r["element"]) for r in state_users} == {
        ("PlayerPowerButtonTemplate", "TargetedPower"),
        ("UnitAbilityButtonTemplate", "SpecialPower"),
    }
    buggy = q.find_references("NodBuggy", "GameObject")["references"]
    assert sorted((r["from"]["id"], r["attribute"], "inferred" in r) for r in buggy) == [
        ("SF_Nod", "LightMapRep", False),
        ("SF_Nod", "Object", False),
    ]
    command = q.find_references("Command_Deploy", "LogicCommand")["references"]
    assert [r["from"]["id"] for r in command] == ["Button_Deploy"]


def test_kw_only_types_leave_no_gap(kw_mod: tuple[ModIndex, QueryApi]) -> None:
    _index, q = kw_mod
    index = q.get_status()["index"]
    assert "NO_SCHEMA_FOR_TYPE" not in index["gaps"] and "UNKNOWN_ELEMENT" not in index["gaps"]
    diags = q.list_diagnostics(file="Data/UI/PlayerPowerButtonTemplates.xml")["diagnostics"]
    assert [d for d in diags if d["code"] in ("UNKNOWN_ELEMENT", "NO_SCHEMA_FOR_TYPE")] == []
