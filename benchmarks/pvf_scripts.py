"""Script runs on a generated archive: worker start-up, and a script touching every .equ file.

Peers measured in the same run: a bare ``python -c pass`` start (the bound for a worker start),
and the same edit done in-process with ``moddesk.pvf.document`` over the same snapshot (the bound
for the script path: the difference is the sandbox — worker IPC and the JS proxies).

    .venv/bin/python benchmarks/pvf_scripts.py            # 100,000 files
    .venv/bin/python benchmarks/pvf_scripts.py --quick    # 10,000 files
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from moddesk.pvf.docparse import build_document
from moddesk.pvf.samples.generate import generate_archive
from moddesk.pvf.scripting.runtime import ScriptLimits, WorkerPool, run_script
from moddesk.pvf.scripting.service import WorkspaceSnapshot
from moddesk.pvf.service import PvfService

EDIT = """let touched = 0, changed = 0;
for (const file of pvf.glob("**/*.equ")) {
  const doc = file.parse();
  touched++;
  const price = doc.getValue("price");
  if (typeof price === "number" && price < 1000) { doc.set("price", price + 1); file.write(doc); changed++; }
}
pvf.log(touched, changed);"""


def median_seconds(fn: object, runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()  # type: ignore[operator]
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def in_process_edit(snapshot: WorkspaceSnapshot) -> tuple[int, int]:
    touched = changed = 0
    for path, _kind, _size in snapshot.list_files():
        if not path.endswith(".equ"):
            continue
        doc = build_document(snapshot.read_text(path))
        touched += 1
        price = doc.get_value("price")
        if isinstance(price, int) and price < 1000:
            doc.set("price", price + 1)
            doc.render()
            changed += 1
    return touched, changed


def main() -> None:
    files = 10_000 if "--quick" in sys.argv else 100_000
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.pvf"
        started = time.perf_counter()
        generate_archive(path, files=files)
        print(f"generated {files:,} files in {time.perf_counter() - started:.1f} s")
        service = PvfService()
        opened = service.tasks.wait(service.open(str(path), service.epoch)["taskId"], 600)["result"]
        ws = service.workspace
        assert ws is not None and opened is not None
        snapshot = WorkspaceSnapshot(ws)

        bare = median_seconds(lambda: subprocess.run([sys.executable, "-c", "pass"], check=True), 5)
        cold = median_seconds(lambda: run_script("", snapshot), 5)
        pool = WorkerPool()
        run_script("", snapshot, pool=pool)

        def warm_run() -> None:
            time.sleep(2.0)  # between real runs the pool has time to start the next idle worker
            started = time.perf_counter()
            run_script("", snapshot, pool=pool)
            warm_times.append(time.perf_counter() - started)

        warm_times: list[float] = []
        for _ in range(5):
            warm_run()
        warm = statistics.median(warm_times)
        pool.close()
        print(
            f"worker start-up: cold {cold * 1000:.0f} ms, pooled {warm * 1000:.0f} ms per empty run; "
            f"bare python start {bare * 1000:.0f} ms (cold ratio {cold / bare:.1f}x)"
        )

        logs: list[str] = []
        started = time.perf_counter()
        outcome = run_script(EDIT, snapshot, ScriptLimits(wall_seconds=1800), on_log=logs.append)
        script_seconds = time.perf_counter() - started
        assert outcome.state == "succeeded", outcome.error
        touched, changed = (int(x) for x in logs[-1].split())

        started = time.perf_counter()
        peer_touched, peer_changed = in_process_edit(snapshot)
        peer_seconds = time.perf_counter() - started
        assert (touched, changed) == (peer_touched, peer_changed), "the two paths disagree"
        print(
            f"script over every .equ: {touched:,} files, {changed:,} changed, {script_seconds:.2f} s "
            f"= {script_seconds / touched * 1e6:.0f} µs/file"
        )
        print(
            f"in-process document.py edit (peer): {peer_seconds:.2f} s "
            f"= {peer_seconds / touched * 1e6:.0f} µs/file"
        )
        print(f"ratio script / in-process: {script_seconds / peer_seconds:.2f}x")
        service.shutdown()


if __name__ == "__main__":
    main()
