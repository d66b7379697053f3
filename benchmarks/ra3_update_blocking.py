"""RA3: how long a live query waits while an incremental *structural* update (includes changed) runs.

A reader thread issues `find_asset` queries back to back while the main thread applies structural
updates (an include toggled in Mod.xml, so the whole graph is re-walked) to a synthetic mod of
~10^5 references. Printed beside the peer measured in the same run: the same queries with no update
running. The figure that matters for MCP clients is the worst wait against the 1.5 s live timeout
(beyond it they fall back to a snapshot).

    .venv/bin/python benchmarks/ra3_update_blocking.py [--quick]

To compare with another revision of the index, put its sources first on the path, e.g.
`git archive REV src | tar -x -C /tmp/rev && PYTHONPATH=/tmp/rev/src .venv/bin/python benchmarks/...`.
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

from ra3_index import percentile, synthetic_mod

from moddesk.ra3.core.index import ModIndex
from moddesk.ra3.core.project import detect_project
from moddesk.ra3.core.query import QueryApi

LIVE_TIMEOUT = 1.5  # seconds; moddesk.ra3.agent.mcp falls back to the snapshot beyond it


def sample_queries(api: QueryApi, ids: list[str], stop: threading.Event, out: list[float]) -> None:
    """Query until `stop`, appending each call's wall time."""
    rng = random.Random(3)
    while not stop.is_set():
        ident = rng.choice(ids)
        t0 = time.perf_counter()
        api.find_asset(ident)
        out.append(time.perf_counter() - t0)


def summary(samples: list[float]) -> str:
    return (
        f"{len(samples):6d} queries, p50 {statistics.median(samples) * 1e3:7.3f} ms, "
        f"p99 {percentile(samples, 0.99) * 1e3:8.3f} ms, max {max(samples) * 1e3:8.1f} ms"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="~2*10^4 references and 3 updates")
    args = parser.parse_args()
    refs, updates = (20_000, 3) if args.quick else (100_000, 8)
    work = Path(tempfile.mkdtemp(prefix="ra3-update-blocking-"))
    try:
        project = synthetic_mod(work / "mod", refs)
        extra = project / "Data" / "Extra.xml"
        extra.write_text(
            '<AssetDeclaration xmlns="uri:ea.com:eala:asset"><FXList id="FX_Extra"/></AssetDeclaration>',
            "utf-8",
        )
        mod = project / "Data" / "Mod.xml"
        plain = mod.read_text("utf-8")
        with_extra = plain.replace(
            "<Includes>", '<Includes>\n    <Include type="all" source="Extra.xml"/>', 1
        )
        index = ModIndex(detect_project(project))
        t0 = time.perf_counter()
        index.build()
        assert index.data is not None
        stats = index.data.stats()
        print(
            f"synthetic mod: {stats['fileCount']} files, {stats['assetCount']} assets, "
            f"{stats['referenceCount']} references; full build {time.perf_counter() - t0:.2f} s"
        )
        api = QueryApi(index)
        ids = [a.id for a in index.data.assets()][:5000]

        idle: list[float] = []
        stop = threading.Event()
        reader = threading.Thread(target=sample_queries, args=(api, ids, stop, idle))
        reader.start()
        time.sleep(1.0)
        stop.set()
        reader.join()

        busy: list[float] = []
        update_times: list[float] = []
        stop = threading.Event()
        reader = threading.Thread(target=sample_queries, args=(api, ids, stop, busy))
        reader.start()
        for n in range(updates):
            mod.write_text(with_extra if n % 2 == 0 else plain, "utf-8")
            result = index.update_files([mod])
            assert result.structural, "the include change must re-walk the graph"
            update_times.append(result.seconds)
        stop.set()
        reader.join()
        assert api.find_asset("FX_Extra")["found"] is (updates % 2 == 1)

        print(
            f"structural update ({updates}x, include toggled in Mod.xml): median "
            f"{statistics.median(update_times) * 1e3:.0f} ms, max {max(update_times) * 1e3:.0f} ms"
        )
        print(f"queries, no update running (peer) : {summary(idle)}")
        print(f"queries during structural updates : {summary(busy)}")
        worst = max(busy)
        over = sum(1 for s in busy if s > LIVE_TIMEOUT)
        print(
            f"worst wait = {worst / statistics.median(idle):,.0f}x the idle p50, "
            f"{worst / max(update_times) * 100:.0f}% of the slowest update, "
            f"{worst / LIVE_TIMEOUT * 100:.0f}% of the {LIVE_TIMEOUT:g} s live timeout; "
            f"{over} queries over it; {len(busy) / sum(update_times):,.0f} queries/s while updating"
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
