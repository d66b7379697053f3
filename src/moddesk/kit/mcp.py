"""Build an MCP server from a system's tools and serve it over stdio or Streamable HTTP.

Tools are plain typed functions (pydantic ``Field`` annotations for inputs, a pydantic model or
``dict`` return type for the ``outputSchema``). ``add_tool`` wraps each so that:

* a result carries ``structuredContent`` plus ONE text block (``text=`` renders it) that is a
  complete, compact rendering: many clients hand the model only the text, so it is never cut;
* a ``ServiceError`` becomes an ``isError`` result WITHOUT ``structuredContent`` whose text block is
  the error object as JSON ``{"ok": false, "error", "message", "hint", …}``. The official
  TypeScript SDK validates any ``structuredContent`` against the tool's ``outputSchema`` — error
  results included — and throws ``-32602`` on a mismatch, so the model would never see the error;
* arguments the input schema rejects (pydantic) become the same contract, ``INVALID_ARGUMENT``
  with the field paths, instead of the SDK's raw validation text;
* an unexpected exception is logged server-side and reported as ``INTERNAL_ERROR`` without
  internals.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import json
import logging
import typing
from collections.abc import AsyncIterator, Callable
from typing import Annotated, Any

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from mcp.types import (
    INVALID_PARAMS,
    CallToolResult,
    GetPromptResult,
    InputRequiredResult,
    ServerCapabilities,
    TextContent,
    ToolAnnotations,
)
from pydantic import BaseModel, Field, ValidationError
from starlette.applications import Starlette
from starlette.routing import BaseRoute, Mount

from moddesk import __version__
from moddesk.kit.errors import ServiceError
from moddesk.kit.http import LOOPBACK, ASGIApp, LoopbackServer, guard, loopback_hosts, loopback_origins
from moddesk.kit.ledger import LOCAL_SCOPE
from moddesk.kit.mcplog import enable_logging
from moddesk.kit.pages import TEXT_BUDGET_MAX, ResultPages, utf8_len
from moddesk.kit.person import PersonGate
from moddesk.kit.principals import AccessPolicy

logger = logging.getLogger("moddesk.mcp")

# stateful Streamable HTTP: a client that leaves without DELETE frees its session after this long
SESSION_IDLE_TIMEOUT = 10 * 60.0
MAX_SESSIONS = 256

InvalidArgumentHook = Callable[[str, dict[str, Any], ServiceError], ServiceError]


class ToolServer(MCPServer):
    """``MCPServer`` whose schema-level argument errors follow our error contract.

    ``on_invalid_argument(tool, arguments, error)`` may enrich the ``INVALID_ARGUMENT`` error (the
    xiangqi server adds ``errorZh`` and the legal moves).
    """

    on_invalid_argument: InvalidArgumentHook | None = None
    # no per-session state: every HTTP request stands alone and nothing is kept after it
    stateless_http: bool = False
    result_pages: ResultPages | None = None
    # publish outputSchemas (add_tool's default); False for servers whose text blocks carry everything
    output_schemas: bool = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        lowlevel = self._lowlevel_server
        advertised = lowlevel.get_capabilities

        def served_capabilities(*a: Any, **kw: Any) -> ServerCapabilities:
            """The SDK's capabilities less prompts/resources when nothing is behind them (asked at
            each ``initialize``, so prompts added after the server was built still count)."""
            capabilities = advertised(*a, **kw)
            hidden: dict[str, None] = {}
            if not self._prompt_manager.list_prompts():
                hidden["prompts"] = None
            if not self._resource_manager.list_resources() and not self._resource_manager.list_templates():
                hidden["resources"] = None
            return capabilities.model_copy(update=hidden)

        lowlevel.get_capabilities = served_capabilities  # type: ignore[method-assign]

    async def get_prompt(
        self, name: str, arguments: dict[str, Any] | None = None, context: Context[Any, Any] | None = None
    ) -> GetPromptResult | InputRequiredResult:
        # the SDK answers an unknown name with a bare ValueError (error code 0); the spec says -32602
        if self._prompt_manager.get_prompt(name) is None:
            known = [prompt.name for prompt in self._prompt_manager.list_prompts()]
            raise MCPError(INVALID_PARAMS, f"Unknown prompt: {name}", {"name": name, "prompts": known})
        return await super().get_prompt(name, arguments, context)

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(exc, UnexpectedToolError) or not isinstance(cause, ValidationError):
                raise
            error = invalid_argument(cause)
            if self.on_invalid_argument is not None:
                error = self.on_invalid_argument(name, arguments, error)
            return error_result(error, self._error_renderers.get(name, error_text))

    @property
    def _error_renderers(self) -> dict[str, Callable[[ServiceError], str]]:
        renderers: dict[str, Callable[[ServiceError], str]] = self.__dict__.setdefault("_renderers", {})
        return renderers


def invalid_argument(exc: ValidationError) -> ServiceError:
    """``INVALID_ARGUMENT`` naming every rejected field path (never the rejected values)."""
    problems: list[dict[str, str]] = []
    for err in exc.errors(include_url=False, include_input=False):
        path = ".".join(str(part) for part in err["loc"])
        problems.append({"path": path, "problem": err["msg"]})
    names = sorted({p["path"].split(".")[0] for p in problems})
    summary = "; ".join(f"{p['path']}: {p['problem']}" for p in problems[:6])
    return ServiceError(
        "INVALID_ARGUMENT",
        f"invalid argument {', '.join(names)} — {summary}",
        hint="Fix the named argument to match the tool's input schema and call again.",
        fields=problems,
    )


def new_server(
    name: str,
    instructions: str,
    *,
    output_schemas: bool = True,
    page_tool: str | None = None,
    stateless_http: bool = False,
    **kwargs: Any,
) -> ToolServer:
    """A new ``ToolServer`` with our version; ``kwargs`` go to ``MCPServer`` (e.g. ``lifespan``).

    ``output_schemas=False``: no tool of this server publishes an ``outputSchema`` (see ``add_tool``).
    ``page_tool``: the name of a tool that reads the further pages of a result larger than the
    byte budget (``kit.pages``); with it (and without output schemas) no result text exceeds
    ``TEXT_BUDGET_MAX`` and none is cut. ``stateless_http``: for a server that keeps nothing per
    session, Streamable HTTP without sessions (memory never grows with clients); otherwise sessions
    idle for ``SESSION_IDLE_TIMEOUT`` are closed and at most ``MAX_SESSIONS`` are open (a 503 with
    "Too many open sessions" refuses the next).
    """
    # the SDK's INFO lines ("session manager started") are noise in the person's serve terminal
    kwargs.setdefault("log_level", "WARNING")
    server = ToolServer(name, version=__version__, instructions=instructions, **kwargs)
    server.output_schemas = output_schemas
    server.stateless_http = stateless_http
    enable_logging(server)
    if page_tool is not None:
        _add_page_tool(server, page_tool)
    return server


def _add_page_tool(server: ToolServer, name: str) -> None:
    pages = ResultPages(name)
    server.result_pages = pages

    def result_page(
        resultId: Annotated[str, Field(min_length=1, max_length=40, description="from the page marker")],
        page: Annotated[int, Field(ge=1, description="page number from the marker")],
    ) -> str:
        """Read the next page of a result too large for one answer (its last line names this tool)."""
        return pages.page(resultId, page)

    add_tool(
        server, result_page, name=name, title="Next page of a result", read_only=True, output_schema=False
    )


def result_payload(result: CallToolResult) -> dict[str, Any]:
    """What a tool call answered, as a dict: the structured content of a success, the error object of
    a failure (parsed from its text block — errors carry no ``structuredContent``)."""
    if result.is_error:
        block = result.content[0] if result.content else None
        text = getattr(block, "text", "")
        try:
            value = json.loads(text)
        except ValueError:
            return {"ok": False, "error": "UNKNOWN", "message": text}
        return value if isinstance(value, dict) else {"ok": False, "error": "UNKNOWN", "message": text}
    return dict(result.structured_content or {})


def _jsonable(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True)
    return value


def compact_json(value: Any) -> str:
    """One-line JSON without spaces, non-ASCII kept (Chinese costs fewer tokens unescaped)."""
    return json.dumps(_jsonable(value), ensure_ascii=False, separators=(",", ":"), default=str)


def default_text(value: Any) -> str:
    """The complete result as compact JSON — never cut: tools page large results instead."""
    return compact_json(value)


def error_text(error: ServiceError) -> str:
    """What the model reads for a failure: the error object as compact JSON (code, message, hint, …)."""
    return compact_json(error.to_payload())


def error_result(error: ServiceError, render: Callable[[ServiceError], str] = error_text) -> CallToolResult:
    """An ``isError`` tool result: the error object in the text block, no ``structuredContent``."""
    return CallToolResult(content=[TextContent(type="text", text=render(error))], is_error=True)


def _success(value: Any, text: Callable[[Any], str], server: MCPServer) -> CallToolResult:
    if isinstance(value, str):  # a plain text answer (e.g. a page): no structured copy of it
        return CallToolResult(content=[TextContent(type="text", text=value)])
    structured = _jsonable(value)
    body = text(value)
    pages: ResultPages | None = getattr(server, "result_pages", None)
    if pages is not None and not getattr(server, "output_schemas", True):
        too_large = utf8_len(body) > TEXT_BUDGET_MAX or utf8_len(compact_json(structured)) > TEXT_BUDGET_MAX
        if too_large:
            # the same bytes twice would double the cost: the (complete) text, paged, is the answer
            return CallToolResult(content=[TextContent(type="text", text=pages.first_page(body))])
    return CallToolResult(content=[TextContent(type="text", text=body)], structured_content=structured)


def _internal(name: str) -> CallToolResult:
    logger.exception("tool %s crashed", name)
    return error_result(
        ServiceError(
            "INTERNAL_ERROR",
            f"the tool {name} failed unexpectedly",
            hint="Retrying will not help; report the server log.",
        )
    )


def _wrap(
    fn: Callable[..., Any],
    text: Callable[[Any], str],
    render_error: Callable[[ServiceError], str],
    server: MCPServer,
) -> Callable[..., Any]:
    hints = typing.get_type_hints(fn, include_extras=True)
    signature = inspect.signature(fn)
    params = [p.replace(annotation=hints.get(p.name, p.annotation)) for p in signature.parameters.values()]
    returns = hints.get("return", dict[str, Any])
    new_signature = signature.replace(parameters=params, return_annotation=Annotated[CallToolResult, returns])
    name = fn.__name__

    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def run_async(*args: Any, **kwargs: Any) -> CallToolResult:
            try:
                return _success(await fn(*args, **kwargs), text, server)
            except ServiceError as exc:
                return error_result(exc, render_error)
            except Exception:
                return _internal(name)

        wrapper: Callable[..., Any] = run_async
    else:

        @functools.wraps(fn)
        def run_sync(*args: Any, **kwargs: Any) -> CallToolResult:
            try:
                return _success(fn(*args, **kwargs), text, server)
            except ServiceError as exc:
                return error_result(exc, render_error)
            except Exception:
                return _internal(name)

        wrapper = run_sync
    wrapper.__signature__ = new_signature  # type: ignore[attr-defined]
    wrapper.__annotations__ = {**hints, "return": new_signature.return_annotation}
    del wrapper.__wrapped__  # type: ignore[attr-defined]  # the SDK must see our signature, not fn's
    return wrapper


def compact_schema(schema: Any, inputs: bool = False) -> Any:
    """The schema without pydantic's generated ``title`` strings (they restate the names); for an
    input schema (``inputs=True``) also without the ``anyOf [X, null]`` + ``default: null`` wrapping
    of an optional argument: it is simply ``X``, not required.

    Tool lists are paid for in every conversation; both are a large share of their tokens. A
    property that is itself called ``title`` maps to a schema (a dict), so it is kept. The server
    still accepts an explicit ``null`` for such an argument. Output schemas keep their nulls: the
    values are really null, and clients validate results against them.
    """
    if isinstance(schema, dict):
        out = {
            k: compact_schema(v, inputs)
            for k, v in schema.items()
            if not (k == "title" and isinstance(v, str))
        }
        return _unwrap_optional(out) if inputs else out
    if isinstance(schema, list):
        return [compact_schema(v, inputs) for v in schema]
    return schema


def _unwrap_optional(schema: dict[str, Any]) -> dict[str, Any]:
    branches = schema.get("anyOf")
    if not (isinstance(branches, list) and "default" in schema and schema["default"] is None):
        return schema
    kept = [b for b in branches if b != {"type": "null"}]
    if len(kept) != 1 or len(kept) == len(branches) or not isinstance(kept[0], dict):
        return schema
    rest = {k: v for k, v in schema.items() if k not in ("anyOf", "default")}
    return {**kept[0], **rest}


def add_tool(
    server: MCPServer,
    fn: Callable[..., Any],
    *,
    title: str,
    read_only: bool,
    destructive: bool = False,
    idempotent: bool = False,
    open_world: bool = False,
    name: str | None = None,
    description: str | None = None,
    text: Callable[[Any], str] = default_text,
    error_text: Callable[[ServiceError], str] = error_text,
    output_schema: bool = True,
) -> None:
    """Register ``fn`` as a tool with honest annotations and our result/error shapes.

    ``text`` renders the one text block of a success; ``error_text`` that of a failure (e.g. to
    list the legal moves a model can retry with). ``output_schema=False`` publishes no
    ``outputSchema`` (results still carry ``structuredContent``): where the schema costs more tokens
    in every tools/list than it gives, since the text block already has everything.
    """
    # tools/list is paid for in every conversation: idempotentHint is left out when it is the
    # default (false), and a read-only tool carries neither destructiveHint nor idempotentHint (the
    # MCP spec gives them meaning only when readOnlyHint is false)
    annotations = ToolAnnotations(
        read_only_hint=read_only,
        destructive_hint=None if read_only else destructive,
        idempotent_hint=True if idempotent and not read_only else None,
        open_world_hint=open_world,
    )
    tool_name = name or fn.__name__
    server.add_tool(
        _wrap(fn, text, error_text, server),
        name=tool_name,
        title=title,
        description=description or inspect.getdoc(fn),
        annotations=annotations,
    )
    if isinstance(server, ToolServer):
        server._error_renderers[tool_name] = error_text
    # the SDK has no public accessor for a registered tool; its schemas are plain dicts
    tool = server._tool_manager.get_tool(tool_name)
    if tool is not None:
        tool.parameters = compact_schema(tool.parameters, inputs=True)
        metadata = tool.fn_metadata
        if not (output_schema and getattr(server, "output_schemas", True)):
            metadata.output_schema = None  # also stops the SDK validating our structuredContent
        elif metadata.output_schema is not None:
            metadata.output_schema = compact_schema(metadata.output_schema)


class ProgressRelay:
    """Forward progress reported from any thread to the MCP client as progress notifications.

    Use inside an async tool: ``async with ProgressRelay(ctx) as report:`` then hand ``report``
    (a plain ``(done, total, message)`` callable, safe to call from worker threads) to the work.
    Only increasing progress is sent, as the protocol requires.
    """

    def __init__(self, ctx: Context[Any]) -> None:
        self._ctx = ctx
        self._latest: tuple[float, float | None, str | None] | None = None
        self._sent = -1.0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None

    def __call__(self, done: float, total: float | None = None, message: str | None = None) -> None:
        self._latest = (done, total, message)
        if self._loop is not None and self._wake is not None:
            self._loop.call_soon_threadsafe(self._wake.set)

    async def _flush(self) -> None:
        latest = self._latest
        if latest is not None and latest[0] > self._sent:
            self._sent = latest[0]
            await self._ctx.report_progress(latest[0], total=latest[1], message=latest[2])

    async def _forward(self) -> None:
        assert self._wake is not None
        while True:
            await self._wake.wait()
            self._wake.clear()
            await self._flush()

    async def __aenter__(self) -> ProgressRelay:
        self._loop = asyncio.get_running_loop()
        self._wake = asyncio.Event()
        self._task = asyncio.create_task(self._forward())
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        await self._flush()


def transport_security(port: int) -> TransportSecuritySettings:
    """Explicit DNS-rebinding protection for a loopback port (never left to the SDK's defaults)."""
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=loopback_hosts(port),
        allowed_origins=loopback_origins(port),
    )


