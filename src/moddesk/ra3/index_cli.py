"""`moddesk ra3 index PROJECT` and `moddesk ra3 query <verb> …`: the CLI over the index core.

A thin adapter: options become a `ProjectConfig` / `QueryApi` call, answers become rich tables (or
the raw JSON with `--json`). Queries read the project's snapshot (what `index --snapshot` and
`watch` write) unless `--fresh` asks for an in-process build.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from moddesk.kit.errors import ServiceError

if TYPE_CHECKING:  # the index core (lxml) loads when a command runs, not for `--help`
    from moddesk.ra3.core.index import BuildProgress, ModIndex
    from moddesk.ra3.core.query import QueryApi

console = Console()
err_console = Console(stderr=True)

ProjectArg = Annotated[
    Path, typer.Argument(help="Project folder (holds Data/Mod.xml, *.babproj or mapmetadata)")
]
ProjectOpt = Annotated[Path, typer.Option("--project", "-p", help="Project folder (default: nearest to cwd)")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print the raw JSON answer")]
FreshOpt = Annotated[
    bool, typer.Option("--fresh", help="Build the index now instead of reading the snapshot")
]
LimitOpt = Annotated[int, typer.Option("--limit", "-n", help="Page size")]
CursorOpt = Annotated[str | None, typer.Option("--cursor", help="nextCursor from a previous page")]
TypeOpt = Annotated[str | None, typer.Option("--type", "-t", help="Asset type (derived types match too)")]


def _fail(exc: ServiceError) -> typer.Exit:
    err_console.print(f"[red]{exc.code}[/red]: {exc.message}")
    if exc.hint:
        err_console.print(f"[dim]hint: {exc.hint}[/dim]")
    return typer.Exit(2)


def _config(
    project: Path,
    schema: Path | None,
    sdk: Path | None,
    entry: list[Path] | None,
    data_path: list[Path] | None,
    manifests: bool,
) -> Any:
    if not project.is_dir():
        raise ServiceError("PROJECT_NOT_FOUND", f"{project} is not a folder")
    from moddesk.ra3.core.project import find_project_root
    from moddesk.ra3.core.settings import configure

    root = Path(os.path.abspath(project)) if entry else (find_project_root(project) or project)
    cfg, _saved, written = configure(
        root, sdk=sdk, schema=schema, entries=entry, data_paths=data_path, use_manifests=manifests
    )
    if written is not None:
        err_console.print(
            f"[dim]project file written: {written} (game {cfg.game}); edit it to change entries[/dim]"
        )
    return cfg


def run_index(
    project: Path,
    *,
    schema: Path | None = None,
    sdk: Path | None = None,
    entry: list[Path] | None = None,
    data_path: list[Path] | None = None,
    manifests: bool = True,
    quiet: bool = False,
) -> ModIndex:
    """Build a project's index with a progress bar; returns the live index."""
    from moddesk.ra3.core.index import ModIndex
    from moddesk.ra3.core.snapshot import ra3_home

    cfg = _config(project, schema, sdk, entry, data_path, manifests)
    index = ModIndex(cfg, cache_dir=ra3_home() / "cache")
    if quiet:
        index.build()
        return index
    with Progress(
        TextColumn("[bold]{task.fields[phase]}[/bold]"),
        BarColumn(),
        TextColumn("{task.completed} files"),
        TextColumn("assets {task.fields[assets]}  refs {task.fields[refs]}  errors {task.fields[errors]}"),
        TimeElapsedColumn(),
        console=err_console,
        transient=False,
    ) as bar:
        task = bar.add_task("index", total=None, phase="xml", assets=0, refs=0, errors=0)

        def report(p: BuildProgress) -> None:
            bar.update(
                task,
                completed=p.files_parsed,
                total=p.files_total or None,
                phase=p.phase,
                assets=p.assets,
                refs=p.references,
                errors=p.errors,
            )

        index.build(report)
        bar.update(task, total=1, completed=1)
    return index


