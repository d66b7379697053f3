"""Memory of one big script plan: RSS growth while it is pending, and what returns after discard.

The bound beside the figures: the plan's own new bytes (its texts), and the plan limit
(``ScriptLimits.max_plan_bytes``) that caps them. The peer: the same plan discarded with only
``gc.collect()`` (what the service did before) versus ``return_freed_memory`` (gc + malloc_trim).

    .venv/bin/python benchmarks/pvf_plan_memory.py            # a ~60 MB plan
    .venv/bin/python benchmarks/pvf_plan_memory.py --quick    # a ~16 MB plan
"""

from __future__ import annotations

import gc
import subprocess
import sys
import tempfile
from pathlib import Path

import psutil

from moddesk.kit.memory import return_freed_memory
from moddesk.pvf.samples.generate import generate_archive
from moddesk.pvf.scripting.runtime import ScriptLimits
from moddesk.pvf.scripting.service import ScriptService
from moddesk.pvf.service import PvfService

MB = 1 << 20


def rss() -> int:
    return int(psutil.Process().memory_info().rss)


def big_plan(files: int, size: int) -> str:
    return (
        f"for (let i = 0; i < {files}; i++) "
        f'pvf.createFile(`bench/new${{i}}.equ`, 1, "#PVF_File\\n[name]\\n`" + "z".repeat({size}) + i + "`\\n");'
    )


def one_cycle(
    service: PvfService, scripts: ScriptService, ws: str, source: str, trim: bool
) -> tuple[int, int]:
    """(RSS growth with the plan pending, RSS left over after discarding it), in bytes."""
    if trim:
        return_freed_memory()
    else:
        gc.collect()
    base = rss()
    rev = service.workspace.revision if service.workspace else 0
    status = service.tasks.wait(scripts.run(ws, rev, source)["taskId"], 600)
    assert status["state"] == "succeeded", status.get("error")
    plan_id = status["result"]["planId"]
    scripts.preview(plan_id, limit=50)  # a client looks at it, as a real one would
    pending = rss() - base
    if trim:
        scripts.discard(plan_id)  # the service's own path: gc + malloc_trim
    else:
        service.plans.discard("script", plan_id)
        gc.collect()
    return pending, rss() - base


def child(mode: str, files: int, size: int) -> None:
    """One process, one mode, three plan cycles: prints one line per cycle."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.pvf"
        generate_archive(path, files=2000)
        service = PvfService()
        opened = service.tasks.wait(service.open(str(path), service.epoch)["taskId"], 600)["result"]
        scripts = ScriptService(service, ScriptLimits(wall_seconds=600))
        start = rss()
        for cycle in range(3):
            pending, left = one_cycle(
                service, scripts, opened["workspaceId"], big_plan(files, size), mode == "trim"
            )
            print(f"{mode} {cycle} {pending} {left} {rss() - start}", flush=True)
        service.shutdown()


def main() -> None:
    if "--child" in sys.argv:
        mode, files, size = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
        child(mode, files, size)
        return
    files, size = (160, 100_000) if "--quick" in sys.argv else (600, 100_000)
    plan_bytes = files * size
    print(
        f"plan: {files} files, {plan_bytes / MB:.1f} MB of new text; limit {ScriptLimits().max_plan_bytes / MB:.0f} MB"
    )
    for mode, label in [("gc", "gc only (peer)"), ("trim", "return_freed_memory")]:
        out = subprocess.run(
            [sys.executable, __file__, "--child", mode, str(files), str(size)],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for line in out.splitlines():
            _, cycle, pending, left, drift = line.split()
            grown, kept = int(pending), int(left)
            print(
                f"{label:>22} cycle {cycle}: RSS +{grown / MB:6.1f} MB pending ({grown / plan_bytes:.2f}x the plan), "
                f"{kept / MB:+6.1f} MB after discard ({kept / max(grown, 1):4.0%} kept), drift {int(drift) / MB:+6.1f} MB"
            )


if __name__ == "__main__":
    main()
