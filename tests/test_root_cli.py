"""The root command as a user runs it: a real ``moddesk`` subprocess."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from moddesk import __version__
from moddesk.cli import GROUPS


def moddesk(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MODDESK_HOME": str(home), "COLUMNS": "200", "NO_COLOR": "1"}
    return subprocess.run(
        [sys.executable, "-m", "moddesk", *args],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        env=env,
        timeout=300,
        check=False,
    )


def test_version(tmp_path: Path) -> None:
    done = moddesk("version", home=tmp_path)
    assert done.returncode == 0
    assert done.stdout.strip() == f"moddesk {__version__}"


def test_doctor_lists_what_a_bug_report_needs(tmp_path: Path) -> None:
    done = moddesk("doctor", home=tmp_path)
    assert done.returncode == 0, done.stderr
    for row in (
        "python",
        "extra [pvf]",
        "extra [ra3]",
        "mcp SDK",
        "chromium",
        "fairy-stockfish",
        "data dir",
        "xiangqi engine",
    ):
        assert row in done.stdout, row
    assert sys.version.split()[0] in done.stdout
    assert "MODDESK_HOME" in done.stdout and "MCP launcher" in done.stdout


def test_every_system_is_mounted(tmp_path: Path) -> None:
    done = moddesk("--help", home=tmp_path)
    assert done.returncode == 0
    for command in ("pvf", "ra3", "xiangqi", "agents", "demo", "doctor"):
        assert command in done.stdout


def test_kit_demo_runs_end_to_end(tmp_path: Path) -> None:
    done = moddesk("demo", "kit", home=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "HTTP 421" in done.stdout
    assert "all demos passed" in done.stdout


# What `moddesk --help` may not load: the heavy libraries and every system (each group is imported
# only when it runs). Checked in a fresh interpreter, as a user's shell runs it.
HEAVY = (
    "numpy",
    "lxml",
    "mcp",
    "httpx",
    "starlette",
    "uvicorn",
    "pydantic",
    "quickjs",
    "pygls",
    "re2",
    "watchfiles",
)
SYSTEM_PACKAGES = ("moddesk.pvf", "moddesk.ra3", "moddesk.xiangqi", "moddesk.agents_cli")


def modules_after(*argv: str) -> set[str]:
    """The modules a fresh ``moddesk ARGV`` has imported when it exits."""
    script = (
        "import json, sys\n"
        "from moddesk.cli import app\n"
        "try:\n"
        f"    app({list(argv)!r})\n"
        "except SystemExit:\n"
        "    pass\n"
        "sys.stderr.write('\\nMODULES ' + json.dumps(sorted(sys.modules)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "COLUMNS": "200", "NO_COLOR": "1"},
        timeout=300,
        check=True,
    )
    return set(json.loads(done.stderr.rsplit("MODULES ", 1)[1]))


def test_root_help_imports_no_system_and_no_heavy_library() -> None:
    loaded = modules_after("--help")
    assert "typer" in loaded and "moddesk.cli" in loaded  # the probe itself works
    heavy = sorted(m for m in loaded if m.split(".")[0] in HEAVY)
    systems = sorted(m for m in loaded if m.startswith(SYSTEM_PACKAGES))
    assert not heavy and not systems, f"`moddesk --help` imported {heavy + systems}"


def test_root_version_imports_no_system() -> None:
    loaded = modules_after("version")
    assert not [m for m in loaded if m.startswith(SYSTEM_PACKAGES)]


def test_each_group_line_in_root_help_is_the_groups_own_help() -> None:
    for name, (module, help_line) in GROUPS.items():
        group = importlib.import_module(module).app
        assert group.info.help == help_line, f"update GROUPS[{name!r}] in moddesk/cli.py"


@pytest.mark.parametrize("group", list(GROUPS))
def test_group_help_imports_no_other_system_and_no_heavy_library(group: str) -> None:
    """`moddesk <group> --help` loads its own CLI only: no numpy, lxml, MCP SDK, HTTP stack, re2…

    (pydantic is typer's own: it coerces every parameter with it.)
    """
    loaded = modules_after(group, "--help")
    assert GROUPS[group][0] in loaded
    heavy = sorted({m.split(".")[0] for m in loaded if m.split(".")[0] in HEAVY} - {"pydantic"})
    others = sorted(
        m for m in loaded if m.startswith(SYSTEM_PACKAGES) and not m.startswith(f"moddesk.{group}")
    )
    assert not heavy and not others, f"`moddesk {group} --help` imported {heavy + others}"
