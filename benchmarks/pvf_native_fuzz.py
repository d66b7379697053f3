"""The native pvf parsers fuzzed longer than ``cargo test`` does (#28).

    .venv/bin/python benchmarks/pvf_native_fuzz.py                 # 20,000 cases per target
    .venv/bin/python benchmarks/pvf_native_fuzz.py --cases 200000

Runs ``native/pvf/tests/fuzz.rs`` (proptest: arbitrary bytes, mutated seed archives of every
family from ``native/pvf/tests/seeds/``, random unit streams through the renderer) with
``PROPTEST_CASES`` raised; ``cargo test`` runs the same targets with 300 cases each. Prints the
cases per second beside the seed archives opened and rendered plainly (the bound: what one case
costs when nothing is malformed).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TARGETS = 4  # the proptest targets in fuzz.rs (three fuzzed, one plain run of the seeds)


def cargo_test(cases: int, test_filter: str) -> float:
    """Seconds of one ``cargo test --release --test fuzz`` run (built beforehand)."""
    env = dict(os.environ, PROPTEST_CASES=str(cases))
    started = time.perf_counter()
    subprocess.run(
        ["cargo", "test", "--release", "-q", "-p", "moddesk-pvf", "--test", "fuzz", "--", test_filter],
        cwd=REPO / "native",
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--cases", type=int, default=20_000, help="cases per fuzz target")
    parser.add_argument(
        "--quick", action="store_true", help="2,000 cases per target (make bench's smoke run)"
    )
    args = parser.parse_args()
    if args.quick:
        args.cases = 2_000
    if shutil.which("cargo") is None:
        print("cargo not found: the native core cannot be fuzzed here")
        return 0
    load = os.getloadavg()
    print(f"{os.cpu_count()} CPUs, load average {load[0]:.2f} {load[1]:.2f}", flush=True)
    cargo_test(1, "seed_archives")  # build once, untimed
    bound = cargo_test(1, "seed_archives")
    seconds = cargo_test(args.cases, "")
    total = 3 * args.cases
    print(
        f"fuzzed {total:,} cases ({args.cases:,} per target: arbitrary bytes, mutated seed archives, random "
        f"unit streams) in {seconds:.1f} s = {total / seconds:,.0f} cases/s, no panic; the plain seed run "
        f"(open + read + render of the three seed archives, process start included) {bound:.2f} s",
        flush=True,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
