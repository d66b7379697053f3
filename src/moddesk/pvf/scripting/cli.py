"""``moddesk pvf script …``: run, check and read the help of ``.pvf.js`` scripts from the terminal."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.syntax import Syntax

from moddesk.kit.clihelp import BilingualTyper
from moddesk.kit.errors import ServiceError, person_message
from moddesk.kit.lang import language, say

if TYPE_CHECKING:  # loaded by the commands that use it, not for `--help`
    from moddesk.pvf.scripting.service import ScriptService

console = Console()
script_app = BilingualTyper(
    help="运行 .pvf.js 脚本：预览改动、应用并保存。Run .pvf.js scripts: preview their changes, apply and save.",
    no_args_is_help=True,
)


def _fail(error: ServiceError) -> None:
    console.print(
        f"[red]{error.code}[/red]：{escape(person_message(error.code, error.message, error.details.get('errorZh')))}"
    )
    if error.hint:
        console.print(f"[dim]{error.hint}[/dim]")
    for diagnostic in error.details.get("diagnostics", []):
        line, column = diagnostic.get("line"), diagnostic.get("column")
        where = say(f"第 {line} 行第 {column} 列", f"line {line}, column {column}") if line else ""
        console.print(f"  {diagnostic.get('kind')}: {diagnostic.get('message')} {where}")
    raise typer.Exit(1)


def _wait(scripts: ScriptService, task_id: str, label: str) -> dict[str, Any]:
    tasks = scripts.service.tasks
    columns = (
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        TextColumn("{task.fields[note]}"),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=console, transient=True) as progress:
        bar = progress.add_task(label, total=None, note="")
        while True:
            status = tasks.wait(task_id, 0.2)
            done, total = status["progress"]["done"], status["progress"]["total"]
            progress.update(
                bar, completed=done, total=total or None, note=status["progress"]["message"] or ""
            )
            if status["state"] in ("succeeded", "failed", "cancelled"):
                return status


def _print_logs(scripts: ScriptService, task_id: str) -> None:
    page = scripts.status(task_id, log_limit=500)
    while True:
        for line in page["logs"]:
            console.print(line, markup=False, highlight=False)
        if not page["nextLogCursor"] or not page["logs"]:
            return
        page = scripts.status(task_id, log_cursor=page["nextLogCursor"], log_limit=500)


@script_app.command("run")
def run_command(
    archive: Path = typer.Argument(
        ..., exists=True, dir_okay=False, help="要处理的 Script.pvf the Script.pvf to work on"
    ),
    script: Path = typer.Argument(
        ..., exists=True, dir_okay=False, help="要运行的 .pvf.js 文件 the .pvf.js file to run"
    ),
    apply: bool = typer.Option(
        False,
        "--apply",
        help="应用全部改动并保存存档（保留备份）apply every change and save the archive (a backup is kept)",
    ),
    diff: bool = typer.Option(
        True, "--diff/--no-diff", help="显示每个改动的统一差异 show the unified diff of each change"
    ),
    yes: bool = typer.Option(False, "--yes", help="保存前不再询问 do not ask before saving"),
) -> None:
    """在 ARCHIVE 上运行 SCRIPT：打印日志和将要做的改动；--apply 保存它们。Run SCRIPT on ARCHIVE: print its logs and the changes it would make; --apply saves them."""
    from moddesk.pvf.scripting.service import ScriptService
    from moddesk.pvf.service import PvfService

    service = PvfService()
    scripts = ScriptService(service)
    try:
        opened = _wait(
            scripts, service.open(str(archive.resolve()), service.epoch)["taskId"], say("打开", "opening")
        )
        if opened["state"] != "succeeded":
            raise ServiceError(
                opened["error"]["error"], opened["error"]["message"], opened["error"].get("hint")
            )
        ws, rev = opened["result"]["workspaceId"], opened["result"]["revision"]
        started = scripts.run(ws, rev, script.read_text(encoding="utf-8"), label=script.name, scope="cli")
        status = _wait(scripts, started["taskId"], say(f"运行 {script.name}", f"running {script.name}"))
        _print_logs(scripts, started["taskId"])
        if status["state"] != "succeeded":
            error = status["error"]
            raise ServiceError(
                error["error"],
                error["message"],
                error.get("hint"),
                **{k: v for k, v in error.items() if k not in ("ok", "error", "message", "hint")},
            )
        plan_id = status["result"]["planId"]
        if plan_id is None:
            console.print(
                f"[green]{say('没有改动', 'no changes')}[/green] "
                + say("（只查询的运行没有可应用的内容）", "(a query-only run leaves nothing to apply)")
            )
            return
        keys = _show_plan(scripts, plan_id, diff)
        if not apply:
            console.print(
                f"[yellow]{say('没有写入任何内容', 'nothing was written')}[/yellow]; "
                + say("加 --apply 再运行一次即可应用并保存", "run again with --apply to apply and save")
            )
            return
        question = say(
            f"应用 {len(keys)} 个改动并保存 {archive}？", f"apply {len(keys)} changes and save {archive}?"
        )
        if not yes and not typer.confirm(question):
            raise typer.Exit(1)
        applied = scripts.apply(plan_id, rev, keys, scope="cli", caller="cli")
        saved = _wait(scripts, service.save(ws, applied["revision"])["taskId"], say("保存", "saving"))
        if saved["state"] != "succeeded":
            raise ServiceError(saved["error"]["error"], saved["error"]["message"], saved["error"].get("hint"))
        done = applied["applied"]
        console.print(
            f"[green]{say(f'已应用 {done} 个并保存 {archive}', f'applied {done} and saved {archive}')}[/green]"
        )
    except ServiceError as error:
        _fail(error)
    finally:
        service.shutdown()


def _show_plan(scripts: ScriptService, plan_id: str, show_diff: bool) -> list[str]:
    keys: list[str] = []
    cursor = None
    while True:
        page = scripts.preview(plan_id, cursor=cursor, limit=100)
        for item in page["items"]:
            keys.append(item["changeKey"])
            console.print(f"[bold]{item['kind']}[/bold] {item['path']}  [dim]{item['changeKey']}[/dim]")
            for warning in item["warnings"]:
                console.print(f"  [yellow]{say('警告', 'warning')}:[/yellow] {warning}")
            if show_diff and item["diff"]:
                console.print(Syntax(item["diff"], "diff", theme="ansi_dark", background_color="default"))
        cursor = page["nextCursor"]
        if cursor is None:
            total = page["total"]
            console.print(f"{say(f'共 {total} 个改动', f'{total} changes')}: {page['counts']}")
            return keys


@script_app.command("check")
def check_command(
    script: Path = typer.Argument(..., exists=True, dir_okay=False, help=".pvf.js 文件 the .pvf.js file"),
) -> None:
    """检查 .pvf.js 文件的语法（不运行）。Check the syntax of a .pvf.js file (nothing runs)."""
    from moddesk.pvf.scripting.runtime import validate_source

    diagnostics = validate_source(script.read_text(encoding="utf-8"))
    if not diagnostics:
        console.print(f"[green]{script}: {say('语法正确', 'syntax ok')}[/green]")
        return
    for d in diagnostics:
        console.print(f"{script}:{d['line']}:{d['column']}: {d['message']}")
    raise typer.Exit(1)


@script_app.command("help")
def help_command(
    topic: str = typer.Argument("", help="主题；不给则列出全部主题 a topic; empty lists them"),
) -> None:
    """显示脚本 API 文档（与 pvf_script_help 相同的主题；MODDESK_LANG=en 时为英文）。Show the script API documentation (the same topics as pvf_script_help)."""
    from moddesk.pvf.scripting.help import topic as read_topic
    from moddesk.pvf.scripting.helpzh import topic_zh

    try:
        found = read_topic(topic or None) if language() == "en" else topic_zh(topic or None)
    except ServiceError as error:
        _fail(error)
        return
    if "topics" in found:
        # the list carries both summaries (Chinese first); a topic's text is in one language
        english = {t["name"]: t["summary"] for t in read_topic(None)["topics"]}
        for entry in found["topics"]:
            summary = entry["summary"]
            if summary != english[entry["name"]]:
                summary = say(summary, english[entry["name"]])
            console.print(f"[bold]{entry['name']}[/bold]  {escape(summary)}")
        return
    console.print(Syntax(str(found["text"]), "typescript", theme="ansi_dark", background_color="default"))


def register(app: typer.Typer) -> None:
    """Mount ``moddesk pvf script …``."""
    app.add_typer(script_app, name="script")
