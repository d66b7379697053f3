"""``moddesk pvf serve``: one process holding the service and its MCP endpoint on 127.0.0.1.

The MCP settings (enabled, preferred port) persist in ``pvf.toml`` in the moddesk config folder
(``MODDESK_CONFIG_DIR`` overrides it), like the seed's settings-page switch.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import platformdirs
import tomlkit
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute, Route

from moddesk.kit.agents.clients import ServerSpec, snippet
from moddesk.kit.errors import ServiceError
from moddesk.kit.files import atomic_write_text
from moddesk.kit.http import LoopbackServer
from moddesk.kit.leftovers import sweep_remembered, sweep_stale, system_temp_dir
from moddesk.kit.mcp import serve_http
from moddesk.pvf.mcp import DEFAULT_TOOLSETS, TOOLSETS, build_workbench_server, parse_toolsets
from moddesk.pvf.service import PvfService
from moddesk.pvf.web.routes import PAGE_PATH, web_routes

DEFAULT_PORT = 47815
SERVER_NAME = "moddesk-pvf"
MCP_PATH = "/mcp"


@dataclass(frozen=True)
class McpSettings:
    """Whether the MCP endpoint is on, which port it prefers, and the tool families it offers."""

    enabled: bool = True
    port: int = DEFAULT_PORT
    toolsets: tuple[str, ...] = DEFAULT_TOOLSETS


def settings_path() -> Path:
    """Where the pvf settings live."""
    folder = os.environ.get("MODDESK_CONFIG_DIR") or platformdirs.user_config_dir("moddesk")
    return Path(folder) / "pvf.toml"


def index_cache_dir() -> Path:
    """Where search indexes are cached, by archive content hash (``MODDESK_CACHE_DIR`` overrides)."""
    folder = os.environ.get("MODDESK_CACHE_DIR") or platformdirs.user_cache_dir("moddesk")
    return Path(folder) / "pvf-index"


def rules_dir() -> Path:
    """The folder of the user's annotation rule files (``*.json``)."""
    return settings_path().parent / "annotations"


def load_settings(path: Path | None = None) -> McpSettings:
    """The saved settings, defaults when there are none; CONFIG_INVALID if the file is unreadable."""
    target = path or settings_path()
    try:
        text = target.read_text(encoding="utf-8")
    except FileNotFoundError:
        return McpSettings()
    try:
        section = tomlkit.parse(text).unwrap().get("mcp", {})
    except tomlkit.exceptions.TOMLKitError as exc:
        raise _config_invalid(target, str(exc)) from exc
    if not isinstance(section, dict):
        raise _config_invalid(target, "[mcp] must be a table")
    enabled = section.get("enabled", True)
    port = section.get("port", DEFAULT_PORT)
    if not isinstance(enabled, bool):
        raise _config_invalid(target, "mcp.enabled must be true or false")
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise _config_invalid(target, "mcp.port must be a whole number from 0 to 65535")
    toolsets = section.get("toolsets", list(DEFAULT_TOOLSETS))
    if not isinstance(toolsets, list) or not all(isinstance(t, str) for t in toolsets):
        raise _config_invalid(target, "mcp.toolsets must be a list of names")
    try:
        chosen = parse_toolsets(toolsets)
    except ServiceError as exc:
        raise _config_invalid(target, exc.message) from exc
    return McpSettings(enabled, port, chosen)


def _config_invalid(path: Path, problem: str) -> ServiceError:
    return ServiceError(
        "CONFIG_INVALID",
        f"{path} is not valid: {problem}",
        hint="Fix or delete the file; it was left untouched.",
        path=str(path),
    )


def save_settings(settings: McpSettings, path: Path | None = None) -> Path:
    """Persist the settings, keeping any other content and comments of the file."""
    target = path or settings_path()
    try:
        document = tomlkit.parse(target.read_text(encoding="utf-8"))
    except FileNotFoundError:
        document = tomlkit.document()
    section = document.get("mcp")
    if section is None:
        section = tomlkit.table()
        document["mcp"] = section
    section["enabled"] = settings.enabled
    section["port"] = settings.port
    section["toolsets"] = list(settings.toolsets)
    target.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(target, tomlkit.dumps(document))
    return target


def client_config(url: str) -> str:
    """The copy-paste MCP client config for this server."""
    return snippet(None, ServerSpec(SERVER_NAME, url=url))


def _error_response(error: ServiceError) -> JSONResponse:
    status = 404 if error.code in ("NOT_FOUND", "TASK_NOT_FOUND") else 400
    return JSONResponse(error.to_payload(), status_code=status)


async def _body(request: Request) -> dict[str, Any]:
    try:
        data = await request.json()
    except ValueError as exc:
        raise ServiceError("INVALID_ARGUMENT", "the body is not JSON", hint="Send a JSON object.") from exc
    if not isinstance(data, dict):
        raise ServiceError("INVALID_ARGUMENT", "the body is not a JSON object", hint="Send a JSON object.")
    return data


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
        Route("/api/workspace", workspace, methods=["GET"]),
        Route("/api/windows", register, methods=["POST"]),
        Route("/api/windows/{window}", leave, methods=["DELETE"]),
        Route("/api/windows/{window}/draft", draft, methods=["POST"]),
        Route("/api/windows/{window}/pending", pending, methods=["GET"]),
        Route("/api/windows/{window}/ack", ack, methods=["POST"]),
    ]


def sweep_leftovers() -> list[Path]:
    """Remove what killed exports and import spills of earlier runs left (dead owners only)."""
    return sweep_remembered() + sweep_stale([system_temp_dir()])


class Workbench:
    """The service plus its MCP endpoint and window routes on a loopback port (0 = any free port)."""

    def __init__(
        self,
        service: PvfService | None = None,
        port: int = DEFAULT_PORT,
        toolsets: tuple[str, ...] = TOOLSETS,
    ) -> None:
        self.swept = sweep_leftovers()
        self.service = service or PvfService(rules_dir=rules_dir(), index_cache=index_cache_dir())
        routes = window_routes(self.service) + web_routes(self.service, lambda: self.url)
        self.server: LoopbackServer = serve_http(build_workbench_server(self.service, toolsets), port, routes)

    @property
    def url(self) -> str:
        return f"{self.server.url}{MCP_PATH}"

    @property
    def page_url(self) -> str:
        """The person's page (the workbench in the browser)."""
        return f"{self.server.url}{PAGE_PATH}"

    def open_at_start(
        self, archive: Path, timeout: float = 600.0, *, region: str | None = None
    ) -> dict[str, Any]:
        """Open ``archive`` before serving (the same lifecycle path a client uses)."""
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
            self.service.shutdown()

    def stop(self) -> None:
        self.server.stop()
        self.service.shutdown()

    def __enter__(self) -> Workbench:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
