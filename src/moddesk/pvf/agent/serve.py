"""``moddesk pvf serve``: one process holding the service and its MCP endpoint on 127.0.0.1.

The MCP settings (enabled, preferred port) persist in ``pvf.toml`` in the moddesk config folder
(``MODDESK_CONFIG_DIR`` overrides it), like the seed's settings-page switch.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from types import FrameType
from typing import Any

from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import BaseRoute, Route

from moddesk.kit.errors import ServiceError
from moddesk.kit.http import BodyTooLarge, LoopbackServer, read_json_body
from moddesk.kit.leftovers import sweep_remembered, sweep_stale, system_temp_dir
from moddesk.kit.local_service import http_client, new_token, publish, withdraw
from moddesk.kit.mcp import serve_http
from moddesk.kit.person import PERSON_SCHEME, PersonGate, publish_person, withdraw_person
from moddesk.kit.roots import grant
from moddesk.pvf.agent.mcp import build_workbench_server
from moddesk.pvf.service import PvfService
from moddesk.pvf.settings import (
    DEFAULT_PORT,
    index_cache_dir,
    rules_dir,
    settings_path,
)
from moddesk.pvf.toolsets import TOOLSETS
from moddesk.pvf.web.access import PVF_ACCESS
from moddesk.pvf.web.routes import PAGE_PATH, web_routes
from moddesk.pvf.workbench.roots import workbench_roots

MAX_WINDOW_BODY = 1 << 20  # window/draft JSON bodies
MAX_REQUEST_BODY = 16 << 20  # any request (MCP calls carry script text)
MCP_PATH = "/mcp"


def _error_response(error: ServiceError) -> JSONResponse:
    status = 404 if error.code in ("NOT_FOUND", "TASK_NOT_FOUND") else 400
    return JSONResponse(error.to_payload(), status_code=status)


class _TooLarge(Exception):
    pass


async def _body(request: Request) -> dict[str, Any]:
    """The JSON object of a window request: read as a stream, 1 MiB at most, nesting bounded."""
    try:
        data = await read_json_body(request.stream(), MAX_WINDOW_BODY)
    except BodyTooLarge as exc:
        raise _TooLarge() from exc
    except UnicodeDecodeError as exc:
        raise ServiceError("INVALID_ARGUMENT", "the body is not UTF-8", hint="Send a JSON object.") from exc
    except ClientDisconnect as exc:
        raise _TooLarge() from exc  # the guard stopped reading at its cap
    if not isinstance(data, dict):
        raise ServiceError("INVALID_ARGUMENT", "the body is not a JSON object", hint="Send a JSON object.")
    return data


def _bounded(
    handler: Callable[[Request], Awaitable[JSONResponse]],
) -> Callable[[Request], Awaitable[Response]]:
    """413 for an oversized body, 400 for any other bad input: never a 500."""

    async def run(request: Request) -> Response:
        try:
            return await handler(request)
        except _TooLarge:
            return PlainTextResponse(f"Request body over {MAX_WINDOW_BODY} bytes", status_code=413)
        except (ServiceError, ValueError, TypeError) as exc:
            error = exc if isinstance(exc, ServiceError) else ServiceError("INVALID_ARGUMENT", str(exc))
            return _error_response(error)

    return run


def window_routes(service: PvfService) -> list[BaseRoute]:
    """JSON routes editor windows (the web page) use to report drafts and answer prepare requests.

    ``POST /api/windows`` {windowId, kind} registers; ``POST /api/windows/{id}/draft`` {dirty,
    generation} reports; ``GET /api/windows/{id}/pending`` lists operations waiting for an ack;
    ``POST /api/windows/{id}/ack`` {operationId, dirty} answers; ``DELETE /api/windows/{id}``
    leaves; ``GET /api/workspace`` is the workspace info.
    """

    async def workspace(request: Request) -> JSONResponse:
        return JSONResponse(service.info())

    async def register(request: Request) -> JSONResponse:
        try:
            body = await _body(request)
            window_id = str(body.get("windowId") or "")
            if not window_id or len(window_id) > 128:
                raise ServiceError("INVALID_ARGUMENT", "windowId is required", hint="Send a short windowId.")
            service.drafts.register(window_id, str(body.get("kind") or "editor"))
        except ServiceError as exc:
            return _error_response(exc)
        return JSONResponse({"ok": True, "windowId": window_id})

    async def leave(request: Request) -> JSONResponse:
        service.drafts.unregister(request.path_params["window"])
        return JSONResponse({"ok": True})

    async def draft(request: Request) -> JSONResponse:
        try:
            body = await _body(request)
            service.drafts.report(
                request.path_params["window"], bool(body.get("dirty")), int(body.get("generation", 0))
            )
        except (ServiceError, ValueError, TypeError) as exc:
            error = exc if isinstance(exc, ServiceError) else ServiceError("INVALID_ARGUMENT", str(exc))
            return _error_response(error)
        return JSONResponse({"ok": True})

    async def pending(request: Request) -> JSONResponse:
        window = request.path_params["window"]
        return JSONResponse(
            {"ok": True, "operations": service.drafts.pending(window), "frozen": service.drafts.frozen}
        )

    async def ack(request: Request) -> JSONResponse:
        try:
            body = await _body(request)
            service.drafts.ack(
                str(body.get("operationId", "")), request.path_params["window"], bool(body.get("dirty"))
            )
        except ServiceError as exc:
            return _error_response(exc)
        return JSONResponse({"ok": True})

    return [
        Route("/api/workspace", _bounded(workspace), methods=["GET"]),
        Route("/api/windows", _bounded(register), methods=["POST"]),
        Route("/api/windows/{window}", _bounded(leave), methods=["DELETE"]),
        Route("/api/windows/{window}/draft", _bounded(draft), methods=["POST"]),
        Route("/api/windows/{window}/pending", _bounded(pending), methods=["GET"]),
        Route("/api/windows/{window}/ack", _bounded(ack), methods=["POST"]),
    ]


def sweep_leftovers() -> list[Path]:
    """Remove what killed exports and import spills of earlier runs left (dead owners only)."""
    return sweep_remembered() + sweep_stale([system_temp_dir()])


def endpoint_path() -> Path:
    """The per-user endpoint file of the running `moddesk pvf serve` (url + bearer token, 0600)."""
    return settings_path().parent / "endpoints" / "pvf.json"


class Workbench:
    """The service plus its MCP endpoint and window routes on a loopback port (0 = any free port)."""

    def __init__(
        self,
        service: PvfService | None = None,
        port: int = DEFAULT_PORT,
        toolsets: tuple[str, ...] = TOOLSETS,
        roots: Iterable[str | os.PathLike[str]] = (),
        token: str | None = None,
    ) -> None:
        """Agents reach only the roots: the moddesk workspace, ``roots`` and the open archive's folder."""
        self.swept = sweep_leftovers()
        self.service = service or PvfService(rules_dir=rules_dir(), index_cache=index_cache_dir())
        granted = workbench_roots(roots)
        current = self.service.roots
        self.service.roots = granted if current is None else current.with_roots(granted.roots)
        self.token = token or new_token()  # the agent's: opens /mcp only
        self.person = PersonGate(system="pvf")  # the person's: login links, sessions, CSRF
        routes = window_routes(self.service) + web_routes(self.service, lambda: self.url, lambda: self.token)
        self.server: LoopbackServer = serve_http(
            build_workbench_server(self.service, toolsets),
            port,
            routes,
            bearer_token=self.token,
            max_body=MAX_REQUEST_BODY,
            policy=PVF_ACCESS,
            person=self.person,
        )
        self._endpoint: Path | None = None

    @property
    def url(self) -> str:
        return f"{self.server.url}{MCP_PATH}"

    @property
    def page_url(self) -> str:
        """The person's page (the workbench in the browser)."""
        return f"{self.server.url}{PAGE_PATH}"

    def login_link(self, next_path: str = PAGE_PATH) -> str:
        """A fresh one-time login link for the person (the serve terminal prints one; `pvf open`
        mints more from the person file). Never give it to the agent."""
        return self.person.login_link(self.server.url, next_path)

    def person_headers(self) -> dict[str, str]:
        """The header the person's own CLI sends (the key from the 0600 person file)."""
        return {"Authorization": f"{PERSON_SCHEME} {self.person.key}"}

    def client(self) -> contextlib.AbstractAsyncContextManager[Any]:
        """An SDK Client for this workbench's MCP endpoint, sending the bearer token."""
        return http_client(self.url, self.token)

    def publish_endpoint(self, path: Path | None = None) -> Path:
        """Write the endpoint file (url + agent token, mode 0600) clients and `pvf connect` read,
        and beside it the person file (the person key, 0600) only `moddesk pvf open` reads."""
        target = path or endpoint_path()
        publish(target, self.server.url, self.token)
        publish_person(target, self.server.url, self.person.key)
        self._endpoint = target
        return target

    def open_at_start(
        self, archive: Path, timeout: float = 600.0, *, region: str | None = None
    ) -> dict[str, Any]:
        """Open ``archive`` before serving (the person named it: its folder becomes a root)."""
        roots = self.service.roots
        assert roots is not None
        self.service.roots = roots.with_roots(
            [grant(archive.resolve().parent, "folder of the archive you opened")]
        )
        handle = self.service.open(str(archive.resolve()), self.service.epoch, region=region)
        status = self.service.tasks.wait(handle["taskId"], timeout)
        if status["state"] != "succeeded":
            error = status.get("error") or {}
            raise ServiceError(
                error.get("error", "OPEN_FAILED"), error.get("message", "open failed"), error.get("hint")
            )
        result: dict[str, Any] = status["result"]
        return result

    def start(self) -> Workbench:
        self.server.start()
        return self

    def serve_forever(self) -> None:
        try:
            self.server.serve_forever()
        finally:
            self._withdraw()
            self.service.shutdown()

    def run(self, then: Callable[[], None] = lambda: None) -> None:
        """Serve until SIGINT/SIGTERM (main thread): start answering, run ``then`` (open an archive,
        print the banner) beside it, wait; a signal at any moment — also during ``then`` — stops cleanly.

        The signal handler only sets an event. Raising from it instead (to leave a blocking ``then``)
        could land inside the import machinery, where the exception is swallowed and the module
        lock it interrupted stays taken: the server then never stopped (seen in a CI run).
        """
        stop = threading.Event()
        failed: list[BaseException] = []

        def on_signal(signum: int, frame: FrameType | None) -> None:
            stop.set()

        def opening() -> None:
            try:
                then()
            except BaseException as exc:  # handed to the main thread, which raises it there
                failed.append(exc)
                stop.set()

        previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            self.start()
            threading.Thread(target=opening, name="moddesk-pvf-start", daemon=True).start()
            while not stop.wait(0.5):
                pass
            if failed:
                raise failed[0]
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            self.stop()

    def stop(self) -> None:
        self._withdraw()
        self.server.stop()
        self.service.shutdown()

    def _withdraw(self) -> None:
        if self._endpoint is not None:
            withdraw(self._endpoint, self.token)
            withdraw_person(self._endpoint, self.person.key)
            self._endpoint = None

    def __enter__(self) -> Workbench:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
