"""The page's HTTP side: static files at ``/pvf/``, ``POST /api/ops/{name}`` and ``GET /api/events``.

Every route sits behind the server's Host/Origin (+ bearer token) guard, like the MCP endpoint.
Operations run on a worker thread: a lifecycle call waits for the editors' acks, which arrive
on other requests, so the event loop must stay free.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import anyio
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from moddesk.kit.errors import ServiceError
from moddesk.kit.http import MAX_JSON_DEPTH, json_depth
from moddesk.pvf.service import PvfService
from moddesk.pvf.web.ops import Args, call
from moddesk.pvf.web.settings import settings_ops

STATIC_DIR = Path(__file__).parent / "static"
PAGE_PATH = "/pvf/"
MAX_BODY = 4 * 1024 * 1024
# how often the event stream looks at tasks, plans and editor prepares besides pushed events
POLL_SECONDS = 0.2
logger = logging.getLogger("moddesk.pvf.web")


def _error(exc: ServiceError, status: int = 200) -> JSONResponse:
    return JSONResponse(browser_json(exc.to_payload()), status_code=status)


# JavaScript numbers hold integers exactly only up to 2^53; file identities carry nanosecond
# mtimes beyond that, so bigger integers travel as decimal strings (ops.Args reads them back).
_SAFE_INT = 2**53


def browser_json(value: Any) -> Any:
    """``value`` with every integer a browser cannot hold exactly turned into its decimal string."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return str(value) if abs(value) >= _SAFE_INT else value
    if isinstance(value, dict):
        return {k: browser_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [browser_json(v) for v in value]
    return value


def _sse(event: str, data: Any) -> str:
    return f"event: {event}\ndata: {json.dumps(browser_json(data), ensure_ascii=False, default=str)}\n\n"


def web_routes(
    service: PvfService, mcp_url: Callable[[], str], token: Callable[[], str | None] = lambda: None
) -> list[BaseRoute]:
    """The page, its operations and its event stream over ``service`` (``token``: the run's bearer token)."""
    extra = settings_ops(service, mcp_url, token)

    async def op(request: Request) -> Response:
        name = request.path_params["name"]
        raw = await request.body()
        if len(raw) > MAX_BODY:
            return _error(ServiceError("INVALID_ARGUMENT", "the request body is too large"), 413)
        try:
            # the depth first: json.loads of 100,000 nested [ raises RecursionError (it was a 500)
            if json_depth(raw.decode("utf-8")) > MAX_JSON_DEPTH:
                return _error(
                    ServiceError("INVALID_ARGUMENT", f"the JSON nests deeper than {MAX_JSON_DEPTH} levels"),
                    400,
                )
            body = json.loads(raw or b"{}")
        except (ValueError, UnicodeDecodeError):
            return _error(ServiceError("INVALID_ARGUMENT", "the request body is not JSON"), 400)
        if not isinstance(body, dict):
            return _error(ServiceError("INVALID_ARGUMENT", "the request body is not a JSON object"), 400)
        try:
            if name in extra:
                value = await anyio.to_thread.run_sync(extra[name], Args(body))
            else:
                value = await anyio.to_thread.run_sync(call, service, name, body)
        except ServiceError as exc:
            return _error(exc)
        except Exception:
            logger.exception("page operation %s crashed", name)
            return _error(ServiceError("INTERNAL_ERROR", f"{name} failed unexpectedly"), 500)
        return JSONResponse(browser_json(value))

    async def events(request: Request) -> Response:
        window = request.query_params.get("window", "")
        if not window or len(window) > 128:
            return _error(ServiceError("INVALID_ARGUMENT", "window is required"), 400)
        return StreamingResponse(
            _event_stream(service, window),
            media_type="text/event-stream",
            headers={"cache-control": "no-store", "x-accel-buffering": "no"},
        )

    async def root(request: Request) -> Response:
        query = f"?{request.url.query}" if request.url.query else ""
        return RedirectResponse(PAGE_PATH + query)

    return [
        Route("/api/ops/{name}", op, methods=["POST"]),
        Route("/api/events", events, methods=["GET"]),
        Route("/", root, methods=["GET"]),
        Mount(PAGE_PATH.rstrip("/"), app=StaticFiles(directory=STATIC_DIR, html=True)),
    ]


async def _event_stream(service: PvfService, window: str) -> AsyncIterator[str]:
    """Service events as they happen, plus the workspace / activity / prepare state when it changes.

    The stream registers the page as an editor window for as long as it is connected, so a
    closed tab never leaves the drafts barrier waiting for an answer.
    """
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[tuple[str, dict[str, Any]]] = asyncio.Queue()

    def listener(event: str, payload: dict[str, Any]) -> None:
        loop.call_soon_threadsafe(queue.put_nowait, (event, payload))

    service.drafts.register(window, "editor")
    service.listeners.append(listener)
    last: dict[str, str] = {}
    try:
        yield _sse("hello", {"window": window})
        while True:
            try:
                event, payload = await asyncio.wait_for(queue.get(), POLL_SECONDS)
                yield _sse(event, payload)
            except TimeoutError:
                pass
            pending = service.drafts.pending(window)
            state = {
                "prepare": pending,
                "frozen": service.drafts.frozen,
                "info": await anyio.to_thread.run_sync(service.info),
                "activity": await anyio.to_thread.run_sync(call, service, "activity", {}),
            }
            for name, value in state.items():
                text = json.dumps(browser_json(value), ensure_ascii=False, sort_keys=True, default=str)
                if last.get(name) != text:
                    last[name] = text
                    if name != "prepare" or value:  # an empty prepare list needs no answer
                        yield f"event: {name}\ndata: {text}\n\n"
    finally:
        if listener in service.listeners:
            service.listeners.remove(listener)
        service.drafts.unregister(window)
