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
    .venv/bin/python benchmarks/ra3_live.py --clients 30 --seconds 60   # 30 agents at once (max 120 s)
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


def concurrent_main(clients: int, seconds: float) -> None:
    """N agents at once: `clients` threads query one `moddesk ra3 watch` process (its own process, so
    the clients never share its interpreter) for `seconds`, each with its own LiveClient, alternating
    find_asset and find_references on random real ids. Beside it: one client alone, same run."""
    import random
    import subprocess
    import threading

    with tempfile.TemporaryDirectory(prefix="ra3-live-conc-") as tmp_name:
        tmp = Path(tmp_name)
        home = tmp / "home"
        os.environ[endpoints.HOME_ENV] = str(home)
        found = corpus_project(tmp)
        if found is None:
            project, schema, label = write_demo_mod(tmp / "demo"), None, "built-in demo mod"
        else:
            project, schema, label = found
        args = [sys.executable, "-m", "moddesk.ra3.cli", "watch", str(project)]
        if schema is not None:
            args += ["--schema", str(schema)]
        server = subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env={**os.environ},
        )
        try:
            probe = LiveClient(project, timeout=10)
            deadline = time.monotonic() + 600
            ids: list[str] = []
            while time.monotonic() < deadline:
                probe.reset()
                answer = probe.request("list_assets_by_type", {"type": "GameObject", "limit": 500})
                if answer and answer.get("ok") and answer["index"].get("final"):
                    ids = [a["id"] for a in answer["result"]["assets"]]
                    break
                time.sleep(0.5)
            if not ids:
                raise SystemExit("the watcher did not publish a final index in time")
            print(f"project: {label}; {len(ids)} GameObject ids to ask about; load: {os.getloadavg()}")

            def run(n_clients: int, span: float) -> dict[str, list[float]]:
                samples: dict[str, list[float]] = {"find_asset": [], "find_references": [], "failed": []}
                stop_at = time.monotonic() + span
                lock = threading.Lock()

                def agent(seed: int) -> None:
                    rng = random.Random(seed)
                    client = LiveClient(project, timeout=10)
                    local: dict[str, list[float]] = {"find_asset": [], "find_references": [], "failed": []}
                    turn = seed
                    while time.monotonic() < stop_at:
                        verb = ("find_asset", "find_references")[turn % 2]
                        turn += 1
                        t0 = time.perf_counter()
                        answer = client.request(verb, {"id": rng.choice(ids), "type": "GameObject"})
                        elapsed = time.perf_counter() - t0
                        if answer is None or not answer.get("ok"):
                            local["failed"].append(elapsed)
                            client.reset()
                        else:
                            local[verb].append(elapsed)
                    with lock:
                        for key, values in local.items():
                            samples[key].extend(values)

                threads = [threading.Thread(target=agent, args=(i,)) for i in range(n_clients)]
                for t in threads:
                    t.start()
                for t in threads:
                    t.join()
                return samples

            alone = run(1, min(10.0, seconds))
            crowd = run(clients, seconds)
            for name, got in (("1 client", alone), (f"{clients} clients", crowd)):
                total = len(got["find_asset"]) + len(got["find_references"])
                span = min(10.0, seconds) if name == "1 client" else seconds
                line = f"{name:>11} x {span:.0f} s: {total / span:.0f} answers/s, {len(got['failed'])} failed"
                for verb in ("find_asset", "find_references"):
                    p50, p99 = percentiles(got[verb])
                    line += f"; {verb} p50 {p50:.1f} ms p99 {p99:.1f} ms"
                print(line)
            _, p99_alone = percentiles(alone["find_references"])
            _, p99_crowd = percentiles(crowd["find_references"])
            print(
                f"find_references p99 with {clients} clients / alone: {p99_crowd / p99_alone:.1f}x (target <= 100 ms)"
            )
        finally:
            server.terminate()
            server.wait(30)


if __name__ == "__main__":
    if "--clients" in sys.argv:
        at = sys.argv.index("--clients")
        n = int(sys.argv[at + 1])
        secs = float(sys.argv[sys.argv.index("--seconds") + 1]) if "--seconds" in sys.argv else 60.0
        concurrent_main(n, min(secs, 120.0))  # bounded: never more than two minutes of load
    else:
        main()
