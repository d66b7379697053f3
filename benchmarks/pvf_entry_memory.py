"""What an open workspace still holds per archive entry, stage by stage, on each core.

    .venv/bin/python benchmarks/pvf_entry_memory.py --files 100000 --family both --core python,native

Each core runs in a child process of its own (a clean heap): the archive's bytes are read, then
each stage adds what the service builds — the archive's directory (open), the workspace's path
table, the path lookup, one ``getinfo`` (the per-entry size/type lists), a full render pass in
batches — and the RSS it adds is printed in MiB and in bytes per entry, beside the sizes of the
named buffers the stage keeps (``sys.getsizeof`` of each). The archives are pvf_scale.py's
(cached in /tmp/moddesk-pvf-scale).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from pvf_scale import archive_for


def _rss() -> int:
    import psutil

    return int(psutil.Process().memory_info().rss)


def _sizes(obj: Any, names: list[str]) -> dict[str, int]:
    """``sys.getsizeof`` of the named attributes (dotted) of ``obj`` that exist."""
    out: dict[str, int] = {}
    for name in names:
        value: Any = obj
        for part in name.split("."):
            value = getattr(value, part, None)
            if value is None:
                break
        if value is not None:  # a numpy view's getsizeof leaves out the buffer it shows
            out[name] = int(getattr(value, "nbytes", 0)) or sys.getsizeof(value)
    return out


def _native_held(archive: Any, only: str = "") -> dict[str, int]:
    """The native archive's own tables (``Archive.held``: allocated bytes), named ``native.*``."""
    if archive._native is None:
        return {}
    return {f"native.{k}": int(v) for k, v in archive._native.held().items() if k.startswith(only) and v}


def child(path: str) -> dict[str, Any]:
    """The stages, measured in this process (the core is MODDESK_CORE's)."""
    from moddesk.pvf.archive import Archive
    from moddesk.pvf.workbench.workspace import Workspace, read_source

    stages: list[dict[str, Any]] = []
    gc.collect()
    base = _rss()

    def mark(stage: str, seconds: float, held: dict[str, int] | None = None) -> None:
        gc.collect()
        stages.append({"stage": stage, "rss": _rss() - base, "seconds": seconds, "held": held or {}})

    started = time.perf_counter()
    data, identity = read_source(Path(path))
    mark("archive bytes in memory", time.perf_counter() - started)
    started = time.perf_counter()
    archive = Archive.from_bytes(data)
    held = _sizes(
        archive,
        [
            "_paths",
            "_nkpi.rows",
            "_nkpi.pools.pool_a",
            "_nkpi.pools.pool_w",
            "_classic.names._buffer",
            "_classic.offsets",
            "_classic.sizes",
        ],
    )
    held.update(_native_held(archive))
    mark("open (directory)", time.perf_counter() - started, held)
    started = time.perf_counter()
    ws = Workspace(archive, Path(path), identity, data)
    mark("workspace path table", time.perf_counter() - started, _sizes(ws, ["_names._names", "_names._all"]))
    started = time.perf_counter()
    ws.exists("equipment/none.equ")
    ws.base_text(ws.base_sorted_paths(0, 1)[0])
    mark("path lookup (first read by name)", time.perf_counter() - started, _sizes(archive, ["_lookup"]))
    started = time.perf_counter()
    ws.base_kind(ws.base_sorted_paths(0, 1)[0])
    mark("first getinfo (per-entry lists)", time.perf_counter() - started, _sizes(archive, ["_lists"]))
    started = time.perf_counter()
    entries = 0
    for batch in archive.rendered_batches(fold=True, terminator="\0"):
        entries += len(batch)
    mark(
        "render pass in batches (nothing kept)",
        time.perf_counter() - started,
        _native_held(archive, "render"),
    )
    return {"entries": len(archive), "native": archive.native, "stages": stages}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=100_000)
    parser.add_argument("--family", default="both", choices=["90US", "classic", "both"])
    parser.add_argument("--core", default="python,native")
    parser.add_argument("--quick", action="store_true", help="10,000 files (a smoke run)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.quick:
        args.files = 10_000
    if args.child:
        print(json.dumps(child(args.child)))
        return
    families = ["90US", "classic"] if args.family == "both" else [args.family]
    for family in families:
        path = archive_for(family, args.files)
        for core in args.core.split(","):
            env = dict(os.environ, MODDESK_CORE=core)
            out = subprocess.run(
                [sys.executable, __file__, "--child", str(path)],
                env=env,
                capture_output=True,
                text=True,
                check=True,
            )
            r = json.loads(out.stdout.strip().splitlines()[-1])
            n = r["entries"]
            print(f"\n{family}, {n:,} entries, {core} core:")
            for s in r["stages"]:
                held = ", ".join(f"{k} {v / 2**20:.1f} MiB" for k, v in s["held"].items())
                print(
                    f"  {s['stage']:<40} RSS +{s['rss'] / 2**20:7.1f} MiB = {s['rss'] / n:6.0f} B/entry "
                    f"({s['seconds']:.2f} s){'; held: ' + held if held else ''}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
