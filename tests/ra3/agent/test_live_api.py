"""The live query HTTP API of a real in-process watcher: auth, Host check, routing, projectDir."""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from moddesk.kit.errors import ServiceError
from moddesk.kit.http import LoopbackServer
from moddesk.ra3.agent import endpoints
from moddesk.ra3.agent.demo import write_demo_mod
from moddesk.ra3.agent.endpoints import Endpoint, endpoint_path_for_project, read_endpoint_for_project
from moddesk.ra3.agent.live import LiveClient, query_verbs
from moddesk.ra3.agent.mcp import Ra3Backend
from moddesk.ra3.agent.watch import Watcher


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "ra3 home"
    monkeypatch.setenv(endpoints.HOME_ENV, str(root))
    return root


@pytest.fixture
def two_projects(home: Path, tmp_path: Path) -> Iterator[tuple[Watcher, Watcher]]:
    a = write_demo_mod(tmp_path / "mod A")
    b = write_demo_mod(tmp_path / "mod B")
    # make the two projects distinguishable
    (b / "Data/Units/Tanks.xml").write_text(
        (b / "Data/Units/Tanks.xml").read_text().replace('id="AthenaWreck"', 'id="OnlyInB"')
    )
    wa = Watcher([a], snapshots=False).start()
    wb = Watcher([b], snapshots=False).start()
    try:
        for w in (wa, wb):
            assert w.projects[0].index.wait_until_final(30)
        yield wa, wb
    finally:
        wa.stop()
        wb.stop()


def _get(w: Watcher, path: str, **headers: str) -> httpx.Response:
    return httpx.get(w.server.url + path, headers={"Authorization": f"Bearer {w.server.token}", **headers})


def test_token_host_and_origin_are_checked(two_projects: tuple[Watcher, Watcher]) -> None:
    wa, wb = two_projects
    assert wa.server.url.startswith("http://127.0.0.1:")
    assert httpx.get(wa.server.url + "/projects").status_code == 401
    wrong = httpx.get(wa.server.url + "/projects", headers={"Authorization": f"Bearer {wb.server.token}"})
    assert wrong.status_code == 401
    assert _get(wa, "/projects", Host="evil.example").status_code == 421
    assert _get(wa, "/projects", Host=f"evil.example:{wa.server.port}").status_code == 421
    assert _get(wa, "/projects", Origin="http://evil.example").status_code == 403
    assert _get(wa, "/projects").status_code == 200
    assert wa.server.token != wb.server.token and wa.server.port != wb.server.port


def test_routing_by_project_and_every_answer_names_its_project(two_projects: tuple[Watcher, Watcher]) -> None:
    wa, _wb = two_projects
    project = wa.projects[0].project_dir
    listing = _get(wa, "/projects").json()
    assert [p["projectDir"] for p in listing["projects"]] == [project]
    status = _get(wa, "/status?" + httpx.QueryParams(project=project).__str__()).json()
    assert status["ok"] and status["index"]["projectDir"] == project and status["index"]["state"] == "ready"
    answer = httpx.post(
        wa.server.url + "/query/find_asset",
        params={"project": project},
        json={"id": "athenacannon", "type": "GameObject"},
        headers={"Authorization": f"Bearer {wa.server.token}"},
    ).json()
    assert answer["ok"] and answer["index"]["projectDir"] == project
    assert answer["result"]["assets"][0]["file"] == "Data/Units/Tanks.xml"
    other = httpx.post(
        wa.server.url + "/query/find_asset",
        params={"project": str(Path(project).parent / "mod B")},
        json={"id": "OnlyInB"},
        headers={"Authorization": f"Bearer {wa.server.token}"},
    )
    assert other.status_code == 404 and other.json()["error"] == "UNKNOWN_PROJECT"


def test_bad_requests_are_explicit_errors(two_projects: tuple[Watcher, Watcher]) -> None:
    wa, _wb = two_projects
    auth = {"Authorization": f"Bearer {wa.server.token}"}
    r = httpx.post(wa.server.url + "/query/drop_tables", json={}, headers=auth)
    assert r.status_code == 404 and r.json()["error"] == "UNKNOWN_QUERY"
    assert r.json()["index"]["projectDir"] == wa.projects[0].project_dir
    r = httpx.post(wa.server.url + "/query/find_asset", content=b"{not json", headers=auth)
    assert r.status_code == 400 and r.json()["error"] == "INVALID_ARGUMENT"
    r = httpx.post(wa.server.url + "/query/find_asset", json={"idd": "x"}, headers=auth)
    assert r.status_code == 400 and "bad parameters" in r.json()["message"]
    r = httpx.post(
        wa.server.url + "/query/get_definition", json={"type": "GameObject", "id": "Nope"}, headers=auth
    )
    body = r.json()
    assert body["ok"] and body["result"]["found"] is False and body["result"]["note"]  # a miss says why


