"""The person's credential, kept apart from the agent's: one-time login links, a session cookie
and its CSRF token, and the local person key the same OS user's CLI uses.

Two principals meet on every moddesk HTTP listener (see ``kit.principals`` for who owns which
route). The agent holds the bearer token of the endpoint file; it opens ``/mcp`` and nothing
else. The person gets a one-time login link, printed on the service's terminal or minted by
``moddesk <system> open``; opening it sets an ``HttpOnly; SameSite=Strict`` cookie named for
the port and hands the page a CSRF token in the redirect's fragment (never sent to a server).

Why the CSRF token lives in the page's ``localStorage`` and not in a cookie: browsers scope
cookies by host, not by port, so a page served by any other program on ``127.0.0.1`` could read
a script-readable cookie and receives even the HttpOnly one. ``localStorage`` is scoped by
origin, port included, so only pages of this very service can read the token. A session is
therefore the cookie AND the token; the cookie alone (all another local port ever sees) opens
the static page and nothing that reads or changes state.

Links are minted from a per-run person key that lives only in this process and in a 0600 file
beside the endpoint file (``<endpoint>.person.json``): the stdio bridges and client configs read
the endpoint file, never this one, so an MCP-only agent can never mint a link.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import json
import os
import secrets
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import psutil

from moddesk.kit.errors import ServiceError, register_codes

LOGIN_PATH = "/login"
PERSON_SCRIPT_PATH = "/_moddesk/person.js"
CSRF_HEADER = "x-moddesk-csrf"
CSRF_QUERY = "csrf"
CSRF_FRAGMENT = "moddesk-csrf"
PERSON_SCHEME = "Person"  # ``Authorization: Person <key>``: the person's own CLI on this machine
LOGIN_TTL_SECONDS = 30 * 60
MAX_SESSIONS = 16  # browser profiles/tabs that logged in; the oldest is forgotten first
_MAX_USED_CODES = 4096

register_codes(
    {
        "LOGIN_REQUIRED": "The person's page needs a login link; the agent's token does not open it.",
        "PERSON_ONLY": "Only the person may do this; the agent's credential does not open it.",
        "AGENT_ONLY": "This endpoint is the agent's (MCP); the person's session does not open it.",
        "CSRF_REQUIRED": "A state-reading or state-changing page call came without the page's CSRF token.",
        "LOGIN_LINK_INVALID": "The login link is malformed, already used, expired or for another run.",
    },
    zh={
        "LOGIN_REQUIRED": "需要登录：请打开服务终端上打印的登录链接，或运行 `moddesk pvf open` / `moddesk xiangqi open`。",
        "PERSON_ONLY": "只有本人可以执行此操作：AI 代理的令牌只能访问 /mcp。",
        "AGENT_ONLY": "这是 AI 代理的 MCP 端点，网页登录不能访问它。",
        "CSRF_REQUIRED": "请求缺少页面的 CSRF 令牌：请从登录链接重新打开页面。",
        "LOGIN_LINK_INVALID": "登录链接无效、已用过或已过期：请运行 `moddesk pvf open` / `moddesk xiangqi open` 获取新链接。",
    },
)

# the Chinese message of each refusal (the person reads these in the page)
MESSAGES_ZH = {
    "LOGIN_REQUIRED": "需要登录：请打开服务终端上打印的登录链接，或运行 `moddesk {system} open` 获取新链接。",
    "PERSON_ONLY": "只有本人可以执行此操作：AI 代理的令牌只能访问 /mcp。",
    "AGENT_ONLY": "这是 AI 代理的 MCP 端点，网页登录不能访问它。",
    "CSRF_REQUIRED": "请求缺少页面的 CSRF 令牌：请从登录链接重新打开页面。",
    "LOGIN_LINK_INVALID": "登录链接无效、已用过或已过期：请运行 `moddesk {system} open` 获取新链接。",
}


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _origin(url: str) -> str:
    """``http://127.0.0.1:PORT`` of a URL (what a login code is bound to)."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}".lower()


