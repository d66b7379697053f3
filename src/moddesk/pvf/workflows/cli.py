"""``moddesk pvf mod inspect|apply|merge``, ``moddesk pvf diff`` and ``moddesk pvf table``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Literal

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from moddesk.kit.errors import ServiceError, person_message

console = Console()
err_console = Console(stderr=True)
mod_app = typer.Typer(
    help="Read, apply and merge MOD packages (110USextend folders, 115CN-mod zips).", no_args_is_help=True
)

FormatOption = Annotated[str, typer.Option("--format", help="110USextend (folder) or 115CN-mod (zip)")]


def _printable(text: str) -> str:
    """Game text for a terminal: control characters other than tab and newline shown as escapes."""
    return "".join(c if c in "\t\n" or (c >= " " and c != "\x7f") else f"\\x{ord(c):02x}" for c in text)


def _fail(error: ServiceError) -> None:
    err_console.print(
        f"[red]{error.code}[/red]：{escape(person_message(error.code, error.message, error.details.get('errorZh')))}"
    )
    if error.hint:
        err_console.print(f"hint: {escape(error.hint)}")
    for conflict in error.details.get("conflicts", [])[:20]:
        err_console.print(f"  {escape(json.dumps(conflict, ensure_ascii=False))}")
    raise typer.Exit(2)


def _mod_format(fmt: str) -> Literal["110USextend", "115CN-mod"]:
    if fmt not in ("110USextend", "115CN-mod"):
        raise ServiceError("INVALID_ARGUMENT", f"--format {fmt!r}", hint="Use 110USextend or 115CN-mod.")
    return "110USextend" if fmt == "110USextend" else "115CN-mod"


def _final_path(out_dir: Path, fmt: str, name: str, version: str) -> Path:
    from moddesk.pvf.transfer.writers import check_name, check_version

    stem = f"{check_name(name)}-{check_version(version)}"
    return out_dir.resolve() / (stem + ".zip" if fmt == "115CN-mod" else stem)


def _conflict_table(conflicts: list[Any]) -> Table:
    table = Table("conflict", "kind", "path", "entry", "mine", "theirs")
    for c in conflicts:
        d = c if isinstance(c, dict) else c.describe()
        table.add_row(
            d["conflictId"], d["kind"], d["path"], d["entry"] or "", str(d["mine"]), str(d["theirs"])
        )
    return table


@mod_app.command("inspect")
def mod_inspect(package: Path) -> None:
    """Check a MOD package and show what it holds (nothing is changed)."""
    from moddesk.pvf.transfer.modread import read_mod

    try:
        mod = read_mod(str(package.resolve()))
    except ServiceError as exc:
        _fail(exc)
    summary = mod.summary()
    for key in ("format", "name", "version", "modId", "files", "tables", "tableEntries"):
        console.print(f"{key}: {escape(str(summary[key]))}")
    table = Table("kind", "archive path", "size / entries")
    for f in mod.files:
        table.add_row("file" if f.text else "binary", escape(f.path), str(len(f.data)))
    for t in mod.tables:
        table.add_row("merge", escape(t.path), str(t.size))
    console.print(table)


@mod_app.command("apply")
def mod_apply(
    archive: Annotated[Path, typer.Argument(exists=True, dir_okay=False, help="the Script.pvf to change")],
    package: Annotated[Path, typer.Argument(help="a 110USextend folder or a 115CN-mod zip")],
    take: Annotated[
        str | None, typer.Option("--take", help="resolve every conflict: mine (keep) or theirs (the MOD's)")
    ] = None,
    yes: Annotated[bool, typer.Option("--yes", help="do not ask before saving")] = False,
) -> None:
    """Apply a MOD to ARCHIVE: show its changes and conflicts, then apply and save (a backup is kept)."""
    from moddesk.pvf.cli import _opened
    from moddesk.pvf.transfer.mods import ModService

    try:
        with _opened(archive) as (service, ws):
            mods = ModService(service)
            plan = mods.prepare(ws, str(package.resolve()), scope="cli")
            console.print(f"{plan['mod']['format']} {escape(plan['mod']['name'])}: {plan['counts']}")
            conflicts: list[dict[str, Any]] = []
            cursor = None
            while True:
                page = mods.preview(plan["planId"], cursor=cursor, limit=200)
                conflicts += [r["conflict"] for r in page["rows"] if "conflict" in r]
                cursor = page["nextCursor"]
                if cursor is None:
                    break
            if conflicts:
                console.print(_conflict_table(conflicts))
            if conflicts and take not in ("mine", "theirs"):
                raise ServiceError(
                    "MOD_CONFLICTS_UNRESOLVED",
                    f"{len(conflicts)} conflicts; nothing was changed",
                    hint="Run again with --take mine or --take theirs.",
                )
            if not yes and not typer.confirm("Apply and save?"):
                raise typer.Exit(1)
            resolutions = {c["conflictId"]: take or "theirs" for c in conflicts}
            result = mods.apply(plan["planId"], plan["revision"], resolutions, scope="cli")
            status = service.tasks.wait(service.save(ws, result["revision"])["taskId"])
            if status["state"] != "succeeded":
                error = status["error"]
                raise ServiceError(error["error"], error["message"], error.get("hint"))
            console.print(f"applied: {result['written']} files written; saved {escape(str(archive))}")
    except ServiceError as exc:
        _fail(exc)


@mod_app.command("merge")
def mod_merge(
    first: Path,
    second: Path,
    out_dir: Annotated[Path, typer.Option("--out-dir", help="folder to write the merged MOD into")],
    fmt: FormatOption = "110USextend",
    name: Annotated[str, typer.Option("--name")] = "merged",
    version: Annotated[str, typer.Option("--version")] = "1.0",
    mod_id: Annotated[str | None, typer.Option("--mod-id", help="required for 115CN-mod")] = None,
    prefer: Annotated[
        str | None, typer.Option("--prefer", help="first or second, where they disagree")
    ] = None,
) -> None:
    """Merge two MODs into one; where they collide, --prefer decides (otherwise nothing is written)."""
    from moddesk.pvf.transfer.modmerge import merge_packages
    from moddesk.pvf.transfer.modread import read_mod
    from moddesk.pvf.transfer.writers import package_entries, publish_package

    try:
        out_format = _mod_format(fmt)
        if out_format == "115CN-mod" and not mod_id:
            raise ServiceError("INVALID_ARGUMENT", "115CN-mod needs --mod-id", hint="Pass a stable id.")
        if prefer not in (None, "first", "second"):
            raise ServiceError("INVALID_ARGUMENT", f"--prefer {prefer!r}", hint="Use first or second.")
        merged, conflicts = merge_packages(
            read_mod(str(first.resolve())),
            read_mod(str(second.resolve())),
            "second" if prefer == "second" else None,
        )
        if conflicts:
            console.print(_conflict_table(conflicts))
            if prefer is None:
                raise ServiceError(
                    "MOD_CONFLICTS_UNRESOLVED",
                    f"the MODs collide in {len(conflicts)} places; nothing was written",
                    hint="Run again with --prefer first or --prefer second.",
                )
        output = package_entries(merged, out_format, name=name, version=version, mod_id=mod_id)
        final = _final_path(out_dir, out_format, name, version)
        count = publish_package(out_format, final, output.entries)
        for warning in output.warnings:
            console.print(
                f"[yellow]{warning['code']}[/yellow] {escape(warning['path'])}: {warning['message']}"
            )
        console.print(f"wrote {escape(str(final))} ({count} files, {len(conflicts)} conflicts resolved)")
    except ServiceError as exc:
        _fail(exc)


def diff_command(
    first: Annotated[Path, typer.Argument(exists=True, dir_okay=False, help="the archive to compare from")],
    second: Annotated[Path, typer.Argument(exists=True, dir_okay=False, help="the archive to compare to")],
    show: Annotated[list[str] | None, typer.Option("--show", help="print the text diff of this path")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print the changes as JSON")] = False,
    export_mod: Annotated[
        Path | None, typer.Option("--export-mod", help="write the changes as a MOD here")
    ] = None,
    fmt: FormatOption = "110USextend",
    name: Annotated[str, typer.Option("--name")] = "diff",
    version: Annotated[str, typer.Option("--version")] = "1.0",
    mod_id: Annotated[str | None, typer.Option("--mod-id")] = None,
) -> None:
    """What changed from FIRST to SECOND: files added/removed/changed, list entries, strings."""
    from moddesk.pvf.archive import Archive
    from moddesk.pvf.format.errors import PvfFormatError
    from moddesk.pvf.workflows.archivediff import ArchiveSide, diff

    try:
        with Archive.open(first) as a, Archive.open(second) as b:
            result = diff(ArchiveSide(a, "a"), ArchiveSide(b, "b"))
            if as_json:
                print(json.dumps([c.describe() for c in result.changes], ensure_ascii=False))
            else:
                table = Table("status", "path", "entries")
                for change in result.changes:
                    entries = ", ".join(f"{k} {len(v)}" for k, v in change.entries.items() if v)
                    table.add_row(change.status, escape(change.path), entries)
                console.print(table)
                console.print(f"{result.counts()} of {result.compared} paths")
            for path in show or []:
                text = result.text_diff(path.lower())
                typer.echo(_printable(text) if text is not None else f"{path}: binary or unchanged")
            if export_mod is not None:
                _export_diff(result, export_mod, _mod_format(fmt), name, version, mod_id)
    except PvfFormatError as exc:
        _fail(ServiceError(exc.code, str(exc), hint="Check that both files are PVF archives."))
    except ServiceError as exc:
        _fail(exc)


def _export_diff(result: Any, out_dir: Path, fmt: Any, name: str, version: str, mod_id: str | None) -> None:
    from moddesk.pvf.transfer.sources import ExportItem
    from moddesk.pvf.transfer.writers import build_output, publish_package

    if fmt == "115CN-mod" and not mod_id:
        raise ServiceError("INVALID_ARGUMENT", "115CN-mod needs --mod-id", hint="Pass a stable id.")
    items = []
    for change in result.changes:
        old = result.a.content(change.path) if change.status != "added" else None
        new = result.b.content(change.path) if change.status != "removed" else old
        items.append(ExportItem(change.path, change.status == "removed", new, old, True))
    output = build_output(items, fmt, name=name, version=version, mod_id=mod_id)
    final = _final_path(out_dir, fmt, name, version)
    count = publish_package(fmt, final, output.entries)
    for skipped in output.skipped_deletes:
        console.print(f"[yellow]not in the MOD[/yellow] {escape(skipped['path'])}: {skipped['reason']}")
    console.print(f"wrote {escape(str(final))} ({count} files)")


def table_command(
    kind: Annotated[str, typer.Argument(help="equipment, stackable or skill")],
    archive: Annotated[Path, typer.Argument(exists=True, dir_okay=False)],
    out: Annotated[Path | None, typer.Option("--out", help="file to write (default: print CSV/JSON)")] = None,
    fmt: Annotated[str, typer.Option("--format", help="csv, json or xlsx")] = "csv",
    fields: Annotated[list[str] | None, typer.Option("--field", help="a section to add as a column")] = None,
    lists: Annotated[list[str] | None, typer.Option("--list", help="read this .lst instead")] = None,
) -> None:
    """An item table of ARCHIVE: id, path, name and fields of every entry of the kind's lists."""
    from moddesk.kit.files import atomic_write_bytes
    from moddesk.pvf.archive import Archive
    from moddesk.pvf.workflows.itemtables import KINDS, archive_source, list_paths_for, render, rows

    try:
        with Archive.open(archive) as opened:
            source = archive_source(opened)
            names = [p.lower() for p in lists] if lists else list_paths_for(kind, source.paths())
            chosen = fields or KINDS.get(kind, ([], []))[1]
            table = list(rows(source, names, chosen))
        data = render(table, fmt)
        if out is None:
            if fmt == "xlsx":
                raise ServiceError("INVALID_ARGUMENT", "xlsx needs --out FILE", hint="Pass --out items.xlsx.")
            typer.echo(_printable(data.decode("utf-8-sig")), nl=False)
        else:
            atomic_write_bytes(out, data)
            err_console.print(f"wrote {len(table)} rows to {escape(str(out))}")
    except ServiceError as exc:
        _fail(exc)


def register(app: typer.Typer) -> None:
    app.add_typer(mod_app, name="mod")
    app.command("diff")(diff_command)
    app.command("table")(table_command)
