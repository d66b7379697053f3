"""The MCP backend's snapshot side: stale fallbacks, consistency modes, quiet-period snapshots."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from moddesk.kit.errors import ServiceError
from moddesk.ra3.agent import endpoints
from moddesk.ra3.agent.demo import write_demo_mod
from moddesk.ra3.agent.mcp import Ra3Backend
from moddesk.ra3.agent.watch import Watcher
from moddesk.ra3.core.snapshot import previous_path, snapshot_path


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "ra3 home"
    monkeypatch.setenv(endpoints.HOME_ENV, str(root))
    return root


def _edit(path: Path, asset_id: str) -> None:
    path.write_text(
        path.read_text().replace(
            "</AssetDeclaration>", f'  <GameObject id="{asset_id}"/>\n</AssetDeclaration>'
        )
    )


def _wait_for(condition: object, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.05)


def test_snapshot_coalesces_a_burst_of_edits(home: Path, tmp_path: Path) -> None:
    project = write_demo_mod(tmp_path / "mod")
    watcher = Watcher([project], quiet_seconds=1.5).start()
    wp = watcher.projects[0]
    try:
        _wait_for(lambda: wp.snapshot.count == 1)  # the first final index gets saved once
        tanks = project / "Data/Units/Tanks.xml"
        for n in range(8):  # edits far closer together than the quiet period
            _edit(tanks, f"Burst{n}")
            time.sleep(0.05)
        _wait_for(lambda: wp.snapshot.count == 2)
        time.sleep(2.0)  # nothing else is pending: no further writes
        assert wp.snapshot.count == 2
        answer = Ra3Backend(project).ask("find_asset", {"id": "Burst7"})
        assert answer.source == "live" and answer.result["found"]
    finally:
        watcher.stop()
    offline = Ra3Backend(project).ask("find_asset", {"id": "Burst7"})
    assert offline.source == "snapshot" and offline.result["found"]


def test_stale_snapshot_is_flagged_and_refused_when_asked(home: Path, tmp_path: Path) -> None:
    project = write_demo_mod(tmp_path / "mod")
    watcher = Watcher([project], quiet_seconds=0.3).start()
    wp = watcher.projects[0]
    try:
        _wait_for(lambda: wp.snapshot.count == 1)
        _edit(project / "Data/Units/Tanks.xml", "SecondTank")
        _wait_for(lambda: wp.snapshot.count == 2)  # now `previous` holds the first snapshot
    finally:
        watcher.stop()
    current = snapshot_path(str(project))
    assert previous_path(current).exists()
    current.write_bytes(b"\x1f\x8b broken")  # a damaged current snapshot: the previous one is used
    backend = Ra3Backend(project)
    answer = backend.ask("find_asset", {"id": "AthenaCannon"})
    assert answer.source == "snapshot" and answer.index["stale"] is True and answer.result["found"]
    with pytest.raises(ServiceError) as err:
        backend.ask("find_asset", {"id": "AthenaCannon"}, allow_stale=False)
    assert err.value.code == "INDEX_NOT_READY"
    with pytest.raises(ServiceError) as err:
        backend.ask("find_asset", {"id": "AthenaCannon"}, wait_for_index=True, timeout_seconds=0.5)
    assert err.value.code == "INDEX_TIMEOUT" and err.value.details["index"]["stale"] is True


def test_final_snapshot_satisfies_wait_without_an_indexer(home: Path, tmp_path: Path) -> None:
    project = write_demo_mod(tmp_path / "mod")
    watcher = Watcher([project], quiet_seconds=60).start()
    assert watcher.projects[0].index.wait_until_final(30)
    watcher.stop()  # saves the final index on exit
    answer = Ra3Backend(project).ask(
        "get_definition", {"type": "GameObject", "id": "AthenaCannon"}, wait_for_index=True
    )
    assert answer.source == "snapshot" and answer.index["final"] is True
    assert answer.result["inheritChain"][0]["target"]["id"] == "BaseTank"


def test_missing_project_folder_is_named(home: Path, tmp_path: Path) -> None:
    answer = Ra3Backend(tmp_path / "gone").ask("get_status")
    assert answer.source == "none" and "does not exist" in answer.result["note"]


def test_a_subfolder_names_its_project(home: Path, tmp_path: Path) -> None:
    project = write_demo_mod(tmp_path / "mod")
    watcher = Watcher([project / "Data"], snapshots=False).start()  # like `moddesk ra3 index`
    try:
        assert watcher.projects[0].project_dir == str(project)
        answer = Ra3Backend(project / "Data" / "Units").ask(
            "find_asset", {"id": "AthenaCannon"}, wait_for_index=True
        )
        assert answer.source == "live" and answer.index["projectDir"] == str(project)
    finally:
        watcher.stop()
