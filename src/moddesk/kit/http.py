"""Loopback-only HTTP: a Host/Origin/bearer guard for our own routes and a uvicorn runner.

The guard answers like the MCP SDK's transport security: a Host that is not ours → 421, a
foreign Origin → 403 (a missing Origin is fine: non-browser clients send none), then checks the
principal (``kit.principals``): the agent's bearer token for ``/mcp``, the person's session for
the rest; a missing credential → 401, the other principal's → 403.
"""

from __future__ import annotations

import contextlib
import errno
import hmac
import html
import json
import logging
import re
import socket
import sys
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator, MutableMapping
from typing import Any
from urllib.parse import parse_qs

import psutil
import uvicorn

from moddesk.kit.errors import ServiceError, register_codes
from moddesk.kit.person import (
    CSRF_FRAGMENT,
    CSRF_HEADER,
    CSRF_QUERY,
    LOGIN_PATH,
    MESSAGES_ZH,
    PERSON_SCRIPT_PATH,
    PersonGate,
    safe_next,
)
from moddesk.kit.principals import AccessPolicy, Principal

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


register_codes(
    {
        "HOST_REJECTED": "The Host header is not this loopback server's (DNS-rebinding protection).",
        "ORIGIN_REJECTED": "The request came from a page of another origin.",
        "UNAUTHORIZED": "The request carries no valid credential for this server.",
        "BODY_TOO_LARGE": "The request body is larger than this route accepts.",
    },
    zh={
        "HOST_REJECTED": "请求的 Host 不是本机服务的地址，已拒绝（防 DNS 重绑定）。",
        "ORIGIN_REJECTED": "请求来自其他网站的页面，已拒绝。",
        "UNAUTHORIZED": "请求没有带有效的凭据。请用服务启动时打印的链接打开页面，或带上令牌。",
        "BODY_TOO_LARGE": "请求内容太大，超过了这个接口的上限。",
    },
)


async def _refuse(
    send: Send, status: int, code: str, message: str, hint: str, headers: Iterable[tuple[bytes, bytes]] = ()
) -> None:
    """A refusal before the app runs, as the JSON error object every route answers with (``errorZh`` too)."""
    body = json.dumps(ServiceError(code, message, hint=hint).to_payload(), ensure_ascii=False).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json; charset=utf-8"), *headers],
        }
    )
    await send({"type": "http.response.body", "body": body})


# the agent's credential: the bearer token of the endpoint file (what `connect` and configs use)
_TOKEN_HINT = "Send the bearer token from the service's endpoint file (the stdio `connect` bridge does)."
_BEARER = [(b"www-authenticate", b"Bearer")]


class HostOriginGuard:
    """ASGI middleware: reject foreign Host (421), foreign Origin (403), then check the principal.

    With an ``AccessPolicy`` and a ``PersonGate`` every request is checked against the owner of
    its path (``kit.principals``): the agent's bearer token opens the agent's paths only (``/mcp``),
    the person's session (+ CSRF token) or person key opens everything else, and the agent's
    token there is ``403 PERSON_ONLY``. Without them (a listener that has no person, like ``ra3
    watch``) the bearer token opens everything but ``open_paths``.
    """

    def __init__(
        self,
        app: ASGIApp,
        allowed_hosts: Iterable[str],
        allowed_origins: Iterable[str],
        bearer_token: str | None = None,
        open_paths: Iterable[str] = (),
        max_body: int | None = None,
        policy: AccessPolicy | None = None,
        person: PersonGate | None = None,
        port: int = 0,
    ) -> None:
        self.app = app
        self.allowed_hosts = {h.lower() for h in allowed_hosts}
        self.allowed_origins = {o.lower() for o in allowed_origins}
        self.bearer_token = bearer_token
        self.open_paths = set(open_paths)
        self.max_body = max_body
        self.policy = policy
        self.person = person
        self.port = port

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        host = headers.get("host", "").lower()
        if host not in self.allowed_hosts:
            logger.warning("rejected Host header %r", host)
            await _refuse(
                send, 421, "HOST_REJECTED", "Invalid Host header", "Use the URL the server printed."
            )
            return
        origin = headers.get("origin")
        if origin is not None and origin.lower() not in self.allowed_origins:
            logger.warning("rejected Origin header %r", origin)
            await _refuse(
                send, 403, "ORIGIN_REJECTED", "Invalid Origin header", "Open the page from this server."
            )
            return
        if self.policy is not None and self.person is not None:
            if not await PrincipalCheck(self, scope, send, headers).admit():
                return
        elif (
            self.bearer_token is not None
            and scope.get("path") not in self.open_paths
            and not self.bearer_ok(headers)
        ):
            await _refuse(send, 401, "UNAUTHORIZED", "Missing or wrong bearer token", _TOKEN_HINT, _BEARER)
            return
        if self.max_body is not None and scope["type"] == "http":
            await _capped(self.app, self.max_body, scope, receive, send, headers)
            return
        await self.app(scope, receive, send)

    def bearer_ok(self, headers: dict[str, str]) -> bool:
        """The agent's ``Authorization: Bearer <token>`` (never a cookie: browsers hold the person's)."""
        if self.bearer_token is None:
            return False
        supplied = headers.get("authorization", "")
        return supplied.startswith("Bearer ") and hmac.compare_digest(
            supplied[7:].encode(), self.bearer_token.encode()
        )


