"""``moddesk pvf …`` commands: serve, mcp settings, search, read, history (plus the archive commands)."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, Literal

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from moddesk.kit.clierrors import print_error
from moddesk.kit.errors import ServiceError
from moddesk.kit.links import print_link, print_unwrapped
from moddesk.pvf.toolsets import DEFAULT_TOOLSETS, TOOLSETS

app = typer.Typer(help="Dungeon & Fighter Script.pvf workbench.", no_args_is_help=True)
history_app = typer.Typer(
    help="Version history next to an archive (<archive>.moddesk/).", no_args_is_help=True
)
app.add_typer(history_app, name="history")
console = Console()
# the toolset names in help texts come from the registry (tests/pvf/test_cli.py compares them)
TOOLSETS_HELP = (
    f"{','.join(t for t in TOOLSETS if t != 'core')} or all; core is always on "
    f"(default: {','.join(DEFAULT_TOOLSETS)})"
)
err_console = Console(stderr=True)

# the archive commands (info, ls, cat, extract, pack, generate, verify) live with the formats,
# `docs …` with the annotations and `script …` with the script runtime; each mounts itself
for _module in (
    "moddesk.pvf.workbench.cli",
    "moddesk.pvf.annotations.cli",
    "moddesk.pvf.scripting.cli",
    "moddesk.pvf.transfer.cli",
    "moddesk.pvf.workflows.cli",
):
    if importlib.util.find_spec(_module) is not None:
        importlib.import_module(_module).register(app)

RegionOption = Annotated[
    str | None,
    typer.Option(
        "--region",
        help="classic text code page: tw, cn, kr, jp, utf8 (default: detected from stringtable.bin)",
    ),
]
ServerOption = Annotated[
    str | None,
    typer.Option(
        "--server",
        help="URL of the running `moddesk pvf serve` (the page or /mcp URL it printed); without ARCHIVE "
        "or --server the running serve is used",
    ),
]


def _fail(error: ServiceError, as_json: bool = False) -> None:
    """Chinese first, the hint, exit 2; with --json the error object on stdout too."""
    print_error(error, as_json=as_json)
    raise typer.Exit(2)


@contextmanager
def _errors(as_json: bool = False) -> Iterator[None]:
    try:
        yield
    except ServiceError as exc:
        _fail(exc, as_json)


@contextmanager
def _opened(archive: Path, region: str | None = None) -> Iterator[tuple[Any, str]]:
    """A service with ``archive`` opened in this process; yields (service, workspaceId)."""
    from moddesk.pvf.service import PvfService
    from moddesk.pvf.settings import index_cache_dir

    service = PvfService(index_wait=3600.0, index_cache=index_cache_dir())
    try:
        handle = service.open(str(archive.resolve()), service.epoch, region=region)
        status = service.tasks.wait(handle["taskId"], 3600)
        if status["state"] != "succeeded":
            error = status["error"]
            raise ServiceError(error["error"], error["message"], error.get("hint"))
        yield service, status["result"]["workspaceId"]
    finally:
        service.shutdown()


def _running_server() -> str | None:
    """The URL of this user's running serve (from its endpoint file), if one runs."""
    from moddesk.kit.local_service import read
    from moddesk.pvf.agent.serve import endpoint_path

    record = read(endpoint_path())
    return record.url if record is not None and record.hasMcp else None


def _no_archive() -> ServiceError:
    return ServiceError(
        "INVALID_ARGUMENT",
        "no ARCHIVE was given and no `moddesk pvf serve` is running",
        "give an archive file, or start `moddesk pvf serve ARCHIVE` and run the command again",
    )


def _remote_endpoint(url: str, record: Any) -> tuple[str, str]:
    """The MCP URL and token for ``--server URL``: any URL the running serve printed (page or MCP).

    The token comes from the serve's endpoint file (readable by this user only), and only when the
    URL names that same server: a token is never sent to another address.
    """
    from urllib.parse import urlsplit

    parts = urlsplit(url if "://" in url else f"http://{url}")
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ServiceError(
            "INVALID_ARGUMENT",
            f"--server {url!r} is not an http URL",
            "give the URL `moddesk pvf serve` printed, e.g. http://127.0.0.1:PORT/",
        )
    origin = f"{parts.scheme}://{parts.hostname}:{parts.port or 80}"
    if record is not None:
        served = urlsplit(record.url)
        if f"{served.scheme}://{served.hostname}:{served.port or 80}" == origin:
            return record.mcp_url, record.token
    raise ServiceError(
        "NOT_RUNNING",
        f"no running `moddesk pvf serve` of this user answers at {origin}",
        "start it with `moddesk pvf serve ARCHIVE`, or omit --server to use the running one",
        server=url,
    )


