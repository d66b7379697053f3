"""RA3 agent access speed: what the live server and the MCP hop cost on top of the index itself.

Peers measured in the same run:
* live HTTP query (token, Host check, JSON both ways) vs the same QueryApi call in-process (the floor);
* one MCP tool call over stdio (SDK Client -> `ra3 mcp` -> live HTTP) vs the bare live HTTP call;
* the same MCP call answered from the snapshot after the watcher stopped (cold load amortised);
* edit -> visible: a file write until a live answer shows it, vs `ModIndex.update_files` alone;
* snapshot writes during a burst of edits (the quiet period must coalesce them);
* the size of `tools/list` (paid in every conversation).

    .venv/bin/python benchmarks/ra3_live.py            # the RA3 mod from ../shared/corpora when present
    .venv/bin/python benchmarks/ra3_live.py --quick    # the built-in demo mod, fewer rounds
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

from moddesk.ra3.agent import endpoints
from moddesk.ra3.agent.demo import write_demo_mod
from moddesk.ra3.agent.live import LiveClient
from moddesk.ra3.agent.watch import Watcher


def percentiles(samples: list[float]) -> tuple[float, float]:
    """p50 and p99 in milliseconds."""
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return statistics.median(ordered) * 1000, p99 * 1000


def timed(fn: Callable[[], Any], rounds: int) -> list[float]:
    out = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def corpus_project(tmp: Path) -> tuple[Path, Path | None, str] | None:
    env = os.environ.get("MODDESK_CORPORA")
    root = Path(env) if env else Path(__file__).resolve().parents[2] / "shared" / "corpora"
    mod = root / "sage" / "ra3-nhbt"
    if not (mod / "Data" / "Mod.xml").is_file():
        return None
    project = tmp / "sdk" / "Mods" / "RA3 Undecided"
    shutil.copytree(mod, project)
    return project, root / "sage" / "ra3-schemas" / "xsd" / "CnC3Types.xsd", "RA3 mod NothingHereButTrees"


def main() -> None:
    quick = "--quick" in sys.argv
    rounds = 100 if quick else 400
    mcp_rounds = 30 if quick else 150
    with tempfile.TemporaryDirectory(prefix="ra3-live-bench-") as tmp_name:
        tmp = Path(tmp_name)
        os.environ[endpoints.HOME_ENV] = str(tmp / "home")
        found = None if quick else corpus_project(tmp)
        if found is None:
            project, schema, label = write_demo_mod(tmp / "demo"), None, "built-in demo mod"
        else:
            project, schema, label = found
        t0 = time.perf_counter()
        watcher = Watcher([project], schema_path=schema, quiet_seconds=1.0).start()
        wp = watcher.projects[0]
        assert wp.index.wait_until_final(300)
        build = time.perf_counter() - t0
        stats = wp.index.data.stats() if wp.index.data else {}
        print(f"project: {label}: {stats.get('assetCount')} assets, {stats.get('fileCount')} files")
        print(f"watch start -> ready: {build:.2f} s (build with live server and endpoint files)")

        # pick real ids: the first GameObject-ish asset and its file
        sample = wp.api.list_assets_by_type("GameObject", limit=1)["assets"][0]
        asset_id, asset_file = sample["id"], sample["file"]
        params = {"id": asset_id, "type": "GameObject"}

        inproc = timed(lambda: wp.query("find_asset", params), rounds)
        client = LiveClient(project)

        def live_find() -> None:
            # a None here would be the negative cache answering: the figure would be meaningless
            if client.request("find_asset", params) is None:
                raise SystemExit(f"live query failed: {client.last_failure}")

        live_find()
        http = timed(live_find, rounds)
        p50_in, p99_in = percentiles(inproc)
        p50_http, p99_http = percentiles(http)
        print(f"find_asset in-process (floor):   p50 {p50_in:.3f} ms  p99 {p99_in:.3f} ms")
        print(
            f"find_asset live HTTP:            p50 {p50_http:.3f} ms  p99 {p99_http:.3f} ms"
            f"  ({p50_http / p50_in:.1f}x the floor; {1000 / p50_http:.0f} queries/s)"
        )

        mcp_params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "moddesk.ra3.cli", "mcp", "--project", str(project)],
            env={**os.environ},
        )

        async def mcp_calls() -> tuple[list[float], int, int]:
            async with Client(mcp_params, read_timeout_seconds=120) as mcp_client:
                listing = await mcp_client.list_tools()
                size = len(
                    json.dumps(
                        [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in listing.tools]
                    )
                )
                await mcp_client.call_tool("find_asset", params)
                samples = []
                for _ in range(mcp_rounds):
                    t = time.perf_counter()
                    result = await mcp_client.call_tool("find_asset", params)
                    samples.append(time.perf_counter() - t)
                    source = (result.structured_content or {}).get("source")
                    if result.is_error or source != "live":
                        raise SystemExit(f"MCP call not answered live: {result.structured_content}")
                return samples, size, len(listing.tools)

        mcp_live, tools_size, tool_count = anyio.run(mcp_calls)
        p50_mcp, p99_mcp = percentiles(mcp_live)
        print(
            f"find_asset MCP stdio -> live:    p50 {p50_mcp:.3f} ms  p99 {p99_mcp:.3f} ms"
            f"  ({p50_mcp / p50_http:.1f}x the live HTTP call)"
        )
        print(f"tools/list: {tools_size} bytes of JSON for {tool_count} tools (~{tools_size // 4} tokens)")

        # edit -> visible through the live API, vs the incremental update alone
        target = project / asset_file
        original = target.read_text(encoding="utf-8-sig", errors="replace")
        visible: list[float] = []
        for n in range(5 if quick else 10):
            marker = f"BenchProbe{n}"
            target.write_text(
                original.replace("</AssetDeclaration>", f'<GameObject id="{marker}"/></AssetDeclaration>', 1)
            )
            t = time.perf_counter()
            while True:
                answer = client.request("find_asset", {"id": marker})
                if answer and answer["result"]["found"]:
                    break
                time.sleep(0.005)
            visible.append(time.perf_counter() - t)
        direct = timed(lambda: wp.index.update_files([target]), 10)
        print(
            f"edit -> visible in live answers: median {statistics.median(visible) * 1000:.0f} ms"
            f" (update_files alone: median {statistics.median(direct) * 1000:.1f} ms; the rest is the"
            " file watcher's debounce)"
        )

        # a burst of edits: snapshots must not follow each keystroke
        time.sleep(1.5)  # let the snapshot of the last edit above land first
        before = wp.snapshot.count
        burst = 20
        for n in range(burst):
            target.write_text(
                original.replace("</AssetDeclaration>", f'<GameObject id="Burst{n}"/></AssetDeclaration>', 1)
            )
            time.sleep(0.1)
        deadline = time.monotonic() + 30
        while wp.snapshot.count == before and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(1.5)
        print(
            f"burst of {burst} edits over {burst * 0.1:.0f} s -> {wp.snapshot.count - before} snapshot write(s)"
        )
        watcher.stop()

        async def mcp_offline() -> list[float]:
            async with Client(mcp_params, read_timeout_seconds=120) as mcp_client:
                first = await mcp_client.call_tool("find_asset", params)
                assert (first.structured_content or {}).get("source") == "snapshot"
                samples = []
                for _ in range(mcp_rounds):
                    t = time.perf_counter()
                    await mcp_client.call_tool("find_asset", params)
                    samples.append(time.perf_counter() - t)
                return samples

        p50_snap, p99_snap = percentiles(anyio.run(mcp_offline))
        print(
            f"find_asset MCP stdio -> snapshot: p50 {p50_snap:.3f} ms  p99 {p99_snap:.3f} ms"
            f"  ({p50_snap / p50_mcp:.2f}x the live path)"
        )


if __name__ == "__main__":
    main()
