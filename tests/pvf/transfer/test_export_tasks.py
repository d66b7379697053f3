"""A big export is a task: per-file progress, cancel between batches, nothing published when cancelled.

Over a generated 3,000-file archive: a cancelled execute leaves no target and no temp, keeps the
plan pending and names how far it got; executing the same plan again writes every file. The MCP
tool ``pvf_export_cancel`` stops an execute started through the official SDK client.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

import moddesk.pvf.transfer.tools as transfer_tools
from moddesk.kit.errors import ServiceError
from moddesk.kit.leftovers import is_temp_name
from moddesk.kit.mcp import result_payload
from moddesk.pvf.agent.mcp import build_server
from moddesk.pvf.samples.generate import generate_archive
from moddesk.pvf.service import PvfService
from moddesk.pvf.transfer.exports import ExportService
from moddesk.pvf.transfer.imports import ImportService
from moddesk.pvf.transfer.sources import PERSON_EXPORT_LIMITS, READ_BATCH
from moddesk.pvf.transfer.tools import register_transfer_tools

FILES = 3000


@dataclass
class Big:
    service: PvfService
    exports: ExportService
    ws: str
    revision: int
    out: Path


@pytest.fixture
def big(tmp_path: Path) -> Iterator[Big]:
    archive = tmp_path / "big.pvf"
    generate_archive(archive, fmt="90US", files=FILES, seed=3)
    service = PvfService()
    opened = service.tasks.wait(service.open(str(archive), service.epoch)["taskId"], 120)["result"]
    out = tmp_path / "out"
    out.mkdir()
    yield Big(service, ExportService(service), opened["workspaceId"], opened["revision"], out)
    service.shutdown()


def _prepare(big: Big) -> dict[str, Any]:
    return big.exports.prepare(big.ws, big.revision, "selection", [""], limits=PERSON_EXPORT_LIMITS)


def test_cancel_mid_write_publishes_nothing_and_keeps_the_plan(big: Big) -> None:
    plan = _prepare(big)
    seen: list[tuple[int, int | None, str | None]] = []
    task_id = ""

    def on_progress(done: int, total: int | None, message: str | None) -> None:
        seen.append((done, total, message))
        if message == "writing files" and done == 0:  # the writer has started: cancel now
            big.exports.cancel_task(task_id)

    task_id = big.exports.start_task(
        "export.execute",
        lambda: big.exports.execute(plan["planId"], str(big.out), "dump"),
        on_progress=on_progress,
    )
    status = big.service.tasks.wait(task_id, 120)
    assert status["state"] == "cancelled"
    error = status["error"]
    assert error["error"] == "CANCELLED" and 0 < error["written"] < error["total"] == plan["entries"]
    assert f"after writing {error['written']} of {error['total']} files" in error["message"]
    assert list(big.out.iterdir()) == []  # no target, and the staging folder is gone
    assert big.service.plans.pending("export") is not None  # still pending: execute it again
    done = big.exports.execute(plan["planId"], str(big.out), "dump")
    written = [p for p in (big.out / "dump").rglob("*") if p.is_file()]
    assert done["files"] == len(written) == plan["entries"]
    assert done["bytes"] == sum(p.stat().st_size for p in written)
    assert not any(is_temp_name(p.name) for p in big.out.rglob("*"))


def test_progress_runs_from_reading_to_writing_every_file(big: Big) -> None:
    seen: list[tuple[int, int | None, str | None]] = []
    listen = lambda done, total, message: seen.append((done, total, message))  # noqa: E731
    prepared = big.service.tasks.wait(
        big.exports.start_task("export.prepare", lambda: _prepare(big), listen), 120
    )
    reading = [d for d, _t, m in seen if m == "reading files"]
    assert reading == sorted(reading) and len(reading) >= FILES // READ_BATCH
    seen.clear()
    plan = prepared["result"]
    task = big.exports.start_task(
        "export.execute", lambda: big.exports.execute(plan["planId"], str(big.out), "all"), listen
    )
    result = big.service.tasks.wait(task, 120)["result"]
    writing = [(d, t) for d, t, m in seen if m == "writing files"]
    assert writing[0] == (0, plan["entries"]) and writing[-1] == (plan["entries"], plan["entries"])
    assert [d for d, _t in writing] == sorted(d for d, _t in writing) and len(writing) > 5
    assert result["files"] == plan["entries"]


def test_cancel_refuses_a_task_that_is_no_export(big: Big) -> None:
    task = big.service.tasks.start("something.else", lambda _t: {"ok": True})
    with pytest.raises(ServiceError) as refused:
        big.exports.cancel_task(task)
    assert refused.value.code == "TASK_NOT_FOUND"


def test_mcp_cancel_stops_an_execute(big: Big, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(transfer_tools, "TASK_WAIT", 0.0)  # every call hands back its task at once
    server = build_server(big.service)
    register_transfer_tools(server, ImportService(big.service), big.exports)
    plan = _prepare(big)  # the person's limits: over the agents' 10,000 files would be refused

    async def flow() -> dict[str, Any]:
        async with Client(server) as client:
            started = result_payload(
                await client.call_tool(
                    "pvf_export_execute",
                    {"planId": plan["planId"], "outputParent": str(big.out), "outputName": "m"},
                )
            )
            assert started["state"] in ("queued", "running") and "pvf_export_cancel" in started["next"]
            cancelled = await client.call_tool("pvf_export_cancel", {"taskId": started["taskId"]})
            assert not cancelled.is_error, result_payload(cancelled)
            for _ in range(400):
                status = result_payload(
                    await client.call_tool("pvf_task_status", {"taskId": started["taskId"]})
                )
                if status["state"] not in ("queued", "running", "cancelling"):
                    return status
                await anyio.sleep(0.05)
            raise AssertionError("the export did not stop")

    status = anyio.run(flow)
    assert status["state"] == "cancelled" and status["error"]["error"] == "CANCELLED"
    assert list(big.out.iterdir()) == []
