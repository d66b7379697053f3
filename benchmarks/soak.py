"""Soak: 8 clients doing random operations on `moddesk pvf serve` and `moddesk xiangqi serve`
while one of the two servers is SIGKILLed and restarted on the same port every --kill-every s.

pvf clients use the official MCP SDK ``Client`` over Streamable HTTP (workspace info, search,
read, save, export prepare/execute); xiangqi clients use the panel's RPC channel (new game, state,
moves, hints). Reported: operations, errors by code (transport errors while a server is down are
``DISCONNECTED``), restart times (peer: the time a first start took), leftovers after the run
(the bound: 0) and the RSS drift of each server incarnation.

    .venv/bin/python benchmarks/soak.py                               # 60 s, a kill every 15 s
    .venv/bin/python benchmarks/soak.py --minutes 10 --kill-every 30  # the documented soak
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import psutil

from moddesk.kit.leftovers import find_leftovers
from moddesk.kit.local_service import http_client
from moddesk.kit.mcp import result_payload
from moddesk.pvf.samples.generate import generate_archive

CLIENTS = 8
MB = 1 << 20


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Server:
    """One `moddesk … serve` process that can be killed and started again on its port."""

    def __init__(self, name: str, args: list[str], env: dict[str, str], port: int) -> None:
        self.name, self.args, self.env, self.port = name, args, env, port
        self.proc: subprocess.Popen[bytes] | None = None
        self.restarts: list[float] = []
        self.drifts: list[float] = []
        self._rss0 = 0

    def start(self) -> float:
        """Start and wait until it answers HTTP; returns the seconds that took."""
        started = time.monotonic()
        self.log = Path(self.env["TMPDIR"]).parent / f"{self.name}.log"
        with open(self.log, "ab") as log:  # a file, not a pipe nobody drains (a full pipe blocks it)
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "moddesk.cli", *self.args, "--port", str(self.port)],
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
            )
        while time.monotonic() - started < 120:
            try:
                httpx.get(f"http://127.0.0.1:{self.port}/", timeout=1)
                break
            except httpx.HTTPError:
                if self.proc.poll() is not None:
                    err = self.log.read_text(errors="replace")
                    raise SystemExit(f"{self.name} did not start: {err[-2000:]}") from None
                time.sleep(0.02)
        self._rss0 = psutil.Process(self.proc.pid).memory_info().rss
        return time.monotonic() - started

    def rss(self) -> int:
        assert self.proc is not None
        return int(psutil.Process(self.proc.pid).memory_info().rss)

    def kill_and_restart(self) -> None:
        assert self.proc is not None
        self.drifts.append((self.rss() - self._rss0) / MB)
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        self.restarts.append(self.start())

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.drifts.append((self.rss() - self._rss0) / MB)
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def _code(result: Any) -> str | None:
    return str(result_payload(result).get("error") or "UNKNOWN") if result.is_error else None


def _person(endpoint: Path) -> dict[str, str]:
    """The person key of the server's current run, from its 0600 person file (as the CLI reads it)."""
    from moddesk.kit.person import read_person

    access = read_person(endpoint)
    return access.headers() if access is not None else {}


def _token(endpoint: Path) -> str:
    """The bearer token of the server's current run (a restart writes a new one)."""
    try:
        return str(json.loads(endpoint.read_text(encoding="utf-8")).get("token", ""))
    except (OSError, ValueError):
        return ""


async def pvf_client(
    url: str, endpoint: Path, out: Path, until: float, ops: Counter[str], errors: Counter[str]
) -> None:
    rng = random.Random()
    while time.monotonic() < until:
        try:
            async with http_client(url, _token(endpoint)) as client:
                while time.monotonic() < until:
                    info = (await client.call_tool("pvf_workspace_info", {})).structured_content or {}
                    ws, rev = info.get("workspaceId"), info.get("revision")
                    ops["pvf_workspace_info"] += 1
                    if ws is None:
                        await asyncio.sleep(0.2)  # the restarted server is still opening the archive
                        continue
                    choice = rng.choice(["search", "search", "read", "read", "save", "export"])
                    if choice == "search":
                        args: dict[str, Any] = {
                            "workspaceId": ws,
                            "query": rng.choice(["price", "name", "*.equ"]),
                        }
                        if args["query"].startswith("*"):
                            args["mode"] = "path"
                        name, result = "pvf_search", await client.call_tool("pvf_search", args)
                    elif choice == "read":
                        name = "pvf_read_file"
                        result = await client.call_tool(
                            name, {"workspaceId": ws, "path": "equipment/equipment.lst"}
                        )
                    elif choice == "save":
                        name = "pvf_archive_save"
                        result = await client.call_tool(name, {"workspaceId": ws, "expectedRevision": rev})
                    else:
                        name = "pvf_export"
                        result = await client.call_tool(
                            "pvf_export_prepare",
                            {
                                "workspaceId": ws,
                                "expectedRevision": rev,
                                "source": "selection",
                                "paths": ["equipment"],
                                "includeDependencies": False,
                            },
                        )
                        plan = (result.structured_content or {}).get("planId")
                        if plan and not result.is_error:
                            result = await client.call_tool(
                                "pvf_export_execute",
                                {
                                    "planId": plan,
                                    "outputParent": str(out),
                                    "outputName": f"e{time.time_ns()}",
                                },
                            )
                    ops[name] += 1
                    code = _code(result)
                    if code:
                        errors[code] += 1
        except Exception:  # the server was killed under us: reconnect
            errors["DISCONNECTED"] += 1
            await asyncio.sleep(0.2)


