"""A real service process for the fault tests: it loops one write (so a SIGKILL lands mid-write)
or serves after a crash. Run as a script: ``python driver.py MODE PORT ARGS…``; prints READY."""

from __future__ import annotations

import json
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any


def _serve_pvf(
    port: int, archive: Path | None, serve_first: bool = False, roots: tuple[Path, ...] = ()
) -> tuple[Any, float]:
    """A workbench on ``port`` with ``archive`` open; returns it and the seconds until it served."""
    from moddesk.pvf.agent.serve import Workbench

    started = time.monotonic()
    # sweeps what killed runs left (remembered places, temp dir); ``roots``: where it may import
    # from and export to, as `--root` grants them
    bench = Workbench(port=port, roots=roots)
    serving = 0.0
    if serve_first:
        bench.start()  # answers at once (workspace info shows the open task) while the archive opens
        serving = time.monotonic() - started
    if archive is not None:
        bench.open_at_start(archive)  # sweeps the archive's folder and history folder
    if not serve_first:
        bench.start()
    return bench, serving


def _finish(service: Any, handle: dict[str, Any]) -> dict[str, Any]:
    status = service.tasks.wait(handle["taskId"], 600)
    if status["state"] != "succeeded":
        raise SystemExit(f"task failed: {status.get('error')}")
    result: dict[str, Any] = status["result"]
    return result


def _edit(service: Any, ws: str, count: int, round_: int) -> None:
    """Rewrite ``count`` files with text naming the round (the test checks old-or-new)."""
    assert service.workspace is not None
    paths = [p for p in service.workspace.paths() if p.endswith(".equ")][:count]
    changes = {p: f"#PVF_File\n[name]\n`round {round_}`\n" for p in paths}
    service.apply_changes(ws, service.workspace.revision, changes)


def save_loop(port: int, archive: Path, history: bool) -> None:
    """Edit + save forever (with history: each save also commits)."""
    bench, _ = _serve_pvf(port, archive)
    service = bench.service
    ws = service.info()["workspaceId"]
    if history:
        service.history_init(ws)
    print("READY", flush=True)
    for round_ in range(1, 1_000_000):
        _edit(service, ws, 400 if history else 5, round_)
        _finish(service, service.save(ws, service.workspace.revision))
        print(f"SAVED {round_}", flush=True)


def export_loop(port: int, archive: Path, out: Path) -> None:
    from moddesk.pvf.transfer.exports import ExportService
    from moddesk.pvf.transfer.sources import PERSON_EXPORT_LIMITS

    bench, _ = _serve_pvf(port, archive, roots=(out,))
    service = bench.service
    ws = service.info()["workspaceId"]
    exports = ExportService(service)
    print("READY", flush=True)
    for round_ in range(1_000_000):
        # a long export the person started (over the agents' 10,000-file limit, to be killable mid-write)
        plan = exports.prepare(
            ws, service.workspace.revision, "selection", ["stackable"], limits=PERSON_EXPORT_LIMITS
        )
        exports.execute(plan["planId"], str(out), f"dump{round_}")
        print(f"EXPORTED {round_}", flush=True)


def import_loop(port: int, archive: Path, source: Path) -> None:
    from moddesk.pvf.transfer.imports import ImportService

    bench, _ = _serve_pvf(port, archive, roots=(source,))
    service = bench.service
    ws = service.info()["workspaceId"]
    imports = ImportService(service, memory_budget=0)  # every frozen file spills to the temp dir
    print("READY", flush=True)
    while True:
        plan = imports.prepare(ws, [str(source)], "imported")
        keys = [i["key"] for i in imports.preview(plan["planId"], limit=200)["items"]]
        print("APPLYING", flush=True)
        imports.apply(plan["planId"], service.workspace.revision, keys, overwrite_keys=keys)


def snapshot_loop(project: Path) -> None:
    from moddesk.ra3.core.index import ModIndex
    from moddesk.ra3.core.project import detect_project
    from moddesk.ra3.core.snapshot import write_snapshot

    index = ModIndex(detect_project(project))
    data = index.build()
    status = index.status()
    write_snapshot(data, status)  # one whole snapshot first: the "old" a kill may fall back to
    print("READY", flush=True)
    while True:
        write_snapshot(data, status)


def serve_ra3(port: int, project: Path) -> Any:
    from moddesk.ra3.agent.watch import Watcher

    return Watcher([project], port=port, snapshots=False).start()


def main() -> None:
    mode, port, *args = sys.argv[1:]
    if mode == "save":
        save_loop(int(port), Path(args[0]), history=False)
    elif mode == "history":
        save_loop(int(port), Path(args[0]), history=True)
    elif mode == "export":
        export_loop(int(port), Path(args[0]), Path(args[1]))
    elif mode == "import":
        import_loop(int(port), Path(args[0]), Path(args[1]))
    elif mode == "snapshot":
        snapshot_loop(Path(args[0]))
    elif mode in ("serve-pvf", "serve-ra3"):
        import moddesk.ra3.agent.watch  # noqa: F401  (imports are the interpreter's start, not the service's)

        started = time.monotonic()
        if mode == "serve-pvf":
            running, serving = _serve_pvf(int(port), Path(args[0]) if args else None, serve_first=True)
        else:
            running = serve_ra3(int(port), Path(args[0]))
            serving = time.monotonic() - started
        stop = threading.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: stop.set())
        print("READY " + json.dumps({"startSeconds": serving}), flush=True)
        stop.wait()
        running.stop()  # endpoint files and temps go with a clean stop
    else:
        raise SystemExit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
