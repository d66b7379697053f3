"""pvf's saved settings (``pvf.toml``): the MCP endpoint (on/off, port, toolsets) and where the
caches and the user's annotation rules live.

Below both the workbench server (``agent/serve.py``) and the page (``web/settings.py``), which read
and write them; nothing here imports an adapter.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import platformdirs
import tomlkit

from moddesk.kit.agents.clients import ServerSpec, snippet
from moddesk.kit.errors import ServiceError
from moddesk.kit.files import atomic_write_text
from moddesk.kit.local_service import auth_headers
from moddesk.pvf.toolsets import DEFAULT_TOOLSETS, parse_toolsets

DEFAULT_PORT = 47815
SERVER_NAME = "moddesk-pvf"


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


def client_config(url: str, token: str | None = None) -> str:
    """The copy-paste MCP client config for this server (with its bearer token header)."""
    headers = auth_headers(token) if token else {}
    return snippet(None, ServerSpec(SERVER_NAME, url=url, headers=headers))
