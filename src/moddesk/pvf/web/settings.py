"""The settings page's operations: the saved MCP settings and a copy-paste config per client."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from moddesk.kit.agents.clients import CLIENTS, Client, ServerSpec, snippet
from moddesk.kit.errors import ServiceError
from moddesk.pvf.service import PvfService
from moddesk.pvf.settings import McpSettings, load_settings, save_settings, settings_path
from moddesk.pvf.web.ops import Args


def _client_config(client: Client, spec: ServerSpec) -> dict[str, Any]:
    """The client's snippet, or why it has none (some clients cannot take a URL in their file)."""
    try:
        return {"id": client.id, "name": client.title, "config": snippet(client, spec), "note": None}
    except ServiceError as exc:
        note_zh = exc.to_payload().get("errorZh")
        return {
            "id": client.id,
            "name": client.title,
            "config": None,
            "note": f"{exc.message} ({exc.hint})",
            "noteZh": note_zh,
        }


def settings_ops(
    service: PvfService, mcp_url: Callable[[], str], token: Callable[[], str | None]
) -> dict[str, Callable[[Args], Any]]:
    """``settings`` reads, ``settingsSave`` writes ``pvf.toml`` (applied at the next start).

    Both are the person's (``pvf.web.access``). The copy-paste client configs start the stdio
    bridge (``moddesk-mcp pvf connect``), which reads the run's token itself: no config holds a
    secret. The token is shown on its own for a person who wants an HTTP config by hand.
    """
    from moddesk.kit.agents.launcher import launcher_path
    from moddesk.kit.agents.locations import Locations
    from moddesk.kit.agents.systems import system_server

    def read(_: Args) -> dict[str, Any]:
        saved = load_settings()
        spec = system_server("pvf", launcher_path(Locations.from_env()))
        return {
            "ok": True,
            "enabled": saved.enabled,
            "port": saved.port,
            "path": str(settings_path()),
            "url": mcp_url(),
            "token": token(),
            "roots": service.access_roots().describe(),
            "clients": [_client_config(c, spec) for c in CLIENTS.values()]
            + [{"id": "json", "name": "JSON", "config": snippet(None, spec), "note": None}],
        }

    def write(a: Args) -> dict[str, Any]:
        wanted = McpSettings(a.flag("enabled"), a.number("port"), load_settings().toolsets)
        if not 0 <= wanted.port <= 65535:
            raise ServiceError("INVALID_ARGUMENT", "port must be 0..65535", field="port")
        where = save_settings(wanted)
        return {"ok": True, "path": str(where), "appliesAt": "next start"}

    return {"settings": read, "settingsSave": write}
