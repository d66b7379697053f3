"""Indexing rules on the built-in sample SDK: one behaviour per test, as a modder would see it."""

from __future__ import annotations

from pathlib import Path

import pytest

from moddesk.ra3.core.index import ModIndex
from moddesk.ra3.core.model import AMBIGUOUS, EMITTED, RESOLVED, UNRESOLVED, VISIBLE, IndexData
from moddesk.ra3.core.parse import RefSite
from moddesk.ra3.core.project import detect_project
from moddesk.ra3.core.query import QueryApi
from moddesk.ra3.core.sample import write_sample_project


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> tuple[ModIndex, IndexData, QueryApi]:
    root = tmp_path_factory.mktemp("sdk with spaces")
    project = write_sample_project(root)
    index = ModIndex(detect_project(project))
    data = index.build()
    return index, data, QueryApi(index)


def refs_of(data: IndexData, owner: str) -> list[RefSite]:
    return [r for r in data.refs() if r.owner_id == owner]


def test_entries_and_streams(sample: tuple[ModIndex, IndexData, QueryApi]) -> None:
    index, data, _q = sample
    assert [e.stream for e in index.config.entries] == ["static", "global:MapMetaData_Sample"]
    assert data.streams == ["static", "global:MapMetaData_Sample"]
    rules = data.by_key[("MpGameRules", "samplerules")][0]
    assert rules.stream == "global:MapMetaData_Sample"


def test_schema_include_is_case_insensitive(sample: tuple[ModIndex, IndexData, QueryApi]) -> None:
    index, _d, _q = sample
    assert index.schema is not None
    # the root includes `includes/Ref.xsd` and `base/AssetBase.xsd`; the folders are `Includes/` and `Base/`
    assert "WeaponTemplateRef" in index.schema.types
    assert "BaseAssetType" in index.schema.types


def test_attribute_reference_strong_and_weak(sample: tuple[ModIndex, IndexData, QueryApi]) -> None:
    _i, data, _q = sample
    by_attr = {(r.attribute, r.kind) for r in refs_of(data, "SampleTank")}
    assert ("WeaponName", "strong") in by_attr
    assert ("CommandSet", "weak") in by_attr


def test_element_content_reference_from_declaration_reftype(
    sample: tuple[ModIndex, IndexData, QueryApi],
) -> None:
    _i, data, _q = sample
    content = [r for r in refs_of(data, "SampleTank") if r.element == "IncludeThing"]
    assert len(content) == 1
    ref = content[0]
    assert ref.attribute is None and ref.kind == "weak" and ref.ref_type == "GameObject"
    assert data.resolve(ref).keys == (("GameObject", "samplescout"),)


def test_simple_type_content_reference(sample: tuple[ModIndex, IndexData, QueryApi]) -> None:
    _i, data, _q = sample
    ocl = refs_of(data, "OCL_TankDebris")
    assert [(r.element, r.value, r.kind) for r in ocl] == [("CreateObject", "SampleScout", "weak")]


def test_poid_module_ids_are_not_references(sample: tuple[ModIndex, IndexData, QueryApi]) -> None:
    _i, data, _q = sample
    assert not [r for r in data.refs() if r.value.startswith("ModuleTag_")]


def test_file_reference_is_kept_but_not_resolved(sample: tuple[ModIndex, IndexData, QueryApi]) -> None:
    _i, data, _q = sample
    icon = [r for r in refs_of(data, "SampleTank") if r.element == "Icon"]
    assert icon and icon[0].kind == "file"
    assert data.resolve(icon[0]).status == "not-a-reference"


def test_derived_type_matching(sample: tuple[ModIndex, IndexData, QueryApi]) -> None:
    _i, data, _q = sample
    model = next(r for r in refs_of(data, "SampleTank") if r.element == "Model")
    assert model.ref_type == "BaseRenderAssetType"
    res = data.resolve(model)
    assert res.status == RESOLVED and res.keys == (("W3DContainer", "tatank"),)


