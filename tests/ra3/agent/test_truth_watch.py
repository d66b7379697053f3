"""The watcher converges to the disk, and a snapshot says when the disk has moved on.

Real `Watcher`s (watchfiles, worker thread, live server on 127.0.0.1) over the sample SDK in a temp
folder; every check polls the same query API an agent uses until it agrees with the disk.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from moddesk.ra3.agent import endpoints
from moddesk.ra3.agent.mcp import Ra3Backend
from moddesk.ra3.agent.watch import WatchedProject, Watcher
from moddesk.ra3.core.index import ModIndex
from moddesk.ra3.core.project import detect_project
from moddesk.ra3.core.query import QueryApi
from moddesk.ra3.core.sample import _doc, write_sample_project
from moddesk.ra3.core.snapshot import SnapshotSource, write_snapshot


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "home"
    monkeypatch.setenv(endpoints.HOME_ENV, str(root))
    return root


def _until(check: Callable[[], bool], what: str, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"never converged: {what}"
        time.sleep(0.05)


def _add_extra(project: Path) -> None:
    mod = project / "Data" / "Mod.xml"
    mod.write_text(
        mod.read_text("utf-8").replace(
            '<Include type="all" source="Weapons.xml"/>',
            '<Include type="all" source="Weapons.xml"/>\n    <Include type="all" source="Extra/Thing.xml"/>',
        ),
        "utf-8",
    )
    extra = project / "Data" / "Extra" / "Thing.xml"
    extra.parent.mkdir()
    extra.write_text(_doc('  <GameObject id="ExtraThing"/>\n'), "utf-8")


@pytest.fixture
def watched(tmp_path: Path, home: Path) -> Iterator[tuple[Path, QueryApi]]:
    project = write_sample_project(tmp_path / "sdk")
    _add_extra(project)
    watcher = Watcher([project], snapshots=False, reconcile_seconds=1.0).start()
    try:
        api = watcher.projects[0].api
        _until(lambda: watcher.projects[0].index.status().is_final, "first build")
        yield project, api
    finally:
        watcher.stop()


def _found(api: QueryApi, ident: str) -> bool:
    return bool(api.find_asset(ident)["found"])


def test_deleted_then_restored_file_comes_back(watched: tuple[Path, QueryApi]) -> None:
    project, api = watched
    weapons = project / "Data" / "Weapons.xml"
    text = weapons.read_text("utf-8")
    weapons.unlink()
    _until(lambda: not _found(api, "SampleTankGun"), "deleted file dropped")
    assert api.is_file_active("Data/Weapons.xml")["active"] is False
    weapons.write_text(text, "utf-8")
    _until(lambda: _found(api, "SampleTankGun"), "restored file indexed again")
    assert api.is_file_active("Data/Weapons.xml")["active"] is True
    assert api.find_references("SampleTankGun")["total"] == 1


def test_folder_removed_and_restored(watched: tuple[Path, QueryApi], tmp_path: Path) -> None:
    project, api = watched
    units = project / "Data" / "Units"
    shutil.move(str(units), tmp_path / "aside")
    _until(lambda: not _found(api, "SampleScout"), "removed folder dropped")
    shutil.move(str(tmp_path / "aside"), units)
    _until(lambda: _found(api, "SampleScout") and _found(api, "NeverBuilt") is False, "folder restored")
    assert api.find_asset("SampleScout")["assets"][0]["file"] == "Data/Units/SampleTank.xml"


def test_folder_rename_is_seen(watched: tuple[Path, QueryApi]) -> None:
    project, api = watched
    (project / "Data" / "Extra").rename(project / "Data" / "Elsewhere")
    _until(lambda: not _found(api, "ExtraThing"), "renamed-away folder dropped")
    assert api.list_diagnostics(code="INCLUDE_NOT_FOUND", file="Data/Mod.xml")["total"] == 2
    (project / "Data" / "Elsewhere").rename(project / "Data" / "Extra")
    _until(lambda: _found(api, "ExtraThing"), "renamed-back folder indexed")
    assert api.find_asset("ExtraThing")["assets"][0]["file"] == "Data/Extra/Thing.xml"


def test_reconciliation_heals_a_missed_event(tmp_path: Path, home: Path) -> None:
    project = write_sample_project(tmp_path / "sdk")
    # no file watching at all: only the mtime/size reconciliation can notice the change
    watched = WatchedProject(project, snapshots=False)
    watched.start()
    try:
        _until(lambda: watched.index.status().is_final, "first build")
        weapons = project / "Data" / "Weapons.xml"
        weapons.write_text(weapons.read_text("utf-8").replace("SampleTankGun", "RenamedGun"), "utf-8")
        assert watched.reconcile() == [os.path.normcase(str(weapons))]
        _until(lambda: _found(watched.api, "RenamedGun"), "reconciled change applied")
        assert not _found(watched.api, "SampleTankGun")
        assert watched.reconcile() == []  # nothing left to heal
    finally:
        watched.stop()


def test_snapshot_fallback_says_stale_with_the_changed_files(tmp_path: Path, home: Path) -> None:
    project = write_sample_project(tmp_path / "sdk")
    index = ModIndex(detect_project(project))
    data = index.build()
    write_snapshot(data, index.status())
    backend = Ra3Backend(project)  # no live indexer: answers come from the snapshot
    fresh = backend.ask("get_status")
    assert fresh.source == "snapshot" and fresh.index["stale"] is False and fresh.index["final"] is True
    weapons = project / "Data" / "Weapons.xml"
    weapons.write_text(weapons.read_text("utf-8") + "\n<!-- edited -->\n", "utf-8")
    time.sleep(1.1)  # the fallback rechecks the disk at most once a second
    answer = backend.ask("find_asset", {"id": "SampleTankGun"})
    assert answer.index["stale"] is True and answer.index["state"] == "stale"
    assert answer.index["changedFiles"] == ["Data/Weapons.xml"]
    (project / "Data" / "Units" / "SampleTank.xml").unlink()
    source = SnapshotSource.load(project)
    assert source.changed_files() == ["Data/Units/SampleTank.xml", "Data/Weapons.xml"]


def test_short_soak_live_index_equals_a_cold_build(tmp_path: Path, home: Path) -> None:
    """A few seconds of random file and folder operations (the benchmark's chaos; 2 minutes there)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "ra3_watch_soak", Path(__file__).resolve().parents[3] / "benchmarks" / "ra3_watch_soak.py"
    )
    assert spec is not None and spec.loader is not None
    soak = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(soak)
    project = write_sample_project(tmp_path / "sdk")
    _add_extra(project)
    assert soak.soak(project, None, seconds=6.0, seed=16, rate=6.0) == 0
