"""Real processes: `moddesk ra3 watch` subprocesses and the SDK's Client over stdio to `ra3 mcp`."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from moddesk.kit.mcp import result_payload
from moddesk.ra3.agent import endpoints
from moddesk.ra3.agent.demo import write_demo_mod
from moddesk.ra3.agent.endpoints import (
    endpoint_path_for_project,
    global_endpoint_path,
    read_endpoint,
    read_endpoint_for_project,
)
from moddesk.ra3.agent.mcp import LIVE_TIMEOUT_ENV
from moddesk.ra3.core.snapshot import snapshot_path

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
CLI = [sys.executable, "-m", "moddesk.ra3.cli"]


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "ra3 home"
    monkeypatch.setenv(endpoints.HOME_ENV, str(root))
    return root


def _env(home: Path) -> dict[str, str]:
    # a generous live timeout: CI machines shared by many jobs can stall a loopback call past 1.5 s
    return {**os.environ, endpoints.HOME_ENV: str(home), LIVE_TIMEOUT_ENV: "10"}


class WatchProcess:
    """A `moddesk ra3 watch` subprocess."""

    def __init__(self, home: Path, *projects: Path, quiet: float = 1.0) -> None:
        self.projects = projects
        self.captured = ""
        self.proc = subprocess.Popen(
            [*CLI, "watch", *map(str, projects), "--quiet", str(quiet)],
            env=_env(home),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )

    def wait_published(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            records = [read_endpoint_for_project(p) for p in self.projects]
            if all(r is not None and r.processId == self.proc.pid for r in records):
                return
            assert self.proc.poll() is None, self.output()
            time.sleep(0.05)
        raise AssertionError("watch did not publish its endpoint files: " + self.output())

    def output(self) -> str:
        if self.proc.poll() is None:
            return "(still running)"
        return self.proc.stdout.read() if self.proc.stdout else ""

    def stop(self, sig: int = signal.SIGTERM) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            return self.proc.wait(15)
        finally:
            if self.proc.stdout and not self.proc.stdout.closed:
                self.captured = self.proc.stdout.read()
                self.proc.stdout.close()


@pytest.fixture
def watchers() -> Iterator[list[WatchProcess]]:
    started: list[WatchProcess] = []
    yield started
    for w in started:
        w.stop(signal.SIGKILL)


def _mcp(home: Path, project: Path) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable, args=[*CLI[1:], "mcp", "--project", str(project)], env=_env(home)
    )


async def _call(client: Client, tool: str, **args: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, args)
    payload = result_payload(result)
    assert isinstance(payload, dict)
    return {
        "isError": bool(result.is_error),
        **payload,
        "text": result.content[0].text if result.content else "",
    }


async def _until(check: Callable[[], Awaitable[bool]], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if await check():
            return
        await anyio.sleep(0.1)
    raise AssertionError("condition not met in time")


def test_live_answers_edits_and_snapshot_fallback_after_sigkill(
    home: Path, tmp_path: Path, watchers: list[WatchProcess]
) -> None:
    project = write_demo_mod(tmp_path / "Demo Mod")
    watch = WatchProcess(home, project)
    watchers.append(watch)
    watch.wait_published()

    async def main() -> None:
        async with Client(_mcp(home, project), read_timeout_seconds=60) as client:
            tools = (await client.list_tools()).tools
            names = {t.name for t in tools}
            assert {"get_status", "find_asset", "get_asset_references", "get_usage_guide"} <= names
            assert all(t.annotations and t.annotations.read_only_hint for t in tools)
            assert not any(t.output_schema for t in tools)  # dropped: tokens in every chat, text has all

            first = await _call(
                client, "find_asset", id="AthenaCannon", type="GameObject", wait_for_index=True
            )
            assert not first["isError"] and first["source"] == "live"
            assert first["index"]["projectDir"] == str(project) and first["index"]["state"] == "ready"
            assert first["result"]["assets"][0]["file"] == "Data/Units/Tanks.xml"
            assert first["text"].startswith("[live index of")

            weapons = await _call(
                client,
                "get_asset_references",
                type="GameObject",
                id="AthenaCannon",
                targetTypes=["WeaponTemplate"],
            )
            targets = {e["to"]["id"] for e in weapons["result"]["edges"] if e["to"]}
            assert {
                "AthenaCannonWeapon",
                "BaseCannon",
            } <= targets  # BaseCannon comes via inheritFrom BaseTank

            # edit a file: the watcher re-indexes it and the live answer follows
            tanks = project / "Data/Units/Tanks.xml"
            tanks.write_text(
                tanks.read_text().replace(
                    "</AssetDeclaration>", '  <GameObject id="NewTank"/>\n</AssetDeclaration>'
                )
            )

            async def sees_new_tank() -> bool:
                answer = await _call(client, "find_asset", id="NewTank")
                return bool(answer["source"] == "live" and answer["result"]["found"])

            await _until(sees_new_tank)

            # the quiet-period snapshot follows the final index (1 s quiet in this test)
            async def snapshot_has_new_tank() -> bool:
                path = snapshot_path(str(project))
                return path.exists() and b"NewTank" in __import__("gzip").decompress(path.read_bytes())

            await _until(snapshot_has_new_tank)

            watch.stop(signal.SIGKILL)
            assert endpoint_path_for_project(project).exists()  # a killed process cannot clean up
            status: dict[str, Any] = {}

            async def notices_dead_process() -> bool:
                # (an earlier live failure under load may still be in the 5 s negative cache)
                status.update(await _call(client, "get_status"))
                return status["source"] == "snapshot" and "not running" in (status.get("liveProblem") or "")

            await _until(notices_dead_process, timeout=20)
            assert status["index"]["projectDir"] == str(project)
            offline = await _call(client, "find_asset", id="NewTank")
            assert offline["source"] == "snapshot" and offline["result"]["found"] is True
            assert offline["text"].startswith("[snapshot index of")

    anyio.run(main)


def test_two_projects_two_processes_each_answers_only_its_own(
    home: Path, tmp_path: Path, watchers: list[WatchProcess]
) -> None:
    a = write_demo_mod(tmp_path / "mod A")
    b = write_demo_mod(tmp_path / "mod B")
    (b / "Data/Units/Tanks.xml").write_text(
        (b / "Data/Units/Tanks.xml").read_text().replace("AthenaWreck", "OnlyInB")
    )
    wa, wb = WatchProcess(home, a), WatchProcess(home, b)
    watchers.extend([wa, wb])
    wa.wait_published()
    wb.wait_published()

    async def ask(project: Path) -> dict[str, Any]:
        async with Client(_mcp(home, project), read_timeout_seconds=60) as client:
            return await _call(client, "find_asset", id="OnlyInB", wait_for_index=True)

    async def main() -> None:
        ans_a, ans_b = await ask(a), await ask(b)
        assert ans_a["source"] == ans_b["source"] == "live"
        assert ans_a["index"]["projectDir"] == str(a) and ans_a["result"]["found"] is False
        assert ans_b["index"]["projectDir"] == str(b) and ans_b["result"]["found"] is True

    anyio.run(main)
    # closing one window removes only its own endpoint files; the global file belongs to the last writer
    holder = read_endpoint(global_endpoint_path())
    assert holder is not None
    first, second = (wa, wb) if holder.processId == wb.proc.pid else (wb, wa)
    assert first.stop(signal.SIGTERM) == 0
    assert not endpoint_path_for_project(first.projects[0]).exists()
    assert read_endpoint_for_project(second.projects[0]) is not None
    still = read_endpoint(global_endpoint_path())
    assert still is not None and still.processId == second.proc.pid
    assert second.stop(signal.SIGTERM) == 0
    assert not global_endpoint_path().exists()


def test_sigterm_cleans_up_and_saves_a_snapshot(
    home: Path, tmp_path: Path, watchers: list[WatchProcess]
) -> None:
    project = write_demo_mod(tmp_path / "mod")
    watch = WatchProcess(home, project, quiet=60)  # the quiet period never elapses: exit must save
    watchers.append(watch)
    watch.wait_published()

    async def status() -> dict[str, Any]:
        async with Client(_mcp(home, project), read_timeout_seconds=60) as client:
            return await _call(client, "get_status", wait_for_index=True)

    assert anyio.run(status)["index"]["state"] == "ready"
    assert watch.stop(signal.SIGTERM) == 0
    assert not endpoint_path_for_project(project).exists() and not global_endpoint_path().exists()
    assert snapshot_path(str(project)).exists()
    assert "live query API (token in the endpoint files):\nhttp://127.0.0.1:" in watch.captured
    assert "moddesk ra3 enable" in watch.captured  # the one-time offer of agent access (seed §4.7)
    assert "stopped; removed 2 endpoint file(s)" in watch.captured


def test_no_index_is_explicit(home: Path, tmp_path: Path) -> None:
    project = write_demo_mod(tmp_path / "never indexed")

    async def main() -> None:
        async with Client(_mcp(home, project), read_timeout_seconds=60) as client:
            status = await _call(client, "get_status")
            assert not status["isError"] and status["source"] == "none"
            assert status["index"]["state"] == "no_index" and status["index"]["projectDir"] == str(project)
            miss = await _call(client, "find_asset", id="AthenaCannon")
            assert miss["isError"] and miss["error"] == "NO_INDEX" and miss["index"]["state"] == "no_index"
            assert "NO_INDEX" in miss["text"]
            guide = await _call(client, "get_usage_guide")
            assert "Index states" in guide["guide"]

    anyio.run(main)


def test_find_asset_pages_with_limit_and_cursor(home: Path, tmp_path: Path) -> None:
    from moddesk.ra3.core.sample import write_sample_project

    project = write_sample_project(tmp_path / "sdk")  # SampleTank: defined in the SDK and in the mod
    built = subprocess.run(
        [*CLI, "index", str(project), "--json"], env=_env(home), capture_output=True, text=True, timeout=60
    )
    assert built.returncode == 0, built.stderr

    async def main() -> None:
        async with Client(_mcp(home, project), read_timeout_seconds=60) as client:
            first = await _call(client, "find_asset", id="SampleTank", limit=1)
            assert not first["isError"] and first["source"] == "snapshot", first
            page = first["result"]
            assert page["total"] == 2 and page["returned"] == 1 and page["truncated"] is True
            second = await _call(client, "find_asset", id="SampleTank", limit=1, cursor=page["nextCursor"])
            rest = second["result"]
            assert rest["returned"] == 1 and rest["truncated"] is False
            files = {a["file"] for a in page["assets"] + rest["assets"]}
            assert len(files) == 2, files

    anyio.run(main)


def test_truth_over_mcp_outside_include_inactive_files_and_no_schema(home: Path, tmp_path: Path) -> None:
    """Through the official client: an outside include is refused with its diagnostic, a miss in an
    unincluded file says where, and a mod without a schema says so in the text block."""
    import shutil

    from moddesk.ra3.core.sample import write_sample_project

    project = write_sample_project(tmp_path / "sdk")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "x.xml").write_text('<AssetDeclaration xmlns="uri:ea.com:eala:asset"/>', "utf-8")
    mod = project / "Data" / "Mod.xml"
    mod.write_text(
        mod.read_text("utf-8").replace(
            "<Includes>", '<Includes>\n    <Include type="all" source="DATA:../outside/x.xml"/>', 1
        ),
        "utf-8",
    )
    lonely = tmp_path / "no sdk" / "Mods" / "Sample Mod"
    shutil.copytree(project, lonely)
    for folder in (project, lonely):
        built = subprocess.run(
            [*CLI, "index", str(folder), "--json"], env=_env(home), capture_output=True, text=True, timeout=60
        )
        assert built.returncode == 0, built.stderr

    async def main() -> None:
        async with Client(_mcp(home, project), read_timeout_seconds=60) as client:
            refused = await _call(client, "list_diagnostics", code="INCLUDE_OUTSIDE_ROOTS")
            rows = refused["result"]["diagnostics"]
            assert [(r["file"], r["line"], r["severity"]) for r in rows] == [("Data/Mod.xml", 5, "error")]
            probe = await _call(client, "resolve_include", source="DATA:../../../../etc/passwd")
            assert probe["result"]["resolved"] is None
            assert probe["result"]["error"].startswith("INCLUDE_OUTSIDE_ROOTS")
            miss = await _call(client, "find_asset", id="NeverBuilt")
            assert (
                "which no stream includes (its include at Data/Mod.xml:10 is commented out)" in miss["text"]
            )
            inactive = await _call(client, "list_inactive_files")
            assert [f["path"] for f in inactive["result"]["files"]] == ["Data/Units/Unused.xml"]
        async with Client(_mcp(home, lonely), read_timeout_seconds=60) as client:
            status = await _call(client, "find_references", id="SampleTankGun")
            assert (
                status["index"]["complete"] is False
                and status["index"]["incomplete"][0]["reason"] == "NO_SCHEMA"
            )
            assert "references cannot be typed" in status["text"]

    anyio.run(main)