def test_ambiguous_reference_is_reported(sample: tuple[ModIndex, IndexData, QueryApi]) -> None:
    _i, data, q = sample
    voice = next(r for r in refs_of(data, "SampleTank") if r.attribute == "VoiceSelect")
    res = data.resolve(voice)
    assert res.status == AMBIGUOUS
    assert {k[0] for k in res.keys} == {"AudioEvent", "MusicTrack"}
    found = q.find_asset("tankvoice")
    assert found["ambiguousTypes"] == ["AudioEvent", "MusicTrack"]


def test_xi_include_fragment_walked_in_including_context(
    sample: tuple[ModIndex, IndexData, QueryApi],
) -> None:
    _i, data, q = sample
    death = [r for r in refs_of(data, "SampleTank") if r.element == "CreateObjectDie"]
    assert len(death) == 1
    assert death[0].file == "Data/Includes/DeathModules.xml" and death[0].line == 3
    assert data.resolve(death[0]).keys == (("ObjectCreationList", "ocl_tankdebris"),)
    frag = q.is_file_active("Data/Includes/DeathModules.xml")
    assert frag["active"] is True and frag["role"] == "fragment"


def test_inherit_from_plain_qualified_and_self_override(sample: tuple[ModIndex, IndexData, QueryApi]) -> None:
    _i, data, q = sample
    gun = next(r for r in refs_of(data, "SampleTankGun") if r.kind == "inherit")
    assert data.resolve(gun).keys == (("WeaponTemplate", "basecannon"),)
    scout = next(r for r in refs_of(data, "SampleScout") if r.kind == "inherit")
    assert scout.target_type == "GameObject" and data.resolve(scout).status == RESOLVED
    # `inheritFrom` its own id: the override idiom finds the vanilla copy in the instance include
    tank = next(r for r in refs_of(data, "SampleTank") if r.kind == "inherit")
    assert data.resolve(tank).status == RESOLVED
    chain = q.get_definition("GameObject", "SampleTank")["definitions"]
    assert [d["origin"] for d in chain] == ["project", "sdk"]


def test_include_modes_emitted_visible(sample: tuple[ModIndex, IndexData, QueryApi]) -> None:
    _i, data, q = sample
    assert data.by_key[("GameObject", "basevehicle")][0].mode == VISIBLE
    assert data.by_key[("GameObject", "basevehicle")][0].via_instance
    assert data.by_key[("WeaponTemplate", "sampletankgun")][0].mode == EMITTED
    base = q.is_file_active(
        str(Path(data.project_dir).parent.parent / "SageXml" / "BaseObjects" / "BaseVehicle.xml")
    )
    assert base["active"] is True and base["mode"] == "visible"


def test_reference_include_without_manifest_is_external(sample: tuple[ModIndex, IndexData, QueryApi]) -> None:
    _i, data, _q = sample
    edge = next(e for e in data.includes if e.type == "reference")
    assert edge.target is not None and edge.target.endswith("static.xml") and edge.manifest is None
    placeholder = data.files[edge.target]
    assert placeholder.streams == {"static": 0}


def test_commented_out_include_is_inactive(sample: tuple[ModIndex, IndexData, QueryApi]) -> None:
    _i, _d, q = sample
    answer = q.is_file_active("Data/Units/Unused.xml")
    assert answer["active"] is False and answer["exists"] is True
    assert "its include at Data/Mod.xml:9 is commented out" in answer["note"]
    assert q.find_asset("NeverBuilt")["found"] is False


def test_art_two_letter_folder_and_w3x_assets(sample: tuple[ModIndex, IndexData, QueryApi]) -> None:
    _i, data, q = sample
    edge = next(e for e in data.includes if e.source == "art:TAtank.w3x")
    assert edge.target == "Art/ta/TATank.w3x"
    hier = next(r for r in data.refs() if r.attribute == "Hierarchy")
    assert data.resolve(hier).keys == (("W3DHierarchy", "tatank_skl"),)
    assert q.find_asset("TATank.BODY", "W3DMesh")["found"]


