"""The stable launcher: written once at a fixed path, regenerated idempotently, and it really runs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from moddesk.kit.agents import (
    LauncherTarget,
    Locations,
    ensure_launcher,
    launcher_path,
    plan_launcher,
    render_launcher,
)

posix_only = pytest.mark.skipif(sys.platform == "win32", reason="runs the POSIX sh launcher")


def _loc(tmp_path: Path) -> Locations:
    # a space and a quote in the path: the launcher must quote what it runs
    return Locations.under(tmp_path / "it's home", project=tmp_path, platform="linux")


@posix_only
def test_generated_launcher_runs_moddesk_help(tmp_path: Path) -> None:
    loc = _loc(tmp_path)
    plan = ensure_launcher(loc)
    assert plan.status == "create" and plan.path == launcher_path(loc)
    assert os.access(plan.path, os.X_OK)
    result = subprocess.run(
        [str(plan.path), "--help"], stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert "Usage" in result.stdout


@posix_only
def test_launcher_passes_arguments_through(tmp_path: Path) -> None:
    loc = _loc(tmp_path)
    plan = ensure_launcher(loc, LauncherTarget.module("moddesk.agents_cli"))
    env = {**os.environ, "MODDESK_HOME": str(tmp_path / "h"), "MODDESK_AGENTS_PLATFORM": "linux"}
    result = subprocess.run(
        [str(plan.path), "clients", "--project-dir", str(tmp_path / "a b")],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        env={**env, "COLUMNS": "300"},
    )
    assert result.returncode == 0, result.stderr
    assert str(tmp_path / "a b" / ".vscode" / "mcp.json") in result.stdout


def test_regeneration_is_idempotent_and_follows_the_interpreter(tmp_path: Path) -> None:
    loc = _loc(tmp_path)
    first = ensure_launcher(loc, LauncherTarget((sys.executable, "-m", "moddesk")))
    mtime = first.path.stat().st_mtime_ns
    again = ensure_launcher(loc, LauncherTarget((sys.executable, "-m", "moddesk")))
    assert again.status == "unchanged" and first.path.stat().st_mtime_ns == mtime
    moved = plan_launcher(loc, LauncherTarget(("/new/venv/bin/python", "-m", "moddesk")))
    assert moved.status == "update" and moved.path == first.path  # same path, new target
    assert "'/new/venv/bin/python' '-m' 'moddesk' \"$@\"" in moved.text


@posix_only
def test_launcher_reports_a_vanished_interpreter(tmp_path: Path) -> None:
    loc = _loc(tmp_path)
    plan = ensure_launcher(loc, LauncherTarget((str(tmp_path / "gone" / "python"), "-m", "moddesk")))
    result = subprocess.run(
        [str(plan.path)], stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=30
    )
    assert result.returncode == 127
    assert "moddesk agents launcher" in result.stderr and result.stdout == ""


def test_windows_launcher_text() -> None:
    text = render_launcher(
        LauncherTarget((r"C:\Program Files (x86)\Py 100%\python.exe", "-m", "moddesk")), True
    )
    lines = text.split("\r\n")
    assert lines[0] == "@echo off"  # nothing but the server may write to stdout
    assert r'"C:\Program Files (x86)\Py 100%%\python.exe" "-m" "moddesk" %*' in lines
    assert "exit /b 127" in lines
    win = Locations.under(Path("C:/Users/me"), platform="windows")
    assert launcher_path(win).name == "moddesk-mcp.cmd"


def test_windows_copies_the_console_script_exe(tmp_path: Path) -> None:
    loc = Locations.under(tmp_path / "home", platform="windows")
    exe = tmp_path / "venv" / "Scripts" / "moddesk.exe"
    exe.parent.mkdir(parents=True)
    exe.write_bytes(b"MZ launcher #!C:\\venv\\Scripts\\python.exe\nPK zip")
    target = LauncherTarget((str(exe),), windows_exe=exe)
    assert launcher_path(loc, target).name == "moddesk-mcp.exe"
    assert launcher_path(loc, LauncherTarget(("python.exe", "-m", "moddesk"))).name == "moddesk-mcp.cmd"
    plan = ensure_launcher(loc, target)
    assert plan.status == "create" and plan.path.read_bytes() == exe.read_bytes()
    assert plan.copied_from == exe and "a copy of" in plan.text
    assert plan_launcher(loc, target).status == "unchanged"
    exe.write_bytes(b"MZ launcher #!D:\\new\\python.exe\nPK zip")  # a new install elsewhere
    assert ensure_launcher(loc, target).status == "update"
    assert launcher_path(loc, target).read_bytes().startswith(b"MZ launcher #!D:")
