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
from moddesk.cli_help import load_pages
from moddesk.root_commands import GROUPS


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
# a group's help is drawn from the stored pages: not even the CLI framework is built for it
FRAMEWORK = ("typer", "click", "moddesk.root_commands")


def modules_after(*argv: str) -> set[str]:
    """The modules a fresh ``moddesk ARGV`` (the console script's ``main``) has imported at exit."""
    script = (
        "import json, sys\n"
        "from moddesk.cli import main\n"
        "try:\n"
        f"    main({list(argv)!r})\n"
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


def _unwanted(loaded: set[str], *, allowed_system: str = "", framework: bool = False) -> list[str]:
    """The heavy libraries, other systems (and with ``framework``, typer itself) in ``loaded``."""
    heavy = sorted({m.split(".")[0] for m in loaded if m.split(".")[0] in HEAVY})
    systems = sorted(
        m
        for m in loaded
        if m.startswith(SYSTEM_PACKAGES)
        and not (allowed_system and m.startswith(f"moddesk.{allowed_system}"))
    )
    typer = sorted(m for m in loaded if m.split(".")[0] in FRAMEWORK or m in FRAMEWORK) if framework else []
    return heavy + systems + typer


def test_root_help_imports_no_system_no_heavy_library_and_no_typer() -> None:
    loaded = modules_after("--help")
    assert "moddesk.cli_help" in loaded and "rich.console" in loaded  # the probe itself works
    unwanted = _unwanted(loaded, framework=True)
    assert not unwanted, f"`moddesk --help` imported {unwanted}"


def test_root_version_imports_no_system() -> None:
    loaded = modules_after("version")
    assert "moddesk.root_commands" in loaded  # a command runs through typer
    assert not [m for m in loaded if m.startswith(SYSTEM_PACKAGES)]


def test_each_group_line_in_root_help_is_the_groups_own_help() -> None:
    for name, (module, help_line) in GROUPS.items():
        group = importlib.import_module(module).app
        assert group.info.help == help_line, f"update GROUPS[{name!r}] in moddesk/root_commands.py"


PAGES = load_pages() or {}


@pytest.mark.parametrize("group", [path for path in PAGES if path])
def test_every_group_help_imports_no_system_no_heavy_library_and_no_typer(group: str) -> None:
    """`moddesk pvf --help`, `moddesk pvf history --help`, bare `moddesk agents skill`: the page
    only — no group module, no numpy, lxml, MCP SDK, HTTP stack, re2, pydantic, nor typer."""
    shapes = [[*group.split(), "--help"]] + ([group.split()] if PAGES[group]["no_args_is_help"] else [])
    for argv in shapes:
        loaded = modules_after(*argv)
        assert "moddesk.cli_help" in loaded
        unwanted = _unwanted(loaded, framework=True)
        assert not unwanted, f"`moddesk {' '.join(argv)}` imported {unwanted}"


@pytest.mark.parametrize("group", list(GROUPS))
def test_a_command_help_imports_its_group_only(group: str) -> None:
    """`moddesk <group> <command> --help` runs through typer and loads its own group only: no other
    system, no numpy, lxml, MCP SDK, HTTP stack, re2… (pydantic is typer's own: it coerces every
    parameter with it)."""
    module = importlib.import_module(GROUPS[group][0])
    command = next(
        info.name or info.callback.__name__ for info in module.app.registered_commands if info.callback
    )
    loaded = modules_after(group, command.replace("_", "-"), "--help")
    assert GROUPS[group][0] in loaded
    unwanted = [m for m in _unwanted(loaded, allowed_system=group) if m != "pydantic"]
    assert not unwanted, f"`moddesk {group} {command} --help` imported {unwanted}"


@pytest.mark.parametrize(
    "args",
    [
        ("--help",),
        ("pvf", "--help"),
        ("pvf", "info", "--help"),
        ("version",),
        ("pvf", "info", "ARCHIVE", "--json"),
    ],
)
def test_a_reader_that_went_away_gets_no_traceback(args: tuple[str, ...], tmp_path: Path) -> None:
    """``moddesk pvf --help | head -1``: stdout's reader is gone before the first write (rich's
    console, the help pages and a plain ``print`` of ``--json`` each meet it)."""
    if "ARCHIVE" in args:
        from moddesk.pvf.samples.generate import generate_archive

        archive = tmp_path / "Script.pvf"
        generate_archive(archive, files=50)
        args = tuple(str(archive) if a == "ARCHIVE" else a for a in args)
    read_end, write_end = os.pipe()
    os.close(read_end)  # every write to the pipe now fails with EPIPE
    try:
        done = subprocess.run(
            [sys.executable, "-m", "moddesk", *args],
            env={**os.environ, "MODDESK_CONFIG_DIR": str(tmp_path), "MODDESK_DATA_DIR": str(tmp_path)},
            stdin=subprocess.DEVNULL,
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )
    finally:
        os.close(write_end)
    assert "Traceback" not in done.stderr and "BrokenPipeError" not in done.stderr, done.stderr
    assert "INTERNAL_ERROR" not in done.stderr
    assert done.returncode == 1
