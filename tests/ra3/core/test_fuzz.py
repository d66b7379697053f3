"""Fuzz: random and mutated XML, include sources and manifests never crash a build or a query."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from moddesk.kit.errors import ServiceError
from moddesk.ra3.core.art import scan_w3x
from moddesk.ra3.core.index import ModIndex
from moddesk.ra3.core.manifest import parse_manifest
from moddesk.ra3.core.parse import Extractor
from moddesk.ra3.core.project import ProjectConfig, detect_project, resolve_source
from moddesk.ra3.core.query import QueryApi
from moddesk.ra3.core.sample import sample_files, write_sample_project
from moddesk.ra3.core.schema import SchemaModel, load_schema

SEED_XML = sample_files()["Mods/Sample Mod/Data/Units/SampleTank.xml"].encode()
FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.fixture(scope="module")
def schema_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("fz")
    write_sample_project(root)
    return root


@pytest.fixture(scope="module")
def schema(schema_root: Path) -> SchemaModel:
    return load_schema(schema_root / "Schemas" / "xsd" / "CnC3Types.xsd")


def _mutate(data: bytes, edits: list[tuple[int, int, bytes]]) -> bytes:
    buf = bytearray(data)
    for pos, cut, insert in edits:
        at = pos % (len(buf) + 1)
        buf[at : at + cut] = insert
    return bytes(buf)


edits = st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 8), st.binary(max_size=8)), max_size=6)
xml_noise = st.sampled_from(
    [
        b"<",
        b">",
        b"/>",
        b"</Behaviors>",
        b'="',
        b"&",
        b"<!--",
        b"<?xml ?>",
        b"\x00",
        b"\xff",
        b'<xi:include href="DATA:x.xml"/>',
        b'inheritFrom="A:B:C"',
        b"=$X",
        b"]]>",
    ]
)


@FUZZ
@given(edits=edits, noise=st.lists(st.tuples(st.integers(0, 10_000), xml_noise), max_size=4))
def test_extractor_survives_mutated_xml(
    schema: SchemaModel, edits: list[tuple[int, int, bytes]], noise: list[tuple[int, bytes]]
) -> None:
    data = _mutate(SEED_XML, edits + [(p, 0, n) for p, n in noise])
    record = Extractor(schema, lambda href, container, frm: f"no fragments in fuzz ({href})").extract(
        "f.xml", data
    )
    for ref in record.refs:
        assert ref.line >= 0 and ref.col >= 0
    for diag in record.diagnostics:
        assert diag.code and diag.line >= 0


@FUZZ
@given(data=st.binary(max_size=400))
def test_extractor_survives_random_bytes(schema: SchemaModel, data: bytes) -> None:
    record = Extractor(schema).extract("r.xml", data)
    assert isinstance(record.assets, list)
    scan = scan_w3x(data, "r.w3x")
    assert isinstance(scan.assets, list)


@FUZZ
@given(source=st.text(max_size=60))
def test_include_resolver_total(schema_root: Path, source: str) -> None:
    cfg = ProjectConfig(project_dir=schema_root, data_paths=[schema_root], art_paths=[schema_root])
    res = resolve_source(cfg, source, schema_root / "Mods" / "Sample Mod" / "Data" / "Mod.xml")
    assert res.path is None or res.path.exists()
    assert isinstance(res.candidates, tuple)


def _manifest_bytes(version: int = 5) -> bytes:
    names = b"GameObject:Tank\0WeaponTemplate:Gun\0"
    sources = b"DATA:a.xml\0"
    refs = struct.pack("<II", 1, 2)
    header = struct.pack("<BBH", 0, 0, version) + struct.pack(
        "<11I", 0, 0, 2, 0, 0, 0, 0, len(refs), 0, len(names), len(sources)
    )
    extra = b"\0\0\0\0" if version >= 6 else b""
    asset1 = struct.pack("<11I", 1, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0) + extra
    asset2 = struct.pack("<11I", 2, 2, 0, 0, 8, 0, 16, 0, 0, 0, 0) + extra
    return header + asset1 + asset2 + refs + names + sources


def test_manifest_roundtrip_synthetic() -> None:
    for version in (5, 6):
        m = parse_manifest(_manifest_bytes(version))
        assert [a.name for a in m.assets] == ["GameObject:Tank", "WeaponTemplate:Gun"]
        assert m.assets[0].references == [(1, 2)] and m.assets[0].source == "DATA:a.xml"
        assert m.assets[1].type_name == "WeaponTemplate" and m.assets[1].id == "Gun"


@FUZZ
@given(edits=edits)
def test_manifest_reader_parses_or_raises_manifest_invalid(edits: list[tuple[int, int, bytes]]) -> None:
    data = _mutate(_manifest_bytes(), edits)
    try:
        m = parse_manifest(data)
    except ServiceError as exc:
        assert exc.code == "MANIFEST_INVALID"
    else:
        assert all(isinstance(a.name, str) for a in m.assets)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(edits=edits, noise=st.lists(st.tuples(st.integers(0, 10_000), xml_noise), max_size=4))
def test_mutated_mod_never_crashes_build_or_queries(
    tmp_path_factory: pytest.TempPathFactory,
    edits: list[tuple[int, int, bytes]],
    noise: list[tuple[int, bytes]],
) -> None:
    root = tmp_path_factory.mktemp("mut")
    project = write_sample_project(root)
    for rel in ("Data/Mod.xml", "Data/Units/SampleTank.xml", "Data/Includes/DeathModules.xml"):
        path = project / rel
        path.write_bytes(_mutate(path.read_bytes(), edits + [(p, 0, n) for p, n in noise]))
    index = ModIndex(detect_project(project))
    index.build()
    q = QueryApi(index)
    q.get_status()
    q.find_asset("SampleTank")
    q.find_references("SampleScout")
    q.unreferenced()
    q.list_diagnostics()
    q.is_file_active("Data/Weapons.xml")
    for asset in q.list_assets_by_type("GameObject", limit=5)["assets"]:
        q.get_asset_references(asset["type"], asset["id"], depth=2)


@FUZZ
@given(text=st.text(max_size=400))
def test_project_file_parses_or_says_invalid(tmp_path: Path, text: str) -> None:
    from moddesk.ra3.core.errors import Ra3Error
    from moddesk.ra3.core.settings import PROJECT_FILE, read_settings

    (tmp_path / PROJECT_FILE).write_text(text, encoding="utf-8")
    try:
        settings_read = read_settings(tmp_path)
    except Ra3Error as exc:
        assert exc.code == "PROJECT_FILE_INVALID"
    else:
        assert settings_read is not None and settings_read.game in (None, "ra3", "cnc3", "kw")


@FUZZ
@given(text=st.text(alphabet=st.sampled_from(list('abc.xml:\\/"% =\n-DataStatic')), max_size=300))
def test_buildmod_bat_never_breaks_detection(tmp_path: Path, text: str) -> None:
    (tmp_path / "Data").mkdir(exist_ok=True)
    (tmp_path / "Data" / "Static.xml").write_text("<AssetDeclaration/>", "utf-8")
    (tmp_path / "BuildMod.bat").write_text(text, encoding="utf-8")
    cfg = detect_project(tmp_path)
    assert cfg.game == "kw" and cfg.entries
    assert all(e.path.is_file() and tmp_path in e.path.parents for e in cfg.entries)
