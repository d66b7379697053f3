"""Every HTTP route and MCP tool of pvf and xiangqi × {no credential, the agent's token, the person's
session}: each is reachable by exactly the principal that owns it.

The routes are walked from the running app's own route table (and every page operation and RPC
endpoint behind a ``{name}`` route), so a route added later is covered without editing this file.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from starlette.routing import BaseRoute, Mount, Route

from moddesk.kit.http import HostOriginGuard
from moddesk.kit.mcp import result_payload
from moddesk.kit.person import LOGIN_PATH, PERSON_SCRIPT_PATH, login_like_a_browser
from moddesk.kit.principals import AccessPolicy, Principal
from moddesk.pvf.agent.serve import Workbench
from moddesk.pvf.samples.generate import generate_archive
from moddesk.pvf.service import PvfService
from moddesk.pvf.web.access import PVF_ACCESS
from moddesk.pvf.web.ops import OPS
from moddesk.pvf.web.settings import settings_ops
from moddesk.xiangqi.access import XIANGQI_ACCESS
from moddesk.xiangqi.game import GameService
from moddesk.xiangqi.rpc import ENDPOINTS
from moddesk.xiangqi.serving import XiangqiHttp
from moddesk.xiangqi.store import Settings

REPO = Path(__file__).resolve().parents[2]


@dataclass
class Served:
    """One running listener, its access policy, and how each principal calls it."""

    url: str
    app: Any
    policy: AccessPolicy
    agent_token: str
    login_link: Any  # () -> a fresh one-time link
    placeholders: dict[str, list[str]]  # path parameter -> concrete values to try


@pytest.fixture
def pvf(tmp_path: Path) -> Iterator[Served]:
    archive = tmp_path / "principals archive.pvf"
    generate_archive(archive, files=60, seed=3)
    bench = Workbench(PvfService(), port=0, roots=[tmp_path])
    bench.open_at_start(archive)
    with bench:
        names = sorted({*OPS, *settings_ops(bench.service, lambda: bench.url, lambda: bench.token)})
        yield Served(
            bench.server.url,
            bench.server.app,
            PVF_ACCESS,
            bench.token,
            bench.login_link,
            {"name": names, "window": ["w1"], "path": ["index.html"]},
        )


@pytest.fixture
def xiangqi(tmp_path: Path) -> Iterator[Served]:
    service = GameService(Settings(db_path=tmp_path / "games.db", think_time=0.05, hint_time=0.1))
    try:
        with XiangqiHttp(service, 0) as http:
            service.new("hero", "r", "model")
            yield Served(
                http.url,
                http.server.app,
                XIANGQI_ACCESS,
                http.token,
                http.login_link,
                {"endpoint": [*ENDPOINTS, "nope"], "path": ["index.html"]},
            )
    finally:
        service.close()


def _walk(routes: list[BaseRoute], prefix: str = "") -> Iterator[tuple[str, str]]:
    """(method, path template) of every route, mounts included; a static mount is a GET of its index."""
    for route in routes:
        if isinstance(route, Route):
            for method in sorted(route.methods or {"GET"}):
                if method != "HEAD":
                    yield method, prefix + route.path
        elif isinstance(route, Mount):
            inner = getattr(route, "routes", None) or []
            if inner:
                yield from _walk(list(inner), prefix + route.path)
            else:  # StaticFiles: the page and one of its files
                yield "GET", prefix + route.path + "/"
                yield "GET", prefix + route.path + "/{path}"


def every_route(served: Served) -> list[tuple[str, str]]:
    """Every (method, concrete path) the app serves, from its own route table."""
    guard = served.app
    assert isinstance(guard, HostOriginGuard)
    host = guard.app
    found: set[tuple[str, str]] = set()
    for method, template in _walk(list(host.routes)):  # type: ignore[attr-defined]
        concrete = [template]
        for name, values in served.placeholders.items():
            for marker in ("{" + name + "}", "{" + name + ":path}"):
                concrete = (
                    [c.replace(marker, v) for c in concrete for v in values]
                    if any(marker in c for c in concrete)
                    else concrete
                )
        assert all("{" not in c for c in concrete), f"no value for a parameter of {template}"
        found.update((method, path) for path in concrete)
    found |= {("GET", "/mcp"), ("DELETE", "/mcp"), ("GET", "/nothing-here")}
    return sorted(found)


def _request(http: httpx.Client, method: str, path: str, headers: dict[str, str]) -> httpx.Response:
    """One request; an event stream is read up to its first bytes and closed."""
    body = {} if method in ("POST", "PUT", "PATCH", "DELETE") else None
    with http.stream(method, path, headers=headers, json=body) as response:
        if response.headers.get("content-type", "").startswith("text/event-stream"):
            next(response.iter_bytes(), b"")
        else:
            response.read()
    return response


def _code(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return ""
    error = body.get("error") if isinstance(body, dict) else None
    return str(error.get("code") if isinstance(error, dict) else error or "")


def check_table(served: Served) -> int:
    """Every route by every principal; returns how many (route, principal) pairs were checked."""
    routes = every_route(served)
    agent = {"Authorization": f"Bearer {served.agent_token}"}
    checked = 0
    with (
        httpx.Client(base_url=served.url, timeout=60) as nobody,
        httpx.Client(base_url=served.url, timeout=60) as person,
    ):
        csrf = login_like_a_browser(person, served.login_link())
        assert csrf
        for method, path in routes:
            owner = served.policy.principal(path)
            none_answer = _request(nobody, method, path, {})
            agent_answer = _request(nobody, method, path, agent)
            person_answer = _request(person, method, path, {})
            where = f"{method} {path}"
            if owner is Principal.AGENT:
                assert none_answer.status_code == 401, where
                assert agent_answer.status_code not in (401, 403), where
                assert person_answer.status_code == 403 and _code(person_answer) == "AGENT_ONLY", where
            elif owner is Principal.PERSON:
                assert none_answer.status_code == 401, (where, none_answer.status_code)
                assert agent_answer.status_code == 403 and _code(agent_answer) == "PERSON_ONLY", where
                assert person_answer.status_code not in (401, 403), (where, person_answer.status_code)
                assert person_answer.status_code < 500, (where, person_answer.text[:300])
            else:
                assert path in (LOGIN_PATH, PERSON_SCRIPT_PATH, "/favicon.ico"), where
            checked += 3
    # the person-only actions name routes the app really has, and each is refused to the agent
    table = set(routes)
    for action in served.policy.person_actions:
        for route in action.routes:
            method, path = route.split(" ", 1)
            assert (method, path) in table, f"{action.name}: {route} is not a route of the app"
            assert served.policy.principal(path) is Principal.PERSON, route
    return checked


def test_every_pvf_route_by_every_principal(pvf: Served) -> None:
    assert check_table(pvf) > 3 * 50  # every page operation, window route, the stream, the page, /mcp


def test_every_xiangqi_route_by_every_principal(xiangqi: Served) -> None:
    assert check_table(xiangqi) > 3 * 15


def _tools_by_principal(served: Served) -> list[str]:
    """Every tool: the agent calls it over /mcp; nobody and the person are refused at the door."""

    async def tool_names() -> list[str]:
        from moddesk.kit.local_service import http_client

        async with http_client(f"{served.url}/mcp", served.agent_token) as client:
            return [t.name for t in (await client.list_tools()).tools]

    names = anyio.run(tool_names)
    assert names
    mcp_headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    with (
        httpx.Client(base_url=served.url, timeout=60) as nobody,
        httpx.Client(base_url=served.url, timeout=60) as person,
    ):
        login_like_a_browser(person, served.login_link())
        for name in names:
            call = {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": name, "arguments": {}},
            }
            assert nobody.post("/mcp", json=call, headers=mcp_headers).status_code == 401, name
            refused = person.post("/mcp", json=call, headers=mcp_headers)
            assert refused.status_code == 403 and _code(refused) == "AGENT_ONLY", name
    return names


def test_every_pvf_tool_is_the_agents_only(pvf: Served) -> None:
    names = _tools_by_principal(pvf)

    async def agent_calls() -> None:
        from moddesk.kit.local_service import http_client

        async with http_client(f"{pvf.url}/mcp", pvf.agent_token) as client:
            for name in names:
                if name.endswith(("_save", "_save_as", "_close", "_open")):
                    continue  # lifecycle tools are exercised with real arguments elsewhere
                result = await client.call_tool(name, {})
                payload = result_payload(result)
                assert payload.get("error") not in ("UNAUTHORIZED", "PERSON_ONLY", "AGENT_ONLY"), name

    anyio.run(agent_calls)
    # no tool reaches what the person alone owns on pvf: settings, editor windows, roots
    assert not [n for n in names if any(word in n for word in ("setting", "window", "draft", "ack", "root"))]


def test_every_xiangqi_tool_and_person_action(xiangqi: Served) -> None:
    """Each person-only action has a probe showing how the model's tools refuse it (a new action
    without a probe fails here)."""
    names = _tools_by_principal(xiangqi)
    assert not [n for n in names if "resign" in n or "fallback" in n]
    person = httpx.Client(base_url=xiangqi.url, timeout=60)
    login_like_a_browser(person, xiangqi.login_link())

    def rpc(endpoint: str, body: dict[str, Any]) -> dict[str, Any]:
        answer = person.post(f"/xiangqi-mate/{endpoint}", json=body).json()
        assert answer["ok"], answer
        value: dict[str, Any] = answer["value"]
        return value

    async def probes() -> dict[str, bool]:
        from moddesk.kit.local_service import http_client

        async with http_client(f"{xiangqi.url}/mcp", xiangqi.agent_token) as client:

            async def refused(tool: str, args: dict[str, Any], code: str) -> bool:
                result = await client.call_tool(tool, args)
                return bool(result.is_error) and result_payload(result).get("error") == code

            session = rpc("new", {"side": "r", "opponent": "model"})["sessionId"]
            done = {
                "moves": await refused(
                    "xiangqi_move", {"move": "h2e2", "sessionId": session}, "NOT_YOUR_TURN"
                ),
                "resign": "xiangqi_resign" not in names,
                "fallback": "xiangqi_fallback" not in names,
            }
            rpc("move", {"sessionId": session, "move": "h2e2"})
            await client.call_tool("xiangqi_draw", {"action": "offer", "sessionId": session})
            done["draw"] = await refused(
                "xiangqi_draw", {"action": "accept", "sessionId": session}, "DRAW_REFUSED"
            )
            rpc("resign", {"sessionId": session})
            done["undo-after-result"] = await refused(
                "xiangqi_undo", {"plies": 2, "sessionId": session}, "UNDO_REFUSED"
            )
            # a finished game (not resigned) is the person's to reopen too
            other = rpc("new", {"side": "r", "opponent": "model", "maxPlies": 2})["sessionId"]
            rpc("move", {"sessionId": other, "move": "h2e2"})
            await client.call_tool("xiangqi_move", {"move": "h9g7", "sessionId": other})
            done["undo-after-result"] &= await refused(
                "xiangqi_undo", {"plies": 2, "sessionId": other}, "UNDO_REFUSED"
            )
            return done

    try:
        done = anyio.run(probes)
    finally:
        person.close()
    assert set(done) == {a.name for a in XIANGQI_ACCESS.person_actions}, "each person action needs a probe"
    assert all(done.values()), done


def test_the_prompt_never_acts(xiangqi: Served) -> None:
    """`prompts/get xiangqi {"command":"resign"}` from the model's own connection resigns nothing."""

    async def flow() -> None:
        from moddesk.kit.local_service import http_client

        async with http_client(f"{xiangqi.url}/mcp", xiangqi.agent_token) as client:
            before = result_payload(await client.call_tool("xiangqi_board", {}))
            for command in ("resign", "move 炮二平五", "undo 2", "draw accept", "fallback", "new b"):
                prompt = await client.get_prompt("xiangqi", {"command": command})
                text = prompt.messages[0].content.text  # type: ignore[union-attr]
                assert "token=" not in text
            after = result_payload(await client.call_tool("xiangqi_board", {}))
            assert after["revision"] == before["revision"] and after["sessionId"] == before["sessionId"]
            assert after["status"]["state"] == "playing" and after["plies"] == before["plies"]

    anyio.run(flow)


