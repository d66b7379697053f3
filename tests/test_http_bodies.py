"""Every HTTP route of the three systems, enumerated from their route tables, answers malformed or
over-deep JSON with 400 and the error object (never a 500, never a traceback).

100,000 nested ``[`` made ``json.loads`` raise RecursionError: ``POST /api/ops/info`` answered 500.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.routing import BaseRoute, Route

from moddesk.pvf.agent.serve import Workbench, window_routes
from moddesk.pvf.samples.demo import write_sample_archive
from moddesk.pvf.service import PvfService
from moddesk.pvf.web.ops import OPS
from moddesk.pvf.web.routes import web_routes
from moddesk.pvf.web.settings import settings_ops
from moddesk.ra3.agent import endpoints
from moddesk.ra3.agent.demo import write_demo_mod
from moddesk.ra3.agent.live import ProjectRegistry, build_live_app, query_verbs
from moddesk.ra3.agent.watch import Watcher
from moddesk.xiangqi.game import GameService
from moddesk.xiangqi.rpc import ENDPOINTS, rpc_routes
from moddesk.xiangqi.store import Settings

DEEP = b"[" * 100_000  # the issue's body: over some routes' size cap (413), never a 500
BAD_BODIES = [b"{not json", b"[" * 60_000, b'{"a":' * 40 + b"1" + b"}" * 40, b"\xff\xfe{}", b'{"x": 1']


def routes_of(table: list[BaseRoute]) -> list[Route]:
    return [r for r in table if isinstance(r, Route)]


def concrete(path: str, values: dict[str, list[str]]) -> list[str]:
    """Every path a route answers for, its parameters filled from ``values``."""
    out = [path]
    for name, choices in values.items():
        out = (
            [p.replace("{" + name + "}", c) for p in out for c in choices]
            if "{" + name + "}" in path
            else out
        )
    return out


def assert_refused(http: httpx.Client, method: str, url: str, body: bytes, headers: dict[str, str]) -> None:
    response = http.request(
        method, url, content=body, headers={**headers, "content-type": "application/json"}
    )
    assert response.status_code < 500, (method, url, body[:12], response.status_code, response.text[:200])
    if method == "POST":
        expected = (400, 413) if len(body) > 64 * 1024 else (400,)
        assert response.status_code in expected, (url, body[:12], response.status_code, response.text[:200])
        payload: Any = response.json()
        # the error object: flat (pvf, ra3) or the xiangqi RPC's {code, message, messageZh}
        error = payload["error"] if isinstance(payload["error"], dict) else payload
        assert payload["ok"] is False and error["message"], payload


def check_table(
    http: httpx.Client, table: list[Route], values: dict[str, list[str]], headers: dict[str, str]
) -> int:
    checked = 0
    for route in table:
        for method in sorted(route.methods or {"GET"}):
            if method == "HEAD":
                continue
            for path in concrete(route.path, values):
                for body in [*BAD_BODIES, DEEP]:
                    assert_refused(http, method, path, body, headers)
                checked += 1
    return checked


@pytest.fixture
def pvf(tmp_path: Path) -> Iterator[Workbench]:
    archive = write_sample_archive(tmp_path / "body archive.pvf", files=10)
    bench = Workbench(PvfService(), port=0, roots=[tmp_path])
    bench.open_at_start(archive)
    bench.start()
    try:
        yield bench
    finally:
        bench.stop()


def test_every_pvf_route(pvf: Workbench) -> None:
    service = pvf.service
    table = routes_of(window_routes(service) + web_routes(service, lambda: pvf.url, lambda: pvf.token))
    names = sorted(OPS) + sorted(settings_ops(service, lambda: pvf.url, lambda: pvf.token))
    base = pvf.page_url.removesuffix("/pvf/")
    headers = pvf.person_headers()  # the page's routes are the person's
    with httpx.Client(base_url=base, timeout=30) as http:
        checked = check_table(http, table, {"name": names, "window": ["w1"]}, headers)
    assert checked >= len(names) + 5


def test_every_xiangqi_rpc_route(tmp_path: Path) -> None:
    from moddesk.xiangqi.serving import XiangqiHttp

    settings = Settings.model_validate(
        {"db_path": tmp_path / "games.db", "engine": "builtin", "think_time": 0.05}
    )
    service = GameService(settings)
    server = XiangqiHttp(service, 0, mcp=False)  # the panel alone, as `xiangqi mcp` serves it
    server.start()
    try:
        with httpx.Client(base_url=server.url, timeout=30) as http:
            checked = check_table(
                http,
                routes_of(rpc_routes(service)),
                {"endpoint": list(ENDPOINTS)},
                server.person_headers(),  # the RPC channel is the person's
            )
        assert checked >= len(ENDPOINTS)
    finally:
        server.stop()
        service.close()


def test_every_ra3_live_route(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(endpoints.HOME_ENV, str(tmp_path / "ra3 home"))
    watcher = Watcher([write_demo_mod(tmp_path / "mod A")], snapshots=False).start()
    try:
        assert watcher.projects[0].index.wait_until_final(30)
        table = routes_of(list(build_live_app(ProjectRegistry(), query_verbs).routes))
        with httpx.Client(base_url=watcher.server.url, timeout=30) as http:
            headers = {"authorization": f"Bearer {watcher.server.token}"}
            checked = check_table(http, table, {"verb": sorted(query_verbs())}, headers)
        assert checked >= len(query_verbs())
    finally:
        watcher.stop()