class PrincipalCheck:
    """One request against the access policy: let it through, or answer it (401/403, login, script)."""

    def __init__(self, guard: HostOriginGuard, scope: Scope, send: Send, headers: dict[str, str]) -> None:
        assert guard.policy is not None and guard.person is not None
        self.policy = guard.policy
        self.person = guard.person
        self.guard = guard
        self.scope = scope
        self.send = send
        self.headers = headers
        self.path = str(scope.get("path", "/"))
        self.method = str(scope.get("method", "GET"))
        self.query = parse_qs(scope.get("query_string", b"").decode("latin-1"))

    async def admit(self) -> bool:
        owner = self.policy.principal(self.path)
        if owner is Principal.AGENT:
            return await self._agent()
        if owner is Principal.ANYONE:
            return await self._open()
        return await self._person()

    async def _agent(self) -> bool:
        if self.guard.bearer_ok(self.headers):
            return True
        if self._session() is not None or self._keyed():
            await self._refuse(403, "AGENT_ONLY", "the person's session does not open the MCP endpoint")
            return False
        await _refuse(self.send, 401, "UNAUTHORIZED", "Missing or wrong bearer token", _TOKEN_HINT, _BEARER)
        return False

    async def _open(self) -> bool:
        if self.path == LOGIN_PATH and self.scope["type"] == "http":
            await self._login()
            return False
        if self.path == PERSON_SCRIPT_PATH and self.scope["type"] == "http":
            await _send(self.send, 200, PERSON_SCRIPT.encode(), b"text/javascript; charset=utf-8")
            return False
        return True

    async def _person(self) -> bool:
        if self._keyed():
            return True
        session = self._session()
        if session is not None:
            site = self.headers.get("sec-fetch-site")
            if site is not None and site not in ("same-origin", "none"):
                # a page on another port of this host is "same-site": it gets the cookie, not the page
                await self._refuse(403, "CSRF_REQUIRED", f"a {site} request cannot act for the person")
                return False
            if self.policy.is_navigation(self.method, self.path):
                return True
            supplied = self.headers.get(CSRF_HEADER) or self.query.get(CSRF_QUERY, [""])[0]
            if self.person.csrf_ok(session, supplied):
                return True
            await self._refuse(403, "CSRF_REQUIRED", "the page's CSRF token is missing or wrong")
            return False
        if self.guard.bearer_ok(self.headers):
            await self._refuse(
                403, "PERSON_ONLY", f"{self.method} {self.path} is the person's, not the agent's"
            )
            return False
        if self.policy.is_navigation(self.method, self.path):
            await _send(self.send, 401, _login_needed_page(self.policy.system), b"text/html; charset=utf-8")
            return False
        await self._refuse(401, "LOGIN_REQUIRED", "this route needs the person's login session")
        return False

    def _session(self) -> str | None:
        cookie = _cookie(self.headers.get("cookie", ""), self.person.cookie_name(self.guard.port))
        return self.person.session(cookie)

    def _keyed(self) -> bool:
        return self.person.key_ok(self.headers.get("authorization", ""))

    async def _refuse(self, status: int, code: str, message: str) -> None:
        body = json_body(self.policy.error_body(self.person.error(code, message)))
        await _send(self.send, status, body, b"application/json")

    async def _login(self) -> None:
        """Redeem ``?code=``: a session cookie for this port, then on to ``next`` with the CSRF token.

        The answer is a page that refreshes to ``next`` rather than a redirect: a navigation our
        own page starts is same-origin, so the SameSite=Strict cookie goes with it even when the
        person clicked the link in a page of another site.
        """
        code = self.query.get("code", [""])[0]
        base = f"http://{LOOPBACK}:{self.guard.port}"
        try:
            session = self.person.redeem(code, base)
        except ServiceError as exc:
            page = _message_page(exc.details.get("errorZh", ""), exc.message, exc.hint or "")
            await _send(self.send, 403, page, b"text/html; charset=utf-8")
            return
        target = safe_next(self.query.get("next", ["/"])[0]) + f"#{CSRF_FRAGMENT}={session.csrf}"
        cookie = f"{self.person.cookie_name(self.guard.port)}={session.session_id}; Path=/; HttpOnly; SameSite=Strict"
        page = _refresh_page(target)
        await _send(self.send, 200, page, b"text/html; charset=utf-8", [(b"set-cookie", cookie.encode())])


