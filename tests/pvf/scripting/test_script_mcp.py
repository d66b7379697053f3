"""The script tools over Streamable HTTP with the SDK Client: the seed's example, errors, limits."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
from mcp import Client

from moddesk.kit.mcp import result_payload, serve_http
from moddesk.pvf.agent.mcp import build_server
from moddesk.pvf.scripting.help import EXAMPLES
from moddesk.pvf.scripting.runtime import ScriptLimits
from moddesk.pvf.scripting.service import ScriptService
from moddesk.pvf.scripting.tools import register_script_tools
from moddesk.pvf.service import PvfService

from .test_script_service import make_archive


async def call(client: Client, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(tool, args)
    payload = result_payload(result)
    assert not result.is_error, payload
    return payload


async def wait_status(client: Client, task_id: str) -> dict[str, Any]:
    for _ in range(600):
        status = await call(client, "pvf_script_status", {"taskId": task_id})
        if status["state"] in ("succeeded", "failed", "cancelled"):
            return status
        await anyio.sleep(0.05)
    raise AssertionError("the script did not finish")


async def flow(url: str, ws: str, rev: int) -> None:
    async with Client(url, read_timeout_seconds=60) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert tools["pvf_script_preview"].annotations.read_only_hint is True  # type: ignore[union-attr]
        assert tools["pvf_script_apply"].annotations.destructive_hint is True  # type: ignore[union-attr]
        listing = await call(client, "pvf_script_help", {})
        assert {"overview", "examples", "types"} <= {t["name"] for t in listing["topics"]}
        bad = await call(client, "pvf_script_validate", {"source": "let = ;"})
        assert bad["valid"] is False and bad["diagnostics"][0]["line"] == 1

        started = await call(
            client,
            "pvf_script_run",
            {
                "workspaceId": ws,
                "expectedRevision": rev,
                "source": EXAMPLES["raise-price"][1],
                "requestId": "r1",
            },
        )
        status = await wait_status(client, started["taskId"])
        assert status["state"] == "succeeded" and status["planId"]
        page = await call(client, "pvf_script_preview", {"planId": status["planId"]})
        keys = [item["changeKey"] for item in page["items"]]
        applied = await call(
            client,
            "pvf_script_apply",
            {"planId": status["planId"], "expectedRevision": rev, "changeKeys": keys[:1], "requestId": "a1"},
        )
        assert applied["revision"] == rev + 1 and applied["applied"]["modify"] == 1

        # a runaway script is stopped and reported; the server serves the next run
        loop = await call(
            client,
            "pvf_script_run",
            {"workspaceId": ws, "expectedRevision": rev + 1, "source": "pvf.log('go');\nwhile (true) {}"},
        )
        status = await wait_status(client, loop["taskId"])
        assert status["state"] == "failed"
        assert status["error"]["error"] == "SCRIPT_FAILED"
        assert status["diagnostics"][0]["kind"] == "timeout"
        again = await call(
            client,
            "pvf_script_run",
            {"workspaceId": ws, "expectedRevision": rev + 1, "source": "pvf.log(pvf.files().length)"},
        )
        final = await wait_status(client, again["taskId"])
        assert final["state"] == "succeeded", final
        assert final["logs"] == ["15"]

        stale = await client.call_tool(
            "pvf_script_run", {"workspaceId": ws, "expectedRevision": rev, "source": "1"}
        )
        assert stale.is_error and result_payload(stale)["error"] == "STALE_WORKSPACE"
        assert result_payload(stale)["hint"]


def test_script_tools_over_streamable_http(tmp_path: Path) -> None:
    service = PvfService()
    path = make_archive(tmp_path / "scripts over http.pvf")
    opened = service.tasks.wait(service.open(str(path), service.epoch)["taskId"], 60)["result"]
    server = build_server(service)
    register_script_tools(server, ScriptService(service, ScriptLimits(wall_seconds=6)))
    with serve_http(server, 0) as running:
        anyio.run(flow, f"{running.url}/mcp", opened["workspaceId"], opened["revision"])
    service.shutdown()
