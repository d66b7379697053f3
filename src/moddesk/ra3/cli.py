"""`moddesk ra3 …` commands: watch (live indexer), mcp (stdio server), enable / disable (agent setup)."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from moddesk.kit.errors import ServiceError

app = typer.Typer(help="SAGE (Red Alert 3, C&C3) mod XML index.", no_args_is_help=True)
console = Console()
err_console = Console(stderr=True)


def _fail(exc: ServiceError) -> typer.Exit:
    err_console.print(f"[red]error[/red] {exc.code}: {exc.message}")
    if exc.hint:
        err_console.print(f"hint: {exc.hint}")
    return typer.Exit(2)


@app.command()
def watch(
    projects: Annotated[list[Path], typer.Argument(help="Project folders (the ones holding Data/Mod.xml)")],
    port: Annotated[int, typer.Option(help="Port on 127.0.0.1 (0 picks a free one)")] = 0,
    quiet: Annotated[
        float, typer.Option(help="Seconds of quiet after a final index before a snapshot")
    ] = 5.0,
    snapshot: Annotated[bool, typer.Option(help="Write quiet-period snapshots")] = True,
    schema: Annotated[Path | None, typer.Option(help="Schema root (CnC3Types.xsd) to use")] = None,
    sdk: Annotated[
        Path | None, typer.Option(help="SDK root (default: moddesk-ra3.toml, else found above)")
    ] = None,
    entry: Annotated[
        list[Path] | None, typer.Option("--entry", help="Entry document (repeatable; one project only)")
    ] = None,
    data_path: Annotated[
        list[Path] | None, typer.Option("--data-path", help="Extra DATA: search root")
    ] = None,
    replace_snapshot: Annotated[
        bool, typer.Option("--replace-snapshot", help="Replace a bigger snapshot built with other settings")
    ] = False,
) -> None:
    """Index projects, keep the index live while files change, and serve it to MCP servers."""
    from moddesk.ra3.agent.watch import run_watch

    try:
        run_watch(
            projects,
            console=console,
            port=port,
            quiet_seconds=quiet,
            snapshots=snapshot,
            schema=schema,
            sdk=sdk,
            entries=entry,
            data_paths=data_path,
            replace_snapshot=replace_snapshot,
        )
    except ServiceError as exc:
        raise _fail(exc) from exc


@app.command()
def mcp(
    project: Annotated[Path, typer.Option("--project", help="The project this server answers about")],
    port: Annotated[
        int | None,
        typer.Option(help="Serve Streamable HTTP on 127.0.0.1:PORT (0 = any free port) instead of stdio"),
    ] = None,
) -> None:
    """Run the MCP server for one project: stdio (launched by an AI client), or Streamable HTTP with --port."""
    from moddesk.ra3.agent.mcp import serve, serve_streamable_http

    if port is None:
        serve(project)
        return

    def announce(url: str, endpoint: Path) -> None:
        console.print(f"ra3 MCP（Streamable HTTP）：{url}", highlight=False)
        console.print(
            f"持有者令牌（bearer token）与地址写在 {endpoint}（仅本人可读）/ url and bearer token: {endpoint}",
            highlight=False,
            soft_wrap=True,
        )

    try:
        serve_streamable_http(project, port, announce)
    except ServiceError as exc:
        raise _fail(exc) from exc


@app.command()
def lsp(
    project: Annotated[
        Path | None, typer.Option("--project", help="Project folder (default: from the editor's workspace)")
    ] = None,
    schema: Annotated[Path | None, typer.Option(help="Schema root (CnC3Types.xsd) to use")] = None,
    sdk: Annotated[
        Path | None, typer.Option("--sdk", help="SDK root (default: project file, then detection)")
    ] = None,
    entry: Annotated[
        list[Path] | None, typer.Option("--entry", help="Entry document (repeatable), as for `watch`")
    ] = None,
    data_path: Annotated[
        list[Path] | None, typer.Option("--data-path", help="Extra DATA: search root")
    ] = None,
    publish_live: Annotated[
        bool, typer.Option("--publish-live/--no-publish-live", help="Serve `ra3 mcp` when no watch runs")
    ] = True,
) -> None:
    """Run the language server over stdio (definition, references, diagnostics, hover, completion, rename)."""
    from moddesk.ra3.lsp.server import ProjectOptions, serve

    serve(project, ProjectOptions(schema, sdk, entry or None, data_path or None), publish_live)


@app.command()
def enable(
    project: Annotated[Path, typer.Argument(help="The mod project folder")],
    client: Annotated[
        list[str] | None,
        typer.Option("--client", help="claude-desktop, claude-code, cursor, codex, vscode (repeatable)"),
    ] = None,
    skill: Annotated[bool, typer.Option(help="Also install the ra3-mod-xml Agent Skill")] = True,
    skill_dir: Annotated[
        list[Path] | None, typer.Option("--skill-dir", help="Install the skill here instead of the default")
    ] = None,
    scope: Annotated[
        str | None, typer.Option(help="user or project config (default: each client's usual one)")
    ] = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Write without asking")] = False,
    editor: Annotated[
        list[str] | None,
        typer.Option(
            "--editor", help="vscode, neovim, helix: configure the editor's LSP client (repeatable)"
        ),
    ] = None,
) -> None:
    """One-step setup: stable launcher, MCP client configs (with consent) and the Agent Skill.

    With --editor (and no --client) only the editors' language-server configs are written.
    """
    from moddesk.ra3.agent.setup import run_enable

    if editor:
        from moddesk.ra3.lsp.editors import run_enable_editors

        try:
            run_enable_editors(project, editor, yes=yes, console=console)
        except ServiceError as exc:
            raise _fail(exc) from exc
        if not client:
            return

    if scope not in (None, "user", "project"):
        raise _fail(ServiceError("INVALID_ARGUMENT", f"--scope must be user or project, not {scope!r}"))
    try:
        run_enable(
            project,
            clients=client or [],
            skill=skill,
            skill_dirs=skill_dir or [],
            yes=yes,
            console=console,
            scope="user" if scope == "user" else "project" if scope == "project" else None,
        )
    except ServiceError as exc:
        raise _fail(exc) from exc


@app.command()
def disable(
    project: Annotated[Path | None, typer.Argument(help="Only this project's entries (default: all)")] = None,
    client: Annotated[
        list[str] | None, typer.Option("--client", help="Only these clients (repeatable)")
    ] = None,
    skill: Annotated[bool, typer.Option(help="Also uninstall the Agent Skill")] = True,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Write without asking")] = False,
) -> None:
    """Reverse `enable`: remove the MCP config entries and the installed skill."""
    from moddesk.ra3.agent.setup import run_disable

    try:
        run_disable(project, clients=client or [], skill=skill, yes=yes, console=console)
    except ServiceError as exc:
        raise _fail(exc) from exc


def _register_index_commands() -> None:
    """`index` and `query` come from the index core's CLI module when it is installed."""
    if importlib.util.find_spec("moddesk.ra3.index_cli") is None:
        return
    module = importlib.import_module("moddesk.ra3.index_cli")
    module.register(app)


_register_index_commands()

if __name__ == "__main__":  # pragma: no cover - `python -m moddesk.ra3.cli`
    sys.exit(app())
