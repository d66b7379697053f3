"""Loopback-only HTTP: a Host/Origin/bearer guard for our own routes and a uvicorn runner.

The guard answers like the MCP SDK's transport security: a Host that is not ours → 421, a
foreign Origin → 403 (a missing Origin is fine: non-browser clients send none), and, where a
second local process connects, a missing or wrong bearer token → 401.
"""

from __future__ import annotations

import contextlib
import errno
import hmac
import json
import logging
import socket
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator, MutableMapping
from typing import Any

import psutil
import uvicorn

from moddesk.kit.errors import ServiceError

LOOPBACK = "127.0.0.1"
_LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

logger = logging.getLogger("moddesk.http")


def loopback_hosts(port: int) -> list[str]:
    """The Host header values a browser or client uses for our port."""
    return [f"{name}:{port}" for name in _LOOPBACK_NAMES]


def loopback_origins(port: int) -> list[str]:
    """The Origins of pages we serve ourselves on this port."""
    return [f"http://{name}:{port}" for name in _LOOPBACK_NAMES]


async def _plain(send: Send, status: int, text: str, headers: Iterable[tuple[bytes, bytes]] = ()) -> None:
    body = text.encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"text/plain; charset=utf-8"), *headers],
        }
    )
    await send({"type": "http.response.body", "body": body})


class HostOriginGuard:
    """ASGI middleware: reject foreign Host (421), foreign Origin (403), bad bearer token (401)."""

    def __init__(
        self,
        app: ASGIApp,
        allowed_hosts: Iterable[str],
        allowed_origins: Iterable[str],
        bearer_token: str | None = None,
        open_paths: Iterable[str] = (),
    ) -> None:
        self.app = app
        self.allowed_hosts = {h.lower() for h in allowed_hosts}
        self.allowed_origins = {o.lower() for o in allowed_origins}
        self.bearer_token = bearer_token
        self.open_paths = set(open_paths)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        host = headers.get("host", "").lower()
        if host not in self.allowed_hosts:
            logger.warning("rejected Host header %r", host)
            await _plain(send, 421, "Invalid Host header")
            return
        origin = headers.get("origin")
        if origin is not None and origin.lower() not in self.allowed_origins:
            logger.warning("rejected Origin header %r", origin)
            await _plain(send, 403, "Invalid Origin header")
            return
        if self.bearer_token is not None and scope.get("path") not in self.open_paths:
            supplied = headers.get("authorization", "")
            expected = f"Bearer {self.bearer_token}"
            if not hmac.compare_digest(supplied.encode(), expected.encode()):
                await _plain(send, 401, "Missing or wrong bearer token", [(b"www-authenticate", b"Bearer")])
                return
        await self.app(scope, receive, send)


def guard(
    app: ASGIApp,
    port: int,
    bearer_token: str | None = None,
    extra_origins: Iterable[str] = (),
    open_paths: Iterable[str] = (),
) -> HostOriginGuard:
    """Wrap ``app`` so only loopback Hosts and our own Origins on ``port`` get through."""
    return HostOriginGuard(
        app,
        loopback_hosts(port),
        [*loopback_origins(port), *extra_origins],
        bearer_token=bearer_token,
        open_paths=open_paths,
    )


def port_holder(port: int) -> tuple[int, str] | None:
    """(pid, command line) of the process listening on ``port`` at 127.0.0.1, when the OS tells us."""
    try:
        connections = psutil.net_connections(kind="tcp")
    except (psutil.AccessDenied, OSError):
        return None
    for conn in connections:
        if conn.status == psutil.CONN_LISTEN and conn.laddr and conn.laddr.port == port and conn.pid:
            try:
                cmdline = " ".join(psutil.Process(conn.pid).cmdline()) or "?"
            except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
                cmdline = "?"
            return conn.pid, cmdline[:200]
    return None


def port_in_use(port: int) -> ServiceError:
    """``PORT_IN_USE`` naming the process that holds the port (when the OS lets us see it)."""
    holder = port_holder(port)
    who = f" by pid {holder[0]} ({holder[1]})" if holder else " by another program"
    return ServiceError(
        "PORT_IN_USE",
        f"port {port} on {LOOPBACK} is already in use{who}",
        hint="Stop that program, or choose another port (0 picks a free one).",
        port=port,
        pid=holder[0] if holder else None,
    )


def _allow_quick_rebind(sock: socket.socket) -> None:
    """Let a restarted server bind at once while old connections of a killed one sit in TIME_WAIT.

    POSIX SO_REUSEADDR does not let two live listeners share a port. On Windows it would (it lets
    another process steal the port), so there we ask for exclusive use instead; Windows already
    allows rebinding over TIME_WAIT connections.
    """
    if sys.platform == "win32":
        exclusive = getattr(socket, "SO_EXCLUSIVEADDRUSE", None)
        if exclusive is not None:
            sock.setsockopt(socket.SOL_SOCKET, exclusive, 1)
    else:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)


def bind_loopback(port: int = 0) -> socket.socket:
    """Bind a listening socket on 127.0.0.1; ``PORT_IN_USE`` naming the port (and its holder)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    # accepted sockets inherit it: without it, Nagle + delayed ACK add ~40 ms to small responses
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    _allow_quick_rebind(sock)
    try:
        sock.bind((LOOPBACK, port))
    except OSError as exc:
        sock.close()
        if exc.errno in (errno.EADDRINUSE, errno.EACCES) or getattr(exc, "winerror", None) == 10048:
            raise port_in_use(port) from exc
        raise
    sock.listen(128)
    sock.setblocking(False)
    return sock


def json_body(data: Any) -> bytes:
    """Compact UTF-8 JSON for responses."""
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode()


class _QuietSignalServer(uvicorn.Server):
    """uvicorn re-raises SIGTERM/SIGINT after its graceful shutdown, which kills the process before
    the caller's cleanup (endpoint files, the service) runs; we stop the same way and then return."""

    received_signals: list[int]

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        self.received_signals = []
        with super().capture_signals():
            try:
                yield
            finally:
                captured = getattr(self, "_captured_signals", None)
                if isinstance(captured, list):
                    self.received_signals = list(captured)
                    captured.clear()


class LoopbackServer:
    """Runs an ASGI app with uvicorn on 127.0.0.1, in a background thread or in the foreground."""

    def __init__(
        self, build_app: Callable[[int], ASGIApp], port: int = 0, log_level: str = "warning"
    ) -> None:
        """Bind first, then build the app for the port actually bound (guards need to know it)."""
        self._socket = bind_loopback(port)
        self.port: int = self._socket.getsockname()[1]
        config = uvicorn.Config(build_app(self.port), log_level=log_level, lifespan="on", access_log=False)
        self._server = _QuietSignalServer(config)
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}"

    def start(self, timeout: float = 15.0) -> LoopbackServer:
        """Serve in a daemon thread and return once the server accepts connections."""
        # uvicorn installs signal handlers only in the main thread, so a background thread is safe
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._socket]}, name="moddesk-http", daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise ServiceError("INTERNAL_ERROR", f"the HTTP server on port {self.port} did not start")
            time.sleep(0.01)
        return self

    def serve_forever(self) -> None:
        """Serve in the calling (main) thread until SIGINT/SIGTERM, then return (no re-raise), so
        the caller's ``finally`` blocks run."""
        self._server.run(sockets=[self._socket])
        with contextlib.suppress(OSError):
            self._socket.close()

    def stop(self, timeout: float = 10.0) -> None:
        self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout)
        with contextlib.suppress(OSError):
            self._socket.close()

    def __enter__(self) -> LoopbackServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