def test_a_page_on_another_port_cannot_register_a_window(pvf: Served) -> None:
    """The iframe attack: the browser sends the cookie (ports share cookies) but no Origin and no
    CSRF token; nothing is registered, and a same-site request with the token is refused too."""
    with httpx.Client(base_url=pvf.url, timeout=30) as browser:
        csrf = login_like_a_browser(browser, pvf.login_link())
        del browser.headers["x-moddesk-csrf"]
        evil = browser.get("/api/events", params={"window": "evil"})
        assert evil.status_code == 403 and _code(evil) == "CSRF_REQUIRED"
        framed = browser.get(
            "/api/workspace", headers={"x-moddesk-csrf": csrf, "sec-fetch-site": "same-site"}
        )
        assert framed.status_code == 403
        info = browser.post("/api/ops/info", json={}, headers={"x-moddesk-csrf": csrf}).json()
        assert not any(w["windowId"] == "evil" for w in info["drafts"])
        assert browser.get("/pvf/").status_code == 200  # the cookie alone still opens the page itself


def test_the_token_scan_catches_a_leak(tmp_path: Path) -> None:
    """The suite-wide scan (tests/conftest.py) fails a test whose tool result carries a live token."""
    (tmp_path / "conftest.py").write_text((REPO / "tests" / "conftest.py").read_text(encoding="utf-8"))
    (tmp_path / "test_leak.py").write_text(
        textwrap.dedent(
            """
            import anyio
            from mcp import Client
            from mcp.server import MCPServer
            from moddesk.kit.person import PersonGate

            def test_leak():
                gate = PersonGate()
                server = MCPServer("leaky")

                @server.tool()
                def panel() -> str:
                    return "open http://127.0.0.1:1/xiangqi/ with key " + gate.key

                async def flow():
                    async with Client(server) as client:
                        await client.call_tool("panel", {})

                anyio.run(flow)
            """
        )
    )
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path / "test_leak.py")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 1 and "a credential reached what a model reads" in run.stdout, run.stdout[-2000:]
    assert "tools/call" in run.stdout  # found in the tool's result