def http_app(
    server: MCPServer,
    port: int,
    extra_routes: list[BaseRoute] | None = None,
    bearer_token: str | None = None,
    mcp_path: str = "/mcp",
    open_paths: tuple[str, ...] = (),
    max_body: int | None = None,
    policy: AccessPolicy | None = None,
    person: PersonGate | None = None,
) -> ASGIApp:
    """One ASGI app: our routes first, the MCP endpoint at ``mcp_path``, everything guarded
    (with ``policy`` + ``person``: ``mcp_path`` the agent's, the other routes the person's)."""
    if getattr(server, "stateless_http", False):
        sessions: dict[str, Any] = {"stateless_http": True}
    else:
        sessions = {"session_idle_timeout": SESSION_IDLE_TIMEOUT, "max_sessions": MAX_SESSIONS}
    mcp_app = server.streamable_http_app(
        streamable_http_path=mcp_path, transport_security=transport_security(port), host=LOOPBACK, **sessions
    )

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        # a mounted app's lifespan never runs: the host app runs the session manager
        async with server.session_manager.run():
            yield

    host = Starlette(routes=[*(extra_routes or []), Mount("/", app=mcp_app)], lifespan=lifespan)
    return guard(
        host,
        port,
        bearer_token=bearer_token,
        open_paths=open_paths,
        max_body=max_body,
        policy=policy,
        person=person,
    )


