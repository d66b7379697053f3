"""pvf workbench: content search over a generated archive, index vs a naive full scan, and MCP round trips.

    .venv/bin/python benchmarks/pvf_service.py              # 100,000-file NKPI archive
    .venv/bin/python benchmarks/pvf_service.py --quick      # 10,000 files
    .venv/bin/python benchmarks/pvf_service.py --files 1000000

Printed beside pvfine's published figures on a real 1,057,873-file archive (forced index rebuild
10.4 s, one content query after build ≈0.8 s, regex ≈1.1 s, next page 8-71 ms) and beside a naive
scan (decode every file, case-fold, find) measured in the same run.
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import httpx
import psutil

from moddesk.pvf.agent.serve import Workbench
from moddesk.pvf.archive import Archive, PvfFormatError
from moddesk.pvf.samples.generate import generate_archive
from moddesk.pvf.service import PvfService

PVFINE_FILES = 1_057_873
PVFINE_BUILD_S = 10.4
PVFINE_QUERY_S = 0.8
PVFINE_REGEX_S = 1.1
PVFINE_NEXT_PAGE_MS = (8, 71)
QUERIES = [("common", "[price]"), ("rare", "项链"), ("absent", "zz-no-such-text-zz")]


def timed(fn: Any) -> tuple[float, Any]:
    started = time.perf_counter()
    value = fn()
    return time.perf_counter() - started, value


def naive_scan(path: Path, needle: str, limit: int, budget: float) -> tuple[float, float, int, int, int]:
    """Decode every file and look for the needle, for at most ``budget`` seconds.

    Returns (seconds to the first page, seconds spent, files scanned, files in the archive, hits).
    """
    folded = needle.casefold()
    started = time.perf_counter()
    first_page = None
    hits = scanned = 0
    with Archive.open(path) as archive:
        total = len(archive)
        for entry, data in archive.iter_bytes():
            scanned += 1
            try:
                text = archive.render(entry.path, data)
            except PvfFormatError:  # binary entries have no text; the scan skips them
                continue
            for line in text.casefold().split("\n"):
                if folded in line:
                    hits += 1
                    if hits == limit and first_page is None:
                        first_page = time.perf_counter() - started
            if time.perf_counter() - started > budget:
                break
    spent = time.perf_counter() - started
    return (first_page if first_page is not None else spent), spent, scanned, total, hits


def search_section(path: Path, files: int, naive_budget: float) -> None:
    service = PvfService(index_wait=3600)
    process = psutil.Process()
    rss_before = process.memory_info().rss
    open_s, handle = timed(lambda: service.tasks.wait(service.open(str(path), service.epoch)["taskId"], 3600))
    ws = handle["result"]["workspaceId"]
    build = service.tasks.wait(service.info()["indexTaskId"], 3600)["result"]
    rss_after = process.memory_info().rss
    build_s = build["seconds"]
    print(f"open {files:,} files: {open_s:.2f} s (read + directory)")
    per_file_us = build_s / files * 1e6
    pvfine_per_file_us = PVFINE_BUILD_S / PVFINE_FILES * 1e6
    print(
        f"index build: {build_s:.2f} s = {files / build_s:,.0f} files/s ({per_file_us:.1f} us/file); "
        f"pvfine {PVFINE_BUILD_S} s for {PVFINE_FILES:,} = {pvfine_per_file_us:.1f} us/file; "
        f"ratio ours/pvfine per file {per_file_us / pvfine_per_file_us:.1f}x; "
        f"corpus {build['bytes'] / 2**20:.1f} MiB, RSS +{(rss_after - rss_before) / 2**20:.0f} MiB"
    )
    for label, query in QUERIES:
        first_s, page = timed(lambda query=query: service.search(ws, query, limit=20))
        line = f"query {label} {query!r}: first page {first_s * 1000:.1f} ms ({len(page['hits'])} hits)"
        if page["nextCursor"]:
            samples = []
            cursor = page["nextCursor"]
            for _ in range(5):
                next_s, nxt = timed(lambda c=cursor, q=query: service.search(ws, q, limit=20, cursor=c))
                samples.append(next_s)
                cursor = nxt["nextCursor"]
                if cursor is None:
                    break
            line += f", next page median {statistics.median(samples) * 1000:.1f} ms (pvfine {PVFINE_NEXT_PAGE_MS[0]}-{PVFINE_NEXT_PAGE_MS[1]} ms)"
        print(line + f"; pvfine ≈{PVFINE_QUERY_S} s per query on 1.06 M files")
    regex_s, regex = timed(lambda: service.search(ws, r"\[grade\]\s+9\d", mode="regex", limit=20))
    regex_none_s, _ = timed(lambda: service.search(ws, r"zz\d{3}no", mode="regex", limit=20))
    print(
        f"regex first page {regex_s * 1000:.1f} ms ({len(regex['hits'])} hits), regex with no hit (full pass) "
        f"{regex_none_s:.2f} s = {files / regex_none_s:,.0f} files/s; pvfine ≈{PVFINE_REGEX_S} s on 1.06 M files"
    )
    rare = QUERIES[1][1]
    indexed_s, _ = timed(lambda: service.search(ws, rare, limit=20))
    naive_first, spent, scanned, total, _hits = naive_scan(path, rare, 20, naive_budget)
    full = spent * total / scanned
    measured = (
        "full pass"
        if scanned == total
        else f"{scanned:,} of {total:,} files in {spent:.1f} s, full pass extrapolated"
    )
    print(
        f"naive scan for {rare!r} (decode + casefold + find, same run): first page {naive_first:.2f} s, "
        f"{measured} {full:.1f} s ({scanned / spent:,.0f} files/s); indexed first page {indexed_s * 1000:.1f} ms "
        f"= {naive_first / indexed_s:,.0f}x faster than the naive first page, {full / indexed_s:,.0f}x than a full pass"
    )
    service.shutdown()


async def _round_trips(
    url: str, token: str, ws_path: str, calls: int
) -> tuple[list[float], list[float], str]:
    import json

    from moddesk.kit.local_service import http_client

    async with http_client(url, token) as client:
        listing = await client.list_tools()
        size = len(
            json.dumps([t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in listing.tools])
        )
        print(
            f"tools/list: {len(listing.tools)} tools, {size:,} bytes of definitions (paid in every conversation)"
        )
        info = (await client.call_tool("pvf_workspace_info", {})).structured_content or {}
        ws = info["workspaceId"]
        info_times, read_times = [], []
        for _ in range(calls):
            started = time.perf_counter()
            await client.call_tool("pvf_workspace_info", {})
            info_times.append(time.perf_counter() - started)
            started = time.perf_counter()
            await client.call_tool("pvf_read_file", {"workspaceId": ws, "path": ws_path, "lineCount": 40})
            read_times.append(time.perf_counter() - started)
        return info_times, read_times, ws


def mcp_section(path: Path, calls: int) -> None:
    with Workbench(PvfService(), port=0) as bench:
        bench.open_at_start(path)
        service = bench.service
        ws = service.info()["workspaceId"]
        sample = service.search(ws, "[name]", limit=1)["hits"][0]["path"]
        info_t, read_t, _ = anyio.run(_round_trips, bench.url, bench.token, sample, calls)
        direct_info = statistics.median(timed(service.info)[0] for _ in range(calls))
        direct_read = statistics.median(
            timed(lambda: service.read_file(ws, sample, 1, 40))[0] for _ in range(calls)
        )
        # the transport floor: one HTTP round trip through the same server and guard (rejected Host)
        with httpx.Client() as http:
            floor = []
            for _ in range(calls):
                started = time.perf_counter()
                http.post(
                    bench.url,
                    content=b"{}",
                    headers={"Host": "nope.example", "Content-Type": "application/json"},
                )
                floor.append(time.perf_counter() - started)
        http_floor = statistics.median(floor)
    for name, remote, direct in (
        ("pvf_workspace_info", info_t, direct_info),
        ("pvf_read_file", read_t, direct_read),
    ):
        median = statistics.median(remote)
        print(
            f"MCP {name} over Streamable HTTP: median {median * 1000:.2f} ms ({1 / median:,.0f} calls/s); "
            f"direct service call {direct * 1000:.3f} ms; bare HTTP round trip {http_floor * 1000:.2f} ms "
            f"= {median / http_floor:.1f}x the transport floor"
        )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="10,000 files")
    parser.add_argument("--files", type=int, default=None)
    parser.add_argument("--format", default="90US", choices=["classic", "90US", "90CN"])
    parser.add_argument("--naive-budget", type=float, default=120.0, help="seconds the naive scan may run")
    args = parser.parse_args()
    for noisy in ("httpx", "httpx2", "mcp", "moddesk.http", "uvicorn"):
        logging.getLogger(noisy).setLevel(logging.ERROR)
    files = args.files or (10_000 if args.quick else 100_000)
    with tempfile.TemporaryDirectory(prefix="pvf bench ") as folder:
        path = Path(folder) / "Script bench.pvf"
        gen_s, result = timed(lambda: generate_archive(path, fmt=args.format, files=files))
        print(
            f"generated {result.files:,} files ({result.bytes / 2**20:.1f} MiB, {args.format}) in {gen_s:.1f} s"
        )
        search_section(path, result.files, args.naive_budget)
        small = Path(folder) / "Script small.pvf"
        generate_archive(small, fmt=args.format, files=2000)
        mcp_section(small, 30 if args.quick else 200)
    return 0


if __name__ == "__main__":
    sys.exit(main())
