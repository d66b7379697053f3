"""``logging/setLevel``: the server's own log records (``moddesk.*`` loggers) as MCP notifications.

A client that sets a level receives every later record at or above it as a
``notifications/message`` on its session, from whichever thread logged it. Sessions are held
weakly: a client that leaves is simply dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import weakref
from typing import Any

from mcp.server import MCPServer
from mcp.server.context import ServerRequestContext
from mcp.types import EmptyResult, SetLevelRequestParams

# MCP (syslog) levels to Python's; the three above critical all map to it
PY_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": logging.INFO + 5,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "alert": logging.CRITICAL,
    "emergency": logging.CRITICAL,
}
ROOT = "moddesk"


def _mcp_level(levelno: int) -> str:
    if levelno >= logging.CRITICAL:
        return "critical"
    if levelno >= logging.ERROR:
        return "error"
    if levelno >= logging.WARNING:
        return "warning"
    if levelno >= logging.INFO + 5:
        return "notice"
    return "info" if levelno >= logging.INFO else "debug"


class LogRelay(logging.Handler):
    """Forwards records to the connections that asked for them, each at its own level (on the
    standalone stream: the records belong to no request)."""

    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self._lock = threading.Lock()
        self._sessions: weakref.WeakKeyDictionary[Any, tuple[int, asyncio.AbstractEventLoop]] = (
            weakref.WeakKeyDictionary()
        )

    def subscribe(self, connection: Any, level: str, loop: asyncio.AbstractEventLoop) -> None:
        with self._lock:
            self._sessions[connection] = (PY_LEVELS[level], loop)
            lowest = min(lvl for lvl, _loop in self._sessions.values())
        logger = logging.getLogger(ROOT)
        if logger.getEffectiveLevel() > lowest:
            logger.setLevel(lowest)  # records below the logger's level would never reach us

    def emit(self, record: logging.LogRecord) -> None:
        with self._lock:
            targets = [(s, loop) for s, (lvl, loop) in self._sessions.items() if record.levelno >= lvl]
        if not targets:
            return
        data = {"message": record.getMessage()}
        level = _mcp_level(record.levelno)
        for session, loop in targets:
            with contextlib.suppress(RuntimeError):  # the loop closed: the client is gone
                loop.call_soon_threadsafe(self._send, session, level, data, record.name)

    @staticmethod
    def _send(connection: Any, level: str, data: dict[str, str], name: str) -> None:
        async def send() -> None:
            with contextlib.suppress(Exception):  # best effort: a closed stream has no one to tell
                params = {"level": level, "data": data, "logger": name}
                await connection.notify("notifications/message", params)

        task = asyncio.ensure_future(send())
        _pending.add(task)
        task.add_done_callback(_pending.discard)


_pending: set[asyncio.Future[None]] = set()
_relay: LogRelay | None = None


def _shared_relay() -> LogRelay:
    global _relay
    if _relay is None:
        _relay = LogRelay()
        logging.getLogger(ROOT).addHandler(_relay)
    return _relay


def enable_logging(server: MCPServer) -> None:
    """Serve ``logging/setLevel`` (which also declares the logging capability)."""

    async def set_level(ctx: ServerRequestContext[Any], params: SetLevelRequestParams) -> EmptyResult:
        # ctx.session is a per-request proxy; the connection lives as long as the client's session
        connection = getattr(ctx.session, "_connection", ctx.session)
        _shared_relay().subscribe(connection, params.level, asyncio.get_running_loop())
        logging.getLogger(f"{ROOT}.mcp").info("log level set to %s", params.level)
        return EmptyResult()

    server._lowlevel_server.add_request_handler("logging/setLevel", SetLevelRequestParams, set_level)
