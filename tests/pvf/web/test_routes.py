"""The page's JSON routes over real HTTP: guarded like the MCP endpoint, typed errors, the event stream."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from moddesk.kit.person import login_like_a_browser
from moddesk.pvf.agent.serve import Workbench
from moddesk.pvf.samples.generate import generate_archive
from moddesk.pvf.service import PvfService


@pytest.fixture
def bench(tmp_path: Path) -> Iterator[Workbench]:
    archive = tmp_path / "routes archive.pvf"
    generate_archive(archive, files=200, seed=5)
    workbench = Workbench(PvfService(), port=0, roots=[tmp_path])
    workbench.open_at_start(archive)
    workbench.start()
    try:
        yield workbench
    finally:
        workbench.stop()


def base(bench: Workbench) -> str:
    return bench.page_url.removesuffix("/pvf/")


@contextlib.contextmanager
def client(bench: Workbench) -> Iterator[httpx.Client]:
    """What a logged-in page sends: the session cookie of a login link and the page's CSRF token."""
    with httpx.Client(base_url=base(bench), timeout=30) as http:
        login_like_a_browser(http, bench.login_link())
        yield http


def test_ops_answer_like_the_service_and_refuse_bad_input(bench: Workbench) -> None:
    with client(bench) as http:
        info = http.post("/api/ops/info", json={}).json()
        assert info["open"] is True and info["revision"] == bench.service.info()["revision"]
        page = http.post("/api/ops/tree", json={"workspaceId": info["workspaceId"], "folder": ""}).json()
        assert page["ok"] is True and page["total"] >= 3
        unknown = http.post("/api/ops/format_disk", json={}).json()
        assert unknown["ok"] is False and unknown["error"] == "NOT_FOUND"
        typed = http.post("/api/ops/read", json={"workspaceId": info["workspaceId"], "path": 7}).json()
        assert typed["error"] == "INVALID_ARGUMENT" and typed["field"] == "path"
        stale = http.post("/api/ops/read", json={"workspaceId": "ws_old", "path": "n_string.lst"}).json()
        assert stale["error"] == "STALE_WORKSPACE"
        broken = http.post(
            "/api/ops/info", content=b"{not json", headers={"content-type": "application/json"}
        )
        assert broken.status_code == 400 and broken.json()["error"] == "INVALID_ARGUMENT"
        static = http.get("/pvf/")
        assert static.status_code == 200 and 'type="module"' in static.text
        assert (
            http.get("/pvf/js/tree.js")
            .headers["content-type"]
            .startswith(("text/javascript", "application/javascript"))
        )


def test_routes_sit_behind_the_host_and_origin_guard(bench: Workbench) -> None:
    with httpx.Client(base_url=base(bench), timeout=30) as anonymous:
        # without the person's session nothing of the page answers: not the data, not the stream
        assert anonymous.post("/api/ops/info", json={}).status_code == 401
        assert anonymous.get("/api/events", params={"window": "w"}).status_code == 401
        # the agent's token is for /mcp only
        agent = {"authorization": f"Bearer {bench.token}"}
        refused = anonymous.post("/api/ops/info", json={}, headers=agent)
        assert refused.status_code == 403 and refused.json()["error"] == "PERSON_ONLY"
        # the link the CLI prints logs the browser in once (cookie + the page's CSRF token)
        link = bench.login_link()
        login = anonymous.get(link)
        assert login.status_code == 200 and "moddesk-csrf=" in login.text
        assert "HttpOnly" in login.headers["set-cookie"] and "SameSite=Strict" in login.headers["set-cookie"]
        assert anonymous.get(link).status_code == 403  # one time only
        # the cookie alone opens the page, not its data: the CSRF token goes with every call
        assert anonymous.get("/pvf/").status_code == 200
        assert anonymous.post("/api/ops/info", json={}).json()["error"] == "CSRF_REQUIRED"
    with client(bench) as http:
        assert http.post("/api/ops/info", json={}).json()["open"] is True
        settings = http.post("/api/ops/settings", json={}).json()
        assert settings["token"] == bench.token  # shown to the person, for an HTTP config by hand
        assert any(
            r["path"] == str(Path(bench.service.info()["sourcePath"]).parent) for r in settings["roots"]
        )
        claude = next(c for c in settings["clients"] if c["id"] == "claude-code")
        # the copy-paste configs start the stdio bridge: no secret in them
        assert bench.token not in claude["config"] and '"connect"' in claude["config"]
        foreign = http.post("/api/ops/info", json={}, headers={"origin": "http://evil.example"})
        assert foreign.status_code == 403
        rebound = http.post("/api/ops/info", json={}, headers={"host": "evil.example"})
        assert rebound.status_code == 421
        page = http.get("/pvf/", headers={"host": "attacker.test:80"})
        assert page.status_code == 421