def _mac(key: str, origin: str, nonce: str, expires: int) -> str:
    message = f"{origin}|{nonce}|{expires}".encode()
    return _b64(hmac.new(key.encode(), message, hashlib.sha256).digest())


def mint_login_link(
    base_url: str, key: str, next_path: str = "/", ttl: float = LOGIN_TTL_SECONDS, now: float | None = None
) -> str:
    """A one-time login link for the service at ``base_url`` (signed with the run's person key).

    Minting needs only the key, so ``moddesk <system> open`` mints links without asking the
    service; the service remembers used codes, which makes each link work once.
    """
    nonce = _b64(secrets.token_bytes(12))
    expires = int((time.time() if now is None else now) + ttl)
    code = f"{nonce}.{expires}.{_mac(key, _origin(base_url), nonce, expires)}"
    return f"{base_url.rstrip('/')}{LOGIN_PATH}?code={code}&next={quote(safe_next(next_path), safe='/')}"


def safe_next(path: str) -> str:
    """A local path to land on after login (never another host: ``//x`` or a scheme is refused)."""
    if not path.startswith("/") or path.startswith("//") or "\\" in path or any(ord(c) < 32 for c in path):
        return "/"
    return path


@dataclass(frozen=True)
class PersonSession:
    """One logged-in browser: the cookie's value and the CSRF token its pages send."""

    session_id: str
    csrf: str


class PersonGate:
    """Sessions of one running service: redeem login codes, recognise cookies, check CSRF tokens."""

    def __init__(self, key: str | None = None, system: str = "pvf") -> None:
        self.key = key or secrets.token_urlsafe(32)
        self.system = system
        self._sessions: OrderedDict[str, str] = OrderedDict()  # session id -> csrf token
        self._used: dict[str, int] = {}  # login nonce -> its expiry (kept until then)
        self._lock = threading.Lock()

    def cookie_name(self, port: int) -> str:
        """The session cookie of this port (cookies are shared by every port of a host)."""
        return f"moddesk_person_{port}"

    def login_link(self, base_url: str, next_path: str = "/") -> str:
        return mint_login_link(base_url, self.key, next_path)

    def redeem(self, code: str, base_url: str, now: float | None = None) -> PersonSession:
        """Exchange a login code for a new session; ``LOGIN_LINK_INVALID`` if it was used, expired,
        forged, or minted for another port or run."""
        current = time.time() if now is None else now
        nonce, _, rest = code.partition(".")
        expires_text, _, mac = rest.partition(".")
        if not (nonce and mac and expires_text.isdigit()):
            raise self._invalid("the login code is malformed")
        expires = int(expires_text)
        expected = _mac(self.key, _origin(base_url), nonce, expires)
        if not hmac.compare_digest(mac.encode(), expected.encode()):
            raise self._invalid("the login code is not one of this run's")
        if expires < current:
            raise self._invalid("the login link has expired")
        with self._lock:
            self._used = {n: e for n, e in self._used.items() if e >= current}
            if nonce in self._used or len(self._used) >= _MAX_USED_CODES:
                raise self._invalid("the login link was already used")
            self._used[nonce] = expires
            session = PersonSession(secrets.token_urlsafe(32), secrets.token_urlsafe(32))
            self._sessions[session.session_id] = session.csrf
            while len(self._sessions) > MAX_SESSIONS:
                self._sessions.popitem(last=False)
        return session

    def session(self, cookie_value: str | None) -> str | None:
        """The session id a cookie names, when it is one of ours."""
        if not cookie_value:
            return None
        with self._lock:
            for session_id in self._sessions:
                if hmac.compare_digest(session_id.encode(), cookie_value.encode()):
                    return session_id
        return None

    def csrf_ok(self, session_id: str, supplied: str | None) -> bool:
        with self._lock:
            expected = self._sessions.get(session_id)
        return bool(expected and supplied) and hmac.compare_digest(
            str(expected).encode(), str(supplied).encode()
        )

    def key_ok(self, authorization: str) -> bool:
        """``Authorization: Person <key>`` from the person's CLI (it read the 0600 person file)."""
        scheme, _, supplied = authorization.partition(" ")
        return (
            scheme == PERSON_SCHEME
            and bool(supplied)
            and hmac.compare_digest(supplied.strip().encode(), self.key.encode())
        )

    def error(self, code: str, message: str) -> ServiceError:
        """A refusal with its Chinese message and the command that gives a fresh link."""
        hint = f"Open the login link the service printed, or run `moddesk {self.system} open`."
        if code == "AGENT_ONLY":
            hint = f"MCP clients connect with `moddesk agents config <client> --system {self.system}`."
        return ServiceError(code, message, hint=hint, errorZh=MESSAGES_ZH[code].format(system=self.system))

    def _invalid(self, message: str) -> ServiceError:
        return self.error("LOGIN_LINK_INVALID", message)