async def _send(
    send: Send, status: int, body: bytes, content_type: bytes, extra: Iterable[tuple[bytes, bytes]] = ()
) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", content_type),
                (b"cache-control", b"no-store"),
                (b"referrer-policy", b"no-referrer"),
                (b"x-content-type-options", b"nosniff"),
                *extra,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def _message_page(zh: str, en: str, hint: str) -> bytes:
    """A small bilingual page; a `command` in the text is shown as code the person can copy."""

    def shown(text: str) -> str:
        return _CODE.sub(r"<code>\1</code>", html.escape(text))

    text = (
        '<!doctype html><html lang="zh-CN"><meta charset="utf-8"><title>moddesk</title>'
        '<body style="font-family:sans-serif;max-width:40em;margin:3em auto;line-height:1.6">'
        f'<h2 style="font-weight:600">{shown(zh)}</h2><p>{shown(en)}</p><p>{shown(hint)}</p></body></html>'
    )
    return text.encode()


_CODE = re.compile(r"`([^`]+)`")


def _login_needed_page(system: str) -> bytes:
    return _message_page(
        MESSAGES_ZH["LOGIN_REQUIRED"].format(system=system),
        "This page needs a login link.",
        f"Open the link the service printed on its terminal, or run `moddesk {system} open`.",
    )


def _refresh_page(target: str) -> bytes:
    url = html.escape(target, quote=True)
    text = (
        '<!doctype html><html lang="zh-CN"><meta charset="utf-8">'
        f'<meta http-equiv="refresh" content="0;url={url}"><title>moddesk</title>'
        f'<body><p>已登录，正在打开页面… Logged in, opening the page… <a href="{url}">继续 / continue</a></p>'
        "</body></html>"
    )
    return text.encode()


# Served at PERSON_SCRIPT_PATH; pages load it before their own scripts. It moves the CSRF token
# from the login redirect's fragment into this origin's localStorage (scoped by port, unlike
# cookies) and lets the page read it back as ``moddeskCsrf()``.
PERSON_SCRIPT = f"""// moddesk: the person's CSRF token for this service (kit/person.py says why it lives here)
(function () {{
  var KEY = "{CSRF_FRAGMENT}";
  var held = "";
  var match = /(?:^#|&){CSRF_FRAGMENT}=([^&]*)/.exec(location.hash);
  if (match) {{
    held = decodeURIComponent(match[1]);
    try {{ localStorage.setItem(KEY, held); }} catch (e) {{ /* private mode: keep it for this page */ }}
    history.replaceState(null, "", location.pathname + location.search);
  }}
  window.moddeskCsrf = function () {{
    try {{ return localStorage.getItem(KEY) || held; }} catch (e) {{ return held; }}
  }};
}})();
"""


