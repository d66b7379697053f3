"""A group's help, served from the stored pages, is byte for byte the help typer draws.

``moddesk --help`` and ``moddesk <group> --help`` never build the typer app (moddesk/cli_help.py):
these tests hold the stored pages to the live app and the drawing to typer's own, at several
terminal widths, in colour and without, and through the real command.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from moddesk import cli_help
from moddesk.cli_help import build_pages, load_pages, page_for, show, stored_text
from moddesk.root_commands import app

PAGES = load_pages()


def test_stored_pages_are_those_of_the_live_app() -> None:
    live = build_pages()
    stored = json.loads(cli_help.PAGES_FILE.read_text(encoding="utf-8"))["pages"]
    changed = sorted(
        path or "(root)"
        for path in set(live) | set(stored)
        if json.loads(json.dumps(live.get(path))) != stored.get(path)
    )
    assert not changed and cli_help.PAGES_FILE.read_text(encoding="utf-8") == stored_text(live), (
        f"the help of {changed} changed (a command added, renamed or its docstring's first paragraph"
        " edited): run `python -m moddesk.cli_help --write` and commit src/moddesk/cli_help.json"
    )
    assert PAGES is not None, "cli_help.json was written by another typer version than the installed one"
    assert {"", "pvf", "ra3", "xiangqi", "agents", "pvf history", "agents skill"} <= set(PAGES)


def typer_help(args: list[str]) -> str:
    """What typer itself prints for ``moddesk ARGS --help``, in this process."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        app(args=[*args, "--help"], prog_name="moddesk", standalone_mode=False)
    return out.getvalue()


def served_help(args: list[str]) -> str:
    """What the stored page draws for ``moddesk ARGS --help`` (typer ends it with an empty line)."""
    found = page_for([*args, "--help"])
    assert found is not None and found[1] == 0
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        show(found[0])
        print()
    return out.getvalue()


@pytest.mark.parametrize("colour", [False, True], ids=["plain", "colour"])
@pytest.mark.parametrize("width", [40, 64, 80, 120, 200])
def test_every_page_is_drawn_as_typer_draws_it(
    width: int, colour: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Narrow widths wrap the usage line and the command column; colour adds typer's styles."""
    monkeypatch.setenv("COLUMNS", str(width))
    for name in ("NO_COLOR", "FORCE_COLOR", "TERMINAL_WIDTH", "TYPER_USE_RICH"):
        monkeypatch.delenv(name, raising=False)
    if colour:
        monkeypatch.setenv("FORCE_COLOR", "1")
        monkeypatch.setenv("COLORTERM", "truecolor")
    assert PAGES is not None
    for path in PAGES:
        args = path.split()
        expected = typer_help(args)
        assert "Usage:" in expected and ("\033[" in expected) == colour
        assert served_help(args) == expected, f"`moddesk {path} --help` at width {width}"


def moddesk(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "100", "NO_COLOR": "1"}
    return subprocess.run(
        [sys.executable, "-m", "moddesk", *args],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        env=env,
        timeout=120,
        check=False,
    )


def test_the_command_prints_typer_help_and_typer_exit_status(monkeypatch: pytest.MonkeyPatch) -> None:
    """``--help`` exits 0; a bare group shows the same page and exits 2, as typer does."""
    monkeypatch.setenv("COLUMNS", "100")
    monkeypatch.setenv("NO_COLOR", "1")
    for path in ("", "pvf", "agents skill"):
        expected = typer_help(path.split())
        asked = moddesk(*path.split(), "--help")
        assert (asked.returncode, asked.stdout, asked.stderr) == (0, expected, "")
        bare = moddesk(*path.split())
        assert (bare.returncode, bare.stdout + "\n", bare.stderr) == (2, expected, "\n")


def test_every_group_run_bare_shows_its_help() -> None:
    """`moddesk pvf mod` lists its commands like every other group, not "Missing command"."""
    assert PAGES is not None
    assert [path or "(root)" for path, page in PAGES.items() if not page["no_args_is_help"]] == []


def test_a_command_help_and_a_typo_still_go_through_typer() -> None:
    done = moddesk("pvf", "info", "--help")
    assert done.returncode == 0 and "Usage: moddesk pvf info [OPTIONS]" in done.stdout
    typo = moddesk("pvff", "--help")
    assert typo.returncode == 2 and "INVALID_ARGUMENT" in typo.stderr and "pvff" in typo.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["pvf", "info", "--help"],  # a command's help: typer
        ["--help", "--help"],
        ["pvf", "--json"],
        ["pvf", "--help", "extra"],
        ["nope", "--help"],
        ["pvf history", "--help"],  # one argument with a space is not the group path
        ["", "--help"],
        ["version"],  # a command, not a group
    ],
)
def test_only_a_groups_help_is_served_from_the_pages(args: list[str]) -> None:
    assert page_for(args) is None


def test_pages_of_another_typer_version_are_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """typer may draw differently after an upgrade: its own help is shown until the pages are rewritten."""
    stored = json.loads(cli_help.PAGES_FILE.read_text(encoding="utf-8"))
    older = tmp_path / "cli_help.json"
    older.write_text(json.dumps({**stored, "typer": "0.0.1"}), encoding="utf-8")
    monkeypatch.setattr(cli_help, "PAGES_FILE", older)
    assert page_for(["pvf", "--help"]) is None
    monkeypatch.setattr(cli_help, "PAGES_FILE", tmp_path / "missing.json")
    assert page_for(["--help"]) is None


def test_typer_plain_help_mode_is_left_to_typer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TYPER_USE_RICH", "0")
    assert page_for(["--help"]) is None
