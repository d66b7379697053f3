"""`moddesk ra3 lsp` over real corpora, beside the in-process query API measured in the same run.

For the RA3 corpus mod (NothingHereButTrees) and the C&C3 SDK base data it reports:
- time from `initialize` to the first `publishDiagnostics` of an opened document (process start
  shown separately);
- `definition` / `references` / `completion` latency p50/p99 over reference sites of the index,
  beside `get_definition` / `find_references` / `list_assets_by_type` called in-process;
- diagnostics after a keystroke: `didChange` that breaks a reference -> the diagnostic arrives.

    python benchmarks/ra3_lsp.py [--corpora DIR] [--sites 150] [--keystrokes 10] [--only ra3|cnc3] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp
from pygls.uris import from_fs_path
from pytest_lsp import LanguageClient, client_capabilities, make_test_lsp_client

from moddesk.ra3.core.index import ModIndex
from moddesk.ra3.core.parse import RefSite
from moddesk.ra3.core.project import detect_project
from moddesk.ra3.core.query import QueryApi


@dataclass
class Target:
    name: str
    project: Path
    schema: Path | None
    entries: list[Path]


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


def _timed(fn: Callable[[], Any]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def _sites(index: ModIndex, count: int) -> list[RefSite]:
    """Resolved strong/weak attribute references in project files, spread over the index."""
    data = index.data
    assert data is not None
    picked = [
        r
        for record in sorted(data.refs_by_record)
        for r in data.refs_by_record[record]
        if r.kind in ("strong", "weak")
        and r.attribute
        and not r.expression
        and not r.default
        and r.target_type is None
        and r.file == record
        and not os.path.isabs(r.file)
        and data.resolve(r).status == "resolved"
    ]
    step = max(1, len(picked) // count)
    return picked[::step][:count]


async def _lsp_run(target: Target, sites: list[RefSite], keystrokes: int, home: Path) -> dict[str, Any]:
    client: LanguageClient = make_test_lsp_client()
    args = ["-m", "moddesk", "ra3", "lsp", "--project", str(target.project), "--no-publish-live"]
    if target.schema is not None:
        args += ["--schema", str(target.schema)]
    for entry in target.entries:
        args += ["--entry", str(entry)]
    env = {**os.environ, "RA3MODXML_HOME": str(home)}
    t_spawn = time.perf_counter()
    await client.start_io(sys.executable, *args, env=env)
    first = target.project / sites[0].file
    doc = from_fs_path(str(first)) or ""
    t_init = time.perf_counter()
    await client.initialize_session(
        lsp.InitializeParams(
            capabilities=client_capabilities("visual-studio-code"), root_uri=from_fs_path(str(target.project))
        )
    )
    t_initialized = time.perf_counter()
    client.text_document_did_open(
        lsp.DidOpenTextDocumentParams(lsp.TextDocumentItem(doc, "xml", 1, first.read_text("utf-8-sig")))
    )
    # first diagnostics computed from a complete index (the server answers an open before the
    # first build with parse-only diagnostics; wait for the ones after it)
    while True:
        await asyncio.wait_for(client.wait_for_notification("textDocument/publishDiagnostics"), 600)
        status = await client.workspace_execute_command_async(lsp.ExecuteCommandParams("moddesk.ra3.status"))
        if status.get("complete") and doc in client.diagnostics:
            break
    t_diag = time.perf_counter()
    out: dict[str, Any] = {
        "spawn_to_initialize_ms": (t_initialized - t_spawn) * 1000,
        "initialize_to_first_diagnostics_s": t_diag - t_init,
    }
    timings: dict[str, list[float]] = {"definition": [], "references": [], "completion": [], "floor": []}
    for ref in sites:
        # the protocol floor: a request that does no index work (JSON-RPC over pipes, event loop)
        t0 = time.perf_counter()
        await client.workspace_execute_command_async(lsp.ExecuteCommandParams("moddesk.ra3.status"))
        timings["floor"].append(time.perf_counter() - t0)
        ident = lsp.TextDocumentIdentifier(from_fs_path(str(target.project / ref.file)) or "")
        pos = lsp.Position(ref.line - 1, ref.col + 1)
        t0 = time.perf_counter()
        got = await client.text_document_definition_async(lsp.DefinitionParams(ident, pos))
        timings["definition"].append(time.perf_counter() - t0)
        assert got, f"no definition at {ref.file}:{ref.line}"
        t0 = time.perf_counter()
        await client.text_document_references_async(
            lsp.ReferenceParams(text_document=ident, position=pos, context=lsp.ReferenceContext(False))
        )
        timings["references"].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        await client.text_document_completion_async(
            lsp.CompletionParams(ident, lsp.Position(ref.line - 1, ref.col + min(2, len(ref.value))))
        )
        timings["completion"].append(time.perf_counter() - t0)
    out["lsp"] = timings
    # keystrokes: type one character into a reference value, wait for its diagnostic, undo
    ref = next(r for r in sites if r.kind == "strong")  # weak references are not reported unresolved
    first = target.project / ref.file
    doc = from_fs_path(str(first)) or ""
    if doc not in client.diagnostics:
        client.text_document_did_open(
            lsp.DidOpenTextDocumentParams(lsp.TextDocumentItem(doc, "xml", 1, first.read_text("utf-8-sig")))
        )
    text = first.read_text("utf-8-sig")
    lines = text.split("\n")
    row = lines[ref.line - 1]
    at = ref.col + len(ref.value)
    delays: list[float] = []
    for i in range(keystrokes):
        broken = lines[:]
        broken[ref.line - 1] = row[:at] + "Q" + row[at:]
        for version, body, want in ((2 * i + 10, "\n".join(broken), True), (2 * i + 11, text, False)):
            t0 = time.perf_counter()
            client.text_document_did_change(
                lsp.DidChangeTextDocumentParams(
                    lsp.VersionedTextDocumentIdentifier(version=version, uri=doc),
                    [lsp.TextDocumentContentChangeWholeDocument(text=body)],
                )
            )
            while True:
                await asyncio.wait_for(client.wait_for_notification("textDocument/publishDiagnostics"), 60)
                here = [
                    d
                    for d in client.diagnostics.get(doc, [])
                    if d.range.start.line == ref.line - 1 and d.range.start.character == ref.col
                ]
                if bool(here) == want:
                    break
            if want:
                delays.append(time.perf_counter() - t0)
    out["keystroke"] = delays
    out["keystroke_file"] = f"{ref.file} ({sum(1 for r in sites if r.file == ref.file)} sampled sites)"
    await client.shutdown_session()
    return out


def _in_process(target: Target, sites: list[RefSite], api: QueryApi) -> dict[str, list[float]]:
    data = api.source.data
    assert data is not None
    out: dict[str, list[float]] = {"definition": [], "references": [], "completion": []}
    for ref in sites:
        typ, idl = data.resolve(ref).keys[0]
        wanted, prefix = ref.ref_type or typ, ref.value[:2]
        out["definition"].append(_timed(partial(api.get_definition, typ, idl)))
        out["references"].append(_timed(partial(api.find_references, idl, typ, limit=1000)))
        out["completion"].append(_timed(partial(api.list_assets_by_type, wanted, prefix, limit=200)))
    return out


def run(target: Target, sites_wanted: int, keystrokes: int) -> dict[str, Any]:
    cfg = detect_project(target.project, schema_path=target.schema, entries=target.entries or None)
    with tempfile.TemporaryDirectory() as cache:
        index = ModIndex(cfg, cache_dir=Path(cache))
        build = _timed(index.build)
    api = QueryApi(index)
    sites = _sites(index, sites_wanted)
    local = _in_process(target, sites, api)
    with tempfile.TemporaryDirectory() as home:
        remote = asyncio.run(_lsp_run(target, sites, keystrokes, Path(home)))
    stats = index.data.stats() if index.data is not None else {}
    return {
        "target": target.name,
        "build_s": build,
        "stats": stats,
        "sites": len(sites),
        "local": local,
        **remote,
    }


def report(result: dict[str, Any]) -> list[str]:
    stats = result["stats"]
    rows = [
        f"### {result['target']}: {stats.get('fileCount')} files, {stats.get('assetCount')} assets, "
        f"{stats.get('referenceCount')} references; {result['sites']} reference sites",
        "",
        f"- in-process cold build (peer): {result['build_s']:.2f} s; server spawn -> initialized: "
        f"{result['spawn_to_initialize_ms']:.0f} ms",
        f"- initialize -> first diagnostics of an opened file (complete index): "
        f"{result['initialize_to_first_diagnostics_s']:.2f} s",
        f"- diagnostics after a keystroke (didChange -> diagnostic published): p50 "
        f"{_pct(result['keystroke'], 0.5):.0f} ms, max {max(result['keystroke']) * 1000:.0f} ms "
        f"over {len(result['keystroke'])} in {result['keystroke_file']}",
        f"- protocol floor (`moddesk.ra3.status` round trip, no index work): p50 "
        f"{_pct(result['lsp']['floor'], 0.5):.2f} ms, p99 {_pct(result['lsp']['floor'], 0.99):.2f} ms",
        "",
        "| request | LSP p50 ms | LSP p99 ms | in-process p50 ms | in-process p99 ms | p50 ratio |",
        "|---|---|---|---|---|---|",
    ]
    peers = {
        "definition": "get_definition",
        "references": "find_references",
        "completion": "list_assets_by_type",
    }
    for op, peer in peers.items():
        lsp_t, loc_t = result["lsp"][op], result["local"][op]
        rows.append(
            f"| {op} (vs {peer}) | {_pct(lsp_t, 0.5):.2f} | {_pct(lsp_t, 0.99):.2f} | "
            f"{_pct(loc_t, 0.5):.3f} | {_pct(loc_t, 0.99):.3f} | {statistics.median(lsp_t) / max(statistics.median(loc_t), 1e-9):.0f}x |"
        )
    return rows


def _default_corpora() -> Path:
    """$MODDESK_CORPORA, else ../shared/corpora beside the repository, else the shared machine's folder."""
    env = os.environ.get("MODDESK_CORPORA")
    if env:
        return Path(env)
    beside = Path(__file__).resolve().parents[2] / "shared" / "corpora"
    return beside if beside.is_dir() else Path("/work/shared/corpora")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpora", type=Path, default=_default_corpora())

    parser.add_argument("--sites", type=int, default=150)
    parser.add_argument("--keystrokes", type=int, default=10)
    parser.add_argument("--only", choices=("ra3", "cnc3"), default=None)
    parser.add_argument("--quick", action="store_true", help="30 sites, 3 keystrokes (a smoke run)")
    args = parser.parse_args()
    if args.quick:
        args.sites, args.keystrokes = min(args.sites, 30), min(args.keystrokes, 3)
    sage = args.corpora / "sage"
    if not (sage / "ra3-nhbt").is_dir():
        print(f"skipped: no SAGE corpora under {args.corpora} (pass --corpora or set MODDESK_CORPORA)")
        return
    with tempfile.TemporaryDirectory() as mount:
        # the mod's includes say DATA:RA3 Undecided/Data/...: mount it at <sdk>/Mods/RA3 Undecided
        mods = Path(mount) / "sdk" / "Mods"
        mods.mkdir(parents=True)
        os.symlink(sage / "ra3-nhbt", mods / "RA3 Undecided")
        targets = [
            Target(
                "RA3 corpus mod (NothingHereButTrees)",
                mods / "RA3 Undecided",
                sage / "ra3-schemas" / "xsd" / "CnC3Types.xsd",
                [],
            ),
            Target(
                "C&C3 SDK base data",
                sage / "cnc3-sdk",
                None,
                [sage / "cnc3-sdk" / "CnC3Xml" / "Static.xml", sage / "cnc3-sdk" / "CnC3Xml" / "Global.xml"],
            ),
        ]
        if args.only == "ra3":
            targets = targets[:1]
        elif args.only == "cnc3":
            targets = targets[1:]
        for target in targets:
            print("\n".join(report(run(target, args.sites, args.keystrokes))), flush=True)
            print(flush=True)


if __name__ == "__main__":
    main()
