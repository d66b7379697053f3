"""The workspace's path table on the native key table answers every query as the reference does.

Each archive is opened as a workspace once per core (``MODDESK_CORE`` is read at open): the
reference holds a dictionary of every key, the native core none. Every query the service makes
of the base paths — counts, listing, membership, kinds, names, folder children, prefix ranges,
the index keys — is compared, before and after edits that add, delete and rename entries.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from moddesk.pvf.archive import Archive
from moddesk.pvf.format.errors import PvfFormatError
from moddesk.pvf.samples.generate import generate_archive
from moddesk.pvf.workbench.browse import FolderIndex
from moddesk.pvf.workbench.pathtable import DictBasePaths, NativeBasePaths
from moddesk.pvf.workbench.searchindex import paths_crc
from moddesk.pvf.workbench.workspace import Workspace

from ..cores import use_core as _core

pytest.importorskip("moddesk_native", reason="the native core is not built (make native)")

CORES = ("python", "native")

#: Names as third-party tools store them: mixed case, non-ASCII, dots, spaces, duplicates by key.
ODD_NAMES = [
    "Equipment/Character/A.equ",
    "equipment/character/a.EQU",  # the same key as the first: the first entry wins
    "equipment/character/b.equ",
    "equipment/character.b/c.equ",
    "equipment/charactera/d.equ",
    "./dot/x.equ",
    "한글/파일.equ",
    "한글/sub/깊은.skl",
    "中文/名字.equ",
    "a b/c d.lst",
    "top.lst",
    "z/y/x/w/v.equ",
]


def _odd_archive(fmt: str, target: Path) -> None:
    with _core("python"):
        archive = Archive.new(fmt, region="kr")
        for k, name in enumerate(ODD_NAMES):
            try:
                archive.write_text(name, f"#PVF_File\n\n[name]\n\t`{k}`\n")
            except PvfFormatError:
                continue
            if k == 0:  # a second entry with the same key (write_* would replace the first)
                data = archive.read(name)
                i = archive._add(ODD_NAMES[1], None)
                archive._overlay[i] = data
        archive.save_as(target)


def _folders(keys: list[str]) -> list[str]:
    out = {""}
    for key in keys:
        parts = key.split("/")[:-1]
        out.update("/".join(parts[: k + 1]) + "/" for k in range(len(parts)))
    return sorted(out)


def _probes(keys: list[str]) -> list[str]:
    return [*keys, *(k.upper() for k in keys[:50]), *(k + "x" for k in keys[:50]), "", "nope", "a/"]


def _queries(ws: Workspace) -> dict[str, Any]:
    """Everything the service asks of the workspace's paths."""
    keys = ws.base_paths()
    probes = _probes(keys)
    folders = _folders(ws.paths())
    index = FolderIndex(ws)
    return {
        "base_count": ws.base_count,
        "file_count": ws.file_count,
        "paths": ws.paths(),
        "base_paths": keys,
        "index_paths": ws.index_paths(),
        "own": ws.names_are_index_keys,
        "sorted": ws.base_sorted_paths(),
        "sorted_slice": ws.base_sorted_paths(1, 4),
        "exists": [ws.exists(p) for p in probes],
        "base_kind": [ws.base_kind(p) for p in probes],
        "kind": [ws.kind(p) for p in keys],
        "index": [ws.base_index(p) for p in probes],
        "unedited": sorted(ws.unedited(probes)),
        "overlay": ws.overlay_membership(),
        "ranges": [ws.base_prefix_range(f) for f in folders],
        "base_children": [[c.to_dict() for c in ws.base_children(f)] for f in folders],
        "children": [[c.to_dict() for c in index.children(ws, f)[1]] for f in folders],
        "texts": [ws.current_text_or_none(p) for p in keys[:40]],
        "listing": ws.listing(),
        "listing_by_path": _listing_by_path(ws),
    }


def _listing_by_path(ws: Workspace) -> list[tuple[str, str, int]]:
    """What ``Workspace.listing`` stands for, asked path by path (the script snapshot's rows)."""
    sizes = {e.path.lower(): e.size for e in ws.archive.entries}
    return [(path, ws.kind(path), sizes.get(path, 0)) for path in ws.paths()]


