"""`moddesk ra3 lsp` as a real subprocess on the RA3 corpus mod (NothingHereButTrees), checked against
the in-process query API over the same files: definition, references, diagnostics after a breaking edit
and after the fix, hover, completion by expected type, rename, and the resolved view of a deep chain."""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import pytest_asyncio
from lsprotocol import types as lsp
from pytest_lsp import LanguageClient

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "ra3" / "lsp"))
from lsp_session import (
    change_doc,
    command,
    open_doc,
    start,
    uri,
    wait_diagnostics,
    wait_ready,
)

from moddesk.ra3.core.index import ModIndex
from moddesk.ra3.core.model import RESOLVED, AssetDef
from moddesk.ra3.core.project import detect_project
from moddesk.ra3.core.query import QueryApi
from moddesk.ra3.core.resolved import inherit_chain


def _corpora() -> Path | None:
    env = os.environ.get("MODDESK_CORPORA")
    root = Path(env) if env else None
    return root if root is not None and (root / "sage" / "ra3-nhbt" / "Data" / "Mod.xml").is_file() else None


CORPORA = _corpora()
pytestmark = [
    pytest.mark.corpus,
    pytest.mark.slow,
    pytest.mark.skipif(
        CORPORA is None, reason="SAGE corpora absent (set MODDESK_CORPORA to the shared corpora folder)"
    ),
    pytest.mark.asyncio(loop_scope="module"),
]


@dataclass
class Mod:
    project: Path
    api: QueryApi
    index: ModIndex
    client: LanguageClient


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def mod(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Mod]:
    assert CORPORA is not None
    root = tmp_path_factory.mktemp("lsp corpus")
    # the mod's includes say DATA:RA3 Undecided/Data/...: mount a copy at <sdk>/Mods/RA3 Undecided
    project = root / "sdk" / "Mods" / "RA3 Undecided"
    shutil.copytree(CORPORA / "sage" / "ra3-nhbt", project)
    schema = CORPORA / "sage" / "ra3-schemas" / "xsd" / "CnC3Types.xsd"
    index = ModIndex(detect_project(project, schema_path=schema), cache_dir=root / "cache")
    index.build()
    client = await start(project, root / "home", "--schema", str(schema))
    await wait_ready(client, timeout=300)
    yield Mod(project, QueryApi(index), index, client)
    await client.shutdown_session()


def _pos(mod: Mod, file: str, line: int, col: int) -> tuple[str, lsp.Position]:
    return uri(mod.project / file), lsp.Position(line - 1, col)


def _text_at(path: Path, rng: lsp.Range) -> str:
    row = path.read_text("utf-8-sig").split("\n")[rng.start.line]
    return row[rng.start.character : rng.end.character]  # the corpus lines are BMP-only


def _busiest(mod: Mod, type_name: str) -> AssetDef:
    """The project asset of a type with the most incoming references (a rich target)."""
    data = mod.index.data
    assert data is not None
    defs = [d for d in data.assets() if d.type == type_name and d.origin == "project"]
    return max(defs, key=lambda d: (mod.api.find_references(d.id, d.type, limit=1)["total"], d.id))


async def test_definition_and_references_match_the_query_api(mod: Mod) -> None:
    target = _busiest(mod, "WeaponTemplate")
    refs = mod.api.find_references(target.id, target.type, limit=1000)["references"]
    assert len(refs) >= 2
    for site in refs[:5]:
        doc, pos = _pos(mod, site["file"], site["line"], site["character"] + 1)
        got = await mod.client.text_document_definition_async(
            lsp.DefinitionParams(text_document=lsp.TextDocumentIdentifier(doc), position=pos)
        )
        assert isinstance(got, list) and got
        assert got[0].uri == uri(mod.project / target.file)
        assert _text_at(mod.project / target.file, got[0].range).lower() == target.id.lower()
    doc, pos = _pos(mod, refs[0]["file"], refs[0]["line"], refs[0]["character"] + 1)
    found = await mod.client.text_document_references_async(
        lsp.ReferenceParams(
            text_document=lsp.TextDocumentIdentifier(doc),
            position=pos,
            context=lsp.ReferenceContext(include_declaration=False),
        )
    )
    assert found is not None
    assert sorted((r.uri, r.range.start.line, r.range.start.character) for r in found) == sorted(
        (uri(mod.project / r["file"]), r["line"] - 1, r["character"]) for r in refs
    )
    hover = await mod.client.text_document_hover_async(
        lsp.HoverParams(text_document=lsp.TextDocumentIdentifier(doc), position=pos)
    )
    assert hover is not None
    text = hover.contents.value  # type: ignore[union-attr]
    assert f"**WeaponTemplate** `{target.id}`" in text and f"`{target.file}:{target.line}`" in text
    assert f"referenced {len(refs)} time(s)" in text


async def test_completion_offers_only_ids_of_the_expected_type(mod: Mod) -> None:
    target = _busiest(mod, "WeaponTemplate")
    site = mod.api.find_references(target.id, target.type, limit=1)["references"][0]
    assert site["attribute"] is not None  # an attribute value: complete right after the opening quote
    doc, pos = _pos(mod, site["file"], site["line"], site["character"])
    got = await mod.client.text_document_completion_async(
        lsp.CompletionParams(text_document=lsp.TextDocumentIdentifier(doc), position=pos)
    )
    assert isinstance(got, lsp.CompletionList) and got.items
    data = mod.index.data
    assert data is not None
    wanted = data.derived_types(data.canonical(site["refType"]))
    assert {i.detail for i in got.items} <= wanted
    ids = {i.label for i in got.items}
    everything = {d.id for d in data.assets() if d.type in wanted}
    assert ids <= everything and (target.id in ids or len(ids) == 200)


