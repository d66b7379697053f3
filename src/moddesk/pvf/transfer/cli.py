"""``moddesk pvf import`` and ``moddesk pvf export``: the same plans as MCP, with tables and progress."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from moddesk.kit.errors import ServiceError, person_message
from moddesk.kit.lang import say

console = Console()


def _fail(error: ServiceError) -> None:
    console.print(
        f"[red]{error.code}[/red]：{escape(person_message(error.code, error.message, error.details.get('errorZh')))}"
    )
    if error.hint:
        console.print(f"[dim]{error.hint}[/dim]")
    for key in ("conflicts", "items", "warnings", "skippedDeletes"):
        for entry in error.details.get(key, [])[:20]:
            console.print(f"  {entry}")
    raise typer.Exit(1)


def _open(archive: Path) -> tuple[Any, str, int]:
    from rich.progress import Progress, SpinnerColumn, TextColumn

    from moddesk.pvf.service import PvfService

    service = PvfService()
    with Progress(
        SpinnerColumn(),
        TextColumn(say("打开", "opening") + " {task.description}"),
        console=console,
        transient=True,
    ) as bar:
        bar.add_task(str(archive))
        status = service.tasks.wait(service.open(str(archive.resolve()), service.epoch)["taskId"])
    if status["state"] != "succeeded":
        error = status["error"]
        raise ServiceError(error["error"], error["message"], error.get("hint"))
    return service, status["result"]["workspaceId"], status["result"]["revision"]


def _save(service: Any, ws: str, revision: int) -> None:
    status = service.tasks.wait(service.save(ws, revision)["taskId"])
    if status["state"] != "succeeded":
        error = status["error"]
        raise ServiceError(error["error"], error["message"], error.get("hint"))


def _follow(exports: Any, kind: str, work: Any) -> dict[str, Any]:
    """Run one export step as a task with a progress bar; Ctrl-C cancels it (nothing is published)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    tasks = exports.service.tasks
    task_id = exports.start_task(kind, work)
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True) as bar:
        row = bar.add_task(kind, total=None)
        try:
            while True:
                status = tasks.wait(task_id, 0.2)
                progress = status["progress"]
                bar.update(
                    row,
                    completed=progress["done"],
                    total=progress["total"],
                    description=progress["message"] or kind,
                )
                if status["state"] in ("succeeded", "failed", "cancelled"):
                    break
        except KeyboardInterrupt:
            console.print(
                "[yellow]"
                + say(
                    "正在取消：导出会在下一批文件处停下",
                    "cancelling: the export stops at its next batch of files",
                )
                + "[/yellow]"
            )
            exports.cancel_task(task_id)
            status = tasks.wait(task_id)
    if status["state"] == "succeeded":
        return dict(status["result"])
    error = status["error"]
    raise ServiceError(error["error"], error["message"], error.get("hint"))


def import_command(
    archive: Path = typer.Argument(
        ..., exists=True, dir_okay=False, help="要导入到的 Script.pvf the Script.pvf to import into"
    ),
    sources: list[Path] = typer.Argument(
        ..., help="本地文件或文件夹（文件夹保留自己的名字）local files or folders (a folder keeps its name)"
    ),
    to: str = typer.Option(
        "", "--to", help='导入到的存档文件夹（"" = 根目录）archive folder to import into ("" = root)'
    ),
    mode: str = typer.Option(
        "text",
        "--mode",
        help="text（UTF-8 脚本/文本）或 raw（字节原样）text (UTF-8 scripts/text) or raw (bytes as they are)",
    ),
    overwrite: bool = typer.Option(
        False, "--overwrite", help="允许替换已有文件 allow replacing existing entries"
    ),
    yes: bool = typer.Option(False, "--yes", help="保存前不再询问 do not ask before saving"),
) -> None:
    """把文件导入 ARCHIVE：先显示方案，再应用并保存（保留备份）。Import files into ARCHIVE: show the plan, then apply it and save (a backup is kept)."""
    from moddesk.pvf.transfer.imports import ImportService

    service = None
    try:
        service, ws, revision = _open(archive)
        imports = ImportService(service)
        if mode not in ("text", "raw"):
            raise ServiceError(
                "INVALID_ARGUMENT",
                f"--mode {mode!r}",
                hint="Use text or raw.",
                errorZh="--mode 只能是 text 或 raw。",
            )
        plan = imports.prepare(
            ws, [str(s.resolve()) for s in sources], to, "raw" if mode == "raw" else "text", scope="cli"
        )
        table = Table(
            say("操作", "action"),
            say("目标", "target"),
            say("类型", "type"),
            say("大小", "size"),
            say("来源", "source"),
        )
        items: list[dict[str, Any]] = []
        cursor = None
        while True:
            page = imports.preview(plan["planId"], cursor=cursor, limit=200)
            items.extend(page["items"])
            cursor = page["nextCursor"]
            if cursor is None:
                break
        for item in items:
            table.add_row(item["action"], item["target"], item["type"], str(item["size"]), item["source"])
        console.print(table)
        broken = [i for i in items if i.get("error")]
        if broken:  # checked before anything is applied: the archive stays savable
            for item in broken:
                console.print(f"[red]TEXT_INVALID[/red] {escape(item['target'])}: {escape(item['error'])}")
            count = len(broken)
            console.print(
                "[yellow]"
                + say(
                    f"{count} 个文件无法编译；请修好它们，或用 --mode raw 导入",
                    f"{count} files would not compile; fix them or import them with --mode raw",
                )
                + "[/yellow]"
            )
            raise typer.Exit(1)
        overwrites = [i["key"] for i in items if i["action"] == "overwrite"]
        if overwrites and not overwrite:
            count = len(overwrites)
            console.print(
                "[yellow]"
                + say(
                    f"{count} 项会覆盖已有文件；加 --overwrite 才允许",
                    f"{count} items would overwrite entries; pass --overwrite to allow",
                )
                + "[/yellow]"
            )
            raise typer.Exit(1)
        question = say(
            f"导入 {len(items)} 个文件并保存 {archive}？", f"import {len(items)} files and save {archive}?"
        )
        if not yes and not typer.confirm(question):
            raise typer.Exit(1)
        done = imports.apply(plan["planId"], revision, [i["key"] for i in items], overwrites, scope="cli")
        _save(service, ws, done["revision"])
        count = done["imported"]
        console.print(
            "[green]"
            + say(f"已导入 {count} 个文件并保存 {archive}", f"imported {count} files and saved {archive}")
            + "[/green]"
        )
    except ServiceError as error:
        _fail(error)
    finally:
        if service is not None:
            service.shutdown()


