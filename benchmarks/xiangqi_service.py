"""Game service speed, each figure beside the bound it cannot beat, measured in the same run.

* move+undo through GameService (replay + projection + SQLite commit) vs a bare SQLite UPDATE
  commit of the same record size on the same WAL settings (the persistence bound);
* `state` over the RPC (HTTP, JSON) vs GET of a small static file from the same server (HTTP bound);
* `xiangqi_board` over MCP Streamable HTTP vs `tools/list` on the same connection (protocol bound).

    .venv/bin/python benchmarks/xiangqi_service.py [--quick]
"""

from __future__ import annotations

import argparse
import json
import logging
import sqlite3
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import anyio
import httpx
from mcp import Client

from moddesk.kit.mcp import serve_http
from moddesk.xiangqi.game import GameService
from moddesk.xiangqi.mcp import build_server
from moddesk.xiangqi.rpc import rpc_routes
from moddesk.xiangqi.store import Settings


def rate(fn: Callable[[], object], n: int) -> float:
    start = time.perf_counter()
    for _ in range(n):
        fn()
    return n / (time.perf_counter() - start)


def line(label: str, ours: float, bound: float, bound_label: str) -> None:
    print(f"{label:<34} {ours:9.1f}/s   {bound_label:<30} {bound:9.1f}/s   ratio {ours / bound:6.3f}")


def sqlite_bound(path: Path, size: int, n: int) -> float:
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute("CREATE TABLE t (id TEXT PRIMARY KEY, revision INTEGER, data TEXT)")
    db.execute("INSERT INTO t VALUES ('x', 0, '')")
    blob = "x" * size
    counter = iter(range(1, 10**9))

    def write() -> None:
        rev = next(counter)
        db.execute(
            "UPDATE t SET revision = ?, data = ? WHERE id = 'x' AND revision = ?", (rev, blob, rev - 1)
        )

    result = rate(write, n)
    db.close()
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    for name in ("httpx", "httpx2", "mcp", "uvicorn"):  # per-request logs would dominate the timings
        logging.getLogger(name).setLevel(logging.WARNING)
    n = 50 if args.quick else 300
    with tempfile.TemporaryDirectory() as tmp:
        service = GameService(Settings(db_path=Path(tmp) / "games.db", think_time=0.05))
        game = service.new("hero", "r", "model")
        for move, actor in (("h2e2", "hero"), ("h9g7", "opponent"), ("h0g2", "hero"), ("i9h9", "opponent")):
            service.move(actor, move)  # type: ignore[arg-type]
        session = game["sessionId"]

        def cycle() -> None:
            service.move("hero", "i0h0", session)
            service.undo("hero", 1, session)

        size = len(service.store.get(session).to_json())  # type: ignore[union-attr]
        ours = rate(cycle, n) * 2  # two commits per cycle
        line(
            "move/undo commits (service)",
            ours,
            sqlite_bound(Path(tmp) / "bound.db", size, n * 2),
            "bare SQLite UPDATE commits",
        )
        print(f"  (a 4-ply game record of {size} bytes; each commit replays, projects and saves the game)")

        with serve_http(build_server(service), 0, extra_routes=rpc_routes(service)) as server:
            with httpx.Client(timeout=30) as http:
                body = json.dumps({"sessionId": session})
                state_rate = rate(lambda: http.post(f"{server.url}/xiangqi-mate/state", content=body), n)
                static_rate = rate(lambda: http.get(f"{server.url}/xiangqi/panel.css"), n)
                line("RPC state (HTTP+JSON)", state_rate, static_rate, "GET static file, same server")

            async def mcp_rates() -> tuple[float, float]:
                async with Client(f"{server.url}/mcp") as client:
                    start = time.perf_counter()
                    for _ in range(n // 2):
                        await client.call_tool("xiangqi_board", {"sessionId": session})
                    board = (n // 2) / (time.perf_counter() - start)
                    start = time.perf_counter()
                    for _ in range(n // 2):
                        await client.list_tools()
                    listing = (n // 2) / (time.perf_counter() - start)
                    return board, listing

            board_rate, list_rate = anyio.run(mcp_rates)
            line("MCP xiangqi_board (HTTP)", board_rate, list_rate, "MCP tools/list, same client")
        service.close()


if __name__ == "__main__":
    main()
