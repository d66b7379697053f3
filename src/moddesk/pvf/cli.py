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
from moddesk.kit.clihelp import BilingualTyper
from moddesk.kit.errors import ServiceError
from moddesk.kit.lang import say
from moddesk.kit.links import print_link, print_unwrapped
from moddesk.pvf.toolsets import DEFAULT_TOOLSETS, TOOLSETS

#: The group's one-line help (the root's GROUPS line repeats it; tests/test_root_cli.py compares them).
PVF_HELP = "地下城与勇士 Script.pvf 工作台。Dungeon & Fighter Script.pvf workbench."
app = BilingualTyper(help=PVF_HELP, no_args_is_help=True)
history_app = BilingualTyper(
    help="存档旁的版本历史（<archive>.moddesk/）。Version history next to an archive (<archive>.moddesk/).",
    no_args_is_help=True,
)
app.add_typer(history_app, name="history")
console = Console()
# the toolset names in help texts come from the registry (tests/pvf/test_cli.py compares them)
_CHOSEN = ",".join(t for t in TOOLSETS if t != "core")
_DEFAULTS = ",".join(DEFAULT_TOOLSETS)


def _toolsets_help(zh: str, en: str) -> str:
    return (
        f"{zh}：{_CHOSEN} 或 all，core 始终开启（默认 {_DEFAULTS}）。"
        f"{en}: {_CHOSEN} or all; core is always on (default: {_DEFAULTS})"
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
        help="经典格式文本的代码页：tw、cn、kr、jp、utf8（默认按 stringtable.bin 判断）"
        "classic text code page: tw, cn, kr, jp, utf8 (default: detected from stringtable.bin)",
    ),
]
ServerOption = Annotated[
    str | None,
    typer.Option(
        "--server",
        help="正在运行的 `moddesk pvf serve` 的地址（它打印的页面或 /mcp 地址）；不给 ARCHIVE 也不给 --server "
        "时使用正在运行的服务。URL of the running `moddesk pvf serve` (the page or /mcp URL it printed); "
        "without ARCHIVE or --server the running serve is used",
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
        errorZh="没有给出 ARCHIVE，也没有正在运行的 `moddesk pvf serve`。",
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
    archive: Annotated[Path | None, typer.Argument(help="启动时打开的存档 archive to open at start")] = None,
    port: Annotated[
        int | None,
        typer.Option(
            help="127.0.0.1 上的端口（默认用已保存的设置）port on 127.0.0.1 (default: the saved setting)"
        ),
    ] = None,
    open_page: Annotated[
        bool, typer.Option("--open", help="在浏览器中打开页面 open the page in the browser")
    ] = False,
    toolsets: Annotated[
        str | None,
        typer.Option(help=_toolsets_help("给模型的工具组", "tool families for the model")),
    ] = None,
    region: RegionOption = None,
    root: Annotated[
        list[Path] | None,
        typer.Option(
            "--root",
            help="Agent 可读写的文件夹（可重复；记入设置）a folder agents may read from and write to "
            "(repeatable; remembered in the settings)",
        ),
    ] = None,
) -> None:
    """运行工作台：服务、MCP 端点（Streamable HTTP）和页面，都在 127.0.0.1 上。Run the workbench: the service, its MCP endpoint (Streamable HTTP) and the page on 127.0.0.1."""
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
                errorZh="MCP 端点已关闭。用 `moddesk pvf mcp --enable` 打开。",
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
            where, count, fmt = escape(opened["sourcePath"]), opened["fileCount"], opened["format"]
            console.print(
                say(f"已打开 {where}（{count} 个文件，{fmt}）", f"opened {where} ({count} files, {fmt})")
            )
        print_link(
            console,
            say(
                "MCP 端点（仅本机，用 Agent 的令牌）",
                "MCP endpoint (loopback only, the agent's bearer token):",
            ),
            bench.url,
        )
        path = escape(str(endpoint))
        console.print(
            say(
                f"Agent 的令牌与地址：{path}（只有你能读）",
                f"agent token and url: {path} (readable by you only)",
            )
        )
        for granted in bench.service.access_roots().describe():
            folder, label = escape(granted["path"]), escape(granted["label"])
            console.print(
                say(f"Agent 可用的文件夹：{folder}（{label}）", f"agents may use: {folder} ({label})")
            )
        config = "`moddesk agents config <client> --system pvf`"
        console.print(
            say(
                f"连接客户端：{config}（stdio 桥接，不含密钥）",
                f"Connect a client: {config} (a stdio bridge, no secret in it)",
            )
        )
        link = bench.login_link()
        print_link(
            console,
            say(
                "工作台页面（一次性登录链接；`moddesk pvf open` 可再取一个）",
                "Workbench page for you (one-time login link):",
            ),
            link,
        )
        if open_page:
            import webbrowser

            webbrowser.open(link)
        console.print(say("按 Ctrl+C 停止服务。", "Ctrl+C stops the server."))

    with _errors():
        # serve first: a server restarted after a crash answers at once (the workspace info shows
        # the open task) while the archive opens; SIGINT/SIGTERM stop it cleanly at any moment
        bench.run(opening_then_banner)


@app.command()
def connect() -> None:
    """到正在运行的 `moddesk pvf serve` 的 stdio MCP 桥（给只支持 stdio 的客户端）。Stdio MCP bridge to the running `moddesk pvf serve` (for clients that only speak stdio)."""
    import anyio

    from moddesk.kit.local_service import bridge_stdio, require
    from moddesk.pvf.agent.serve import endpoint_path

    with _errors():
        record = require(endpoint_path(), "moddesk pvf serve")
    anyio.run(bridge_stdio, record.mcp_url, record.token)


@app.command("open")
def open_page_command(
    no_browser: Annotated[
        bool,
        typer.Option(
            "--no-browser", help="只打印链接，不打开浏览器 only print the link, do not open the browser"
        ),
    ] = False,
) -> None:
    """给自己取一个新的一次性登录链接，进入正在运行的工作台页面（并打开它）。Give yourself a fresh one-time login link to the running workbench page (and open it).

    链接由正在运行的服务留下的个人密钥生成，该文件只有你的系统用户能读；只会说 MCP 的 Agent 读不到它。
    The link is minted from the person key the running serve left in a file only your OS user
    can read; an agent that only speaks MCP never reads that file.
    """
    from moddesk.kit.person import require_person
    from moddesk.pvf.agent.serve import endpoint_path
    from moddesk.pvf.web.routes import PAGE_PATH

    with _errors():
        link = require_person(endpoint_path(), "pvf").login_link(PAGE_PATH)
    print_link(console, say("一次性登录链接", "One-time login link to the workbench page:"), link)
    if not no_browser:
        import webbrowser

        webbrowser.open(link)


@app.command()
def mcp(
    enable: Annotated[
        bool | None,
        typer.Option("--enable/--disable", help="打开或关闭 MCP 端点 switch the MCP endpoint on or off"),
    ] = None,
    port: Annotated[
        int | None, typer.Option(help="`moddesk pvf serve` 的首选端口 preferred port of `moddesk pvf serve`")
    ] = None,
    toolsets: Annotated[
        str | None,
        typer.Option(help=_toolsets_help("模型可用的工具组", "tool families the model gets")),
    ] = None,
) -> None:
    """查看或修改保存的 MCP 设置（开关、端口、工具组）。Show or change the persisted MCP settings (enabled, port, toolsets)."""
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
            console.print(say(f"已保存到 {escape(str(where))}", f"saved to {escape(str(where))}"))
    state_zh, state = ("已开启", "enabled") if settings.enabled else ("已关闭", "disabled")
    sets = ",".join(settings.toolsets)
    console.print(
        say(
            f"MCP 端点{state_zh}，端口 {settings.port}，工具组 {sets}",
            f"MCP endpoint {state}, port {settings.port}, toolsets {sets}",
        )
    )
    if settings.enabled:
        print_unwrapped(console, client_config(f"http://127.0.0.1:{settings.port}/mcp"))


@app.command()
def search(
    archive: Annotated[
        Path | None, typer.Argument(help="存档文件（用 --server 时省略）archive file (omit with --server)")
    ] = None,
    query: Annotated[str, typer.Option("--query", "-q", help="文本、通配符或正则 text, glob or regex")] = "",
    mode: Annotated[
        str, typer.Option(help="content 内容 | path 路径 | regex 正则（content | path | regex）")
    ] = "content",
    scope: Annotated[str, typer.Option(help="只在这个存档文件夹下搜索 archive folder to search under")] = "",
    ext: Annotated[
        list[str] | None,
        typer.Option("--ext", help="只搜这个扩展名（可重复）only this extension (repeatable)"),
    ] = None,
    case_sensitive: Annotated[bool, typer.Option("--case-sensitive", help="区分大小写 match case")] = False,
    limit: Annotated[int, typer.Option(help="每页命中数 hits per page")] = 20,
    pages: Annotated[int, typer.Option(help="打印几页 how many pages to print")] = 1,
    as_json: Annotated[
        bool, typer.Option("--json", help="输出原始 JSON 页 print the raw JSON pages")
    ] = False,
    server: ServerOption = None,
    region: RegionOption = None,
) -> None:
    """搜索存档路径或文件文本（在文件上，或在正在运行的服务的工作区中）。Search archive paths or file text (on a file, or in the running server's workspace)."""
    import anyio

    if mode not in ("content", "path", "regex"):
        raise typer.BadParameter(say("mode 只能是 content、path 或 regex", "mode is content, path or regex"))
    if not query:
        raise typer.BadParameter(say("必须给出 --query", "--query is required"))
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
    table = Table(say("路径", "path"), say("行", "line"), say("文本", "text"), show_edge=False)
    for page in results:
        for hit in page["hits"]:
            table.add_row(escape(hit["path"]), str(hit["line"] or ""), escape(hit["snippet"] or ""))
    console.print(table)
    last = results[-1] if results else {}
    more = say("（还有更多：加大 --pages）", "(more: raise --pages)") if last.get("nextCursor") else ""
    hits, revision = sum(len(p["hits"]) for p in results), last.get("revision")
    console.print(
        say(f"修订 {revision} 中共 {hits} 处命中", f"{hits} hits at revision {revision}")
        + (f" {more}" if more else "")
    )


def _mode(mode: str) -> Literal["content", "path", "regex"]:
    return "path" if mode == "path" else "regex" if mode == "regex" else "content"


@app.command()
def read(
    archive: Annotated[
        Path | None, typer.Argument(help="存档文件（用 --server 时省略）archive file (omit with --server)")
    ] = None,
    path: Annotated[str, typer.Option("--path", "-p", help="文件的存档路径 archive path of the file")] = "",
    start: Annotated[int, typer.Option(help="起始行（从 1 开始）first line (1-based)")] = 1,
    lines: Annotated[int, typer.Option(help="读几行 how many lines")] = 400,
    server: ServerOption = None,
    region: RegionOption = None,
) -> None:
    """打印存档文件的文本（二进制文件则给出说明）。Print an archive file's text (or a description of a binary file)."""
    import anyio

    if not path:
        raise typer.BadParameter(say("必须给出 --path", "--path is required"))
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
        err_console.print(f"[yellow]{say('警告', 'warning')}[/yellow]: {escape(problem)}")
    if result["binary"]:
        size = result["size"]
        console.print(
            f"{escape(result['path'])}: {say(f'二进制，{size} 字节', f'binary, {size} bytes')}, sha256 {result['sha256']}"
        )
        console.print(result["hexPreview"], markup=False)
        return
    from moddesk.pvf.workbench.cli import write_stdout

    write_stdout(result["text"] + "\n")
    if result["truncated"]:
        first, last, total = result["startLine"], result["endLine"], result["totalLines"]
        err_console.print(
            escape(f"[{say(f'第 {first}-{last} 行，共 {total} 行', f'lines {first}-{last} of {total}')}]")
        )


@history_app.command("init")
def history_init(archive: Annotated[Path, typer.Argument(help="存档文件 archive file")]) -> None:
    """为 ARCHIVE 开始记录历史：一份不可变的基础副本和空日志。Start a history for ARCHIVE: an immutable base copy and an empty log."""
    from moddesk.pvf.workbench.history import History

    with _errors():
        history = History.init(archive)
        repo = escape(str(history.repo))
        console.print(say(f"已在 {repo} 建立历史", f"history created in {repo}"))
        history.close()


@history_app.command("log")
def history_log(
    archive: Annotated[Path, typer.Argument(help="存档文件 archive file")],
    limit: Annotated[int, typer.Option(help="最多列出几条 how many commits")] = 50,
) -> None:
    """列出提交记录，最新的在前。List the commits, newest first."""
    with _errors(), _opened(archive) as (service, _workspace):
        log = service.history_log(limit)
    table = Table(
        say("提交", "commit"),
        say("时间", "when"),
        say("路径数", "paths"),
        say("说明", "message"),
        show_edge=False,
    )
    import datetime

    for commit in log["commits"]:
        when = datetime.datetime.fromtimestamp(commit["createdAt"]).strftime("%Y-%m-%d %H:%M:%S")
        table.add_row(commit["id"], when, str(commit["changedPaths"]), escape(commit["message"]))
    console.print(table)


@history_app.command("diff")
def history_diff(
    archive: Annotated[Path, typer.Argument(help="存档文件 archive file")],
    old: Annotated[
        str | None, typer.Argument(help="较早的提交（默认：基础副本）older commit (default: the base)")
    ] = None,
    new: Annotated[
        str | None, typer.Argument(help="较新的提交（默认：最新）newer commit (default: head)")
    ] = None,
) -> None:
    """两个提交之间有差异的路径。Paths that differ between two commits."""
    with _errors(), _opened(archive) as (service, _workspace):
        diff = service.history_diff(old, new)
    for change in diff["changes"]:
        console.print(f"{change['kind']:9} {escape(change['path'])}")
    count, span = len(diff["changes"]), f"{diff['from'] or 'base'} → {diff['to'] or 'base'}"
    console.print(say(f"{count} 个路径不同（{span}）", f"{count} paths differ ({span})"))


@history_app.command("checkout")
def history_checkout(
    archive: Annotated[Path, typer.Argument(help="存档文件 archive file")],
    commit: Annotated[str, typer.Argument(help="提交 id commit id")],
    output: Annotated[
        Path, typer.Option("--output", "-o", help="要写出的新存档文件 new archive file to write")
    ],
) -> None:
    """重建 COMMIT 时的内容并写到新存档文件（ARCHIVE 保持不变）。Rebuild the content of COMMIT and write it to a new archive file (ARCHIVE stays as it is)."""
    with _errors(), _opened(archive) as (service, workspace):
        info = service.info()
        service.history_checkout(workspace, info["revision"], commit)
        handle = service.save_as(workspace, service.info()["revision"], str(output.resolve()))
        status = service.tasks.wait(handle["taskId"], 3600)
        if status["state"] != "succeeded":
            error = status["error"]
            raise ServiceError(error["error"], error["message"], error.get("hint"))
    where = escape(str(output))
    console.print(say(f"已写出提交 {commit} 时的 {where}", f"wrote {where} as of commit {commit}"))


@history_app.command("undo")
def history_undo(
    archive: Annotated[Path, typer.Argument(help="存档文件 archive file")],
    commit: Annotated[str, typer.Argument(help="要撤销的提交 id commit to undo")],
) -> None:
    """提交 COMMIT 改动的反向改动并保存 ARCHIVE。Commit the reverse of COMMIT's change-set and save ARCHIVE."""
    with _errors(), _opened(archive) as (service, workspace):
        result = service.history_undo(workspace, service.info()["revision"], commit)
        handle = service.save(workspace, result["revision"])
        status = service.tasks.wait(handle["taskId"], 3600)
        if status["state"] != "succeeded":
            error = status["error"]
            raise ServiceError(error["error"], error["message"], error.get("hint"))
    undo = result["commit"]
    saved = escape(str(archive))
    if undo:
        console.print(
            say(f"撤销提交 {undo['id']}；已保存 {saved}", f"undo commit {undo['id']}; {saved} saved")
        )
    else:
        console.print(
            say(f"没有可撤销的改动；已保存 {saved}", f"undo commit (nothing to undo); {saved} saved")
        )