def guard(
    app: ASGIApp,
    port: int,
    bearer_token: str | None = None,
    extra_origins: Iterable[str] = (),
    open_paths: Iterable[str] = (),
    max_body: int | None = None,
    policy: AccessPolicy | None = None,
    person: PersonGate | None = None,
) -> HostOriginGuard:
    """Wrap ``app`` so only loopback Hosts and our own Origins on ``port`` get through, each
    request by the principal that owns its path (when ``policy`` and ``person`` are given)."""
    return HostOriginGuard(
        app,
        loopback_hosts(port),
        [*loopback_origins(port), *extra_origins],
        bearer_token=bearer_token,
        open_paths=open_paths,
        max_body=max_body,
        policy=policy,
        person=person,
        port=port,
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


# ---------------------------------------------------------------------- bounded request bodies

MAX_JSON_BODY = 1 << 20
MAX_JSON_DEPTH = 32


def _cookie(header: str, name: str) -> str | None:
    for part in header.split(";"):
        key, _, value = part.strip().partition("=")
        if key == name:
            return value
    return None


def _too_large_hint(cap: int) -> str:
    return f"Send at most {cap // 1024} KiB here (a game record, a window's edits)."


class BodyTooLarge(Exception):
    """The request body went past its cap; nothing more of it is read."""


async def _capped(
    app: ASGIApp, cap: int, scope: Scope, receive: Receive, send: Send, headers: dict[str, str]
) -> None:
    """Run ``app`` with a body cap: a declared length over it is 413 before reading; a streamed
    body stops being read at the cap (the app sees a disconnect) and is answered 413."""
    declared = headers.get("content-length", "")
    if declared.isdigit() and int(declared) > cap:
        await _refuse(
            send,
            413,
            "BODY_TOO_LARGE",
            f"Request body over {cap} bytes",
            _too_large_hint(cap),
            [(b"connection", b"close")],
        )
        return
    seen = 0
    over = False
    started = False

    async def counted() -> Message:
        nonlocal seen, over
        if over:
            return {"type": "http.disconnect"}
        message = await receive()
        if message["type"] == "http.request":
            seen += len(message.get("body", b""))
            if seen > cap:
                over = True
                return {"type": "http.disconnect"}
        return message

    async def tracked(message: Message) -> None:
        nonlocal started
        if over and not started:
            return  # the app answered a body it never fully got: we answer 413 instead
        started = started or message["type"] == "http.response.start"
        await send(message)

    try:
        await app(scope, counted, tracked)
    except Exception:
        if not over:
            raise
    if over and not started:
        await _refuse(
            send,
            413,
            "BODY_TOO_LARGE",
            f"Request body over {cap} bytes",
            _too_large_hint(cap),
            [(b"connection", b"close")],
        )


async def read_json_body(
    receive_chunks: AsyncIterator[bytes], cap: int = MAX_JSON_BODY, max_depth: int = MAX_JSON_DEPTH
) -> Any:
    """Decode a JSON body read chunk by chunk: ``BodyTooLarge`` past ``cap`` bytes (reading stops
    there), ``ServiceError(INVALID_ARGUMENT)`` for bad JSON or nesting deeper than ``max_depth``."""
    buffer = bytearray()
    async for chunk in receive_chunks:
        buffer += chunk
        if len(buffer) > cap:
            raise BodyTooLarge(f"the body is over {cap} bytes")
    text = bytes(buffer).decode("utf-8", errors="strict") if buffer else ""
    if json_depth(text) > max_depth:
        raise ServiceError(
            "INVALID_ARGUMENT", f"the JSON nests deeper than {max_depth} levels", hint="Send a flat object."
        )
    try:
        return json.loads(text)
    except ValueError as exc:
        raise ServiceError("INVALID_ARGUMENT", "the body is not JSON", hint="Send a JSON object.") from exc


def json_depth(text: str) -> int:
    """The deepest bracket nesting of a JSON text (strings skipped), in one regex pass."""
    depth = deepest = 0
    for match in _BRACKETS.finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif token in "]}":
            depth -= 1
    return deepest


_BRACKETS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')


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
        self.app: ASGIApp = build_app(self.port)  # the guarded app (its route table is walked by tests)
        config = uvicorn.Config(self.app, log_level=log_level, lifespan="on", access_log=False)
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
