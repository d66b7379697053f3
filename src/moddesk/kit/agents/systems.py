"""How each moddesk system's MCP server is started, as a client config entry."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from moddesk.kit.agents.clients import ServerSpec
from moddesk.kit.errors import ServiceError


@dataclass(frozen=True)
class SystemServer:
    """A system's default server name and the launcher arguments of its stdio server (None = HTTP only)."""

    name: str
    stdio_args: tuple[str, ...] | None
    http_hint: str = ""


SYSTEM_SERVERS: dict[str, SystemServer] = {
    # pvf is one long-running process (service + web page + MCP over Streamable HTTP)
    # stdio clients reach it through `moddesk pvf connect`, a bridge to the running serve
    "pvf": SystemServer("moddesk-pvf", ("pvf", "connect"), "Start `moddesk pvf serve`."),
    # the server name matches the one the ra3 skill tells the agent to use
    "ra3": SystemServer("ra3-mod-xml", ("ra3", "mcp")),
    "xiangqi": SystemServer("moddesk-xiangqi", ("xiangqi", "mcp")),
}


def system_server(
    system: str,
    launcher: Path,
    extra_args: Sequence[str] = (),
    url: str | None = None,
    name: str | None = None,
    env: Mapping[str, str] | None = None,
    headers: Mapping[str, str] | None = None,
) -> ServerSpec:
    """The ServerSpec for ``system``: the launcher with its stdio args, or ``url`` when given."""
    server = SYSTEM_SERVERS.get(system)
    if server is None:
        raise ServiceError(
            "INVALID_ARGUMENT",
            f"unknown system {system!r}",
            hint=f"Choose one of: {', '.join(SYSTEM_SERVERS)}.",
        )
    if url is not None:
        if not url.startswith(("http://", "https://")):
            raise ServiceError("INVALID_ARGUMENT", f"not an http(s) URL: {url!r}")
        return ServerSpec(name or server.name, url=url, headers=dict(headers or {}))
    if server.stdio_args is None:
        raise ServiceError(
            "CONFIG_UNSUPPORTED",
            f"the {system} MCP server is reached over Streamable HTTP only",
            hint=server.http_hint + " (--url http://127.0.0.1:PORT/mcp)",
            system=system,
        )
    return ServerSpec(
        name or server.name,
        command=str(launcher),
        args=(*server.stdio_args, *extra_args),
        env=dict(env or {}),
    )