def login_like_a_browser(client: Any, link: str) -> str:
    """Open ``link`` with an ``httpx`` client as a browser would: keep the session cookie, take
    the CSRF token from the login page, send it on every later request; returns the token.

    For scripts and tests driving the person's routes over plain HTTP (the page does the same in
    ``/_moddesk/person.js``).
    """
    response = client.get(link)
    if response.status_code != 200:
        raise ServiceError("LOGIN_LINK_INVALID", f"the login link was refused ({response.status_code})")
    marker = f"#{CSRF_FRAGMENT}="
    text = str(response.text)
    start = text.index(marker) + len(marker)
    csrf = text[start : text.index('"', start)]
    client.headers[CSRF_HEADER] = csrf
    return csrf


# ------------------------------------------------------------------ the person file (0600)


def person_file(endpoint: Path) -> Path:
    """Where the person key of the service recorded in ``endpoint`` is kept (same private folder)."""
    return endpoint.with_name(endpoint.stem + ".person.json")


def publish_person(endpoint: Path, url: str, key: str) -> Path:
    """Write ``{url, key, processId}`` readable by this OS user only (never the endpoint file)."""
    from moddesk.kit.local_service import write_private

    target = person_file(endpoint)
    pid = os.getpid()
    created: float | None = None
    with contextlib.suppress(psutil.Error):
        created = float(psutil.Process(pid).create_time())
    record = {"url": url, "key": key, "processId": pid, "processCreateTime": created}
    write_private(target, json.dumps(record, indent=2) + "\n")
    return target


def withdraw_person(endpoint: Path, key: str) -> None:
    """Remove the person file if it is still this run's."""
    target = person_file(endpoint)
    try:
        data = json.loads(target.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    if isinstance(data, dict) and data.get("key") == key and data.get("processId") == os.getpid():
        with contextlib.suppress(FileNotFoundError):
            target.unlink()


@dataclass(frozen=True)
class PersonAccess:
    """What the person's CLI read from the person file of a running service."""

    url: str
    key: str

    def login_link(self, next_path: str = "/") -> str:
        return mint_login_link(self.url, self.key, next_path)

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"{PERSON_SCHEME} {self.key}"}


def read_person(endpoint: Path) -> PersonAccess | None:
    """The running service's person access, None when there is none (or its process is gone)."""
    try:
        data: Any = json.loads(person_file(endpoint).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    url, key, pid = data.get("url"), data.get("key"), data.get("processId")
    if not (isinstance(url, str) and isinstance(key, str) and isinstance(pid, int)):
        return None
    try:
        process = psutil.Process(pid)
        created = data.get("processCreateTime")
        if isinstance(created, int | float) and abs(process.create_time() - created) > 1.0:
            return None
    except (psutil.NoSuchProcess, psutil.ZombieProcess):
        return None
    except psutil.AccessDenied:
        pass
    return PersonAccess(url, key)


def require_person(endpoint: Path, system: str) -> PersonAccess:
    """The running service's person access, or ``NOT_RUNNING`` saying how to start it."""
    access = read_person(endpoint)
    if access is None:
        raise ServiceError(
            "NOT_RUNNING",
            f"no running moddesk {system} service of yours was found",
            hint=f"Start it first: `moddesk {system} serve`.",
            errorZh=f"没有找到正在运行的 moddesk {system} 服务：请先运行 `moddesk {system} serve`。",
        )
    return access