def test_each_backend_answers_only_about_its_own_project(two_projects: tuple[Watcher, Watcher]) -> None:
    wa, wb = two_projects
    a = Ra3Backend(wa.projects[0].project_dir)
    b = Ra3Backend(wb.projects[0].project_dir)
    ans_a = a.ask("find_asset", {"id": "OnlyInB"})
    ans_b = b.ask("find_asset", {"id": "OnlyInB"})
    assert ans_a.source == ans_b.source == "live"
    assert ans_a.index["projectDir"] == wa.projects[0].project_dir and ans_a.result["found"] is False
    assert ans_b.index["projectDir"] == wb.projects[0].project_dir and ans_b.result["found"] is True


def test_forged_endpoint_to_another_projects_server_is_refused(two_projects: tuple[Watcher, Watcher]) -> None:
    wa, wb = two_projects
    project_a = wa.projects[0].project_dir
    # A's endpoint file now points at B's live server (with B's valid token and live pid)
    forged = Endpoint(
        url=wb.server.url,
        token=wb.server.token,
        processId=os.getpid(),
        projectDir=project_a,
        startedAt="2026-01-01T00:00:00Z",
    )
    endpoint_path_for_project(project_a).write_text(forged.to_json())
    client = LiveClient(project_a)
    assert client.request("find_asset", {"id": "OnlyInB"}) is None  # B's server routes by project: declines
    assert client.last_failure is not None and "does not index this project" in client.last_failure
    # the MCP backend falls back (here: no snapshot) and never answers with B's data
    with pytest.raises(ServiceError) as err:
        Ra3Backend(project_a).ask("find_asset", {"id": "OnlyInB"})
    assert err.value.code == "NO_INDEX"


def test_an_answer_about_another_project_is_refused(home: Path, tmp_path: Path) -> None:
    """A server that ignores `?project=` (a stale or foreign one) is caught by the projectDir check."""
    mine = tmp_path / "mine"
    mine.mkdir()
    theirs = str(tmp_path / "theirs")

    async def anything(request: Request) -> JSONResponse:
        return JSONResponse(
            {"ok": True, "index": {"projectDir": theirs, "state": "ready"}, "result": {"x": 1}}
        )

    app = Starlette(routes=[Route("/{path:path}", anything, methods=["GET", "POST"])])
    with LoopbackServer(lambda port: app) as server:
        record = Endpoint(server.url, "t", os.getpid(), str(mine), "2026-01-01T00:00:00Z")
        path = endpoint_path_for_project(mine)
        path.parent.mkdir(parents=True)
        path.write_text(record.to_json())
        with pytest.raises(ServiceError) as err:
            Ra3Backend(mine).ask("find_asset", {"id": "X"})
    assert err.value.code == "PROJECT_MISMATCH"
    assert err.value.details["answeredProjectDir"] == theirs


def test_dead_process_and_negative_cache(home: Path, tmp_path: Path) -> None:
    mine = tmp_path / "mine"
    mine.mkdir()
    path = endpoint_path_for_project(mine)
    path.parent.mkdir(parents=True)
    now = [100.0]
    client = LiveClient(mine, negative_ttl=5.0, clock=lambda: now[0])
    # a pid that does not exist
    path.write_text(Endpoint("http://127.0.0.1:9", "t", 2**22 + 12345, str(mine), "x").to_json())
    assert client.request("get_status", {}) is None and "not running" in (client.last_failure or "")
    # a live pid but nothing listening: refused connection, then cached as down
    path.write_text(Endpoint("http://127.0.0.1:9", "t", os.getpid(), str(mine), "x").to_json())
    now[0] += 5.1
    assert client.request("get_status", {}) is None and "did not answer" in (client.last_failure or "")
    path.unlink()
    client.last_failure = "cached"
    now[0] += 1.0
    assert client.request("get_status", {}) is None and client.last_failure == "cached"  # not even tried
    now[0] += 5.0
    assert (
        client.request("get_status", {}) is None
        and client.last_failure == "no endpoint file for this project"
    )


