"""``moddesk pvf mod inspect|apply|merge``, ``moddesk pvf diff`` and ``moddesk pvf table``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Literal

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from moddesk.kit.clihelp import BilingualTyper
from moddesk.kit.errors import ServiceError, person_message
from moddesk.kit.lang import say

console = Console()
err_console = Console(stderr=True)
mod_app = BilingualTyper(
    help="读取、应用和合并 MOD 包（110USextend 文件夹、115CN-mod 压缩包）。Read, apply and merge MOD packages "
    "(110USextend folders, 115CN-mod zips).",
    no_args_is_help=True,
)

FormatOption = Annotated[
    str,
    typer.Option(
        "--format", help="110USextend（文件夹）或 115CN-mod（zip）110USextend (folder) or 115CN-mod (zip)"
    ),
]
NameOption = Annotated[str, typer.Option("--name", help="MOD 名 MOD name")]
VersionOption = Annotated[str, typer.Option("--version", help="MOD 版本 MOD version")]


def _printable(text: str) -> str:
    """Game text for a terminal: control characters other than tab and newline shown as escapes."""
    return "".join(c if c in "\t\n" or (c >= " " and c != "\x7f") else f"\\x{ord(c):02x}" for c in text)


def _fail(error: ServiceError) -> None:
    err_console.print(
        f"[red]{error.code}[/red]：{escape(person_message(error.code, error.message, error.details.get('errorZh')))}"
    )
    if error.hint:
        err_console.print(f"提示 hint: {escape(error.hint)}")
    for conflict in error.details.get("conflicts", [])[:20]:
        err_console.print(f"  {escape(json.dumps(conflict, ensure_ascii=False))}")
    raise typer.Exit(2)


def _mod_format(fmt: str) -> Literal["110USextend", "115CN-mod"]:
    if fmt not in ("110USextend", "115CN-mod"):
        raise ServiceError(
            "INVALID_ARGUMENT",
            f"--format {fmt!r}",
            hint="Use 110USextend or 115CN-mod.",
            errorZh="--format 只能是 110USextend 或 115CN-mod。",
        )
    return "110USextend" if fmt == "110USextend" else "115CN-mod"


def _final_path(out_dir: Path, fmt: str, name: str, version: str) -> Path:
    from moddesk.pvf.transfer.writers import check_name, check_version

    stem = f"{check_name(name)}-{check_version(version)}"
    return out_dir.resolve() / (stem + ".zip" if fmt == "115CN-mod" else stem)


def _conflict_table(conflicts: list[Any]) -> Table:
    table = Table(
        say("冲突", "conflict"),
        say("类型", "kind"),
        say("路径", "path"),
        say("条目", "entry"),
        say("我方", "mine"),
        say("对方", "theirs"),
    )
    for c in conflicts:
        d = c if isinstance(c, dict) else c.describe()
        table.add_row(
            d["conflictId"], d["kind"], d["path"], d["entry"] or "", str(d["mine"]), str(d["theirs"])
        )
    return table


@mod_app.command("inspect")
def mod_inspect(
    package: Annotated[Path, typer.Argument(help="MOD 包（文件夹或 zip）MOD package (folder or zip)")],
) -> None:
    """检查 MOD 包并显示其内容（不做任何改动）。Check a MOD package and show what it holds (nothing is changed)."""
    from moddesk.pvf.transfer.modread import read_mod

    try:
        mod = read_mod(str(package.resolve()))
    except ServiceError as exc:
        _fail(exc)
    summary = mod.summary()
    for key in ("format", "name", "version", "modId", "files", "tables", "tableEntries"):
        label = say(MOD_LABELS[key], key) if key in MOD_LABELS else key
        console.print(f"{label}: {escape(str(summary[key]))}")
    table = Table(
        say("类型", "kind"), say("存档路径", "archive path"), say("大小 / 条目数", "size / entries")
    )
    for f in mod.files:
        table.add_row(
            say("文本", "file") if f.text else say("二进制", "binary"), escape(f.path), str(len(f.data))
        )
    for t in mod.tables:
        table.add_row(say("合并", "merge"), escape(t.path), str(t.size))
    console.print(table)


#: The Chinese names of ``mod inspect``'s summary rows.
MOD_LABELS = {
    "format": "格式",
    "name": "名称",
    "version": "版本",
    "modId": "MOD id",
    "files": "文件数",
    "tables": "合并表数",
    "tableEntries": "表条目数",
}


@mod_app.command("apply")
def mod_apply(
    archive: Annotated[
        Path, typer.Argument(exists=True, dir_okay=False, help="要修改的 Script.pvf the Script.pvf to change")
    ],
    package: Annotated[
        Path,
        typer.Argument(help="110USextend 文件夹或 115CN-mod zip a 110USextend folder or a 115CN-mod zip"),
    ],
    take: Annotated[
        str | None,
        typer.Option(
            "--take",
            help="所有冲突的取舍：mine 保留我方或 theirs 用 MOD 的 resolve every conflict: mine (keep) or "
            "theirs (the MOD's)",
        ),
    ] = None,
    yes: Annotated[bool, typer.Option("--yes", help="保存前不再询问 do not ask before saving")] = False,
) -> None:
    """把 MOD 应用到 ARCHIVE：显示改动和冲突，再应用并保存（保留备份）。Apply a MOD to ARCHIVE: show its changes and conflicts, then apply and save (a backup is kept)."""
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
                    errorZh=f"有 {len(conflicts)} 处冲突，没有做任何改动。用 --take mine 或 --take theirs 再运行。",
                )
            if not yes and not typer.confirm(say("应用并保存？", "Apply and save?")):
                raise typer.Exit(1)
            resolutions = {c["conflictId"]: take or "theirs" for c in conflicts}
            result = mods.apply(plan["planId"], plan["revision"], resolutions, scope="cli")
            status = service.tasks.wait(service.save(ws, result["revision"])["taskId"])
            if status["state"] != "succeeded":
                error = status["error"]
                raise ServiceError(error["error"], error["message"], error.get("hint"))
            written, saved = result["written"], escape(str(archive))
            console.print(
                say(
                    f"已应用：写入 {written} 个文件；已保存 {saved}",
                    f"applied: {written} files written; saved {saved}",
                )
            )
    except ServiceError as exc:
        _fail(exc)


@mod_app.command("merge")
def mod_merge(
    first: Annotated[Path, typer.Argument(help="第一个 MOD 包 the first MOD package")],
    second: Annotated[Path, typer.Argument(help="第二个 MOD 包 the second MOD package")],
    out_dir: Annotated[
        Path, typer.Option("--out-dir", help="写入合并后 MOD 的文件夹 folder to write the merged MOD into")
    ],
    fmt: FormatOption = "110USextend",
    name: NameOption = "merged",
    version: VersionOption = "1.0",
    mod_id: Annotated[
        str | None, typer.Option("--mod-id", help="115CN-mod 必须给出 required for 115CN-mod")
    ] = None,
    prefer: Annotated[
        str | None,
        typer.Option(
            "--prefer", help="两者不一致时以 first 或 second 为准 first or second, where they disagree"
        ),
    ] = None,
) -> None:
    """把两个 MOD 合并为一个；相撞处由 --prefer 决定（否则不写出任何内容）。Merge two MODs into one; where they collide, --prefer decides (otherwise nothing is written)."""
    from moddesk.pvf.transfer.modmerge import merge_packages
    from moddesk.pvf.transfer.modread import read_mod
    from moddesk.pvf.transfer.writers import package_entries, publish_package

    try:
        out_format = _mod_format(fmt)
        if out_format == "115CN-mod" and not mod_id:
            raise _needs_mod_id()
        if prefer not in (None, "first", "second"):
            raise ServiceError(
                "INVALID_ARGUMENT",
                f"--prefer {prefer!r}",
                hint="Use first or second.",
                errorZh="--prefer 只能是 first 或 second。",
            )
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
                    errorZh=f"两个 MOD 有 {len(conflicts)} 处相撞，没有写出任何内容。用 --prefer first 或 --prefer second 再运行。",
                )
        output = package_entries(merged, out_format, name=name, version=version, mod_id=mod_id)
        final = _final_path(out_dir, out_format, name, version)
        count = publish_package(out_format, final, output.entries)
        for warning in output.warnings:
            console.print(
                f"[yellow]{warning['code']}[/yellow] {escape(warning['path'])}: {warning['message']}"
            )
        where, solved = escape(str(final)), len(conflicts)
        console.print(
            say(
                f"已写出 {where}（{count} 个文件，解决 {solved} 处冲突）",
                f"wrote {where} ({count} files, {solved} conflicts resolved)",
            )
        )
    except ServiceError as exc:
        _fail(exc)


def _needs_mod_id() -> ServiceError:
    return ServiceError(
        "INVALID_ARGUMENT",
        "115CN-mod needs --mod-id",
        hint="Pass a stable id.",
        errorZh="115CN-mod 需要 --mod-id（一个稳定的 id）。",
    )


def diff_command(
    first: Annotated[
        Path, typer.Argument(exists=True, dir_okay=False, help="比较的起点存档 the archive to compare from")
    ],
    second: Annotated[
        Path, typer.Argument(exists=True, dir_okay=False, help="比较的终点存档 the archive to compare to")
    ],
    show: Annotated[
        list[str] | None,
        typer.Option("--show", help="打印这个路径的文本差异 print the text diff of this path"),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="以 JSON 输出改动 print the changes as JSON")
    ] = False,
    export_mod: Annotated[
        Path | None,
        typer.Option("--export-mod", help="把改动作为 MOD 写到这里 write the changes as a MOD here"),
    ] = None,
    fmt: FormatOption = "110USextend",
    name: NameOption = "diff",
    version: VersionOption = "1.0",
    mod_id: Annotated[
        str | None, typer.Option("--mod-id", help="稳定的 MOD id（115CN-mod 必需）stable MOD id (115CN-mod)")
    ] = None,
) -> None:
    """从 FIRST 到 SECOND 改了什么：新增/删除/修改的文件、列表条目、字符串。What changed from FIRST to SECOND: files added/removed/changed, list entries, strings."""
    from moddesk.pvf.archive import Archive
    from moddesk.pvf.format.errors import PvfFormatError
    from moddesk.pvf.workflows.archivediff import ArchiveSide, diff

    try:
        with Archive.open(first) as a, Archive.open(second) as b:
            result = diff(ArchiveSide(a, "a"), ArchiveSide(b, "b"))
            if as_json:
                print(json.dumps([c.describe() for c in result.changes], ensure_ascii=False))
            else:
                table = Table(say("状态", "status"), say("路径", "path"), say("条目", "entries"))
                for change in result.changes:
                    entries = ", ".join(f"{k} {len(v)}" for k, v in change.entries.items() if v)
                    table.add_row(change.status, escape(change.path), entries)
                console.print(table)
                counts, compared = result.counts(), result.compared
                console.print(say(f"比较了 {compared} 个路径：{counts}", f"{counts} of {compared} paths"))
            for path in show or []:
                text = result.text_diff(path.lower())
                unchanged = f"{path}: {say('二进制或未改动', 'binary or unchanged')}"
                typer.echo(_printable(text) if text is not None else unchanged)
            if export_mod is not None:
                _export_diff(result, export_mod, _mod_format(fmt), name, version, mod_id)
    except PvfFormatError as exc:
        _fail(
            ServiceError(
                exc.code,
                str(exc),
                hint="Check that both files are PVF archives.",
                errorZh=f"读不了存档：{exc.message}。请确认两个文件都是 PVF 存档。",
            )
        )
    except ServiceError as exc:
        _fail(exc)


def _export_diff(result: Any, out_dir: Path, fmt: Any, name: str, version: str, mod_id: str | None) -> None:
    from moddesk.pvf.transfer.sources import ExportItem
    from moddesk.pvf.transfer.writers import build_output, publish_package

    if fmt == "115CN-mod" and not mod_id:
        raise _needs_mod_id()
    items = []
    for change in result.changes:
        old = result.a.content(change.path) if change.status != "added" else None
        new = result.b.content(change.path) if change.status != "removed" else old
        items.append(ExportItem(change.path, change.status == "removed", new, old, True))
    output = build_output(items, fmt, name=name, version=version, mod_id=mod_id)
    final = _final_path(out_dir, fmt, name, version)
    count = publish_package(fmt, final, output.entries)
    for skipped in output.skipped_deletes:
        console.print(
            f"[yellow]{say('不在 MOD 中', 'not in the MOD')}[/yellow] {escape(skipped['path'])}: {skipped['reason']}"
        )
    where = escape(str(final))
    console.print(say(f"已写出 {where}（{count} 个文件）", f"wrote {where} ({count} files)"))


def table_command(
    kind: Annotated[
        str, typer.Argument(help="equipment 装备、stackable 道具或 skill 技能 equipment, stackable or skill")
    ],
    archive: Annotated[Path, typer.Argument(exists=True, dir_okay=False, help="存档文件 archive file")],
    out: Annotated[
        Path | None,
        typer.Option("--out", help="要写的文件（默认打印 CSV/JSON）file to write (default: print CSV/JSON)"),
    ] = None,
    fmt: Annotated[str, typer.Option("--format", help="csv、json 或 xlsx（csv, json or xlsx）")] = "csv",
    fields: Annotated[
        list[str] | None, typer.Option("--field", help="作为一列加入的段 a section to add as a column")
    ] = None,
    lists: Annotated[
        list[str] | None, typer.Option("--list", help="改读这个 .lst read this .lst instead")
    ] = None,
) -> None:
    """ARCHIVE 的物品表：该类列表中每个条目的 id、路径、名称和字段。An item table of ARCHIVE: id, path, name and fields of every entry of the kind's lists."""
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
                raise ServiceError(
                    "INVALID_ARGUMENT",
                    "xlsx needs --out FILE",
                    hint="Pass --out items.xlsx.",
                    errorZh="xlsx 需要 --out 文件，如 --out items.xlsx。",
                )
            typer.echo(_printable(data.decode("utf-8-sig")), nl=False)
        else:
            atomic_write_bytes(out, data)
            rows_written, where = len(table), escape(str(out))
            err_console.print(
                say(f"已把 {rows_written} 行写到 {where}", f"wrote {rows_written} rows to {where}")
            )
    except ServiceError as exc:
        _fail(exc)


def register(app: typer.Typer) -> None:
    app.add_typer(mod_app, name="mod")
    app.command("diff")(diff_command)
    app.command("table")(table_command)