def _print_json(answer: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(answer, indent=1, ensure_ascii=False) + "\n")


def _status_line(answer: dict[str, Any]) -> None:
    idx = answer.get("index") or {}
    console.print(
        f"[dim]index: {idx.get('state')} complete={idx.get('complete')} stale={idx.get('stale')} "
        f"build={idx.get('buildId')} at {idx.get('generatedAt')} ({idx.get('source')}) {idx.get('projectDir')}[/dim]"
    )
    for reason in idx.get("incomplete") or []:
        console.print(f"[yellow]incomplete ({reason.get('reason')})[/yellow]: {reason.get('message')}")
    _gap_lines(idx)
    if idx.get("changedFiles"):
        console.print("[yellow]stale[/yellow]: changed on disk since: " + ", ".join(idx["changedFiles"][:10]))
    for caveat in answer.get("caveats") or []:
        console.print(f"[yellow]caveat ({caveat.get('code')})[/yellow]: {caveat.get('message')}")


def _gap_lines(idx: dict[str, Any]) -> None:
    """What keeps the index incomplete, one line per gap kind (索引缺口)."""
    from moddesk.ra3.core.completeness import gap_line

    for kind, gap in (idx.get("gaps") or {}).items():
        console.print(f"[yellow]缺口[/yellow] {escape(gap_line(kind, gap))}", highlight=False, soft_wrap=True)


def _table(title: str, columns: list[str], rows: list[list[Any]]) -> None:
    table = Table(title=title, show_lines=False)
    for col in columns:
        table.add_column(col, overflow="fold")
    for row in rows:
        table.add_row(*["" if v is None else str(v) for v in row])
    console.print(table)


def _paging(answer: dict[str, Any]) -> None:
    if answer.get("truncated"):
        console.print(
            f"[dim]{answer['returned']} of {answer['total']}; next page: --cursor {answer['nextCursor']}[/dim]"
        )
    if answer.get("note"):
        console.print(f"[yellow]note:[/yellow] {answer['note']}")


def _api(project: Path, fresh: bool) -> QueryApi:
    from moddesk.ra3.core.project import find_project_root
    from moddesk.ra3.core.query import QueryApi
    from moddesk.ra3.core.snapshot import SnapshotSource

    root = find_project_root(project) or project
    if fresh:
        return QueryApi(run_index(root, quiet=True))
    return QueryApi(SnapshotSource.load(root.resolve()))


def _flatten(node: dict[str, Any], path: str, rows: list[list[Any]]) -> None:
    """Rows `path, value, from, file:line` for every attribute and text of a resolved tree."""
    ident = (node.get("attributes") or {}).get("id")
    here = f"{path}/{node['element']}" + (f"[{ident['value']}]" if ident and path else "")
    for name, value in (node.get("attributes") or {}).items():
        rows.append([f"{here}@{name}", value["value"], value["from"], f"{value['file']}:{value['line']}"])
    text = node.get("text")
    if text:
        rows.append([here, text["value"], text["from"], f"{text['file']}:{text['line']}"])
    for child in node.get("children", []):
        _flatten(child, here, rows)