async def xiangqi_client(
    base: str, endpoint_file: Path, until: float, ops: Counter[str], errors: Counter[str]
) -> None:
    rng = random.Random()
    session: str | None = None
    async with httpx.AsyncClient(timeout=30) as http:

        async def call(endpoint: str, payload: dict[str, Any]) -> dict[str, Any] | None:
            ops[f"xiangqi_{endpoint}"] += 1
            try:
                auth = _person(endpoint_file)  # the RPC channel is the person's
                body = (await http.post(f"{base}/xiangqi-mate/{endpoint}", json=payload, headers=auth)).json()
            except (httpx.HTTPError, ValueError):
                errors["DISCONNECTED"] += 1
                await asyncio.sleep(0.2)
                return None
            if not body.get("ok"):
                error = body.get("error") or {}
                errors[str(error.get("code"))] += 1
                return {"error": error}
            value: dict[str, Any] = body["value"]
            return value

        while time.monotonic() < until:
            if session is None or rng.random() < 0.05:
                made = await call("new", {"opponent": "local", "side": "r"})
                session = made.get("sessionId") if made and "error" not in made else None
                continue
            step = rng.choice(["state", "move", "move", "hint"])
            if step == "move":
                tried = await call("move", {"sessionId": session, "move": "a0a1"})  # asks for the list
                legal = ((tried or {}).get("error") or {}).get("details", {}).get("legalMoves") or []
                if legal:
                    await call("move", {"sessionId": session, "move": rng.choice(legal)["iccs"]})
                elif tried and "error" in tried and tried["error"].get("code") in ("GAME_OVER", "NO_GAME"):
                    session = None
                await asyncio.sleep(0.3)  # the local engine answers
            else:
                await call(
                    step, {"sessionId": session, "count": 1} if step == "hint" else {"sessionId": session}
                )


async def clients(
    pvf_url: str, xq_url: str, endpoints: tuple[Path, Path], out: Path, until: float
) -> tuple[Counter[str], Counter[str]]:
    ops: Counter[str] = Counter()
    errors: Counter[str] = Counter()
    tasks = [pvf_client(pvf_url, endpoints[0], out, until, ops, errors) for _ in range(CLIENTS // 2)]
    tasks += [xiangqi_client(xq_url, endpoints[1], until, ops, errors) for _ in range(CLIENTS - CLIENTS // 2)]
    await asyncio.gather(*tasks)
    return ops, errors


def killer(servers: list[Server], every: float, until: float) -> None:
    turn = 0
    while time.monotonic() + every < until:
        time.sleep(every)
        servers[turn % len(servers)].kill_and_restart()
        turn += 1


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--minutes", type=float, default=1.0)
    parser.add_argument("--kill-every", type=float, default=15.0)
    parser.add_argument("--files", type=int, default=5000)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="moddesk soak ") as tmp:
        root = Path(tmp)
        folders = {k: root / v for k, v in {
            "MODDESK_CONFIG_DIR": "config", "MODDESK_CACHE_DIR": "cache", "MODDESK_DATA_DIR": "data",
            "TMPDIR": "tmp", "RA3MODXML_HOME": "ra3",
        }.items()}  # fmt: skip
        for folder in folders.values():
            folder.mkdir()
        archive_dir, out = root / "archive", root / "exports"
        archive_dir.mkdir()
        out.mkdir()
        archive = archive_dir / "Script.pvf"
        generate_archive(archive, files=options.files)
        env = {
            **os.environ,
            **{k: str(v) for k, v in folders.items()},
            "MODDESK_XIANGQI_DB_PATH": str(root / "xiangqi" / "games.db"),
            "MODDESK_XIANGQI_CONFIG": str(root / "absent.toml"),
            "MODDESK_XIANGQI_THINK_TIME": "0.05",
            "MODDESK_XIANGQI_HINT_TIME": "0.05",
        }
        pvf = Server("pvf", ["pvf", "serve", str(archive), "--root", str(out)], env, free_port())
        xq = Server("xiangqi", ["xiangqi", "serve"], env, free_port())
        first = {s.name: s.start() for s in (pvf, xq)}
        until = time.monotonic() + options.minutes * 60
        loop = asyncio.new_event_loop()
        work = loop.run_in_executor(None, killer, [pvf, xq], options.kill_every, until)
        ops, errors = loop.run_until_complete(
            clients(
                f"http://127.0.0.1:{pvf.port}/mcp",
                f"http://127.0.0.1:{xq.port}",
                (folders["MODDESK_CONFIG_DIR"] / "endpoints" / "pvf.json", root / "xiangqi" / "serve.json"),
                out,
                until,
            )
        )
        loop.run_until_complete(work)
        loop.close()
        for server in (pvf, xq):
            server.stop()
        # a last start sweeps what the last kill left (a dead owner's temps), then a clean stop
        for server in (pvf, xq):
            server.start()
            time.sleep(1.0)
            server.stop()
        places = [archive_dir, archive_dir / "Script.pvf.moddesk", out, folders["TMPDIR"], root / "xiangqi"]
        leftovers = find_leftovers(places, depth=1)
        print(f"soak: {options.minutes:g} min, {CLIENTS} clients, a kill every {options.kill_every:g} s")
        print(f"operations: {sum(ops.values())} ({', '.join(f'{k} {v}' for k, v in sorted(ops.items()))})")
        print(f"errors by code: {dict(sorted(errors.items())) or 'none'}")
        for server in (pvf, xq):
            restarts = ", ".join(f"{t:.2f}" for t in server.restarts) or "-"
            print(
                f"{server.name}: first start {first[server.name]:.2f} s (peer), restarts {restarts} s; "
                f"RSS drift per incarnation {', '.join(f'{d:+.1f}' for d in server.drifts)} MB"
            )
        print(f"leftovers: {len(leftovers)} {[str(item.path) for item in leftovers][:5]}")


if __name__ == "__main__":
    main()
