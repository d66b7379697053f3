"""The live query HTTP API served by `moddesk ra3 watch` (127.0.0.1, bearer token, `?project=`).

Routes (all JSON; every answer carries `index` with the `projectDir` it is about, so a client
can refuse an answer about another project):

- `GET  /projects` — every project this process indexes, with its status;
- `GET  /status?project=DIR` — one project's status;
- `POST /query/<verb>?project=DIR` — body: the query's parameters as a JSON object.

Errors are the structured payload `{"ok": false, "error": CODE, "message", "hint", "index"}`
with a matching HTTP status. The server never answers for a project it does not index.
"""

from __future__ import annotations

import functools
import http.client
import inspect
import json
import logging
import os
import secrets
import socket
import threading
import time
import typing
import urllib.parse
from collections.abc import Callable, Mapping
from typing import Any, Protocol

import pydantic
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from moddesk.kit.errors import ServiceError, register_codes
from moddesk.kit.http import MAX_JSON_DEPTH, LoopbackServer, guard, json_depth
from moddesk.ra3.agent.endpoints import (
    Endpoint,
    is_process_alive,
    normalize_project_dir,
    read_endpoint_for_project,
    same_project,
)
from moddesk.ra3.core.errors import Ra3Error
from moddesk.ra3.core.query import TOOL_NAMES, QueryApi

API_VERSION = 1
logger = logging.getLogger("moddesk.ra3.agent.live")
MAX_BODY_BYTES = 1 << 20
ENDPOINT_RECHECK_SECONDS = 1.0

register_codes(
    {
        "UNKNOWN_PROJECT": "This live server does not index the requested project.",
        "UNKNOWN_QUERY": "The live server has no query of this name.",
        "PROJECT_MISMATCH": "A live answer was about another project and was refused.",
    }
)

_STATUS_BY_CODE = {
    "UNKNOWN_PROJECT": 404,
    "UNKNOWN_QUERY": 404,
    "NOT_FOUND": 404,
    "INVALID_ARGUMENT": 400,
    "INVALID_CURSOR": 400,
    "STALE_CURSOR": 409,
    "INTERNAL_ERROR": 500,
}


class LiveProject(Protocol):
    """What the HTTP layer needs from one indexed project (implemented by the watcher)."""

    @property
    def project_dir(self) -> str:
        """Normalized absolute project folder."""
        ...

    def status(self) -> dict[str, Any]:
        """Index status: state, complete, stale, buildId, generatedAt, projectDir, …"""
        ...

    def query(self, verb: str, params: Mapping[str, Any]) -> dict[str, Any]:
        """Answer one query; raises ServiceError for expected failures."""
        ...


def new_token() -> str:
    """A random bearer token for one live server."""
    return secrets.token_urlsafe(32)


class ProjectRegistry:
    """The projects one live server answers for, keyed by normalized folder."""

    def __init__(self) -> None:
        self._projects: dict[str, LiveProject] = {}

    def add(self, project: LiveProject) -> None:
        """Serve a project."""
        self._projects[normalize_project_dir(project.project_dir)] = project

    def get(self, project_dir: str | None) -> LiveProject:
        """The project for `?project=`; the only one when omitted and there is exactly one."""
        if project_dir:
            found = self._projects.get(normalize_project_dir(project_dir))
            if found is None:
                raise ServiceError(
                    "UNKNOWN_PROJECT",
                    f"this live server does not index {project_dir}",
                    hint="Start `moddesk ra3 watch` for that project.",
                    served=sorted(self._projects),
                )
            return found
        if len(self._projects) == 1:
            return next(iter(self._projects.values()))
        raise ServiceError(
            "INVALID_ARGUMENT",
            "the `project` query parameter is required when several projects are served",
            served=sorted(self._projects),
        )

    def all(self) -> list[LiveProject]:
        """Every served project."""
        return list(self._projects.values())