def register(app: typer.Typer) -> None:
    """Add `index` and the `query` group to the `moddesk ra3` app."""

    @app.command("index")
    def index_cmd(
        project: ProjectArg,
        schema: Annotated[
            Path | None, typer.Option("--schema", help="Root XSD (default: SDK CnC3Types.xsd)")
        ] = None,
        sdk: Annotated[
            Path | None, typer.Option("--sdk", help="SDK root (default: found above the project)")
        ] = None,
        entry: Annotated[
            list[Path] | None,
            typer.Option("--entry", help="Entry document (repeatable); default Data/Mod.xml etc."),
        ] = None,
        data_path: Annotated[
            list[Path] | None, typer.Option("--data-path", help="Extra DATA: search root")
        ] = None,
        manifests: Annotated[
            bool, typer.Option(help="Use builtmods manifests for reference includes")
        ] = True,
        snapshot: Annotated[bool, typer.Option("--snapshot/--no-snapshot", help="Write the snapshot")] = True,
        replace_snapshot: Annotated[
            bool,
            typer.Option("--replace-snapshot", help="Replace a bigger snapshot built with other settings"),
        ] = False,
        diagnostics: Annotated[int, typer.Option("--diagnostics", help="Diagnostics to list")] = 20,
        as_json: JsonOpt = False,
    ) -> None:
        """Index a SAGE mod project (progress bar), print counts and diagnostics, write the snapshot."""
        from moddesk.ra3.core.errors import Ra3Error
        from moddesk.ra3.core.query import QueryApi
        from moddesk.ra3.core.snapshot import write_snapshot

        try:
            index = run_index(
                project,
                schema=schema,
                sdk=sdk,
                entry=entry,
                data_path=data_path,
                manifests=manifests,
                quiet=as_json,
            )
            api = QueryApi(index)
            status = api.get_status()
            path = None
            if snapshot and index.data is not None:
                try:
                    path = write_snapshot(index.data, index.status(), replace=replace_snapshot)
                    status["snapshot"] = str(path)
                except Ra3Error as kept:
                    if kept.code != "SNAPSHOT_KEPT":
                        raise
                    status["snapshotKept"] = {"message": kept.message, "hint": kept.hint, **kept.details}
                    err_console.print(
                        f"[yellow]{kept.code}[/yellow]: {kept.message}\n[dim]hint: {kept.hint}[/dim]"
                    )
            diags = api.list_diagnostics(limit=max(1, diagnostics))
        except ServiceError as exc:
            raise _fail(exc) from exc
        if as_json:
            status["diagnostics"] = diags["diagnostics"]
            _print_json(status)
            return
        _status_line(status)
        stats = status.get("stats", {})
        _table("index", ["what", "count"], [[k, v] for k, v in stats.items()])
        by_code = status.get("diagnosticsByCode", {})
        if by_code:
            _table("diagnostics by code", ["code", "count"], [[k, v] for k, v in by_code.items()])
        if diags["diagnostics"]:
            _table(
                f"first {len(diags['diagnostics'])} diagnostics",
                ["where", "code", "message"],
                [[f"{d['file']}:{d['line']}", d["code"], d["message"]] for d in diags["diagnostics"]],
            )
        if path is not None:
            console.print(f"snapshot: {path}")

    query = typer.Typer(
        help="Query a project's index (reads its snapshot; --fresh builds it now).", no_args_is_help=True
    )
    app.add_typer(query, name="query")

    def show(
        project: Path,
        fresh: bool,
        as_json: bool,
        call: Callable[[QueryApi], dict[str, Any]],
        render: Callable[[dict[str, Any]], None],
        *,
        paged: bool = True,
    ) -> None:
        """Every query command's body: ask, then print the raw JSON or the status line, `render` and paging."""
        try:
            answer = call(_api(project, fresh))
        except ServiceError as exc:
            raise _fail(exc) from exc
        if as_json:
            return _print_json(answer)
        _status_line(answer)
        render(answer)
        if paged:
            _paging(answer)
        return None

    @query.command("status")
    def status_cmd(
        project: ProjectOpt = Path("."), fresh: FreshOpt = False, as_json: JsonOpt = False
    ) -> None:
        """Index state, counts and diagnostics by code."""

        def render(answer: dict[str, Any]) -> None:
            _table("stats", ["what", "count"], [[k, v] for k, v in answer.get("stats", {}).items()])
            _table(
                "diagnostics",
                ["code", "count"],
                [[k, v] for k, v in answer.get("diagnosticsByCode", {}).items()],
            )

        show(project, fresh, as_json, lambda api: api.get_status(), render, paged=False)

    @query.command("projects")
    def projects_cmd(as_json: JsonOpt = False) -> None:
        """Projects with snapshots under ~/.ra3modxml (or $RA3MODXML_HOME)."""
        from moddesk.ra3.core.snapshot import list_snapshots

        rows = list_snapshots()
        if as_json:
            return _print_json({"projects": rows})
        _table(
            "projects",
            ["project", "state", "generated", "assets"],
            [
                [
                    r.get("project"),
                    r.get("state"),
                    r.get("generatedAt"),
                    (r.get("stats") or {}).get("assetCount"),
                ]
                for r in rows
            ],
        )
        return None

    @query.command("find")
    def find_cmd(
        id: str,
        type: TypeOpt = None,
        project: ProjectOpt = Path("."),
        limit: LimitOpt = 50,
        cursor: CursorOpt = None,
        fresh: FreshOpt = False,
        as_json: JsonOpt = False,
    ) -> None:
        """Where is an asset defined (id is case-insensitive)."""
        show(
            project,
            fresh,
            as_json,
            lambda api: api.find_asset(id, type, limit, cursor),
            lambda answer: _table(
                f"definitions of {id}",
                ["type", "id", "where", "origin", "stream", "mode"],
                [
                    [a["type"], a["id"], f"{a['file']}:{a['line']}", a["origin"], a["stream"], a["mode"]]
                    for a in answer["assets"]
                ],
            ),
        )

    @query.command("refs")
    def refs_cmd(
        id: str,
        type: TypeOpt = None,
        project: ProjectOpt = Path("."),
        limit: LimitOpt = 100,
        cursor: CursorOpt = None,
        fresh: FreshOpt = False,
        as_json: JsonOpt = False,
    ) -> None:
        """Who references an asset."""
        show(
            project,
            fresh,
            as_json,
            lambda api: api.find_references(id, type, limit, cursor),
            lambda answer: _table(
                f"references to {id}",
                ["from", "where", "kind", "via", "value"],
                [
                    [
                        f"{r['from']['type']}:{r['from']['id']}",
                        f"{r['file']}:{r['line']}",
                        r["kind"],
                        f"{r['parent'] or ''}/{r['element']}"
                        + (f"@{r['attribute']}" if r["attribute"] else ""),
                        r["value"],
                    ]
                    for r in answer["references"]
                ],
            ),
        )

    @query.command("def")
    def def_cmd(
        type: str, id: str, project: ProjectOpt = Path("."), fresh: FreshOpt = False, as_json: JsonOpt = False
    ) -> None:
        """Definition(s) of (type, id) and its inheritFrom chain."""

        def render(answer: dict[str, Any]) -> None:
            _table(
                f"{type}:{id}",
                ["type", "where", "origin", "mode"],
                [
                    [a["type"], f"{a['file']}:{a['line']}", a["origin"], a["mode"]]
                    for a in answer["definitions"]
                ],
            )
            for step in answer.get("inheritChain", []):
                target = step.get("target")
                where = f"{target['file']}:{target['line']}" if target else step["resolution"]
                console.print(f"  inheritFrom {step['value']} -> {where}")

        show(project, fresh, as_json, lambda api: api.get_definition(type, id), render)

    @query.command("list")
    def list_cmd(
        type: str,
        prefix: Annotated[str | None, typer.Option("--prefix")] = None,
        project: ProjectOpt = Path("."),
        limit: LimitOpt = 50,
        cursor: CursorOpt = None,
        fresh: FreshOpt = False,
        as_json: JsonOpt = False,
    ) -> None:
        """Assets of a type (and derived types), by id."""
        show(
            project,
            fresh,
            as_json,
            lambda api: api.list_assets_by_type(type, prefix, limit, cursor),
            lambda answer: _table(
                f"{answer['type']} assets",
                ["type", "id", "where", "mode"],
                [[a["type"], a["id"], f"{a['file']}:{a['line']}", a["mode"]] for a in answer["assets"]],
            ),
        )

    @query.command("include")
    def include_cmd(
        source: str,
        from_file: Annotated[str | None, typer.Option("--from")] = None,
        project: ProjectOpt = Path("."),
        fresh: FreshOpt = False,
        as_json: JsonOpt = False,
    ) -> None:
        """Resolve an Include source / xi:include href as the compiler would."""
        origin = os.path.abspath(from_file) if from_file and os.path.exists(from_file) else from_file

        def render(answer: dict[str, Any]) -> None:
            console.print(f"{source} -> {answer['resolved'] or '[red]not found[/red]'}")
            for cand in answer["candidates"]:
                console.print(f"  [dim]tried {cand}[/dim]")

        show(project, fresh, as_json, lambda api: api.resolve_include(source, origin), render)

    @query.command("active")
    def active_cmd(
        path: str, project: ProjectOpt = Path("."), fresh: FreshOpt = False, as_json: JsonOpt = False
    ) -> None:
        """Is a file part of the build (emitted / visible / external per stream)?"""
        target = os.path.abspath(path) if os.path.exists(path) else path

        def render(answer: dict[str, Any]) -> None:
            if answer["active"]:
                console.print(
                    f"[green]active[/green] {answer['path']}: {answer['mode']} ({answer['meaning']})"
                )
                for stream, mode in answer["streams"].items():
                    console.print(f"  {stream}: {mode}")
            else:
                console.print(f"[red]inactive[/red] {answer['path']}")
            for inc in answer["includedBy"][:10]:
                console.print(f"  included by {inc['from']}:{inc['line']} ({inc['type']})")

        show(project, fresh, as_json, lambda api: api.is_file_active(target), render)

    @query.command("define")
    def define_cmd(
        name: str, project: ProjectOpt = Path("."), fresh: FreshOpt = False, as_json: JsonOpt = False
    ) -> None:
        """A $DEFINE's value(s) and its =$NAME expression uses."""

        def render(answer: dict[str, Any]) -> None:
            _table(
                f"define {answer['name']}",
                ["value", "where", "stream", "override"],
                [
                    [d["value"], f"{d['file']}:{d['line']}", d["stream"], d["override"]]
                    for d in answer["definitions"]
                ],
            )
            console.print(f"expression uses: {answer['expressionUseCount']}")

        show(project, fresh, as_json, lambda api: api.find_define(name), render)

    @query.command("unreferenced")
    def unreferenced_cmd(
        type: TypeOpt = None,
        project: ProjectOpt = Path("."),
        limit: LimitOpt = 100,
        cursor: CursorOpt = None,
        fresh: FreshOpt = False,
        as_json: JsonOpt = False,
    ) -> None:
        """Emitted project assets nothing references."""
        show(
            project,
            fresh,
            as_json,
            lambda api: api.unreferenced(type, limit, cursor),
            lambda answer: _table(
                "unreferenced",
                ["type", "id", "where"],
                [[a["type"], a["id"], f"{a['file']}:{a['line']}"] for a in answer["assets"]],
            ),
        )

    @query.command("forward")
    def forward_cmd(
        type: str,
        id: str,
        depth: Annotated[int, typer.Option("--depth")] = 1,
        target_type: Annotated[list[str] | None, typer.Option("--target-type")] = None,
        max_edges: Annotated[int, typer.Option("--max-edges")] = 200,
        project: ProjectOpt = Path("."),
        fresh: FreshOpt = False,
        as_json: JsonOpt = False,
    ) -> None:
        """What an asset references (bounded edges with provenance)."""

        def render(answer: dict[str, Any]) -> None:
            rows = []
            for e in answer["edges"]:
                to = e["to"]
                target = f"{to['type']}:{to['id']}" if to else f"({e['status']}) {e['value']}"
                via = e["via"]
                how = f"{via['parent'] or ''}/{via['element']}" + (
                    f"@{via['attribute']}" if via["attribute"] else ""
                )
                src = e["source"]
                defined = e["definedIn"]["id"] if e["definedIn"] else ""
                rows.append([e["depth"], target, how, f"{src['file']}:{src['line']}", defined])
            _table(f"{type}:{id} references", ["d", "to", "via", "source", "definedIn"], rows)
            if answer["truncated"]:
                console.print(f"[yellow]truncated[/yellow]; omitted by type: {answer['omittedByTargetType']}")

        show(
            project,
            fresh,
            as_json,
            lambda api: api.get_asset_references(type, id, depth, target_type, max_edges),
            render,
            paged=False,
        )

    @query.command("resolved")
    def resolved_cmd(
        asset: Annotated[str, typer.Argument(help="TYPE:ID, e.g. GameObject:AlliedAntiVehicleVehicleTech1")],
        max_nodes: Annotated[int, typer.Option("--max-nodes")] = 2000,
        project: ProjectOpt = Path("."),
        fresh: FreshOpt = False,
        as_json: JsonOpt = False,
    ) -> None:
        """An asset with its inheritFrom chain applied; each value with the file:line and asset it came from."""
        type_name, sep, ident = asset.partition(":")
        if not sep or not type_name or not ident:
            raise _fail(ServiceError("INVALID_ARGUMENT", f"expected TYPE:ID, got {asset!r}"))

        def render(answer: dict[str, Any]) -> None:
            chain = " <- ".join(f"{c['type']}:{c['id']} ({c['file']}:{c['line']})" for c in answer["chain"])
            console.print(f"chain: {chain}", highlight=False, soft_wrap=True)
            rows: list[list[Any]] = []
            _flatten(answer["resolved"], "", rows)
            _table(f"{type_name}:{ident} resolved", ["path", "value", "from", "where"], rows)
            for note in answer.get("notes", []):
                console.print(f"[yellow]note:[/yellow] {note}")

        show(
            project,
            fresh,
            as_json,
            lambda api: api.get_resolved_asset(type_name, ident, max_nodes),
            render,
            paged=False,
        )

    @query.command("inactive")
    def inactive_cmd(
        prefix: Annotated[str | None, typer.Option("--prefix")] = None,
        project: ProjectOpt = Path("."),
        limit: LimitOpt = 100,
        cursor: CursorOpt = None,
        fresh: FreshOpt = False,
        as_json: JsonOpt = False,
    ) -> None:
        """XML files no stream includes (list_inactive_files), with commented-out includes that would reach them."""
        show(
            project,
            fresh,
            as_json,
            lambda api: api.list_inactive_files(prefix, limit, cursor),
            lambda answer: _table(
                "inactive files",
                ["path", "commented-out include"],
                [
                    [
                        f["path"],
                        ", ".join(f"{c['file']}:{c['line']}" for c in f.get("commentedOutIncludes", [])),
                    ]
                    for f in answer["files"]
                ],
            ),
        )

    @query.command("diagnostics")
    def diagnostics_cmd(
        code: Annotated[str | None, typer.Option("--code")] = None,
        file: Annotated[str | None, typer.Option("--file")] = None,
        project: ProjectOpt = Path("."),
        limit: LimitOpt = 50,
        cursor: CursorOpt = None,
        fresh: FreshOpt = False,
        as_json: JsonOpt = False,
    ) -> None:
        """Malformed XML, missing includes, unresolved / ambiguous references with file:line."""
        show(
            project,
            fresh,
            as_json,
            lambda api: api.list_diagnostics(code, file, limit, cursor),
            lambda answer: _table(
                "diagnostics",
                ["where", "code", "message"],
                [[f"{d['file']}:{d['line']}", d["code"], d["message"]] for d in answer["diagnostics"]],
            ),
        )