async def _call_remote(url: str, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    """Call a tool of the running server, filling workspaceId from its workspace info."""
    from moddesk.kit.local_service import http_client, read
    from moddesk.kit.mcp import result_payload
    from moddesk.pvf.agent.serve import endpoint_path

    mcp_url, token = _remote_endpoint(url, read(endpoint_path()))
    async with http_client(mcp_url, token) as client:
        info = await client.call_tool("pvf_workspace_info", {})
        workspace = result_payload(info).get("workspaceId")
        if workspace is None:
            raise ServiceError("NO_WORKSPACE", "the server has no archive open", hint="Open one there first.")
        result = await client.call_tool(tool, {"workspaceId": workspace, **args})
        payload = result_payload(result)
        if result.is_error:
            raise ServiceError(
                payload.get("error", "INTERNAL_ERROR"), payload.get("message", ""), payload.get("hint")
            )
        return payload


@app.command()
def serve(
    archive: Annotated[Path | None, typer.Argument(help="archive to open at start")] = None,
    port: Annotated[int | None, typer.Option(help="port on 127.0.0.1 (default: the saved setting)")] = None,
    open_page: Annotated[bool, typer.Option("--open", help="open the page in the browser")] = False,
    toolsets: Annotated[
        str | None,
        typer.Option(help=f"tool families for the model: {TOOLSETS_HELP}"),
    ] = None,
    region: RegionOption = None,
    root: Annotated[
        list[Path] | None,
        typer.Option(
            "--root",
            help="a folder agents may read from and write to (repeatable; remembered in the settings)",
        ),
    ] = None,
) -> None:
    """Run the workbench: the service, its MCP endpoint (Streamable HTTP) and the page on 127.0.0.1."""
    from moddesk.pvf.agent.serve import Workbench
    from moddesk.pvf.settings import load_settings, settings_path
    from moddesk.pvf.toolsets import parse_toolsets
    from moddesk.pvf.workbench.roots import load_added_roots, save_added_roots

    with _errors():
        settings = load_settings()
        if not settings.enabled:
            raise ServiceError(
                "MCP_DISABLED",
                "the MCP endpoint is disabled",
                hint="Enable it with `moddesk pvf mcp --enable`.",
            )
        chosen = settings.toolsets if toolsets is None else parse_toolsets(toolsets)
        remembered = load_added_roots(settings_path())
        added = [str(folder.expanduser().resolve()) for folder in root or []]
        bench = Workbench(
            port=settings.port if port is None else port, toolsets=chosen, roots=[*remembered, *added]
        )
        if added:
            save_added_roots(settings_path(), [*remembered, *added])

    def opening_then_banner() -> None:
        endpoint = bench.publish_endpoint()  # clients can find it while the archive opens
        if archive is not None:
            opened = bench.open_at_start(archive, region=region)
            console.print(
                f"已打开 opened {escape(opened['sourcePath'])}（{opened['fileCount']} 个文件 files, {opened['format']}）"
            )
        print_link(
            console,
            "MCP 端点（仅本机，用 Agent 的令牌）MCP endpoint (loopback only, the agent's bearer token):",
            bench.url,
        )
        console.print(
            f"Agent 的令牌与地址 agent token and url: {escape(str(endpoint))}（只有你能读 readable by you only）"
        )
        for granted in bench.service.access_roots().describe():
            console.print(
                f"Agent 可用的文件夹 agents may use: {escape(granted['path'])}（{escape(granted['label'])}）"
            )
        console.print(
            "连接客户端 Connect a client: `moddesk agents config <client> --system pvf`（stdio 桥接，不含密钥 no secret in it）"
        )
        link = bench.login_link()
        print_link(
            console,
            "工作台页面（一次性登录链接；`moddesk pvf open` 可再取一个）Workbench page for you (one-time login link):",
            link,
        )
        if open_page:
            import webbrowser

            webbrowser.open(link)
        console.print("按 Ctrl+C 停止服务。Ctrl+C stops the server.")

    with _errors():
        # serve first: a server restarted after a crash answers at once (the workspace info shows
        # the open task) while the archive opens; SIGINT/SIGTERM stop it cleanly at any moment
        bench.run(opening_then_banner)


@app.command()
def connect() -> None:
    """Stdio MCP bridge to the running `moddesk pvf serve` (for clients that only speak stdio)."""
    import anyio

    from moddesk.kit.local_service import bridge_stdio, require
    from moddesk.pvf.agent.serve import endpoint_path

    with _errors():
        record = require(endpoint_path(), "moddesk pvf serve")
    anyio.run(bridge_stdio, record.mcp_url, record.token)


@app.command("open")
def open_page_command(
    no_browser: Annotated[
        bool, typer.Option("--no-browser", help="only print the link, do not open the browser")
    ] = False,
) -> None:
    """Give yourself a fresh one-time login link to the running workbench page (and open it).

    The link is minted from the person key the running serve left in a file only your OS user
    can read; an agent that only speaks MCP never reads that file.
    """
    from moddesk.kit.person import require_person
    from moddesk.pvf.agent.serve import endpoint_path
    from moddesk.pvf.web.routes import PAGE_PATH

    with _errors():
        link = require_person(endpoint_path(), "pvf").login_link(PAGE_PATH)
    print_link(console, "一次性登录链接 One-time login link to the workbench page:", link)
    if not no_browser:
        import webbrowser

        webbrowser.open(link)


@app.command()
def mcp(
    enable: Annotated[
        bool | None, typer.Option("--enable/--disable", help="switch the MCP endpoint on or off")
    ] = None,
    port: Annotated[int | None, typer.Option(help="preferred port of `moddesk pvf serve`")] = None,
    toolsets: Annotated[
        str | None,
        typer.Option(help=f"tool families the model gets: {TOOLSETS_HELP}"),
    ] = None,
) -> None:
    """Show or change the persisted MCP settings (enabled, port, toolsets)."""
    from moddesk.pvf.settings import McpSettings, client_config, load_settings, save_settings
    from moddesk.pvf.toolsets import parse_toolsets

    with _errors():
        settings = load_settings()
        if enable is not None or port is not None or toolsets is not None:
            settings = McpSettings(
                settings.enabled if enable is None else enable,
                settings.port if port is None else port,
                settings.toolsets if toolsets is None else parse_toolsets(toolsets),
            )
            where = save_settings(settings)
            console.print(f"saved to {escape(str(where))}")
    state = "enabled" if settings.enabled else "disabled"
    console.print(f"MCP endpoint {state}, port {settings.port}, toolsets {','.join(settings.toolsets)}")
    if settings.enabled:
        print_unwrapped(console, client_config(f"http://127.0.0.1:{settings.port}/mcp"))


@app.command()
def search(
    archive: Annotated[Path | None, typer.Argument(help="archive file (omit with --server)")] = None,
    query: Annotated[str, typer.Option("--query", "-q", help="text, glob or regex")] = "",
    mode: Annotated[str, typer.Option(help="content | path | regex")] = "content",
    scope: Annotated[str, typer.Option(help="archive folder to search under")] = "",
    ext: Annotated[list[str] | None, typer.Option("--ext", help="only this extension (repeatable)")] = None,
    case_sensitive: Annotated[bool, typer.Option("--case-sensitive")] = False,
    limit: Annotated[int, typer.Option(help="hits per page")] = 20,
    pages: Annotated[int, typer.Option(help="how many pages to print")] = 1,
    as_json: Annotated[bool, typer.Option("--json", help="print the raw JSON pages")] = False,
    server: ServerOption = None,
    region: RegionOption = None,
) -> None:
    """Search archive paths or file text (on a file, or in the running server's workspace)."""
    import anyio

    if mode not in ("content", "path", "regex"):
        raise typer.BadParameter("mode is content, path or regex")
    if not query:
        raise typer.BadParameter("--query is required")
    args: dict[str, Any] = {
        "query": query,
        "mode": mode,
        "scope": scope,
        "extensions": list(ext or []),
        "caseSensitive": case_sensitive,
        "limit": limit,
    }
    results: list[dict[str, Any]] = []
    with _errors(as_json):
        server = server or (_running_server() if archive is None else None)
        if server is not None:
            cursor = None
            for _ in range(pages):
                page = anyio.run(_call_remote, server, "pvf_search", {**args, "cursor": cursor})
                results.append(page)
                cursor = page.get("nextCursor")
                if cursor is None:
                    break
        else:
            if archive is None:
                raise _no_archive()
            with _opened(archive, region) as (service, workspace):
                cursor = None
                for _ in range(pages):
                    page = service.search(
                        workspace, query, _mode(mode), scope, tuple(ext or ()), case_sensitive, cursor, limit
                    )
                    results.append(page)
                    cursor = page["nextCursor"]
                    if cursor is None:
                        break
    if as_json:
        console.print_json(json.dumps(results, ensure_ascii=False))
        return
    table = Table("path", "line", "text", show_edge=False)
    for page in results:
        for hit in page["hits"]:
            table.add_row(escape(hit["path"]), str(hit["line"] or ""), escape(hit["snippet"] or ""))
    console.print(table)
    last = results[-1] if results else {}
    more = " (more: raise --pages)" if last.get("nextCursor") else ""
    console.print(f"{sum(len(p['hits']) for p in results)} hits at revision {last.get('revision')}{more}")


def _mode(mode: str) -> Literal["content", "path", "regex"]:
    return "path" if mode == "path" else "regex" if mode == "regex" else "content"


@app.command()
def read(
    archive: Annotated[Path | None, typer.Argument(help="archive file (omit with --server)")] = None,
    path: Annotated[str, typer.Option("--path", "-p", help="archive path of the file")] = "",
    start: Annotated[int, typer.Option(help="first line (1-based)")] = 1,
    lines: Annotated[int, typer.Option(help="how many lines")] = 400,
    server: ServerOption = None,
    region: RegionOption = None,
) -> None:
    """Print an archive file's text (or a description of a binary file)."""
    import anyio

    if not path:
        raise typer.BadParameter("--path is required")
    with _errors():
        server = server or (_running_server() if archive is None else None)
        if server is not None:
            result = anyio.run(
                _call_remote, server, "pvf_read_file", {"path": path, "startLine": start, "lineCount": lines}
            )
        else:
            if archive is None:
                raise _no_archive()
            with _opened(archive, region) as (service, workspace):
                result = service.read_file(workspace, path, start, lines)
    for problem in result.get("warnings") or []:
        err_console.print(f"[yellow]warning[/yellow]: {escape(problem)}")
    if result["binary"]:
        console.print(f"{escape(result['path'])}: binary, {result['size']} bytes, sha256 {result['sha256']}")
        console.print(result["hexPreview"], markup=False)
        return
    from moddesk.pvf.workbench.cli import write_stdout

    write_stdout(result["text"] + "\n")
    if result["truncated"]:
        err_console.print(f"[lines {result['startLine']}-{result['endLine']} of {result['totalLines']}]")


@history_app.command("init")
def history_init(archive: Path) -> None:
    """Start a history for ARCHIVE: an immutable base copy and an empty log."""
    from moddesk.pvf.workbench.history import History

    with _errors():
        history = History.init(archive)
        console.print(f"history created in {escape(str(history.repo))}")
        history.close()


@history_app.command("log")
def history_log(archive: Path, limit: Annotated[int, typer.Option()] = 50) -> None:
    """List the commits, newest first."""
    with _errors(), _opened(archive) as (service, _workspace):
        log = service.history_log(limit)
    table = Table("commit", "when", "paths", "message", show_edge=False)
    import datetime

    for commit in log["commits"]:
        when = datetime.datetime.fromtimestamp(commit["createdAt"]).strftime("%Y-%m-%d %H:%M:%S")
        table.add_row(commit["id"], when, str(commit["changedPaths"]), escape(commit["message"]))
    console.print(table)


@history_app.command("diff")
def history_diff(
    archive: Path,
    old: Annotated[str | None, typer.Argument(help="older commit (default: the base)")] = None,
    new: Annotated[str | None, typer.Argument(help="newer commit (default: head)")] = None,
) -> None:
    """Paths that differ between two commits."""
    with _errors(), _opened(archive) as (service, _workspace):
        diff = service.history_diff(old, new)
    for change in diff["changes"]:
        console.print(f"{change['kind']:9} {escape(change['path'])}")
    console.print(f"{len(diff['changes'])} paths differ ({diff['from'] or 'base'} → {diff['to'] or 'base'})")


@history_app.command("checkout")
def history_checkout(
    archive: Path,
    commit: str,
    output: Annotated[Path, typer.Option("--output", "-o", help="new archive file to write")],
) -> None:
    """Rebuild the content of COMMIT and write it to a new archive file (ARCHIVE stays as it is)."""
    with _errors(), _opened(archive) as (service, workspace):
        info = service.info()
        service.history_checkout(workspace, info["revision"], commit)
        handle = service.save_as(workspace, service.info()["revision"], str(output.resolve()))
        status = service.tasks.wait(handle["taskId"], 3600)
        if status["state"] != "succeeded":
            error = status["error"]
            raise ServiceError(error["error"], error["message"], error.get("hint"))
    console.print(f"wrote {escape(str(output))} as of commit {commit}")


@history_app.command("undo")
def history_undo(archive: Path, commit: str) -> None:
    """Commit the reverse of COMMIT's change-set and save ARCHIVE."""
    with _errors(), _opened(archive) as (service, workspace):
        result = service.history_undo(workspace, service.info()["revision"], commit)
        handle = service.save(workspace, result["revision"])
        status = service.tasks.wait(handle["taskId"], 3600)
        if status["state"] != "succeeded":
            error = status["error"]
            raise ServiceError(error["error"], error["message"], error.get("hint"))
    undo = result["commit"]
    console.print(f"undo commit {undo['id'] if undo else '(nothing to undo)'}; {escape(str(archive))} saved")
