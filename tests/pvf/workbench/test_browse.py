"""Folder listings for the page's tree: bisect + skip equals the obvious grouping; edits merge in."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from moddesk.kit.errors import ServiceError
from moddesk.pvf.samples.generate import generate_archive
from moddesk.pvf.service import PvfService
from moddesk.pvf.workbench.browse import list_children

names = st.lists(st.sampled_from(["a", "b", "a.b", "a-b", "b0", "a 1", "ab", "_"]), min_size=1, max_size=4)


def naive(paths: list[str], prefix: str) -> list[tuple[str, bool, int]]:
    folders: dict[str, int] = {}
    files: set[str] = set()
    for path in paths:
        if not path.startswith(prefix):
            continue
        rest = path[len(prefix) :]
        if "/" in rest:
            name = rest.split("/", 1)[0]
            folders[name] = folders.get(name, 0) + 1
        else:
            files.add(rest)
    return [(n, True, c) for n, c in sorted(folders.items())] + [(n, False, 0) for n in sorted(files)]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(names.map("/".join), min_size=0, max_size=40, unique=True),
    st.lists(st.sampled_from(["a", "b", "a.b", "b0"]), max_size=2),
)
def test_children_match_the_obvious_grouping(paths: list[str], folder: list[str]) -> None:
    # a path that is also a folder prefix of another is a real archive shape only without clashes
    paths = sorted(p for p in paths if not any(q.startswith(p + "/") for q in paths))
    prefix = "/".join(folder) + "/" if folder else ""
    got = [(c.name, c.folder, c.count) for c in list_children(paths, prefix)]
    assert got == naive(paths, prefix)


@pytest.fixture
def opened(tmp_path: Path) -> Iterator[tuple[PvfService, str, int]]:
    path = tmp_path / "small archive.pvf"
    generate_archive(path, files=400, seed=3)
    service = PvfService()
    handle = service.open(str(path), service.epoch)
    result = service.tasks.wait(handle["taskId"], 60)["result"]
    yield service, result["workspaceId"], result["revision"]
    service.shutdown()


def test_list_folder_pages_counts_and_edits(opened: tuple[PvfService, str, int]) -> None:
    service, ws, revision = opened
    root = service.list_folder(ws, "")
    assert (
        sum(i["count"] for i in root["items"] if i["folder"])
        + sum(1 for i in root["items"] if not i["folder"])
        == service.info()["fileCount"]
    )
    stackable = service.list_folder(ws, "stackable", limit=2)
    assert len(stackable["items"]) == 2 and stackable["nextOffset"] == 2
    rest = service.list_folder(ws, "stackable", offset=2, limit=5000)
    names = [i["name"] for i in stackable["items"] + rest["items"]]
    assert len(names) == stackable["total"] == len(set(names))

    # an added file in a new folder and a deleted file show at once, counts follow
    victim = next(i["path"] for i in rest["items"] if not i["folder"])
    service.apply_changes(ws, revision, {"stackable/new/one.stk": "#PVF_File\n", victim: None})
    after = service.list_folder(ws, "stackable", limit=5000)
    by_name = {i["name"]: i for i in after["items"]}
    assert by_name["new"] == {"name": "new", "path": "stackable/new", "folder": True, "count": 1}
    assert victim.rsplit("/", 1)[1] not in by_name
    assert service.list_folder(ws, "stackable/new")["items"][0]["path"] == "stackable/new/one.stk"
    filtered = service.list_folder(ws, "stackable", name_filter="ONE", limit=5000)
    kept = [i["name"] for i in filtered["items"] if not i["folder"]]
    assert kept and all("one" in name for name in kept)  # files by name (case-folded)
    assert filtered["folders"] == after["folders"]  # folders stay, to reach matches inside them

    with pytest.raises(ServiceError) as missing:
        service.list_folder(ws, "no/such/folder")
    assert missing.value.code == "NOT_FOUND"
    with pytest.raises(ServiceError) as bad:
        service.list_folder(ws, "", limit=0)
    assert bad.value.code == "INVALID_ARGUMENT"


def test_locate_gives_the_offsets_down_to_a_file(opened: tuple[PvfService, str, int]) -> None:
    service, ws, _ = opened
    target = service.search(ws, "equipment/**/*.equ", "path", limit=1)["hits"][0]["path"]
    steps = service.locate(ws, target)["steps"]
    assert [s["path"] for s in steps][-1] == target
    for step in steps:  # each offset points at the step in its folder's listing
        item = service.list_folder(ws, step["folder"], offset=step["offset"], limit=1)["items"][0]
        assert item["path"] == step["path"]
    with pytest.raises(ServiceError) as hidden:
        service.locate(ws, target, name_filter="no-such-name")
    assert hidden.value.code == "NOT_FOUND"
