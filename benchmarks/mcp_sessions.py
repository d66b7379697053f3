"""Memory of the MCP HTTP endpoints after many clients that only ``initialize`` and leave.

Each "client" POSTs one ``initialize`` and never sends DELETE (the worst case: a crashed or
careless client). xiangqi serves Streamable HTTP without sessions; pvf keeps sessions, closes those
idle for ``SESSION_IDLE_TIMEOUT`` (10 min; 5 s here so the run is short) and refuses more than
``MAX_SESSIONS`` with a 503. RSS is read from /proc before, right after, and after the idle timeout.

    .venv/bin/python benchmarks/mcp_sessions.py            # 1,000 clients per server
    .venv/bin/python benchmarks/mcp_sessions.py --clients 200
"""

from __future__ import annotations

import argparse
import gc
import tempfile
import time
from collections import Counter
from pathlib import Path

import httpx

import moddesk.kit.mcp as kit_mcp

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "b", "version": "0"},
    },
}
HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def hammer(url: str, clients: int, token: str | None = None) -> Counter[int]:
    codes: Counter[int] = Counter()
    headers = {**HEADERS, **({"Authorization": f"Bearer {token}"} if token else {})}
    with httpx.Client(timeout=30) as http:
        for _ in range(clients):
            codes[http.post(url, json=INIT, headers=headers).status_code] += 1
    return codes


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--clients", type=int, default=1000)
    parser.add_argument("--idle", type=float, default=5.0, help="pvf session idle timeout for this run (s)")
    args = parser.parse_args()
    kit_mcp.SESSION_IDLE_TIMEOUT = args.idle

    from moddesk.kit.mcp import serve_http
    from moddesk.pvf.agent.serve import Workbench
    from moddesk.pvf.service import PvfService
    from moddesk.xiangqi.game import GameService
    from moddesk.xiangqi.mcp import build_server
    from moddesk.xiangqi.store import Settings

    print("| server | clients | HTTP answers | RSS before | after the clients | after the idle timeout |")
    print("|---|---:|---|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        games = GameService(Settings(db_path=Path(tmp) / "g.db"))
        with serve_http(build_server(games), 0) as xq, Workbench(PvfService(), port=0) as bench:
            runs = (
                ("xiangqi (stateless)", f"{xq.url}/mcp", None),
                ("pvf (sessions)", bench.url, bench.token),
            )
            for name, url, token in runs:
                hammer(url, 20, token)  # warm up: imports, first-request caches
                gc.collect()
                before = rss_mib()
                codes = hammer(url, args.clients, token)
                gc.collect()
                after = rss_mib()
                time.sleep(args.idle + 3)
                gc.collect()
                idle = rss_mib()
                answers = ", ".join(f"{n}× {code}" for code, n in sorted(codes.items()))
                print(
                    f"| {name} | {args.clients} | {answers} | {before:.1f} MiB | {after:.1f} MiB "
                    f"(+{after - before:.1f}) | {idle:.1f} MiB (+{idle - before:.1f}) |"
                )
        games.close()


if __name__ == "__main__":
    main()
