"""`moddesk xiangqi …` commands: the service (`serve`, `mcp`) and the person's game commands."""

from __future__ import annotations

import base64
import contextlib
import inspect
import json
import os
import sys
import webbrowser
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from moddesk.kit import local_service
from moddesk.kit.errors import ServiceError
from moddesk.kit.leftovers import owner_alive, pid_alive, sweep_stale
from moddesk.kit.links import print_link
from moddesk.xiangqi import uci_cli

if TYPE_CHECKING:  # the game service, its store and the HTTP client load when a command runs
    from moddesk.xiangqi.game import GameService
    from moddesk.xiangqi.serving import XiangqiHttp
    from moddesk.xiangqi.store import Settings

app = typer.Typer(help="Chinese chess against the AI model or the local engine.", no_args_is_help=True)
console = Console()
err_console = Console(stderr=True)

SessionOpt = Annotated[
    str | None, typer.Option("--session", "-s", help="Game id (default: the current game).")
]
UrlOpt = Annotated[str | None, typer.Option("--url", help="URL of a running `moddesk xiangqi serve`.")]
LocalOpt = Annotated[
    bool, typer.Option("--local", help="Use an in-process service on the same game database.")
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print the raw JSON value.")]
LangOpt = Annotated[
    str, typer.Option("--lang", help="Language of what is printed: zh (简体中文, default) or en.")
]
ConfigOpt = Annotated[Path | None, typer.Option("--config", help="Settings TOML file.")]


def endpoint_file(settings: Settings) -> Path:
    """Where a running service records its URL so the CLI can find it."""
    return settings.database().parent / "serve.json"


def _live_owner(record: dict[str, Any]) -> bool:
    """True when the process that wrote an endpoint record still runs (same pid and start time)."""
    pid, started = record.get("pid"), record.get("processCreateTime")
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return False
    if not isinstance(started, int | float):
        return pid_alive(pid)
    return owner_alive(pid, round(float(started) * 100))


def _read_endpoint(path: Path) -> dict[str, Any] | None:
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


@contextlib.contextmanager
def _advertised(settings: Settings, http: XiangqiHttp) -> Iterator[Path | None]:
    """Record the service's URL and agent token, and beside it the person key (both 0600), while
    the block runs.

    A file written by another service that still runs is left alone (both servers coexist; the
    CLI keeps talking to the first); on exit only our own record is removed. The note about it
    goes to stderr: stdout of the stdio server is JSON-RPC only.
    """
    path = endpoint_file(settings)
    path.parent.mkdir(parents=True, exist_ok=True)
    current = _read_endpoint(path)
    if current is not None and current.get("pid") != os.getpid() and _live_owner(current):
        # stderr: under `xiangqi mcp` stdout carries JSON-RPC only (a stray line breaks the client)
        err_console.print(
            f"[yellow]another xiangqi service (pid {current.get('pid')}) at {current.get('url')} "
            f"is what `moddesk xiangqi` commands reach; this one is at {http.url}[/]"
        )
        yield None
        return
    http.publish(path)
    try:
        yield path
    finally:
        http.withdraw()


@contextlib.contextmanager
def _service(config: Path | None) -> Iterator[tuple[Settings, GameService]]:
    """A game service with the model-timeout watchdog running, closed when the block ends."""
    from moddesk.xiangqi.game import GameService
    from moddesk.xiangqi.store import Settings

    settings = Settings.load(config)
    service = GameService(settings)
    service.start_watchdog()
    try:
        yield settings, service
    finally:
        service.close()


# ----------------------------------------------------------------------------------- long-running


@app.command()
def serve(
    port: Annotated[int, typer.Option(help="Port on 127.0.0.1 (0 = any free port).")] = 8765,
    open_browser: Annotated[bool, typer.Option("--open", help="Open the panel in the browser.")] = False,
    config: ConfigOpt = None,
) -> None:
    """Game service + MCP endpoint (/mcp, Streamable HTTP) + browser panel, in one process."""
    try:
        _serve(port, open_browser, config)
    except ServiceError as exc:  # expected failures (a port in use …) print one line, no traceback
        show_error(exc, False)
        raise typer.Exit(2) from None


def _serve(port: int, open_browser: bool, config: Path | None) -> None:
    from moddesk.xiangqi.serving import XiangqiHttp

    with _service(config) as (settings, service):
        sweep_stale([settings.database().parent])  # temps a killed service left (dead owners only)
        http = XiangqiHttp(service, port)
        with _advertised(settings, http) as endpoint:
            print_link(
                console,
                "[bold]xiangqi[/] MCP 端点（用 Agent 的令牌）MCP (the agent's bearer token):",
                http.mcp_url,
            )
            console.print(
                f"Agent 的令牌与地址 agent token and url: {endpoint}（只有你能读 readable by you only）"
            )
            console.print(
                "stdio 客户端用 `moddesk xiangqi connect` 桥接到本服务 (stdio clients bridge with it)"
            )
            console.print(f"棋局保存在 games in {settings.database()}")
            link = http.login_link()
            print_link(
                console,
                "[bold]xiangqi[/] 棋盘面板（一次性登录链接；`moddesk xiangqi open` 可再取一个）panel for you (one-time login link):",
                link,
            )
            if open_browser:
                webbrowser.open(link)
            http.serve_forever()


@app.command()
def connect(config: ConfigOpt = None) -> None:
    """Stdio MCP bridge to the running `moddesk xiangqi serve` (for clients that only speak stdio)."""
    import anyio

    from moddesk.xiangqi.store import Settings

    settings = Settings.load(config)
    try:
        record = local_service.require(endpoint_file(settings), "moddesk xiangqi serve")
    except ServiceError as exc:
        show_error(exc, False)
        raise typer.Exit(2) from None
    anyio.run(local_service.bridge_stdio, record.mcp_url, record.token)


@app.command()
def mcp(
    panel_port: Annotated[int, typer.Option(help="Port for the panel on 127.0.0.1 (0 = any free port).")] = 0,
    no_panel: Annotated[bool, typer.Option("--no-panel", help="Do not start the browser panel.")] = False,
    config: ConfigOpt = None,
) -> None:
    """Stdio MCP server for an AI client; also serves the panel for the person.

    The panel's login link is never printed here: the client keeps this process's stderr in its
    logs, which the model may read. The person gets a link with `moddesk xiangqi open`.
    """
    from moddesk.kit.mcp import serve_stdio
    from moddesk.xiangqi.mcp import build_server
    from moddesk.xiangqi.serving import XiangqiHttp

    with _service(config) as (settings, service), contextlib.ExitStack() as running:
        panel: XiangqiHttp | None = None
        if not no_panel:
            panel = XiangqiHttp(service, panel_port, mcp=False).start()
            running.callback(panel.stop)
            running.enter_context(_advertised(settings, panel))
            print(
                f"xiangqi panel: {panel.panel_url()} (log in: run `moddesk xiangqi open`)",
                file=sys.stderr,
            )
        serve_stdio(build_server(service, panel.panel_url if panel else None))


@app.command("open")
def open_panel(
    no_browser: Annotated[bool, typer.Option("--no-browser", help="Only print the link.")] = False,
    config: ConfigOpt = None,
) -> None:
    """Give yourself a fresh one-time login link to the running panel (and open it in the browser).

    The link is minted from the person key the running service left in a file only your OS user
    can read; the model, which only speaks MCP, never reads that file.
    """
    from moddesk.kit.person import require_person
    from moddesk.xiangqi.rpc import PANEL_PATH
    from moddesk.xiangqi.store import Settings

    settings = Settings.load(config)
    try:
        link = require_person(endpoint_file(settings), "xiangqi").login_link(PANEL_PATH)
    except ServiceError as exc:
        show_error(exc, False)
        raise typer.Exit(2) from None
    print_link(console, "一次性登录链接 One-time login link to the xiangqi panel:", link)
    if not no_browser:
        webbrowser.open(link)


# ----------------------------------------------------------------------------------- person commands


def _call(
    endpoint: str, payload: dict[str, Any], url: str | None, local: bool, config: Path | None
) -> dict[str, Any]:
    """Run a hero action on the running service (RPC) or, with --local, in this process."""
    from moddesk.xiangqi.store import Settings

    settings = Settings.load(config)
    if local:
        return _call_local(settings, endpoint, payload)
    record = local_service.read(endpoint_file(settings))
    if url is None and record is None:
        raise ServiceError(
            "NOT_FOUND",
            "no running xiangqi service found",
            hint="Start `moddesk xiangqi serve` (or `mcp`), pass --url, or use --local.",
        )
    target = url if url is not None else record.url if record is not None else ""
    from moddesk.kit.person import read_person

    person = read_person(endpoint_file(settings))
    headers = person.headers() if person is not None and person.url == target else {}
    return _call_remote(target, endpoint, payload, headers)


def _call_local(settings: Settings, endpoint: str, payload: dict[str, Any]) -> dict[str, Any]:
    """The action on an in-process service; waits for a local engine's reply like the panel would show."""
    from moddesk.xiangqi.game import GameService
    from moddesk.xiangqi.rpc import dispatch

    service = GameService(settings)
    try:
        value = dispatch(service, endpoint, payload)
        if (
            value.get("sessionId")
            and value.get("pending") == "ai-thinking"
            and value["opponent"]["kind"] == "local"
        ):
            value = service.wait_idle(value["sessionId"], timeout=settings.think_time * 3 + 10) | {
                k: v for k, v in value.items() if k in ("played", "playedIccs", "captured", "undone")
            }
        return value
    finally:
        service.close()


def _call_remote(url: str, endpoint: str, payload: dict[str, Any], headers: dict[str, str]) -> dict[str, Any]:
    """The action over the service's RPC channel, as the person (the key of the 0600 person file);
    its error body (a refusal included) becomes a ServiceError again."""
    import httpx

    from moddesk.xiangqi.rpc import CHANNEL

    try:
        response = httpx.post(f"{url}{CHANNEL}/{endpoint}", json=payload, timeout=120, headers=headers)
        body = response.json()
    except (httpx.HTTPError, ValueError) as exc:
        raise ServiceError(
            "NOT_FOUND",
            f"the service at {url} did not answer: {exc}",
            hint="Is it still running? Or use --local.",
        ) from exc
    if not body.get("ok"):
        error = body.get("error", {})
        raise ServiceError(
            error.get("code", "INTERNAL_ERROR"), error.get("message", "failed"), **error.get("details", {})
        )
    result: dict[str, Any] = body["value"]
    return result


def board_text(value: dict[str, Any]) -> Text:
    """The board a Chinese player reads: piece names, 九…一 under it and 1…9 over it, the last move reversed.

    Red is drawn red; where the output has no colour (a pipe, NO_COLOR) each piece keeps its FEN
    letter (upper case Red) so 马车炮 of the two sides stay apart.
    """
    from moddesk.xiangqi.core.diagram import styled_rows

    last = value.get("lastMove") or {}
    marks = {sq for sq in (last.get("from"), last.get("to")) if isinstance(sq, int)}
    text = Text()
    for _plain, runs in styled_rows(value["board"], console.no_color or console.color_system is None, marks):
        for run, style in runs:
            text.append(run, style=style)
        text.append("\n")
    return text


# what the terminal says, zh-CN first and English with --lang en: every line a sentence
SAY: dict[str, tuple[str, str]] = {
    "turn": ("轮到{side}走。", "{side} to move."),
    "thinking": ("对手思考中……", "The opponent is thinking…"),
    "over": ("对局结束：{reason}。", "The game is over: {reason}."),
    "session": ("会话 {session}，已走 {plies} 手，版本 {revision}。", "Session {session}, {plies} plies played, revision {revision}."),
    "loaded": ("已载入棋谱（{names}，共 {plies} 手），从第 {at} 手开始。", "Record loaded ({names}, {plies} plies), from ply {at}."),
    "played": ("你走了 {move}。", "You played {move}."),
    "last": ("上一步：{move}（{iccs}）。", "Last move: {move} ({iccs})."),
    "offer_in": ("对手提和：同意请运行 `moddesk xiangqi draw accept`，拒绝请运行 `moddesk xiangqi draw decline`。", "The opponent offers a draw: `moddesk xiangqi draw accept` or `moddesk xiangqi draw decline`."),
    "offer_out": ("你已提和，等待对手答复。", "You offered a draw; waiting for the answer."),
    "written": ("{format} 棋谱已写入 {path}。", "The {format} record was written to {path}."),
    "bytes": ("{format} 棋谱共 {n} 字节（用 --out 保存）。", "The {format} record has {n} bytes (save it with --out)."),
    "engine": ("引擎：{engine}", "Engine: {engine}"),
    "curve": ("评估曲线（红方期望得分 %，每 10 手）：{curve}", "Evaluation curve (Red's expected score %, every 10 plies): {curve}"),
    "turning": ("转折点 {n} 个（共标出 {flagged} 步）：", "{n} turning points ({flagged} moves flagged):"),
    "no_turning": ("没有转折点：没有哪一步比引擎的首选差 10 个百分点以上。", "No turning points: no move lost more than 10 points against the engine's choice."),
    "legal": ("合法着法：{moves}", "Legal moves: {moves}"),
    "warning": ("注意：{text}", "Note: {text}"),
    "star": ("★ 为转折点（损失最大的几步）。", "★ marks the turning points (the largest losses)."),
    "games": ("文件中的 {n} 局", "The {n} games of the file"),
    "red": ("红方", "Red"),
    "black": ("黑方", "Black"),
}  # fmt: skip
HEADS = {
    "games": (
        ("局", "对局", "赛事", "日期", "结果", "手数"),
        ("Game", "Players", "Event", "Date", "Result", "Plies"),
    ),
    "hint": (("着法", "ICCS", "评分", "主要变化"), ("Move", "ICCS", "Score", "Line")),
    "review": (
        ("手", "着法", "胜率变化", "更优着法与变化"),
        ("Ply", "Move", "Win chance", "Better move and line"),
    ),
}


def say(key: str, lang: str, **values: Any) -> str:
    zh, en = SAY[key]
    return (en if lang == "en" else zh).format(**values)


def show(value: dict[str, Any], as_json: bool, lang: str = "zh") -> None:
    """Print a command's result for a person, in sentences (zh-CN, or English with --lang en)."""
    if as_json:
        console.print_json(json.dumps(value, ensure_ascii=False))
        return
    if "pgn" in value:
        console.print(value["pgn"], end="", markup=False, highlight=False)
        return
    if "format" in value:  # an exported record
        for warning in value.get("warnings") or []:
            console.print(say("warning", lang, text=warning), style="yellow", markup=False)
        if value.get("written"):
            console.print(say("written", lang, format=value["format"], path=value["written"]), markup=False)
        elif "text" in value:
            console.print(value["text"], end="", markup=False, highlight=False)
        else:
            size = len(value["base64"]) * 3 // 4
            console.print(say("bytes", lang, format=value["format"], n=size), markup=False)
        return
    console.print(board_text(value))
    _show_state(value, lang)
    if value.get("candidates"):
        table = Table(
            *HEADS["hint"][lang == "en"], title=say("engine", lang, engine=value.get("engine", "?"))
        )
        for c in value["candidates"]:
            table.add_row(c["zh"], c["iccs"], c.get("scoreZh", str(c["score"])), " ".join(c["pvZh"][:6]))
        console.print(table)
    if value.get("review"):
        _show_review(value["review"], lang)


def _show_state(value: dict[str, Any], lang: str) -> None:
    from moddesk.xiangqi.gametext import message_sentence

    status = value["status"]
    if value["phase"] == "over":
        console.print(say("over", lang, reason=status["reasonZh"]), style="bold", markup=False)
    else:
        side = say("red" if value["turn"] == "r" else "black", lang)
        line = say("turn", lang, side=side)
        if value.get("pending") == "ai-thinking":
            line += say("thinking", lang)
        console.print(line, markup=False)
    console.print(
        say("session", lang, session=value["sessionId"], plies=value["plies"], revision=value["revision"]),
        markup=False,
    )
    if value.get("record"):
        rec = value["record"]
        names = " 对 ".join(rec["tags"].get(k, "?") for k in ("Red", "Black"))
        console.print(say("loaded", lang, names=names, plies=rec["plies"], at=rec["startedAt"]), markup=False)
        for note in rec["notes"]:
            console.print(note, style="dim", markup=False)
        if rec.get("count", 1) > 1:
            _show_games(rec["games"], rec["game"], lang)
    offer = value.get("drawOffer")
    if offer:
        console.print(say("offer_in" if offer["by"] == "opponent" else "offer_out", lang), markup=False)
    if value.get("played"):
        console.print(say("played", lang, move=value["played"]), markup=False)
    if value.get("lastMove"):
        last = value["lastMove"]
        console.print(say("last", lang, move=last["zh"], iccs=last["iccs"]), markup=False)
    if value.get("message"):
        console.print(message_sentence(value["message"]["code"], lang), style="yellow", markup=False)


def _show_games(games: list[dict[str, Any]], chosen: int, lang: str) -> None:
    table = Table(*HEADS["games"][lang == "en"], title=say("games", lang, n=len(games)))
    for g in games:
        mark = "▶ " if g["game"] == chosen else ""
        if "error" in g:
            table.add_row(f"{mark}{g['game']}", "", "", "", "", str(g.get("errorZh") or g["error"]))
            continue
        table.add_row(
            f"{mark}{g['game']}",
            f"{g['red']} – {g['black']}",
            g["event"],
            g["date"],
            g["result"],
            str(g["plies"]),
        )
    console.print(table)


def _show_review(review: dict[str, Any], lang: str) -> None:
    curve = " ".join(f"{p['ply']}:{p['winRed']}" for p in review["curve"][::10])
    console.print(say("curve", lang, curve=curve), markup=False)
    turning = review["turningPoints"]
    if not turning:
        console.print(say("no_turning", lang), markup=False)
        return
    console.print(
        say("turning", lang, n=len(turning), flagged=review.get("flagged", len(turning))), markup=False
    )
    table = Table(*HEADS["review"][lang == "en"], caption=say("star", lang))
    for tp in review.get("mistakes") or turning:
        best = tp["best"]
        better = f"{best['zh']}：{' '.join(best.get('lineZh') or [best['zh']])}" if best else "-"
        judged = tp.get("judgementZh" if lang != "en" else "judgement", "")
        table.add_row(
            f"{'★' if tp.get('turningPoint', True) else ''}{tp['ply']}",
            f"{tp['zh']} {judged}".strip(),
            f"{tp['winBefore']}% → {tp['winAfter']}% (−{tp['winLoss']})",
            better,
        )
    console.print(table)


def show_error(exc: ServiceError, as_json: bool, lang: str = "zh") -> None:
    """Print a failed command's error: the Chinese sentence first (or English), the code, the legal moves, the hint."""
    from moddesk.xiangqi.rpc import error_body

    body = error_body(exc)
    if as_json:
        console.print_json(json.dumps(body, ensure_ascii=False))
        return
    error = body["error"]
    zh = error.get("errorZh")
    first = exc.message if lang == "en" or not zh else zh
    second = "" if lang == "en" or not zh else f"（{exc.message}）"
    console.print(f"[red]{exc.code}[/]：{escape(first)}{escape(second)}")
    moves = error["details"].get("legalMoves")
    # NOT_YOUR_TURN: the moves of the side to move are the opponent's, not the person's to choose from
    if moves and exc.code != "NOT_YOUR_TURN":
        listed = " ".join(f"{m['zh']}({m['iccs']})" for m in moves)
        console.print(say("legal", lang, moves=listed), markup=False)
    if exc.hint:
        console.print(exc.hint, style="dim", markup=False)


def _write_record(path: Path, value: dict[str, Any]) -> None:
    """Save an exported record atomically (binary XQF from base64, text records as UTF-8)."""
    from moddesk.kit.files import atomic_write_bytes

    data = base64.b64decode(value["base64"]) if "base64" in value else value["text"].encode("utf-8")
    try:
        atomic_write_bytes(path, data)
    except OSError as exc:
        raise ServiceError(
            "INVALID_ARGUMENT", f"cannot write {path}: {exc.strerror}", hint="Check the folder."
        ) from exc
    value["written"] = str(path)


# the options every person command shares, in this order after its own: name -> (annotation, default)
SHARED_OPTIONS: dict[str, tuple[Any, Any]] = {
    "session": (SessionOpt, None),
    "url": (UrlOpt, None),
    "local": (LocalOpt, False),
    "as_json": (JsonOpt, False),
    "lang": (LangOpt, "zh"),
    "config": (ConfigOpt, None),
}
Payload = Callable[..., dict[str, Any]]


def person_command(*, session: bool = True) -> Callable[[Payload], Payload]:
    """Register ``payload`` (its own options -> the RPC payload) as the command of the endpoint it names.

    The command gets the shared options (``--session`` only if ``session``), calls the service and
    prints the result or the error (exit code 1).
    """
    shared = [name for name in SHARED_OPTIONS if session or name != "session"]

    def register(payload: Payload) -> Payload:
        own = inspect.signature(payload, eval_str=True)

        def command(**options: Any) -> None:
            common = {name: options.pop(name) for name in shared}
            try:
                body = payload(**options)
                out = body.pop("_out", None)
                if common.get("session"):
                    body["sessionId"] = common["session"]
                value = _call(payload.__name__, body, common["url"], common["local"], common["config"])
                if out is not None:
                    _write_record(Path(out), value)
            except ServiceError as exc:
                show_error(exc, common["as_json"], common["lang"])
                raise typer.Exit(1) from None
            show(value, common["as_json"], common["lang"])

        params = [
            *own.parameters.values(),
            *(
                inspect.Parameter(
                    name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation
                )
                for name, (annotation, default) in ((n, SHARED_OPTIONS[n]) for n in shared)
            ),
        ]
        # typer reads the options from the signature and the help from the docstring
        command.__signature__ = own.replace(parameters=params, return_annotation=None)  # type: ignore[attr-defined]
        command.__annotations__ = {p.name: p.annotation for p in params}
        command.__doc__ = payload.__doc__
        app.command(name=payload.__name__)(command)
        return payload

    return register


@person_command(session=False)
def new(
    side: Annotated[str, typer.Option(help="Your side: r (red, first) or b.")] = "r",
    opponent: Annotated[
        str, typer.Option(help="model (the AI in your MCP client) or local (the engine).")
    ] = "local",
    max_plies: Annotated[
        int | None, typer.Option("--max-plies", help="Plies before the game is drawn.")
    ] = None,
    level: Annotated[
        int | None,
        typer.Option("--level", min=1, max=10, help="Local opponent: 1 beginner .. 10 full strength."),
    ] = None,
) -> dict[str, Any]:
    """Start a new game."""
    payload: dict[str, Any] = {"side": side, "opponent": opponent}
    if max_plies is not None:
        payload["maxPlies"] = max_plies
    if level is not None:
        payload["level"] = level
    return payload


@person_command()
def state() -> dict[str, Any]:
    """Show the board and the game's state."""
    return {}


@person_command()
def move(
    text: Annotated[str, typer.Argument(help="ICCS (h2e2), Chinese (炮二平五) or WXF (C2=5).")],
) -> dict[str, Any]:
    """Play your move."""
    return {"move": text}


@person_command()
def undo(plies: Annotated[int, typer.Argument(help="Plies to take back.")] = 2) -> dict[str, Any]:
    """Take back moves (default: your last move and the reply)."""
    return {"plies": plies}


@person_command()
def hint(count: Annotated[int, typer.Option(help="Number of candidates.")] = 3) -> dict[str, Any]:
    """Engine candidates for the side to move."""
    return {"count": count}


@person_command()
def resign() -> dict[str, Any]:
    """Resign the game (only you can)."""
    return {}


@person_command()
def review(
    all_moves: Annotated[bool, typer.Option("--all", help="Every move, not only turning points.")] = False,
) -> dict[str, Any]:
    """Review the game: evaluation curve and turning points."""
    return {"highlight": "all" if all_moves else "turning"}


@person_command()
def export(
    fmt: Annotated[
        str | None,
        typer.Option("--format", help="pgn (Chinese moves), pgn-wxf, pgn-iccs, ubb (DhtmlXQ) or xqf."),
    ] = None,
    out: Annotated[Path | None, typer.Option("--out", help="Write the record to this file.")] = None,
) -> dict[str, Any]:
    """Export the game: PGN with Chinese moves by default; --format picks another record format."""
    body: dict[str, Any] = {}
    if fmt is not None or out is not None:
        body["format"] = fmt or ("xqf" if out and out.suffix.lower() == ".xqf" else "pgn")
    if out is not None:
        body["_out"] = str(out)
    return body


@person_command(session=False)
def load(
    file: Annotated[Path, typer.Argument(help="A game record: .pgn, .xqf or a UBB/DhtmlXQ text.")],
    ply: Annotated[int | None, typer.Option("--ply", help="Start at this move (default: the end).")] = None,
    review: Annotated[bool, typer.Option("--review", help="Review the loaded game.")] = False,
    level: Annotated[
        int | None,
        typer.Option("--level", min=1, max=10, help="Local opponent: 1 beginner .. 10 full strength."),
    ] = None,
    game: Annotated[
        int | None, typer.Option("--game", min=1, help="Which game of a file that holds several (default 1).")
    ] = None,
) -> dict[str, Any]:
    """Load a game record (PGN, XQF, UBB/DhtmlXQ): play on from any move, or review it."""
    try:
        data = file.read_bytes()
    except OSError as exc:
        raise ServiceError(
            "NOT_FOUND", f"cannot read {file}: {exc.strerror}", hint="Check the path."
        ) from exc
    body: dict[str, Any] = {
        "data": base64.b64encode(data).decode("ascii"),
        "name": file.name,
        "review": review,
    }
    if ply is not None:
        body["ply"] = ply
    if level is not None:
        body["level"] = level
    return body


@person_command()
def draw(
    action: Annotated[
        str, typer.Argument(help="offer (提和), accept (同意) or decline (拒绝) the opponent's offer.")
    ] = "offer",
) -> dict[str, Any]:
    """Offer a draw, or answer the opponent's offer (提和 / 同意 / 拒绝)."""
    from moddesk.xiangqi.rpc import DRAW_WORDS

    if action not in DRAW_WORDS:
        raise ServiceError(
            "INVALID_ARGUMENT",
            f"draw takes offer, accept or decline, not {action!r}",
            hint="moddesk xiangqi draw offer",
            errorZh="提和请用 offer（提和）、accept（同意）或 decline（拒绝）",
        )
    return {"action": DRAW_WORDS[action]}


@person_command()
def fallback() -> dict[str, Any]:
    """Stop waiting for the model and let the local engine move now."""
    return {}


# the engine commands (uci, perft, analyse) live beside the engine core
uci_cli.register(app)
