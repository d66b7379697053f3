"""Where a running local service (``moddesk pvf serve``, ``moddesk xiangqi serve``) can be found.

Each run makes a random bearer token and writes ``{url, token, processId, …}`` to a per-user
endpoint file (mode 0600 in a 0700 folder, like ``ra3 watch``); clients, ``moddesk agents
config`` and the stdio ``connect`` bridges read it. Only the process that wrote a file removes
it, and only while it still holds that process's token.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import psutil

from moddesk.kit.errors import ServiceError
from moddesk.kit.files import atomic_write_text


def new_token() -> str:
    """A fresh bearer token for one run of a service."""
    return secrets.token_urlsafe(32)


def auth_headers(token: str) -> dict[str, str]:
    """The header every request to a token-protected local service carries."""
    return {"Authorization": f"Bearer {token}"}


@dataclass(frozen=True)
class ServiceEndpoint:
    """One running service as its endpoint file records it."""

    url: str
    token: str
    processId: int
    processCreateTime: float | None
    startedAt: str
    hasMcp: bool = True  # False: the service offers its person's channel only (no /mcp)

    @property
    def mcp_url(self) -> str:
        return f"{self.url}/mcp"

    def alive(self) -> bool:
        """The recorded process still runs (and is the same one: pid reuse is checked)."""
        try:
            proc = psutil.Process(self.processId)
            if proc.status() == psutil.STATUS_ZOMBIE:
                return False
            created = self.processCreateTime
            return created is None or abs(proc.create_time() - created) <= 1.0
        except (psutil.NoSuchProcess, psutil.ZombieProcess, ValueError):
            return False
        except psutil.AccessDenied:
            return True


def write_private(path: Path, text: str) -> None:
    """Atomic write of a file only the user may read (it holds a bearer token)."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    if sys.platform != "win32":
        # the atomic writer keeps the mode of the file it replaces: start from an empty 0600 file
        with contextlib.suppress(FileExistsError):
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        os.chmod(path, 0o600)
    atomic_write_text(path, text)


def publish(path: Path, url: str, token: str, *, has_mcp: bool = True) -> ServiceEndpoint:
    """Record this process as the service at ``url`` in ``path``."""
    pid = os.getpid()
    try:
        created: float | None = float(psutil.Process(pid).create_time())
    except psutil.Error:
        created = None
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    record = ServiceEndpoint(url, token, pid, created, started, has_mcp)
    # "pid" too: older readers of these files (the xiangqi CLI's coexistence check) look for it
    write_private(path, json.dumps({**asdict(record), "pid": pid}, indent=2) + "\n")
    return record


def read(path: Path) -> ServiceEndpoint | None:
    """The endpoint in ``path``; None when absent, unreadable or its process is gone."""
    try:
        data: Any = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    url, token, pid = data.get("url"), data.get("token"), data.get("processId")
    if not (isinstance(url, str) and isinstance(token, str) and isinstance(pid, int)):
        return None
    created = data.get("processCreateTime")
    record = ServiceEndpoint(
        url,
        token,
        pid,
        float(created) if isinstance(created, int | float) else None,
        str(data.get("startedAt", "")),
        data.get("hasMcp", True) is not False,
    )
    return record if record.alive() else None


def withdraw(path: Path, token: str) -> None:
    """Remove ``path`` if it still holds our token (a newer run's file is left alone)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    if isinstance(data, dict) and data.get("token") == token and data.get("processId") == os.getpid():
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


def require(path: Path, command: str) -> ServiceEndpoint:
    """The running service recorded in ``path``, or ``NOT_RUNNING`` saying how to start it."""
    record = read(path)
    if record is None or not record.hasMcp:
        raise ServiceError(
            "NOT_RUNNING",
            f"no running service is recorded in {path}",
            hint=f"Start it first: `{command}`.",
            path=str(path),
        )
    return record


@contextlib.asynccontextmanager
async def http_client(url: str, token: str) -> AsyncIterator[Any]:
    """An SDK ``Client`` for a token-protected Streamable HTTP endpoint."""
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    async with (
        create_mcp_http_client(headers=auth_headers(token)) as http,
        Client(streamable_http_client(url, http_client=http), read_timeout_seconds=600) as client,
    ):
        yield client


async def bridge_stdio(url: str, token: str) -> None:
    """Relay MCP messages between this process's stdio and a Streamable HTTP endpoint (for
    stdio-only clients); ends when either side closes."""
    import anyio
    from mcp.client.streamable_http import streamable_http_client
    from mcp.server.stdio import stdio_server
    from mcp.shared._httpx_utils import create_mcp_http_client

    async with (
        create_mcp_http_client(headers=auth_headers(token)) as http,
        streamable_http_client(url, http_client=http) as (remote_read, remote_write),
        stdio_server() as (local_read, local_write),
        anyio.create_task_group() as group,
    ):

        async def pump(source: Any, sink: Any) -> None:
            async with sink:
                async for message in source:
                    if isinstance(message, Exception):
                        continue  # a transport hiccup on one side is not a message for the other
                    await sink.send(message)
            group.cancel_scope.cancel()

        group.start_soon(pump, local_read, remote_write)
        group.start_soon(pump, remote_read, local_write)
