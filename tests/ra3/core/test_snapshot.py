"""Snapshots: v1 schema, atomic current + previous, same answers as the live index.

Quiet-period writes belong to the watcher and are tested in test_mcp_backend.py.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from moddesk.kit.errors import ServiceError
from moddesk.ra3.core.index import ModIndex
from moddesk.ra3.core.project import detect_project, project_slug
from moddesk.ra3.core.query import QueryApi
from moddesk.ra3.core.sample import write_sample_project
from moddesk.ra3.core.snapshot import (
    SnapshotSource,
    list_snapshots,
    load_snapshot,
    previous_path,
    snapshot_path,
    write_snapshot,
)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[ModIndex, Path]:
    root = tmp_path_factory.mktemp("snap")
    index = ModIndex(detect_project(write_sample_project(root / "sdk")))
    index.build()
    return index, root / "home"


def _strip(answer: dict[str, object]) -> dict[str, object]:
    out = dict(answer)
    out.pop("index")
    out.pop("nextCursor", None)
    return out


def test_snapshot_answers_equal_live_answers(built: tuple[ModIndex, Path]) -> None:
    index, home = built
    assert index.data is not None
    path = write_snapshot(index.data, index.status(), home)
    assert path == snapshot_path(index.project_dir, home)
    assert path.name == f"{project_slug(index.project_dir)}.json.gz"
    live, snap = QueryApi(index), QueryApi(SnapshotSource.load(index.project_dir, home))
    calls = [
        lambda q: q.find_asset("SampleTank"),
        lambda q: q.find_asset("tankvoice"),
        lambda q: q.find_references("SampleScout"),
        lambda q: q.find_references("TATank"),
        lambda q: q.list_assets_by_type("BaseRenderAssetType"),
        lambda q: q.get_definition("GameObject", "SampleTank"),
        lambda q: q.is_file_active("Data/Units/Unused.xml"),
        lambda q: q.is_file_active("Data/Includes/DeathModules.xml"),
        lambda q: q.resolve_include("ART:TATank.w3x"),
        lambda q: q.find_define("TANK_COST"),
        lambda q: q.unreferenced(),
        lambda q: q.get_asset_references("GameObject", "SampleTank", depth=3),
        lambda q: q.list_diagnostics(),
    ]
    for call in calls:
        assert _strip(call(live)) == _strip(call(snap))
    status = snap.get_status()["index"]
    assert status["source"] == "snapshot" and status["buildId"] == index.status().build_id
    assert live.get_status()["stats"] == snap.get_status()["stats"]


def test_public_schema_v1_shape(built: tuple[ModIndex, Path]) -> None:
    index, home = built
    assert index.data is not None
    path = write_snapshot(index.data, index.status(), home)
    doc = json.loads(gzip.decompress(path.read_bytes()))
    assert doc["schemaVersion"] == 1
    assert {
        "project",
        "generatedAt",
        "buildId",
        "phase",
        "complete",
        "stale",
        "stats",
        "assets",
        "defines",
        "references",
        "includeGraph",
        "sourceCandidates",
    } <= set(doc)
    assert {"assetCount", "referenceCount", "defineCount", "streamCount"} <= set(doc["stats"])
    asset = doc["assets"][0]
    assert {"type", "id", "file", "line", "origin", "stream", "viaInstance"} <= set(asset)
    assert isinstance(doc["assets"], list) and isinstance(doc["references"], list)


def test_previous_kept_and_used_when_current_is_broken(built: tuple[ModIndex, Path]) -> None:
    index, home = built
    assert index.data is not None
    first = write_snapshot(index.data, index.status(), home)
    write_snapshot(index.data, index.status(), home)
    assert previous_path(first).exists()
    first.write_bytes(b"not gzip")
    data, status = load_snapshot(index.project_dir, home)
    assert status.stale is True and data.stats() == index.data.stats()
    previous_path(first).unlink()
    with pytest.raises(ServiceError) as err:
        load_snapshot(index.project_dir, home)
    assert err.value.code == "SNAPSHOT_INVALID"


def test_missing_and_foreign_version(tmp_path: Path) -> None:
    with pytest.raises(ServiceError) as err:
        SnapshotSource.load(tmp_path / "nowhere", tmp_path)
    assert err.value.code == "SNAPSHOT_NOT_FOUND" and err.value.hint
    path = snapshot_path(tmp_path / "p", tmp_path)
    path.parent.mkdir(parents=True)
    path.write_bytes(gzip.compress(json.dumps({"schemaVersion": 99}).encode()))
    with pytest.raises(ServiceError) as err2:
        load_snapshot(tmp_path / "p", tmp_path)
    assert err2.value.code == "SNAPSHOT_INVALID"


def test_list_snapshots_reads_sidecars(built: tuple[ModIndex, Path]) -> None:
    index, home = built
    assert index.data is not None
    write_snapshot(index.data, index.status(), home)
    rows = list_snapshots(home)
    assert [r["project"] for r in rows] == [index.project_dir]
    assert rows[0]["stats"]["assetCount"] == index.data.stats()["assetCount"]
