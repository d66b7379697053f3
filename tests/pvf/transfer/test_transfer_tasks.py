"""Import prepare/apply and export prepare/execute run as tasks: a call answers within a second."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

import moddesk.pvf.transfer.tools as transfer_tools
from moddesk.kit.mcp import result_payload
from moddesk.pvf.agent.mcp import build_server
from moddesk.pvf.transfer.exports import ExportService
from moddesk.pvf.transfer.imports import ImportService
from moddesk.pvf.transfer.tools import register_transfer_tools

from .conftest import Bench


def _server(bench: Bench) -> Any:
    server = build_server(bench.service)
    register_transfer_tools(server, ImportService(bench.service), ExportService(bench.service))
    return server


async def _call(client: Client, tool: str, args: dict[str, Any], **kw: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, args, **kw)
    payload = result_payload(result)
    assert not result.is_error, payload
    return payload


async def _finish(client: Client, answer: dict[str, Any]) -> dict[str, Any]:
    """The answer itself, or — when the call returned a running task — that task's result."""
    while answer.get("state") in ("queued", "running"):
        await anyio.sleep(0.05)
        status = await _call(client, "pvf_task_status", {"taskId": answer["taskId"]})
        if status["state"] == "succeeded":
            return dict(status["result"])
        assert status["state"] in ("queued", "running"), status
    return answer


def test_quick_work_answers_directly_with_progress(bench: Bench, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    events: list[tuple[float, float | None]] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        events.append((done, total))

    async def flow() -> None:
        async with Client(_server(bench)) as client:
            prepared = await _call(
                client,
                "pvf_export_prepare",
                {
                    "workspaceId": bench.ws,
                    "expectedRevision": bench.revision,
                    "paths": ["equipment"],
                    "includeDependencies": False,
                },
                progress_callback=on_progress,
            )
            assert prepared["planId"] and prepared["taskId"]  # done within the wait: the answer itself
            await anyio.sleep(0.1)
            # prepare reports the files it reads, ending at all of them
            assert events and events[-1][0] == events[-1][1] == prepared["entries"]
            events.clear()
            executed = await _call(
                client,
                "pvf_export_execute",
                {"planId": prepared["planId"], "outputParent": str(out), "outputName": "e"},
                progress_callback=on_progress,
            )
            assert Path(executed["outputPath"]).is_dir()
            await anyio.sleep(0.1)
            # per-file progress from the writer, ending at files/files
            files = executed["files"]
            assert events[-1] == (files, files) and all(t == files for _d, t in events[1:])

    anyio.run(flow)


def test_long_work_returns_a_task_to_poll(
    bench: Bench, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # no waiting at all: every call hands back its task, as a 200,000-file export does after 0.8 s
    monkeypatch.setattr(transfer_tools, "TASK_WAIT", 0.0)
    source = tmp_path / "src"
    source.mkdir()
    for i in range(300):
        (source / f"item{i:03}.equ").write_text(f"#PVF_File\n[name]\n`Item {i}`\n")
    out = tmp_path / "out"
    out.mkdir()

    async def flow() -> None:
        async with Client(_server(bench)) as client:
            started = time.monotonic()
            handle = await _call(
                client,
                "pvf_import_prepare",
                {
                    "workspaceId": bench.ws,
                    "expectedRevision": bench.revision,
                    "sourcePaths": [str(source)],
                    "targetDir": "equipment",
                },
            )
            assert time.monotonic() - started < 1.0
            assert handle["state"] in ("queued", "running") and "pvf_task_status" in handle["next"]
            plan = await _finish(client, handle)
            assert plan["planId"]
            keys = [
                item["key"]
                for item in (
                    await _call(client, "pvf_import_preview", {"planId": plan["planId"], "limit": 200})
                )["items"]
            ]
            applied = await _finish(
                client,
                await _call(
                    client,
                    "pvf_import_apply",
                    {"planId": plan["planId"], "expectedRevision": bench.revision, "selectedKeys": keys},
                ),
            )
            assert applied["revision"] == bench.revision
            # a failure inside the task is the call's error when it ends within the wait, else the
            # task's error: either way the error contract with its code
            bad = await client.call_tool(
                "pvf_export_execute", {"planId": "nope", "outputParent": str(out), "outputName": "x"}
            )
            if bad.is_error:
                assert result_payload(bad)["error"] == "PLAN_NOT_FOUND"
            else:
                task = result_payload(bad)["taskId"]
                for _ in range(100):
                    status = await _call(client, "pvf_task_status", {"taskId": task})
                    if status["state"] not in ("queued", "running"):
                        break
                    await anyio.sleep(0.05)
                assert status["state"] == "failed" and status["error"]["error"] == "PLAN_NOT_FOUND"

    anyio.run(flow)
