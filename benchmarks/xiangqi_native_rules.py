"""The long differential test of the native xiangqi core against the Python reference: thousands of
random and engine games, every legal-move list, key and verdict compared (the `make test` version
plays 240 games).

Run: .venv/bin/python benchmarks/xiangqi_native_rules.py [--games 3000]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

TEST = Path(__file__).resolve().parent.parent / "tests" / "xiangqi" / "core" / "test_native_rules.py"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--games", type=int, default=3000, help="games through both cores")
    args = parser.parse_args()
    env = {**os.environ, "MODDESK_DIFF_GAMES": str(args.games), "MODDESK_REQUIRE_EXTERNAL": "1"}
    start = time.perf_counter()
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "--timeout=0",  # the suite's per-test timeout is for `make test`, not for thousands of games
        f"{TEST}::test_random_and_engine_games_agree",
    ]
    done = subprocess.run(command, env=env, check=False)
    print(
        f"{args.games} games compared in {time.perf_counter() - start:.0f} s: {'equal' if done.returncode == 0 else 'DIFFERENT'}"
    )
    sys.exit(done.returncode)


if __name__ == "__main__":
    main()
