"""Import and export through the MCP tools over Streamable HTTP; races and a kill mid-execute."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import Client

from moddesk.kit.errors import ServiceError
from moddesk.kit.files import is_temp_name
from moddesk.kit.mcp import result_payload, serve_http
from moddesk.pvf.agent.mcp import build_server
from moddesk.pvf.transfer.tools import register_transfer_tools

from .conftest import Bench


async def call(client: Client, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(tool, args)
    payload = result_payload(result)
    assert not result.is_error, payload
    return payload


async def flow(url: str, bench: Bench, source_dir: Path, out: Path) -> None:
    async with Client(url, read_timeout_seconds=60) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert {"pvf_import_prepare", "pvf_export_execute", "pvf_export_formats"} <= names
        formats = await call(client, "pvf_export_formats", {})
        assert [f["id"] for f in formats["formats"]] == ["direct", "110USextend", "115CN-mod"]

        prepared = await call(
            client,
            "pvf_import_prepare",
            {
                "workspaceId": bench.ws,
                "expectedRevision": bench.revision,
                "sourcePaths": [str(source_dir)],
                "requestId": "p1",
            },
        )
        preview = await call(client, "pvf_import_preview", {"planId": prepared["planId"]})
        keys = [i["key"] for i in preview["items"]]
        applied = await call(
            client,
            "pvf_import_apply",
            {"planId": prepared["planId"], "expectedRevision": bench.revision, "selectedKeys": keys},
        )
        revision = applied["revision"]

        plan = await call(
            client,
            "pvf_export_prepare",
            {
                "workspaceId": bench.ws,
                "expectedRevision": revision,
                "source": "memory",
                "mode": "mod",
                "format": "110USextend",
                "name": "FromMCP",
                "includeDependencies": False,
            },
        )
        page = await call(client, "pvf_export_preview", {"planId": plan["planId"]})
        assert {e["entryKey"] for e in page["entries"]} == {"pvf/imported/a.equ", "pvf/imported/b.equ"}
        refused = await client.call_tool(
            "pvf_export_execute", {"planId": plan["planId"], "outputParent": "relative/dir"}
        )
        assert refused.is_error and result_payload(refused)["error"] == "INVALID_PATH"
        done = await call(
            client,
            "pvf_export_execute",
            {"planId": plan["planId"], "outputParent": str(out), "requestId": "x1"},
        )
        again = await call(
            client,
            "pvf_export_execute",
            {"planId": plan["planId"], "outputParent": str(out), "requestId": "x1"},
        )
        assert again["outputPath"] == done["outputPath"] == str(out / "FromMCP-1.0")
        pack = json.loads((out / "FromMCP-1.0" / "pack.json").read_text())
        assert set(pack["types"]) == {"imported/a.equ", "imported/b.equ"}


def test_import_then_export_over_http(bench: Bench, tmp_path: Path) -> None:
    source = tmp_path / "imported"
    source.mkdir()
    (source / "a.equ").write_text("#PVF_File\n[name]\n`A`\n")
    (source / "b.equ").write_text("#PVF_File\n[name]\n`B`\n")
    out = tmp_path / "out"
    out.mkdir()
    from moddesk.pvf.transfer.exports import ExportService
    from moddesk.pvf.transfer.imports import ImportService

    server = build_server(bench.service)
    register_transfer_tools(server, ImportService(bench.service), ExportService(bench.service))
    with serve_http(server, 0) as running:
        anyio.run(flow, f"{running.url}/mcp", bench, source, out)


def test_two_racing_executes_one_wins(bench: Bench, tmp_path: Path) -> None:
    plan = bench.exports.prepare(bench.ws, bench.revision, "selection", [""])
    out = tmp_path / "race"
    out.mkdir()
    outcomes: list[str] = []
    barrier = threading.Barrier(2)

    def execute(request: str) -> None:
        barrier.wait()
        try:
            bench.exports.execute(plan["planId"], str(out), "same", request_id=request)
            outcomes.append("won")
        except ServiceError as error:
            outcomes.append(error.code)

    threads = [threading.Thread(target=execute, args=(f"r{i}",)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert outcomes.count("won") == 1, outcomes
    assert [p.name for p in out.iterdir()] == ["same"]
    assert bench.service.workspace is not None
    written = sorted(p.relative_to(out / "same").as_posix() for p in (out / "same").rglob("*") if p.is_file())
    assert written == bench.service.workspace.paths()


KILLED_EXPORT = textwrap.dedent(
    """
    import sys
    from moddesk.pvf.archive import Archive
    from moddesk.pvf.service import PvfService
    from moddesk.pvf.transfer import writers
    from moddesk.pvf.transfer.exports import ExportService
    archive_path, out = sys.argv[1], sys.argv[2]
    archive = Archive.new("classic")
    for i in range(400):
        archive.write_text(f"data/f{i:04}.equ", "#PVF_File\\n[price]\\n\\t" + str(i) + "\\n")
    archive.save_as(archive_path)
    archive.close()
    service = PvfService()
    opened = service.tasks.wait(service.open(archive_path, service.epoch)["taskId"], 60)["result"]
    exports = ExportService(service)
    plan = exports.prepare(opened["workspaceId"], opened["revision"], "selection", [""])
    original = writers.write_tree
    def slow_tree(root, entries):
        import time
        count = 0
        for entry in entries:
            original(root, [entry])
            count += 1
            if count == 50:
                print("writing", flush=True)
            time.sleep(0.01)
        return count
    writers.write_tree = slow_tree  # publish_package looks it up in writers at call time
    exports.execute(plan["planId"], out, "killed")
    print("published", flush=True)
    """
)


def test_sigkill_during_execute_publishes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "out dir"
    out.mkdir()
    child = subprocess.Popen(
        [sys.executable, "-c", KILLED_EXPORT, str(tmp_path / "k.pvf"), str(out)],
        stdout=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "writing"
    time.sleep(0.1)
    child.send_signal(signal.SIGKILL)
    child.wait(30)
    names = [p.name for p in out.iterdir()]
    assert "killed" not in names, "a half-written export was published"
    assert names and all(is_temp_name(n) for n in names)


def test_a_refusal_naming_another_task_is_an_error_result_not_a_crash(bench: Bench) -> None:
    from moddesk.pvf.transfer.exports import ExportService
    from moddesk.pvf.transfer.imports import ImportService

    server = build_server(bench.service)
    register_transfer_tools(server, ImportService(bench.service), ExportService(bench.service))
    bench.service._lifecycle_task = "t_saving"  # a save is running (what a save sets while it runs)

    async def prepare(url: str) -> dict[str, Any]:
        async with Client(url, read_timeout_seconds=60) as client:
            result = await client.call_tool(
                "pvf_export_prepare",
                {
                    "workspaceId": bench.ws,
                    "expectedRevision": bench.revision,
                    "source": "selection",
                    "paths": [""],
                    "includeDependencies": False,
                },
            )
            assert result.is_error
            return result_payload(result)

    try:
        with serve_http(server, 0) as running:
            refused = anyio.run(prepare, f"{running.url}/mcp")
    finally:
        bench.service._lifecycle_task = None
    assert refused["error"] == "LIFECYCLE_BUSY", refused  # was INTERNAL_ERROR (taskId given twice)
    assert refused["blockingTaskId"] == "t_saving" and refused["taskId"] != "t_saving"
