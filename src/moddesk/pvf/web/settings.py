"""The settings page's operations: the saved MCP settings and a copy-paste config per client."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from moddesk.kit.agents.clients import CLIENTS, Client, ServerSpec, snippet
from moddesk.kit.errors import ServiceError
from moddesk.pvf.web.ops import Args


def _client_config(client: Client, spec: ServerSpec) -> dict[str, Any]:
    """The client's snippet, or why it has none (some clients cannot take a URL in their file)."""
    try:
        return {"id": client.id, "name": client.title, "config": snippet(client, spec), "note": None}
    except ServiceError as exc:
        return {"id": client.id, "name": client.title, "config": None, "note": f"{exc.message} ({exc.hint})"}


def settings_ops(
    mcp_url: Callable[[], str], token: Callable[[], str | None] = lambda: None
) -> dict[str, Callable[[Args], Any]]:
    """``settings`` reads, ``settingsSave`` writes ``pvf.toml`` (applied at the next start)."""
    from moddesk.pvf.serve import SERVER_NAME, McpSettings, load_settings, save_settings, settings_path

    def read(_: Args) -> dict[str, Any]:
        saved = load_settings()
        url = mcp_url()
        bearer = token()  # the running serve's token: the snippets work as pasted, for this run
        spec = ServerSpec(
            SERVER_NAME, url=url, headers={"Authorization": f"Bearer {bearer}"} if bearer else {}
        )
        return {
            "ok": True,
            "enabled": saved.enabled,
            "port": saved.port,
            "path": str(settings_path()),
            "url": url,
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