async def test_breaking_edit_then_fix_updates_diagnostics(mod: Mod) -> None:
    data = mod.index.data
    assert data is not None
    # the first resolved strong attribute reference of the mod (file order)
    ref = next(
        r
        for record in sorted(data.refs_by_record)
        for r in data.refs_by_record[record]
        if r.kind == "strong"
        and r.attribute
        and not r.expression
        and not r.default
        and r.target_type is None
        and data.resolve(r).status == RESOLVED
    )
    target = data.by_key[data.resolve(ref).keys[0]][0]
    site = {"file": ref.file, "line": ref.line, "character": ref.col, "value": ref.value}
    path = mod.project / site["file"]
    text = path.read_text("utf-8-sig")
    doc = open_doc(mod.client, path)
    lines = text.split("\n")
    row = lines[site["line"] - 1]
    col = site["character"]
    assert row[col : col + len(site["value"])] == site["value"]

    def at_site(ds: object) -> list[lsp.Diagnostic]:
        assert isinstance(ds, list)
        return [d for d in ds if d.range.start == lsp.Position(site["line"] - 1, col)]

    await wait_diagnostics(mod.client, doc, lambda ds: not at_site(list(ds)), timeout=120)
    lines[site["line"] - 1] = row[: col + len(site["value"])] + "Typo" + row[col + len(site["value"]) :]
    change_doc(mod.client, doc, "\n".join(lines), 2)
    broken = await wait_diagnostics(mod.client, doc, lambda ds: bool(at_site(list(ds))), timeout=120)
    typo = at_site(list(broken))[0]
    assert typo.code == "UNRESOLVED_REFERENCE" and f"did you mean {target.id!r}" in typo.message
    assert path.read_text("utf-8-sig") == text
    change_doc(mod.client, doc, text, 3)
    await wait_diagnostics(mod.client, doc, lambda ds: not at_site(list(ds)), timeout=120)


async def test_rename_changes_exactly_the_reference_sites(mod: Mod) -> None:
    target = _busiest(mod, "WeaponTemplate")
    data = mod.index.data
    assert data is not None
    if len({d.type for d in data.by_id.get(target.id.lower(), [])}) > 1:
        pytest.skip("the busiest weapon id is shared with another type (rename is refused for those)")
    refs = mod.api.find_references(target.id, target.type, limit=1000)["references"]
    doc, pos = _pos(mod, refs[0]["file"], refs[0]["line"], refs[0]["character"] + 1)
    edit = await mod.client.text_document_rename_async(
        lsp.RenameParams(
            text_document=lsp.TextDocumentIdentifier(doc), position=pos, new_name=target.id + "_Renamed"
        )
    )
    assert edit is not None and edit.changes is not None
    sites = {(u, e.range.start.line, e.range.start.character) for u, es in edit.changes.items() for e in es}
    expected = {(uri(mod.project / r["file"]), r["line"] - 1, r["character"]) for r in refs}
    defs = data.by_key[target.key]
    assert expected <= sites and len(sites) == len(expected) + len(defs)


async def test_resolved_view_of_a_deep_inherit_chain(mod: Mod) -> None:
    data = mod.index.data
    assert data is not None
    deep = [
        (len(inherit_chain(data, d)[0]), d.id, d)
        for d in data.assets()
        if d.type == "GameObject" and d.origin == "project" and d.inherit_from
    ]
    length, _id, unit = max(deep, key=lambda t: (t[0], t[1]))
    assert length >= 3, "the corpus has a GameObject with a 3-level inheritFrom chain"
    answer = await command(mod.client, "moddesk.ra3.resolvedAsset", "GameObject", unit.id)
    assert [c["id"] for c in answer["chain"]] == [a.id for a in inherit_chain(data, unit)[0]]
    assert answer["applied"] == length
    sources: set[str] = set()

    def walk(node: dict) -> None:  # type: ignore[type-arg]
        sources.add(node["from"])
        for value in (node.get("attributes") or {}).values():
            sources.add(value["from"])
        for child in node.get("children", []):
            walk(child)

    walk(answer["resolved"])
    assert len(sources) >= 2  # values come from more than one member of the chain
    assert all(res in {f"GameObject:{c['id']}" for c in answer["chain"]} for res in sources)


async def test_first_build_is_reported_as_work_done_progress(mod: Mod) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 30
    while True:
        reports = [r for rs in mod.client.progress_reports.values() for r in rs]
        if any(isinstance(r, lsp.WorkDoneProgressEnd) for r in reports):
            break
        assert loop.time() < deadline, f"no progress end: {reports}"
        await asyncio.sleep(0.1)
    assert isinstance(reports[0], lsp.WorkDoneProgressBegin) and reports[0].title == "Indexing the SAGE mod"
    end = next(r for r in reports if isinstance(r, lsp.WorkDoneProgressEnd))
    assert end.message is not None and "assets" in end.message
