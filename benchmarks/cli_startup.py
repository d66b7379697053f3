"""How fast `moddesk --help` and `moddesk <group> --help` answer, beside importing typer + rich.

Every command, every MCP client launching `moddesk … mcp` and every test that shells out pays the
start-up of the root command. The peer is the framework's own import, ``python -c "import typer,
rich"``, measured in the same run; the target is ≤ 2× the peer for the root help and each group's
help — every group, nested ones included, as src/moddesk/cli_help.json lists them (those pages are
drawn without building typer). A command's own help (``moddesk pvf info --help``) is shown beside
them for information: it still builds its group with typer and has no target. Runs are interleaved
(one of each per round) so a load change hits all of them alike; the figure is the median wall
time of fresh interpreters.

    .venv/bin/python benchmarks/cli_startup.py             # 15 rounds
    .venv/bin/python benchmarks/cli_startup.py --rounds 5
    .venv/bin/python benchmarks/cli_startup.py --before /tmp/old/src   # also an older checkout's
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

PEER = ("import typer + rich", ["-c", "import typer, rich"])
# The framework's own floor for a group's help: a minimal typer app, one group of two commands.
# typer (0.29) coerces every parameter through pydantic and renders help with rich's markdown and
# traceback modules, so even this app pays several times the bare import.
MINIMAL_APP = """
import typer
app = typer.Typer(add_completion=False)
group = typer.Typer(help="A group.")
app.add_typer(group, name="group")
@group.command()
def one(name: str = "x") -> None:
    \"\"\"One.\"\"\"
@group.command()
def two() -> None:
    \"\"\"Two.\"\"\"
app()
"""
FLOOR = ("minimal typer app group --help", ["-c", MINIMAL_APP, "group", "--help"])
TARGET = 2.0
# the root and every group (nested ones too: pvf history, agents skill, …), as the stored help
# pages list them (src/moddesk/cli_help.json)
PAGES_FILE = Path(__file__).resolve().parents[1] / "src" / "moddesk" / "cli_help.json"
COMMANDS = [
    (f"moddesk {path} --help".replace("  ", " "), ["-m", "moddesk", *path.split(), "--help"])
    for path in json.loads(PAGES_FILE.read_text(encoding="utf-8"))["pages"]
]
# shown for information, outside the target: a command's own help still builds its group with typer
COMMAND_HELP = ("moddesk pvf info --help (typer)", ["-m", "moddesk", "pvf", "info", "--help"])


def wall_ms(argv: list[str], src: str | None = None) -> float:
    """One fresh interpreter running ``argv`` to the end, in milliseconds (``src``: moddesk from there)."""
    env = {**os.environ, "COLUMNS": "120", "NO_COLOR": "1"}
    if src is not None:
        env["PYTHONPATH"] = src
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, *argv], check=True, stdout=subprocess.DEVNULL, stdin=subprocess.DEVNULL, env=env
    )
    return (time.perf_counter() - start) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--before", help="an older checkout's src/ folder, measured in the same rounds")
    options = parser.parse_args()
    rounds = options.rounds
    everything: list[tuple[str, list[str], str | None]] = [
        (name, argv, None) for name, argv in [PEER, FLOOR, *COMMANDS, COMMAND_HELP]
    ]
    if options.before:
        everything += [(f"{name} (before)", argv, options.before) for name, argv in COMMANDS]
    runs: dict[str, list[float]] = {name: [] for name, _, _ in everything}
    for _, argv, src in everything:
        wall_ms(argv, src)  # warm the file cache and the bytecode
    for _ in range(rounds):
        for name, argv, src in everything:
            runs[name].append(wall_ms(argv, src))
    peer = statistics.median(runs[PEER[0]])
    floor = statistics.median(runs[FLOOR[0]])
    load = os.getloadavg()[0]
    print(f"{rounds} rounds, median wall time, load {load:.1f}")
    print(f"{PEER[0]:<38} {peer:7.0f} ms   (peer)")
    print(f"{FLOOR[0]:<38} {floor:7.0f} ms   {floor / peer:4.2f}× the peer  (the framework's floor)")
    worst = 0.0
    for name in [n for n, _, _ in everything[2:]]:
        took = statistics.median(runs[name])
        ratio = took / peer
        counts = not name.endswith(("(before)", "(typer)"))
        if counts:
            worst = max(worst, ratio)
        mark = (("ok" if ratio <= TARGET else "over") + f", target ≤ {TARGET:g}×") if counts else "no target"
        print(f"{name:<38} {took:7.0f} ms   {ratio:4.2f}× the peer  ({mark})  {took / floor:4.2f}× the floor")
    print(f"worst ratio {worst:.2f}× (target ≤ {TARGET:g}×)")


if __name__ == "__main__":
    main()