def test_event_stream_registers_the_window_while_connected(bench: Workbench) -> None:
    with client(bench) as http:
        with http.stream("GET", "/api/events", params={"window": "w-test"}) as stream:
            events: dict[str, dict[str, object]] = {}
            lines = stream.iter_lines()
            name = ""
            while "info" not in events or "activity" not in events:
                line = next(lines)
                if line.startswith("event: "):
                    name = line[7:]
                elif line.startswith("data: "):
                    events[name] = json.loads(line[6:])
            assert events["hello"] == {"window": "w-test"}
            assert any(w["windowId"] == "w-test" for w in bench.service.info()["drafts"])
            assert "tasks" in events["activity"] and "plans" in events["activity"]
        deadline = time.monotonic() + 10
        while any(w["windowId"] == "w-test" for w in bench.service.info()["drafts"]):
            assert time.monotonic() < deadline, "the window stayed registered after the stream closed"
            time.sleep(0.1)


def test_integers_past_2_53_travel_as_strings_and_come_back() -> None:
    from moddesk.pvf.web.ops import Args
    from moddesk.pvf.web.routes import browser_json

    identity = {"device": 65024, "inode": 7, "size": 10, "mtimeNs": 1796168739232628734, "sha256": "ab"}
    sent = browser_json({"ok": False, "targetIdentity": identity, "flag": True, "list": [2**60]})
    assert sent["targetIdentity"]["mtimeNs"] == "1796168739232628734" and sent["flag"] is True
    assert sent["targetIdentity"]["inode"] == 7 and sent["list"] == [str(2**60)]
    assert Args({"targetIdentity": sent["targetIdentity"]}).identity("targetIdentity") == identity


def test_page_exports_run_as_tasks_it_follows_and_may_cancel(bench: Workbench, tmp_path: Path) -> None:
    out = tmp_path / "page exports"
    out.mkdir()

    def follow(http: httpx.Client, started: dict[str, object]) -> dict[str, object]:
        assert started["ok"] is True and started["state"] == "running"
        for _ in range(600):
            status = http.post("/api/ops/task", json={"taskId": started["taskId"], "logLimit": 1}).json()
            if status["state"] not in ("queued", "running", "cancelling"):
                return dict(status)
            time.sleep(0.05)
        raise AssertionError("the task did not end")

    with client(bench) as http:
        info = http.post("/api/ops/info", json={}).json()
        prepared = follow(
            http,
            http.post(
                "/api/ops/exportPrepare",
                json={
                    "workspaceId": info["workspaceId"],
                    "expectedRevision": info["revision"],
                    "paths": [""],
                },
            ).json(),
        )
        assert prepared["state"] == "succeeded" and prepared["progress"]["message"] == "export.prepare done"
        plan = prepared["result"]
        assert isinstance(plan, dict)
        done = follow(
            http,
            http.post(
                "/api/ops/exportExecute",
                json={"planId": plan["planId"], "outputParent": str(out), "outputName": "all"},
            ).json(),
        )
        result = done["result"]
        assert isinstance(result, dict) and result["files"] == plan["entries"] and result["bytes"] > 0
        assert sum(1 for p in (out / "all").rglob("*") if p.is_file()) == plan["entries"]
        # cancel answers for export tasks only; a finished one is simply reported as it ended
        ended = http.post("/api/ops/exportCancel", json={"taskId": done["taskId"]}).json()
        assert ended["state"] == "succeeded"
        assert (
            http.post("/api/ops/exportCancel", json={"taskId": "task_nope"}).json()["error"]
            == "TASK_NOT_FOUND"
        )
