"""Incremental re-index: one changed file updates assets, references and status without a full build."""

from __future__ import annotations

import errno
import os
import sys
import threading
import time
from pathlib import Path

import pytest

from moddesk.kit.errors import ServiceError
from moddesk.ra3.core.index import ModIndex
from moddesk.ra3.core.project import detect_project
from moddesk.ra3.core.query import QueryApi
from moddesk.ra3.core.sample import write_sample_project


@pytest.fixture()
def live(tmp_path: Path) -> tuple[Path, ModIndex, QueryApi]:
    project = write_sample_project(tmp_path)
    index = ModIndex(detect_project(project))
    index.build()
    return project, index, QueryApi(index)


def _touch_write(path: Path, text: str) -> None:
    before = path.stat().st_mtime_ns if path.exists() else 0
    path.write_text(text, encoding="utf-8")
    while path.stat().st_mtime_ns == before:  # coarse file-system clocks
        time.sleep(0.01)
        path.write_text(text, encoding="utf-8")


def test_edit_adds_and_removes_an_asset_and_its_references(live: tuple[Path, ModIndex, QueryApi]) -> None:
    project, index, q = live
    weapons = project / "Data" / "Weapons.xml"
    text = weapons.read_text("utf-8")
    assert q.find_references("SampleScout")["total"] == 3
    build_before = index.status().build_id
    new = text.replace(
        '<WeaponTemplate id="SampleTankGun" inheritFrom="BaseCannon" ProjectileObject="SampleScout"/>',
        '<WeaponTemplate id="SampleTankGun2" inheritFrom="BaseCannon"/>',
    )
    _touch_write(weapons, new)
    result = index.update_files([weapons])
    assert result.structural is False and result.reparsed == ["Data/Weapons.xml"]
    assert index.status().build_id > build_before
    assert q.find_asset("SampleTankGun2")["found"]
    assert q.find_asset("SampleTankGun")["found"] is False
    assert q.find_references("SampleScout")["total"] == 2
    # the tank's reference to the removed gun is now unresolved and listed as a diagnostic
    diags = q.list_diagnostics(code="UNRESOLVED_REFERENCE")["diagnostics"]
    assert any("SampleTankGun" in d["message"] and d["file"] == "Data/Units/SampleTank.xml" for d in diags)


def test_moving_an_asset_between_files(live: tuple[Path, ModIndex, QueryApi]) -> None:
    project, index, q = live
    tank = project / "Data" / "Units" / "SampleTank.xml"
    weapons = project / "Data" / "Weapons.xml"
    tank_text = tank.read_text("utf-8")
    line = '  <Texture id="SampleTank_Icon"/>\n'
    assert line in tank_text
    _touch_write(tank, tank_text.replace(line, ""))
    w = weapons.read_text("utf-8")
    _touch_write(weapons, w.replace("</AssetDeclaration>", line + "</AssetDeclaration>"))
    index.update_files([tank, weapons])
    found = q.find_asset("SampleTank_Icon")
    assert [a["file"] for a in found["assets"]] == ["Data/Weapons.xml"]
    refs = q.find_references("SampleTank_Icon")["references"]
    assert [(r["from"]["id"], r["attribute"]) for r in refs] == [("SampleTank", "ButtonImage")]


def test_changing_includes_rewalks_the_graph(live: tuple[Path, ModIndex, QueryApi]) -> None:
    project, index, q = live
    mod = project / "Data" / "Mod.xml"
    text = mod.read_text("utf-8")
    enabled = text.replace(
        '<!-- <Include type="all" source="Units/Unused.xml"/> -->',
        '<Include type="all" source="Units/Unused.xml"/>',
    )
    _touch_write(mod, enabled)
    result = index.update_files([mod])
    assert result.structural is True
    assert q.is_file_active("Data/Units/Unused.xml")["active"] is True
    assert q.find_asset("NeverBuilt")["found"] is True


def test_fragment_change_reextracts_its_includers(live: tuple[Path, ModIndex, QueryApi]) -> None:
    project, index, q = live
    frag = project / "Data" / "Includes" / "DeathModules.xml"
    _touch_write(
        frag, frag.read_text("utf-8").replace('CreationList="OCL_TankDebris"', 'CreationList="OCL_Other"')
    )
    result = index.update_files([frag])
    assert result.reparsed == ["Data/Units/SampleTank.xml"]
    edges = q.get_asset_references("GameObject", "SampleTank")["edges"]
    death = [e for e in edges if e["via"]["element"] == "CreateObjectDie"]
    assert death[0]["value"] == "OCL_Other" and death[0]["status"] == "unresolved"