def serve_http(
    server: MCPServer,
    port: int = 0,
    extra_routes: list[BaseRoute] | None = None,
    bearer_token: str | None = None,
    max_body: int | None = None,
    policy: AccessPolicy | None = None,
    person: PersonGate | None = None,
) -> LoopbackServer:
    """Bind 127.0.0.1:``port`` (0 = free) and return the not-yet-started server (``.start()``)."""
    return LoopbackServer(
        lambda bound: http_app(
            server,
            bound,
            extra_routes=extra_routes,
            bearer_token=bearer_token,
            max_body=max_body,
            policy=policy,
            person=person,
        ),
        port,
    )


def serve_stdio(server: MCPServer) -> None:
    """Serve over stdio until the client closes the stream (logs go to stderr)."""
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    from moddesk.kit.agents.skills import sync_after_upgrade

    sync_after_upgrade()  # an upgrade restarts this process first: unedited installed skills follow it
    server.run("stdio")


def caller_scope(ctx: Context[Any] | None) -> str:
    """The request-ledger scope of a tool call: the client's declared name, else the local scope.

    Client info is optional in the protocol; without it every local caller shares one scope
    (seed 001: local connections share tasks and plans).
    """
    if ctx is None:
        return LOCAL_SCOPE
    try:
        params = getattr(ctx.request_context.session, "client_params", None)
    except (AttributeError, LookupError, ValueError):
        return LOCAL_SCOPE
    info = getattr(params, "client_info", None) if params is not None else None
    name = getattr(info, "name", None)
    return f"client:{name}" if isinstance(name, str) and name else LOCAL_SCOPE