def _error_response(error: ServiceError, index: dict[str, Any] | None) -> JSONResponse:
    payload = error.to_payload()
    if index is not None:
        payload["index"] = index
    return JSONResponse(payload, status_code=_STATUS_BY_CODE.get(error.code, 422))


def _ok(index: dict[str, Any], result: Any) -> JSONResponse:
    return JSONResponse({"ok": True, "apiVersion": API_VERSION, "index": index, "result": result})


def build_live_app(registry: ProjectRegistry, verbs: Callable[[], frozenset[str]]) -> Starlette:
    """The unguarded Starlette app; wrap it with the kit's Host/token guard before serving."""

    async def projects(request: Request) -> JSONResponse:
        statuses = [await run_in_threadpool(p.status) for p in registry.all()]
        return JSONResponse({"ok": True, "apiVersion": API_VERSION, "projects": statuses})

    async def status(request: Request) -> JSONResponse:
        try:
            project = registry.get(request.query_params.get("project"))
        except ServiceError as exc:
            return _error_response(exc, None)
        index = await run_in_threadpool(project.status)
        return _ok(index, index)

    async def query(request: Request) -> JSONResponse:
        verb = request.path_params["verb"]
        try:
            project = registry.get(request.query_params.get("project"))
        except ServiceError as exc:
            return _error_response(exc, None)
        if verb not in verbs():
            index = await run_in_threadpool(project.status)
            return _error_response(
                ServiceError("UNKNOWN_QUERY", f"no query named {verb!r}", known=sorted(verbs())), index
            )
        body = bytearray()
        try:
            async for chunk in request.stream():  # stop reading at the cap, not after the whole body
                body += chunk
                if len(body) > MAX_BODY_BYTES:
                    raise ServiceError("INVALID_ARGUMENT", "request body too large")
            try:
                if json_depth(body.decode("utf-8", "replace")) > MAX_JSON_DEPTH:
                    raise ValueError("the JSON nests too deeply")
                params = json.loads(body) if body.strip() else {}
            except ValueError as exc:
                raise ServiceError("INVALID_ARGUMENT", f"invalid JSON body: {exc}") from exc
            if not isinstance(params, dict):
                raise ServiceError("INVALID_ARGUMENT", "the request body must be a JSON object")
            quick = getattr(project, "query_nowait", None)
            answer: dict[str, Any] | None = quick(verb, params) if quick is not None else None
            if answer is None:  # the index is busy (or the caller waits for it): off the event loop
                answer = await run_in_threadpool(project.query, verb, params)
        except ServiceError as exc:
            return _error_response(exc, await run_in_threadpool(project.status))
        except Exception:
            logger.exception("live query %s failed", verb)
            failure = ServiceError("INTERNAL_ERROR", f"the live query {verb} failed unexpectedly")
            return _error_response(failure, await run_in_threadpool(project.status))
        return _ok(answer.pop("index", None) or await run_in_threadpool(project.status), answer)

    return Starlette(
        routes=[
            Route("/projects", projects, methods=["GET"]),
            Route("/status", status, methods=["GET"]),
            Route("/query/{verb}", query, methods=["POST"]),
        ]
    )


class LiveServer:
    """The guarded live query API on 127.0.0.1 with an ephemeral port and a random token."""

    def __init__(self, registry: ProjectRegistry, verbs: Callable[[], frozenset[str]], port: int = 0) -> None:
        self.registry = registry
        self.token = new_token()
        app = build_live_app(registry, verbs)
        self._server = LoopbackServer(
            lambda bound: guard(app, bound, bearer_token=self.token, max_body=MAX_BODY_BYTES), port=port
        )

    @property
    def url(self) -> str:
        """Base URL, e.g. `http://127.0.0.1:54321`."""
        return self._server.url

    @property
    def port(self) -> int:
        """The bound port."""
        return self._server.port

    def start(self) -> LiveServer:
        """Serve in a background thread."""
        self._server.start()
        return self

    def stop(self) -> None:
        """Stop serving."""
        self._server.stop()