def test_new_file_satisfies_a_missing_include(live: tuple[Path, ModIndex, QueryApi]) -> None:
    project, index, q = live
    target = project / "Data" / "Missing" / "Nowhere.xml"
    target.parent.mkdir()
    target.write_text(
        '<AssetDeclaration xmlns="uri:ea.com:eala:asset"><GameObject id="Found"/></AssetDeclaration>', "utf-8"
    )
    index.update_files([target])
    assert q.find_asset("Found")["found"]
    assert q.list_diagnostics(code="INCLUDE_NOT_FOUND")["total"] == 0


def test_deleted_file_drops_its_assets(live: tuple[Path, ModIndex, QueryApi]) -> None:
    project, index, q = live
    weapons = project / "Data" / "Weapons.xml"
    weapons.unlink()
    index.update_files([weapons])
    assert q.find_asset("SampleTankGun")["found"] is False
    assert q.list_diagnostics(code="INCLUDE_NOT_FOUND")["total"] == 2


def test_dirty_files_make_answers_stale_until_updated(live: tuple[Path, ModIndex, QueryApi]) -> None:
    project, index, q = live
    weapons = project / "Data" / "Weapons.xml"
    index.mark_dirty([weapons])
    status = q.find_asset("SampleTankGun")["index"]
    assert status["stale"] is True and status["complete"] is False and status["state"] == "stale"
    with pytest.raises(ServiceError) as err:
        q.find_asset("SampleTankGun", allow_stale=False)
    assert err.value.code == "INDEX_NOT_READY"
    with pytest.raises(ServiceError) as err2:
        q.find_asset("SampleTankGun", wait_for_index=True, timeout=0.05)
    assert err2.value.code == "INDEX_TIMEOUT"
    index.update_files([weapons])
    assert q.find_asset("SampleTankGun", allow_stale=False)["index"]["final"] is True


def test_update_before_build_is_an_error(tmp_path: Path) -> None:
    index = ModIndex(detect_project(write_sample_project(tmp_path)))
    with pytest.raises(ServiceError) as err:
        index.update_files([tmp_path / "x.xml"])
    assert err.value.code == "NO_INDEX"
    with pytest.raises(ServiceError) as err2:
        QueryApi(index).find_asset("x")
    assert err2.value.code == "NO_INDEX"
    assert QueryApi(index).get_status()["index"]["state"] == "no_index"


def test_status_machine_phases_and_last_good(tmp_path: Path) -> None:
    project = write_sample_project(tmp_path)
    index = ModIndex(detect_project(project))
    seen: list[tuple[str, str]] = []
    index.build(lambda p: seen.append((p.phase, index.status().state)))
    assert ("art", "ready_xml") in seen  # the XML phase is published before the art phase finishes
    assert index.status().state == "ready" and index.status().is_final
    good = index.data
    # a failing rebuild keeps the last good index and says why
    (tmp_path / "Schemas" / "xsd" / "AssetTypes.xsd").write_text("<xs:schema", "utf-8")
    index.schema = None
    with pytest.raises(ServiceError) as err:
        index.build()
    assert err.value.code == "SCHEMA_INVALID"
    status = index.status()
    assert status.state == "error" and status.error and "SCHEMA_INVALID" in status.error
    assert index.data is good
    assert QueryApi(index).find_asset("SampleTank")["found"] is True


def test_queries_during_updates_see_whole_states(live: tuple[Path, ModIndex, QueryApi]) -> None:
    project, index, q = live
    weapons = project / "Data" / "Weapons.xml"
    text = weapons.read_text("utf-8")
    errors: list[BaseException] = []
    stop = threading.Event()

    def reader() -> None:
        while not stop.is_set():
            try:
                total = q.find_references("SampleScout")["total"]
                assert total in (2, 3)
                q.unreferenced()
                q.get_asset_references("GameObject", "SampleTank", depth=2)
            except BaseException as exc:  # collected and re-raised in the test thread
                errors.append(exc)
                return

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        for n in range(15):
            variant = text if n % 2 else text.replace('ProjectileObject="SampleScout"', "")
            _touch_write(weapons, variant)
            index.update_files([weapons])
    finally:
        stop.set()
        thread.join(10)
    assert not errors, errors[0]


def test_rebuild_reports_building_with_last_good_answers(live: tuple[Path, ModIndex, QueryApi]) -> None:
    project, index, q = live
    states: list[dict[str, object]] = []
    weapons = project / "Data" / "Weapons.xml"

    def progress(_p: object) -> None:
        if not states:
            index.mark_dirty([weapons])  # a save while the build runs
            states.append(q.find_asset("SampleTankGun")["index"])

    index.build(progress)  # type: ignore[arg-type]
    during = states[0]
    assert during["state"] == "building" and during["complete"] is False and during["stale"] is True
    after = index.status()
    assert after.state == "stale" and after.stale and not after.complete  # changed during the build
    index.update_files([weapons])
    final = index.status()
    assert final.state == "ready" and final.is_final and not final.stale


