"""The root command as a user runs it: a real ``moddesk`` subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from moddesk import __version__


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
    for row in ("python", "extra [pvf]", "extra [ra3]", "mcp SDK", "chromium", "fairy-stockfish", "data dir"):
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