def _edit(ws: Workspace) -> None:
    """Edit, add, delete and rename (delete + add) entries through the overlay."""
    keys = ws.base_paths()
    texts = [k for k in keys if ws.kind(k) != "binary"]
    ws.apply({texts[0]: "#PVF_File\n\n[name]\n\t`edited`\n"})
    ws.apply({"new/folder/added.equ": "#PVF_File\n\n[name]\n\t`new`\n", keys[-1]: None})
    renamed = texts[1]
    content = ws.current_text_or_none(renamed)
    ws.apply({renamed: None, "renamed/" + renamed.rsplit("/", 1)[-1]: content})


def _both(path: Path) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for core in CORES:
        with _core(core):
            ws = Workspace.open(path)
        try:
            expected = NativeBasePaths if core == "native" else DictBasePaths
            assert isinstance(ws._names, expected)
            if isinstance(ws._names, NativeBasePaths):  # the index's check value, made over the table
                assert ws._names.sorted_crc32() == paths_crc(ws._names.sorted_keys())
            before = _queries(ws)
            _edit(ws)
            out[core] = {"before": before, "after": _queries(ws)}
        finally:
            ws.close()
    return out


def _assert_alike(path: Path) -> dict[str, Any]:
    got = _both(path)
    for phase in ("before", "after"):
        python, native = got["python"][phase], got["native"][phase]
        for key in python:
            assert python[key] == native[key], (phase, key)
        if python["own"]:
            assert python["listing"] == python["listing_by_path"], phase
        else:
            assert python["listing"] is None
    return got["python"]


@pytest.mark.parametrize("fmt", ["classic", "90US", "90CN"])
def test_generated_archives_answer_alike(tmp_path: Path, fmt: str) -> None:
    target = tmp_path / f"{fmt}.pvf"
    generate_archive(target, fmt=fmt, files=600, seed=28)
    seen = _assert_alike(target)
    assert seen["before"]["own"] and len(seen["before"]["base_children"]) > 5


@pytest.mark.parametrize("fmt", ["classic", "90US", "90CN"])
def test_odd_names_answer_alike(tmp_path: Path, fmt: str) -> None:
    """Mixed case, non-ASCII (CP949 names in classic), './', spaces and a duplicate key."""
    target = tmp_path / f"odd.{fmt}.pvf"
    _odd_archive(fmt, target)
    seen = _assert_alike(target)
    before = seen["before"]
    assert "dot/x.equ" in before["base_paths"] and any(not k.isascii() for k in before["base_paths"])
    with _core("python"), Archive.open(target) as archive:
        assert before["base_count"] == len(archive.namelist()) - 1  # the duplicate key counts once
    if fmt != "classic":  # classic names are stored lower-case; NKPI keeps the case: not own keys
        assert not before["own"]


def test_corpus_archive_answers_alike(pvf_corpus: Path, tmp_path: Path) -> None:
    files = [
        p for p in sorted(pvf_corpus.rglob("*")) if p.is_file() and p.suffix not in (".md", ".tsv", ".bin")
    ]
    for fmt in ("classic", "90US"):
        with _core("python"):
            archive = Archive.new(fmt, region="cn")
            for p in files:
                rel = p.relative_to(pvf_corpus).as_posix().replace(".excerpt", ".lst")
                try:
                    archive.write_text(rel, p.read_text(encoding="utf-8"))
                except PvfFormatError:
                    continue
            target = tmp_path / f"corpus.{fmt}.pvf"
            archive.save_as(target)
        seen = _assert_alike(target)
        assert seen["before"]["base_count"] > 100


def test_the_native_table_holds_no_key_objects(tmp_path: Path) -> None:
    """With the native core, opening a workspace makes no Python string per base entry."""
    target = tmp_path / "90US.pvf"
    generate_archive(target, fmt="90US", files=300, seed=3)
    with _core("native"):
        ws = Workspace.open(target)
    try:
        table = ws._names
        assert isinstance(table, NativeBasePaths)
        assert not any(isinstance(v, (dict, list)) and len(v) >= 300 for v in vars(table).values())
        assert not any(isinstance(v, (dict, list)) and len(v) >= 300 for v in vars(ws).values())
    finally:
        ws.close()