def test_rebuild_from_cached_records_keeps_paths(live: tuple[Path, ModIndex, QueryApi]) -> None:
    _project, index, q = live
    before = q.get_asset_references("GameObject", "SampleTank", depth=2)
    index.build()  # every record comes from the in-memory parse cache
    index.build()
    after = q.get_asset_references("GameObject", "SampleTank", depth=2)
    before.pop("index"), after.pop("index")
    assert before == after
    files = {e["source"]["file"] for e in after["edges"]}
    assert "Data/Units/SampleTank.xml" in files and "Data/Includes/DeathModules.xml" in files


def test_parse_cache_on_disk_warm_starts_a_new_process(tmp_path: Path) -> None:
    project = write_sample_project(tmp_path / "sdk")
    cache = tmp_path / "cache"
    first = ModIndex(detect_project(project), cache_dir=cache)
    first.build()
    assert list(cache.glob("records-*.marshal"))
    # a new process: everything unchanged comes from disk, a changed file is parsed again
    weapons = project / "Data" / "Weapons.xml"
    _touch_write(weapons, weapons.read_text("utf-8").replace("SampleTankGun", "RenamedGun"))
    second = ModIndex(detect_project(project), cache_dir=cache)
    parsed: list[str] = []
    original = second._extract

    def spy(path: str) -> object:
        parsed.append(Path(path).name)
        return original(path)

    second._extract = spy  # type: ignore[method-assign,assignment]
    second.build()
    assert parsed == ["Weapons.xml"]
    q = QueryApi(second)
    assert q.find_asset("RenamedGun")["found"] and not q.find_asset("SampleTankGun")["found"]
    a = QueryApi(first).get_asset_references("GameObject", "SampleScout", depth=2)
    b = q.get_asset_references("GameObject", "SampleScout", depth=2)
    assert [e["source"] for e in a["edges"]] == [e["source"] for e in b["edges"]]
    # a fragment edit invalidates the records it was spliced into
    frag = project / "Data" / "Includes" / "DeathModules.xml"
    _touch_write(frag, frag.read_text("utf-8").replace("OCL_TankDebris", "OCL_Other"))
    third = ModIndex(detect_project(project), cache_dir=cache)
    parsed.clear()
    original3 = third._extract

    def spy3(path: str) -> object:
        parsed.append(Path(path).name)
        return original3(path)

    third._extract = spy3  # type: ignore[method-assign,assignment]
    third.build()
    assert parsed == ["SampleTank.xml"]


def _reader_waiting_on(fifo: Path, timeout: float = 30.0) -> int:
    """Open the FIFO's write end once a reader is blocked on it; returns the fd (the reader now waits on data)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        except OSError as exc:  # ENXIO: nobody reads it yet
            if exc.errno != errno.ENXIO or time.monotonic() > deadline:
                raise
            time.sleep(0.01)


@pytest.mark.skipif(sys.platform == "win32", reason="uses a FIFO to hold the update in its re-walk")
def test_structural_update_rewalks_without_blocking_queries(live: tuple[Path, ModIndex, QueryApi]) -> None:
    project, index, q = live
    fifo = project / "Data" / "Slow.xml"
    os.mkfifo(fifo)
    mod = project / "Data" / "Mod.xml"
    text = mod.read_text("utf-8")
    _touch_write(
        mod, text.replace("<Includes>", '<Includes>\n    <Include type="all" source="Slow.xml"/>', 1)
    )
    before = q.find_references("SampleScout")
    results: list[object] = []
    updater = threading.Thread(target=lambda: results.append(index.update_files([mod])))
    updater.start()
    fd = _reader_waiting_on(fifo)  # the update is now inside its re-walk, reading Slow.xml
    answers: list[dict[str, object]] = []
    reader = threading.Thread(
        target=lambda: answers.extend([q.find_asset("FX_Slow"), q.find_references("SampleScout")])
    )
    reader.start()
    reader.join(10)
    blocked = reader.is_alive()
    index.mark_dirty([mod])  # saved again while the update runs: that save is not applied by it
    with os.fdopen(fd, "w") as handle:  # let the re-walk finish either way
        handle.write(
            '<AssetDeclaration xmlns="uri:ea.com:eala:asset"><FXList id="FX_Slow"/></AssetDeclaration>'
        )
    updater.join(30)
    reader.join(30)
    assert not blocked, "a query waited for the structural re-walk"
    found, refs = answers
    # the previous index, whole, flagged stale while the update runs
    assert found["found"] is False and found["index"]["stale"] is True  # type: ignore[index]
    assert found["index"]["complete"] is False  # type: ignore[index]
    refs.pop("index"), before.pop("index")
    assert refs == before
    assert results and getattr(results[0], "structural", None) is True
    assert q.find_asset("FX_Slow")["index"]["stale"] is True  # the second save is still pending
    index.update_files([mod])
    after = q.find_asset("FX_Slow")
    assert after["found"] is True and after["index"]["final"] is True