class LiveClient:
    """The MCP side of the live API for one project: endpoint file → pid alive → HTTP, with checks.

    `request` returns the decoded answer, or None when no live server is usable (the caller then
    falls back to the snapshot). After a failure, live is not tried again for `negative_ttl`
    seconds. An answer whose `index.projectDir` is not our project raises PROJECT_MISMATCH: it is
    refused, never passed on.
    """

    def __init__(
        self,
        project_dir: str | os.PathLike[str],
        *,
        timeout: float = 1.5,
        negative_ttl: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.project_dir = normalize_project_dir(project_dir)
        self.timeout = timeout
        self.negative_ttl = negative_ttl
        self._clock = clock
        self._down_until = 0.0
        self.last_failure: str | None = None
        self._endpoint_seen: tuple[float, Endpoint] | None = None
        self._local = threading.local()  # one kept-alive connection per calling thread

    def _fail(self, reason: str) -> None:
        self.last_failure = reason
        self._down_until = self._clock() + self.negative_ttl
        self._endpoint_seen = None  # the next try reads the endpoint file again

    def reset(self) -> None:
        """Forget the negative cache (used while waiting for an index)."""
        self._down_until = 0.0
        self._endpoint_seen = None

    def _post(
        self, port: int, path: str, body: bytes, headers: dict[str, str], timeout: float
    ) -> tuple[int, bytes]:
        """POST on this thread's kept-alive connection (one retry on a fresh one: the server may have
        closed an idle connection or restarted). TCP_NODELAY: a small request is sent at once instead
        of waiting for the server's delayed ACK (the ~40 ms stall a kept-alive connection had)."""
        for attempt in (0, 1):
            conn = getattr(self._local, "conn", None)
            if conn is None or conn.port != port or attempt:
                if conn is not None:
                    conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
                conn.connect()
                conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                self._local.conn = conn
            conn.timeout = timeout
            if conn.sock is not None:
                conn.sock.settimeout(timeout)
            try:
                conn.request("POST", path, body=body, headers=headers)
                response = conn.getresponse()
                return response.status, response.read()
            except (OSError, http.client.HTTPException):
                conn.close()
                self._local.conn = None
                if attempt:
                    raise
        raise AssertionError("unreachable")

    def endpoint(self) -> Endpoint | None:
        """The usable endpoint record for our project, or None (with `last_failure` set).

        Checked at most every `ENDPOINT_RECHECK_SECONDS` (a file read and a process lookup per query
        cost more than the query); a refused connection re-reads it at once through the negative cache."""
        now = self._clock()
        cached = self._endpoint_seen
        if cached is not None and now - cached[0] < ENDPOINT_RECHECK_SECONDS:
            return cached[1]
        record = self._read_endpoint()
        self._endpoint_seen = (now, record) if record is not None else None
        return record

    def _read_endpoint(self) -> Endpoint | None:
        record = read_endpoint_for_project(self.project_dir)
        if record is None:
            self._fail("no endpoint file for this project")
            return None
        if not is_process_alive(record.processId, record.processCreateTime):
            self._fail(f"the indexer process {record.processId} is not running")
            return None
        return record

    def request(
        self, verb: str, params: Mapping[str, Any], *, timeout: float | None = None
    ) -> dict[str, Any] | None:
        """POST one query; None when live is unavailable, the answer otherwise (ok or error)."""
        if self._clock() < self._down_until:
            return None
        record = self.endpoint()
        if record is None:
            return None
        target = urllib.parse.urlsplit(record.url)
        if target.scheme != "http" or target.hostname not in ("127.0.0.1", "localhost"):
            self._fail(f"the endpoint file names a non-loopback url {record.url!r}")
            return None
        path = f"/query/{urllib.parse.quote(verb)}?{urllib.parse.urlencode({'project': self.project_dir})}"
        headers = {"Authorization": f"Bearer {record.token}", "Content-Type": "application/json"}
        body = json.dumps(dict(params)).encode()
        port = target.port or 80
        try:
            status, raw = self._post(port, path, body, headers, timeout or self.timeout)
        except (OSError, http.client.HTTPException) as exc:  # refused, timed out, reset
            self._fail(f"live server at {record.url} did not answer: {exc}")
            return None
        try:
            payload = json.loads(raw)
        except ValueError:
            self._fail(f"live server answered HTTP {status} without JSON")
            return None
        if not isinstance(payload, dict):
            self._fail("live server sent a non-object answer")
            return None
        if payload.get("ok") is False and payload.get("error") == "UNKNOWN_PROJECT":
            self._fail(f"the live server at {record.url} does not index this project")
            return None
        index = payload.get("index")
        answered_for = index.get("projectDir") if isinstance(index, dict) else None
        answered_for = answered_for if isinstance(answered_for, str) else None
        if not same_project(answered_for, self.project_dir):
            self._fail("live answer was about another project")
            raise ServiceError(
                "PROJECT_MISMATCH",
                f"the live server answered about {answered_for or 'an unnamed project'}, "
                f"not {self.project_dir}; the answer was refused",
                hint="Restart `moddesk ra3 watch` for this project, or run `moddesk ra3 enable` again.",
                expectedProjectDir=self.project_dir,
                answeredProjectDir=answered_for,
            )
        self.last_failure = None
        return payload


# -- the query verbs shared by the live server and the snapshot fallback -----------------------
_ARG_NAMES = {
    "fromFile": "from_file",
    "targetTypes": "target_types",
    "maxEdges": "max_edges",
    "maxNodes": "max_nodes",
}
_CONSISTENCY = ("waitForIndex", "allowStale", "timeoutSeconds")
VERBS: frozenset[str] = frozenset(TOOL_NAMES)  # the live server answers every MCP query verb


def query_verbs() -> frozenset[str]:
    """Every query the live API and the MCP server know."""
    return VERBS


def dispatch(api: QueryApi, verb: str, params: Mapping[str, Any]) -> dict[str, Any]:
    """Call one QueryApi method with wire (camelCase) parameters; Ra3Error becomes ServiceError."""
    if verb not in VERBS:
        raise ServiceError("UNKNOWN_QUERY", f"no query named {verb!r}", known=sorted(VERBS))
    kwargs: dict[str, Any] = {}
    for key, value in params.items():
        if key in _CONSISTENCY or value is None:
            continue
        kwargs[_ARG_NAMES.get(key, key)] = value
    if verb in ("get_status", "list_projects") and kwargs:
        raise ServiceError("INVALID_ARGUMENT", f"{verb} takes no arguments", got=sorted(kwargs))
    method = getattr(api, verb)
    if verb not in ("get_status", "list_projects"):
        kwargs["allow_stale"] = bool(params.get("allowStale", True))
    try:
        validated = _arguments_model(verb).model_validate(kwargs)
    except pydantic.ValidationError as exc:  # wrong names or types from the wire
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or '?'}: {e['msg']}" for e in exc.errors()[:5])
        raise ServiceError("INVALID_ARGUMENT", f"bad parameters for {verb}: {problems}") from exc
    try:
        result: dict[str, Any] = method(
            **{name: getattr(validated, name) for name in validated.model_fields_set}
        )
    except Ra3Error as exc:
        raise ServiceError(exc.code, exc.message, hint=exc.hint, **exc.details) from exc
    return result


@functools.cache
def _arguments_model(verb: str) -> type[pydantic.BaseModel]:
    """A pydantic model of one QueryApi method's keyword arguments (types from its annotations)."""
    func = inspect.unwrap(getattr(QueryApi, verb))
    hints = typing.get_type_hints(func)
    fields: dict[str, Any] = {}
    for name, param in inspect.signature(func).parameters.items():
        if name == "self":
            continue
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[name] = (hints.get(name, Any), default)
    return pydantic.create_model(
        f"{verb}_arguments", __config__=pydantic.ConfigDict(extra="forbid"), **fields
    )