def export_command(
    archive: Path = typer.Argument(
        ..., exists=True, dir_okay=False, help="要导出的 Script.pvf the Script.pvf to export from"
    ),
    out: Path = typer.Option(
        ..., "--out", help="写入导出结果的已有文件夹 existing folder to write the export into"
    ),
    paths: list[str] = typer.Option(
        [],
        "--path",
        help='存档文件或文件夹（"" = 全部，可重复）archive file or folder ("" = all); repeatable',
    ),
    source: str = typer.Option(
        "selection",
        "--source",
        help="selection 所选、working 工作区（对比历史 HEAD）或 commit 提交 selection, working (vs history HEAD) "
        "or commit",
    ),
    commit: str | None = typer.Option(
        None, "--commit", help="--source commit 时的提交 id commit id for --source commit"
    ),
    fmt: str = typer.Option(
        "direct",
        "--format",
        help="direct 直接文件、110USextend 或 115CN-mod（direct, 110USextend or 115CN-mod）",
    ),
    name: str = typer.Option(
        "", "--name", help="输出文件夹名（direct）或 MOD 名 output folder (direct) or MOD name"
    ),
    version: str | None = typer.Option(
        None, "--version", help="MOD 版本（默认 1.0）MOD version (default 1.0)"
    ),
    mod_id: str | None = typer.Option(
        None, "--mod-id", help="稳定的 MOD id（115CN-mod）stable MOD id (115CN-mod)"
    ),
    deps: bool = typer.Option(
        False, "--deps", help="同时导出新列表条目指向的文件 also export files that new list entries name"
    ),
    yes: bool = typer.Option(False, "--yes", help="接受显示的警告 accept the warnings shown"),
) -> None:
    """把存档内容导出为文件或 MOD 包（从不覆盖已有目标）。Export archive content as files or as a MOD package (never overwrites an existing target)."""
    from moddesk.pvf.transfer.exports import ExportMode, ExportService
    from moddesk.pvf.transfer.sources import PERSON_EXPORT_LIMITS

    service = None
    try:
        service, ws, revision = _open(archive)
        exports = ExportService(service)
        mode: ExportMode = "direct" if fmt == "direct" else "mod"
        plan = _follow(
            exports,
            "export.prepare",
            lambda: exports.prepare(
                ws,
                revision,
                source,
                paths or [""],
                commit,
                mode,
                None if mode == "direct" else fmt,
                name,
                version,
                mod_id,
                deps,
                scope="cli",
                limits=PERSON_EXPORT_LIMITS,
            ),
        )
        preview = exports.preview(plan["planId"], limit=500)
        total, warned, skipped = preview["total"], len(preview["warnings"]), preview["skippedDeletesTotal"]
        console.print(
            say(
                f"{total} 个条目，{warned} 条警告，跳过 {skipped} 个删除",
                f"{total} entries, {warned} warnings, {skipped} skipped deletions",
            )
        )
        for warning in preview["warnings"]:
            console.print(
                f"  [yellow]{warning['warningId']}[/yellow] {warning['path']}: {warning['message']}"
            )
        acknowledged = [w["warningId"] for w in preview["warnings"]]
        if (
            acknowledged
            and not yes
            and not typer.confirm(say("仍然导出吗？", "export despite these warnings?"))
        ):
            raise typer.Exit(1)
        started = time.monotonic()
        done = _follow(
            exports,
            "export.execute",
            lambda: exports.execute(
                plan["planId"], str(out.resolve()), name or None, None, acknowledged, scope="cli"
            ),
        )
        files, mib, where = done["files"], done["bytes"] / 1048576, escape(done["outputPath"])
        seconds = time.monotonic() - started
        console.print(
            "[green]"
            + say(
                f"已把 {files} 个文件（{mib:.1f} MiB）写到 {where}，用时 {seconds:.1f} 秒",
                f"wrote {files} files ({mib:.1f} MiB) to {where} in {seconds:.1f} s",
            )
            + "[/green]"
        )
    except ServiceError as error:
        _fail(error)
    finally:
        if service is not None:
            service.shutdown()


def register(app: typer.Typer) -> None:
    """Mount ``moddesk pvf import`` and ``moddesk pvf export``."""
    app.command("import")(import_command)
    app.command("export")(export_command)