def test_case_insensitive_paths_with_spaces(sample: tuple[ModIndex, IndexData, QueryApi]) -> None:
    _i, _data, q = sample
    answer = q.resolve_include("DATA:sample mod/data/UNITS/sampletank.xml")
    assert answer["resolved"] == "Data/Units/SampleTank.xml"
    assert answer["active"] is True
    bad = q.resolve_include("GLOBAL:foo.xml")
    assert bad["resolved"] is None and "ILLEGAL_PATH_ALIAS" in bad["note"]


def test_malformed_file_indexed_as_far_as_it_parses(sample: tuple[ModIndex, IndexData, QueryApi]) -> None:
    _i, _data, q = sample
    assert q.find_asset("HalfParsed")["found"]
    diags = q.list_diagnostics(code="XML_MALFORMED")["diagnostics"]
    assert diags and diags[0]["file"] == "Data/Broken.xml" and diags[0]["line"] == 4


def test_missing_include_reported_with_line(sample: tuple[ModIndex, IndexData, QueryApi]) -> None:
    _i, _d, q = sample
    diags = q.list_diagnostics(code="INCLUDE_NOT_FOUND")["diagnostics"]
    assert [(d["file"], d["line"]) for d in diags] == [("Data/Mod.xml", 11)]


def test_defines_case_sensitive_and_expression_flagged(sample: tuple[ModIndex, IndexData, QueryApi]) -> None:
    _i, _d, q = sample
    hit = q.find_define("TANK_COST")
    assert hit["found"] and hit["definitions"][0]["value"] == "900"
    assert hit["expressionUseCount"] == 1 and hit["expressionUses"][0]["attribute"] == "BuildCost"
    miss = q.find_define("tank_cost")
    assert miss["found"] is False and "TANK_COST" in miss["note"]


def test_find_references_reverse(sample: tuple[ModIndex, IndexData, QueryApi]) -> None:
    _i, _d, q = sample
    answer = q.find_references("SampleScout", "GameObject")
    owners = sorted((r["from"]["id"], r["kind"]) for r in answer["references"])
    assert owners == [("OCL_TankDebris", "weak"), ("SampleTank", "weak"), ("SampleTankGun", "weak")]
    nothing = q.find_references("Orphan")
    assert nothing["references"] == [] and "nothing" in nothing["note"]


def test_unreferenced(sample: tuple[ModIndex, IndexData, QueryApi]) -> None:
    _i, _d, q = sample
    ids = {a["id"] for a in q.unreferenced()["assets"]}
    # SampleTank only references itself (inheritFrom override idiom), which does not count as a use
    assert {"Orphan", "HalfParsed", "SampleTank"} == ids


def test_status_block_on_every_answer(sample: tuple[ModIndex, IndexData, QueryApi]) -> None:
    _i, data, q = sample
    for answer in (
        q.get_status(),
        q.find_asset("SampleTank"),
        q.find_references("BaseCannon"),
        q.list_assets_by_type("GameObject"),
        q.is_file_active("Data/Mod.xml"),
        q.find_define("X"),
        q.unreferenced(),
        q.get_asset_references("GameObject", "SampleTank"),
    ):
        block = answer["index"]
        assert {"state", "complete", "stale", "buildId", "generatedAt", "projectDir"} <= set(block)
        assert block["projectDir"] == data.project_dir and block["state"] == "ready"


def test_unresolved_reference_explained(sample: tuple[ModIndex, IndexData, QueryApi]) -> None:
    _i, data, _q = sample
    assert all(data.resolve(r).status != UNRESOLVED for r in data.refs() if r.kind != "file")