@pytest.mark.skipif(sys.platform == "win32", reason="uses a FIFO to hold the build open")
def test_building_state_is_explicit_never_empty(home: Path, tmp_path: Path) -> None:
    project = write_demo_mod(tmp_path / "slow mod")
    fifo = project / "Data" / "Slow.xml"
    os.mkfifo(fifo)
    mod = project / "Data" / "Mod.xml"
    mod.write_text(
        mod.read_text().replace("<Includes>", '<Includes>\n    <Include type="all" source="Slow.xml"/>')
    )
    watcher = Watcher([project], snapshots=False).start()
    feeder: threading.Thread | None = None
    try:
        backend = Ra3Backend(project)
        status = backend.ask("get_status", {})
        started = time.monotonic() + 10
        while status.index["state"] == "no_index" and time.monotonic() < started:
            time.sleep(0.02)  # the watcher's thread has not begun the build yet (a busy box)
            status = backend.ask("get_status", {})
        assert status.source == "live" and status.index["state"] == "building"
        with pytest.raises(ServiceError) as err:
            backend.ask("find_asset", {"id": "AthenaCannon"})
        assert err.value.code == "NO_INDEX" and err.value.details["index"]["state"] == "building"
        with pytest.raises(ServiceError) as err:
            backend.ask("find_asset", {"id": "AthenaCannon"}, wait_for_index=True, timeout_seconds=0.3)
        assert err.value.code == "INDEX_TIMEOUT"
        # a file changes while the build runs: the build's result is stale, the change is applied after
        tanks = project / "Data/Units/Tanks.xml"
        tanks.write_text(tanks.read_text().replace('id="AthenaWreck"', 'id="EditedDuringBuild"'))
        deadline = time.monotonic() + 30
        while not watcher.projects[0].index.status().stale:
            assert time.monotonic() < deadline, "the watcher never saw the edit"
            time.sleep(0.05)

        def feed() -> None:
            with open(fifo, "w") as handle:
                handle.write(
                    '<AssetDeclaration xmlns="uri:ea.com:eala:asset"><FXList id="FX_Slow"/></AssetDeclaration>'
                )

        feeder = threading.Thread(target=feed)
        feeder.start()
        answer = backend.ask("find_asset", {"id": "FX_Slow"}, wait_for_index=True, timeout_seconds=30)
        assert answer.index["state"] == "ready" and answer.result["found"] is True
        edited = backend.ask(
            "find_asset", {"id": "EditedDuringBuild"}, wait_for_index=True, timeout_seconds=30
        )
        assert edited.result["found"] is True and edited.index["final"] is True
    finally:
        if feeder is None:  # unblock the indexer so the watcher can stop
            threading.Thread(target=lambda: open(fifo, "w").close(), daemon=True).start()
        watcher.stop()
        if feeder is not None:
            feeder.join(5)


def test_stop_removes_only_own_endpoint_files(home: Path, tmp_path: Path) -> None:
    a = write_demo_mod(tmp_path / "a")
    b = write_demo_mod(tmp_path / "b")
    wa = Watcher([a], snapshots=False).start()
    wb = Watcher([b], snapshots=False).start()
    try:
        assert read_endpoint_for_project(a) is not None and read_endpoint_for_project(b) is not None
        global_before = json.loads(endpoints.global_endpoint_path().read_text())
        assert global_before["token"] == wb.server.token  # the last writer holds the global file
        removed = wa.stop()
        assert endpoint_path_for_project(a) in removed
        assert read_endpoint_for_project(a) is None
        assert read_endpoint_for_project(b) is not None
        assert json.loads(endpoints.global_endpoint_path().read_text())["token"] == wb.server.token
    finally:
        wb.stop()
    assert not endpoints.global_endpoint_path().exists()


