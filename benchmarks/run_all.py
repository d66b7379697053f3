"""Run every benchmark script in this folder (``make bench``); each prints its own figures.

Pass ``--quick`` to hand it on to every script (smaller sizes, for a smoke run).
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    extra = [a for a in sys.argv[1:] if a.startswith("--")]
    only = [a for a in sys.argv[1:] if not a.startswith("--")]
    scripts = sorted(p for p in HERE.glob("*.py") if p.name != Path(__file__).name)
    if only:
        scripts = [p for p in scripts if any(word in p.stem for word in only)]
    failed: list[str] = []
    for script in scripts:
        print(f"\n=== {script.name}", flush=True)
        started = time.perf_counter()
        code = subprocess.call([sys.executable, str(script), *extra], stdin=subprocess.DEVNULL)
        print(f"=== {script.name}: exit {code} in {time.perf_counter() - started:.1f} s", flush=True)
        if code != 0:
            failed.append(script.name)
    if not scripts:
        print("no benchmarks yet")
    if failed:
        print(f"failed: {', '.join(failed)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