def test_inherit_from_must_be_instance_included(tmp_path: Path) -> None:
    project = write_sample_project(tmp_path)
    (project / "Data" / "Extra.xml").write_text(
        '<AssetDeclaration xmlns="uri:ea.com:eala:asset">\n'
        '  <WeaponTemplate id="ExtraGun" inheritFrom="SampleTankGun"/>\n'
        '  <ObjectCreationList id="ExtraOCL" inheritFrom="OCL_TankDebris"/>\n'
        '  <WeaponTemplate id="LocalBase"/>\n'
        '  <WeaponTemplate id="LocalGun" inheritFrom="LocalBase"/>\n'
        "</AssetDeclaration>\n",
        "utf-8",
    )
    mod = project / "Data" / "Mod.xml"
    mod.write_text(
        mod.read_text("utf-8").replace(
            "  </Includes>", '    <Include type="all" source="Extra.xml"/>\n  </Includes>'
        ),
        "utf-8",
    )
    index = ModIndex(detect_project(project))
    index.build()
    diags = QueryApi(index).list_diagnostics(file="Data/Extra.xml")["diagnostics"]
    codes = sorted((d["code"], d["line"]) for d in diags)
    # Weapons.xml is only `all`-included by Mod.xml, never `instance`-included by Extra.xml;
    # an ObjectCreationList is not inheritable across documents; a same-document base is fine
    assert codes == [("INHERIT_NOT_INHERITABLE", 3), ("INHERIT_NOT_VISIBLE", 2)]


def test_root_level_xi_include_of_a_whole_document(tmp_path: Path) -> None:
    project = write_sample_project(tmp_path)
    (project / "Data" / "Whole.xml").write_text(
        '<AssetDeclaration xmlns="uri:ea.com:eala:asset"><WeaponTemplate id="SplicedGun"/></AssetDeclaration>',
        "utf-8",
    )
    weapons = project / "Data" / "Weapons.xml"
    weapons.write_text(
        weapons.read_text("utf-8").replace(
            "</AssetDeclaration>", '  <xi:include href="Whole.xml"/>\n</AssetDeclaration>'
        ),
        "utf-8",
    )
    index = ModIndex(detect_project(project))
    index.build()
    q = QueryApi(index)
    found = q.find_asset("SplicedGun")["assets"]
    assert [(a["type"], a["file"]) for a in found] == [("WeaponTemplate", "Data/Whole.xml")]
    assert q.find_asset("AssetDeclaration")["found"] is False
    assert q.is_file_active("Data/Whole.xml")["role"] == "fragment"


def test_unknown_element_reported(tmp_path: Path) -> None:
    project = write_sample_project(tmp_path)
    weapons = project / "Data" / "Weapons.xml"
    weapons.write_text(
        weapons.read_text("utf-8").replace(
            "</AssetDeclaration>",
            '  <GameObject id="Typo">\n    <Behaviours><FireWeaponUpdate id="M"/></Behaviours>\n  </GameObject>\n'
            "</AssetDeclaration>",
        ),
        "utf-8",
    )
    index = ModIndex(detect_project(project))
    index.build()
    diags = QueryApi(index).list_diagnostics(code="UNKNOWN_ELEMENT")["diagnostics"]
    assert [(d["file"], d["line"]) for d in diags] == [("Data/Weapons.xml", 9)]
    assert "<Behaviours>" in diags[0]["message"] and "<GameObject>" in diags[0]["message"]


def test_cross_file_duplicate_ids_reported_unless_override(tmp_path: Path) -> None:
    project = write_sample_project(tmp_path)
    weapons = project / "Data" / "Weapons.xml"
    weapons.write_text(
        weapons.read_text("utf-8").replace(
            "</AssetDeclaration>", '  <LogicCommandSet id="sampletankcommandset"/>\n</AssetDeclaration>'
        ),
        "utf-8",
    )
    index = ModIndex(detect_project(project))
    index.build()
    diags = QueryApi(index).list_diagnostics(code="DUPLICATE_ASSET")["diagnostics"]
    assert sorted((d["file"], d["line"]) for d in diags) == [
        ("Data/Units/SampleTank.xml", 26),
        ("Data/Weapons.xml", 8),
    ]
    # SampleTank is also defined twice (mod + SageXml copy), but one inherits from the other: no report
    assert not [d for d in diags if "SampleTank:" in d["message"] and "GameObject" in d["message"]]