def test_fuzz_query_bodies_get_a_structured_answer(home: Path, tmp_path: Path) -> None:
    project = write_demo_mod(tmp_path / "mod")
    watcher = Watcher([project], snapshots=False).start()
    try:
        assert watcher.projects[0].index.wait_until_final(30)
        auth = {"Authorization": f"Bearer {watcher.server.token}"}
        verbs = sorted(query_verbs())

        @settings(max_examples=150, deadline=None)
        @given(
            verb=st.sampled_from([*verbs, "nope"]),
            body=st.one_of(
                st.binary(max_size=200),
                st.dictionaries(
                    st.sampled_from(
                        ["id", "type", "limit", "cursor", "path", "name", "source", "depth", "x"]
                    ),
                    st.one_of(
                        st.none(), st.integers(), st.text(max_size=30), st.lists(st.integers(), max_size=3)
                    ),
                ).map(lambda d: json.dumps(d).encode()),
            ),
        )
        def check(verb: str, body: bytes) -> None:
            r = http.post(f"{watcher.server.url}/query/{verb}", content=body, headers=auth)
            assert r.status_code in (200, 400, 404, 409, 422), r.text
            payload = r.json()
            assert isinstance(payload["ok"], bool)
            if not payload["ok"]:
                assert payload["error"] and payload["message"]

        with httpx.Client() as http:  # one client: building one per request costs ~100 ms
            check()
    finally:
        watcher.stop()


def test_endpoint_naming_a_remote_host_is_never_contacted(home: Path, tmp_path: Path) -> None:
    mine = tmp_path / "mine"
    mine.mkdir()
    path = endpoint_path_for_project(mine)
    path.parent.mkdir(parents=True)
    path.write_text(Endpoint("http://203.0.113.7:80", "secret", os.getpid(), str(mine), "x").to_json())
    client = LiveClient(mine)
    assert client.request("find_asset", {"id": "X"}) is None
    assert "non-loopback" in (client.last_failure or "")  # the token never leaves the machine


def test_one_process_serves_several_projects_routed_by_project(home: Path, tmp_path: Path) -> None:
    a = write_demo_mod(tmp_path / "a")
    b = write_demo_mod(tmp_path / "b")
    (b / "Data/Units/Tanks.xml").write_text(
        (b / "Data/Units/Tanks.xml").read_text().replace("AthenaWreck", "OnlyInB")
    )
    watcher = Watcher([a, b], snapshots=False).start()
    try:
        for project in watcher.projects:
            assert project.index.wait_until_final(30)
        glob = json.loads(endpoints.global_endpoint_path().read_text())
        assert sorted(glob["projects"]) == sorted(p.project_dir for p in watcher.projects)
        assert read_endpoint_for_project(a).url == read_endpoint_for_project(b).url  # type: ignore[union-attr]
        in_a = Ra3Backend(a).ask("find_asset", {"id": "OnlyInB"})
        in_b = Ra3Backend(b).ask("find_asset", {"id": "OnlyInB"})
        assert in_a.source == in_b.source == "live"
        assert in_a.result["found"] is False and in_b.result["found"] is True
        listed = Ra3Backend(a).ask("list_projects")
        assert {p["projectDir"] for p in listed.result["projects"]} >= {str(a), str(b)}
        r = httpx.get(
            watcher.server.url + "/status", headers={"Authorization": f"Bearer {watcher.server.token}"}
        )
        assert r.status_code == 400 and r.json()["error"] == "INVALID_ARGUMENT"  # which project? say so
    finally:
        watcher.stop()


def test_live_api_stops_reading_at_its_cap(two_projects: tuple[Watcher, Watcher]) -> None:
    """A body past the cap is refused without being read to its end (declared or streamed)."""
    wa, _ = two_projects
    url = f"{wa.server.url}/query/find_asset?project={wa.projects[0].project_dir}"
    auth = {"Authorization": f"Bearer {wa.server.token}", "Content-Type": "application/json"}
    sent = 0

    def stream() -> Iterator[bytes]:
        nonlocal sent
        for _ in range(64):  # 64 MiB offered
            sent += 1 << 20
            yield b" " * (1 << 20)

    with httpx.Client(timeout=30) as http:
        try:
            answer = http.post(url, content=stream(), headers=auth)
            assert answer.status_code in (400, 413), answer.status_code
        except httpx.HTTPError:
            pass  # the server answered and closed while we were still sending
        declared = http.post(url, content=b"{" + b" " * (2 << 20) + b"}", headers=auth)
        assert declared.status_code == 413
        deep = http.post(url, content=b"[" * 50_000 + b"]" * 50_000, headers=auth)
        assert deep.status_code == 400 and "Traceback" not in deep.text
    assert sent < 64 << 20
