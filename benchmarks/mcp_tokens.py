"""Tokens the model receives over MCP: the seed 001 pvf flow and a 20-move xiangqi game.

Drives the real servers over Streamable HTTP with the SDK client and counts, per tool result, the
cl100k tokens (offline js-tiktoken ranks, see ``moddesk.kit.tokens``) of

* the text block alone (what a text-only client gives the model), and
* the text block plus ``structuredContent`` (a client that forwards both),

plus the tools/list once per server. It runs against any checkout's ``src`` so a before/after
pair comes from one machine and one run:

    .venv/bin/python benchmarks/mcp_tokens.py                       # this checkout
    .venv/bin/python benchmarks/mcp_tokens.py --before 8eb405e      # also an older commit, side by side

The older commit's ``src`` is exported with ``git archive`` into a temp folder and the same flow
runs there in a subprocess (its APIs are what the flow uses: tool names and arguments).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PLIES = 40  # 20 moves each side: the model answers 20 times


def _payload(result: Any) -> dict[str, Any]:
    if result.structured_content is not None:
        return dict(result.structured_content)
    text = result.content[0].text if result.content else "{}"
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


class Meter:
    """Every result the model received, as (tool, text, structured JSON)."""

    def __init__(self) -> None:
        self.rows: list[tuple[str, str, str, int]] = []
        self.lists: dict[str, str] = {}
        self.errors = 0

    async def call(self, client: Any, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        result = await client.call_tool(tool, args)
        text = "".join(getattr(b, "text", "") for b in result.content)
        structured = json.dumps(result.structured_content, ensure_ascii=False, separators=(",", ":"))
        self.rows.append((tool, text, structured if result.structured_content is not None else "", 1))
        self.errors += bool(result.is_error)
        if result.is_error and os.environ.get("MCP_TOKENS_DEBUG"):
            print(tool, text[:300], file=sys.stderr)
        payload = _payload(result)
        if payload.get("state") in ("queued", "running") and "next" in payload:  # a long call's task
            import anyio

            while True:
                await anyio.sleep(0.1)
                status = await self.call(client, "pvf_task_status", {"taskId": payload["taskId"]})
                if status.get("state") not in ("queued", "running"):
                    return dict(status.get("result") or status)
        return payload


async def _tool_list(client: Any) -> str:
    tools = (await client.list_tools()).tools
    return json.dumps(
        [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools],
        ensure_ascii=False,
        separators=(",", ":"),
    )


async def pvf_flow(meter: Meter, root: Path) -> None:
    """Seed 001: open, search, read, script run, preview, apply, save, export."""
    import anyio
    from mcp import Client

    from moddesk.pvf.agent.serve import Workbench
    from moddesk.pvf.samples.demo import write_sample_archive
    from moddesk.pvf.service import PvfService

    archive = write_sample_archive(root / "Script.pvf", files=200)
    source = (
        'for (const file of pvf.glob("equipment/**/*.equ")) {\n'
        "  const doc = file.parse();\n"
        '  const price = doc.getValue("price");\n'
        '  if (typeof price === "number" && price < 50) { doc.set("price", 50); file.write(doc); }\n'
        "}\n"
    )
    try:  # what the person gets by default (toolsets arrived with the token budget)
        from moddesk.pvf.toolsets import DEFAULT_TOOLSETS

        try:  # agents reach granted roots only (since the roots work): grant the temp folder
            bench = Workbench(PvfService(), port=0, toolsets=DEFAULT_TOOLSETS, roots=[root])  # type: ignore[call-arg]
        except TypeError:
            bench = Workbench(PvfService(), port=0, toolsets=DEFAULT_TOOLSETS)  # type: ignore[call-arg]
    except ImportError:
        bench = Workbench(PvfService(), port=0)
    async with contextlib.AsyncExitStack() as stack:
        stack.enter_context(bench)
        token = getattr(bench, "token", None)  # pvf serve requires a bearer token since it has one
        if token is not None:
            from moddesk.kit.local_service import http_client

            client = await stack.enter_async_context(http_client(bench.url, token))
        else:
            client = await stack.enter_async_context(Client(bench.url, read_timeout_seconds=120))
        if True:  # the flow, one block as before
            meter.lists["pvf"] = await _tool_list(client)
            info = await meter.call(client, "pvf_workspace_info", {})
            opened = await meter.call(
                client,
                "pvf_archive_open",
                {"path": str(archive), "expectedWorkspaceEpoch": info["workspaceEpoch"]},
            )
            ws = opened["result"]["workspaceId"]
            revision = opened["result"]["revision"]
            hits = await meter.call(client, "pvf_search", {"workspaceId": ws, "query": "price", "limit": 20})
            first = hits["hits"][0]["path"]
            await meter.call(client, "pvf_read_file", {"workspaceId": ws, "path": first})
            run = await meter.call(
                client, "pvf_script_run", {"workspaceId": ws, "expectedRevision": revision, "source": source}
            )
            for _ in range(600):
                status = await meter.call(client, "pvf_script_status", {"taskId": run["taskId"]})
                if status.get("state") in ("succeeded", "failed", "cancelled"):
                    break
                await anyio.sleep(0.1)
            plan = status["planId"]
            keys: list[str] = []
            cursor = None
            while True:
                page = await meter.call(
                    client, "pvf_script_preview", {"planId": plan, **({"cursor": cursor} if cursor else {})}
                )
                keys += [i["changeKey"] for i in page["items"]]
                cursor = page.get("nextCursor")
                if not cursor:
                    break
            applied = await meter.call(
                client, "pvf_script_apply", {"planId": plan, "expectedRevision": revision, "changeKeys": keys}
            )
            revision = applied["revision"]
            await meter.call(client, "pvf_archive_save", {"workspaceId": ws, "expectedRevision": revision})
            prepared = await meter.call(
                client,
                "pvf_export_prepare",
                {
                    "workspaceId": ws,
                    "expectedRevision": revision,
                    "paths": ["equipment"],
                    "includeDependencies": False,
                },
            )
            preview = await meter.call(client, "pvf_export_preview", {"planId": prepared["planId"]})
            warnings = [w["warningId"] for w in preview.get("warnings") or [] if "warningId" in w]
            out = root / "out"
            out.mkdir()
            await meter.call(
                client,
                "pvf_export_execute",
                {
                    "planId": prepared["planId"],
                    "outputParent": str(out),
                    "outputName": "export",
                    "acknowledgedWarningIds": warnings,
                },
            )
            # one mistake a model makes: a stale revision
            await meter.call(client, "pvf_archive_save", {"workspaceId": ws, "expectedRevision": 0})


async def xiangqi_flow(meter: Meter, root: Path) -> None:
    """A 20-move game: the person (red) moves in the service, the model answers over MCP."""
    from mcp import Client

    from moddesk.kit.mcp import serve_http
    from moddesk.xiangqi.game import GameService
    from moddesk.xiangqi.mcp import build_server
    from moddesk.xiangqi.store import Settings

    service = GameService(
        Settings(db_path=root / "games.db", think_time=0.05, hint_time=0.1, review_time=0.05)
    )
    with serve_http(build_server(service), 0) as server:
        async with Client(f"{server.url}/mcp", read_timeout_seconds=120) as client:
            meter.lists["xiangqi"] = await _tool_list(client)
            game = await meter.call(client, "xiangqi_new", {"side": "r"})
            session = game["sessionId"]
            await meter.call(client, "xiangqi_move", {"move": "h2e2"})  # the wrong turn: an error
            for ply in range(0, PLIES, 2):
                state = service.board(session)
                if state["phase"] != "playing":
                    break
                service.move("hero", state["legalMoves"][ply % len(state["legalMoves"])]["iccs"], session)
                board = await meter.call(client, "xiangqi_board", {"sessionId": session})
                if board.get("phase") != "playing":
                    break
                legal = board["legalMoves"]
                await meter.call(
                    client, "xiangqi_move", {"move": legal[ply % len(legal)]["iccs"], "sessionId": session}
                )
            await meter.call(client, "xiangqi_review", {"sessionId": session})
    service.close()


def record() -> dict[str, Any]:
    """Run both flows with the moddesk on sys.path; what the model received, uncounted."""
    import anyio

    report: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, flow in (("pvf", pvf_flow), ("xiangqi", xiangqi_flow)):
            meter = Meter()
            folder = Path(tmp) / name
            folder.mkdir()
            anyio.run(flow, meter, folder)
            report[name] = {
                "list": meter.lists[name],
                "texts": [t for _tool, t, _s, _n in meter.rows],
                "structured": [s for _tool, _t, s, _n in meter.rows],
                "errors": meter.errors,
            }
    return report


def count(report: dict[str, Any]) -> dict[str, Any]:
    """Token counts with this checkout's counter (the recorded run may be an older commit)."""
    sys.path.insert(0, str(ROOT / "src"))
    from moddesk.kit.tokens import count_tokens

    out: dict[str, Any] = {}
    for server, data in report.items():
        texts, both = data["texts"], [t + s for t, s in zip(data["texts"], data["structured"], strict=True)]
        counts = count_tokens([data["list"], *texts, *both])
        out[server] = {
            "calls": len(texts),
            "errors": data["errors"],
            "toolListTokens": counts[0],
            "textTokens": sum(counts[1 : 1 + len(texts)]),
            "textAndStructuredTokens": sum(counts[1 + len(texts) :]),
            "largestTextBytes": max(len(t.encode()) for t in texts),
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--before", help="also measure this commit (git archive of its src)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(record(), ensure_ascii=False))
        return
    runs = {"this checkout": _run_in(ROOT / "src")}
    if args.before:
        with tempfile.TemporaryDirectory() as tmp:
            archive = subprocess.run(
                ["git", "-C", str(ROOT), "archive", args.before, "src"], capture_output=True, check=True
            )
            subprocess.run(["tar", "-x", "-C", tmp], input=archive.stdout, check=True)
            runs[f"before ({args.before})"] = _run_in(Path(tmp) / "src")
    print(
        "| run | server | calls | errors | tools/list | text tokens | text+structured tokens | largest text |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for label, report in runs.items():
        for server, row in report.items():
            print(
                f"| {label} | {server} | {row['calls']} | {row['errors']} | {row['toolListTokens']:,} | "
                f"{row['textTokens']:,} | {row['textAndStructuredTokens']:,} | {row['largestTextBytes']:,} B |"
            )


def _run_in(src: Path) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(src)}
    done = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--child"],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if done.returncode != 0:
        raise SystemExit(f"the flow failed under {src}:\n{done.stderr[-3000:]}")
    return count(json.loads(done.stdout.strip().splitlines()[-1]))


if __name__ == "__main__":
    main()
