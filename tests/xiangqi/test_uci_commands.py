"""`moddesk xiangqi perft|analyse|uci` through the real command line (a subprocess)."""

from __future__ import annotations

import subprocess
import sys

import typer
from typer.testing import CliRunner

from moddesk.xiangqi.uci_cli import register

MODDESK = [sys.executable, "-m", "moddesk", "xiangqi"]


def run(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run([*MODDESK, *args], input=stdin, capture_output=True, text=True, timeout=120)


def test_perft_command() -> None:
    out = run("perft", "startpos", "2")
    assert out.returncode == 0 and "perft(2) = 1920" in out.stdout
    out = run(
        "perft", "r1ba1a3/4kn3/2n1b4/pNp1p1p1p/4c4/6P2/P1P2R2P/1CcC5/9/2BAKAB2 w - - 0 1", "2", "--divide"
    )
    assert "perft(2) = 1128" in out.stdout and out.stdout.count(": ") == 38


def test_perft_rejects_a_bad_fen() -> None:
    out = run("perft", "not a fen", "2")
    assert out.returncode == 2 and "BAD_FEN" in out.stdout


def test_analyse_command_finds_mate() -> None:
    out = run("analyse", "3k5/9/9/9/9/9/9/9/4R4/4K4 w - - 0 1", "--depth", "3", "--multipv", "2")
    assert out.returncode == 0, out.stderr
    assert "mate 1" in out.stdout and "bestmove e1" in out.stdout


def test_uci_command_serves_the_protocol() -> None:
    out = run("uci", stdin="uci\nisready\nposition startpos moves h2e2\ngo depth 2\nisready\nquit\n")
    lines = out.stdout.splitlines()
    assert "uciok" in lines and "readyok" in lines
    assert any(line.startswith("bestmove ") for line in lines)


def test_register_adds_three_commands() -> None:
    app = typer.Typer()
    register(app)
    result = CliRunner().invoke(app, ["--help"])
    assert result.exit_code == 0
    for name in ("uci", "perft", "analyse"):
        assert name in result.output
