"""Every pvf command, every kind of bad input: a clear error with its code, never a traceback (#35).

Each command runs through ``moddesk.cli.main`` (the console script's own entry) with a file that is
missing, empty, not UTF-8, a folder, a text file where an archive belongs, large random bytes, or a
damaged archive. It must exit non-zero with a documented code on stderr, print no traceback and no
``INTERNAL_ERROR`` (which is how a bug reaches a person), and with ``--json`` put the error object
on stdout for scripts.
"""

from __future__ import annotations

import json
import random
import re
import tempfile
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path

import pytest

from moddesk.cli import main
from moddesk.pvf.samples.generate import generate_archive

BadFile = Callable[[Path], Path]
#: A documented error code as the CLI prints it (``TRUNCATED:``, ``NOT_FOUND：``), or a compiler-style
#: diagnostic naming the file, line and column (``a.pvf.js:1:1: SyntaxError …``).
CODE = re.compile(r"\b[A-Z][A-Z0-9]+(?:_[A-Z0-9]+)*\b[:：]|\S+:\d+:\d+: ")
#: Inputs that are not bad for that command: an empty file is a valid (empty) script.
VALID = {("script check", "empty")}


def _missing(d: Path) -> Path:
    return d / "nothing here.pvf"


def _empty(d: Path) -> Path:
    (d / "empty.pvf").write_bytes(b"")
    return d / "empty.pvf"


def _not_utf8(d: Path) -> Path:
    (d / "gbk.json").write_bytes("价格 [price]".encode("gbk") + b"\xff\xfe")
    return d / "gbk.json"


def _folder(d: Path) -> Path:
    (d / "a folder").mkdir()
    return d / "a folder"


def _text(d: Path) -> Path:
    (d / "notes.pvf").write_text("#PVF_File\n\n[name]\n\t`not an archive`\n", encoding="utf-8")
    return d / "notes.pvf"


def _huge(d: Path) -> Path:
    (d / "huge.pvf").write_bytes(random.Random(7).randbytes(3 << 20))
    return d / "huge.pvf"


@lru_cache(maxsize=1)
def _cut_archive() -> bytes:
    with tempfile.TemporaryDirectory() as d:
        good = Path(d) / "good.pvf"
        generate_archive(good, fmt="90US", files=40, seed=5)
        data = good.read_bytes()
    return data[: len(data) * 999 // 1000]


def _damaged(d: Path) -> Path:
    (d / "cut.pvf").write_bytes(_cut_archive())
    return d / "cut.pvf"


BAD_FILES: dict[str, BadFile] = {
    "missing": _missing,
    "empty": _empty,
    "not-utf8": _not_utf8,
    "folder": _folder,
    "text": _text,
    "huge": _huge,
    "damaged": _damaged,
}

# {bad} is replaced by the bad file; {out} by a fresh path for output
COMMANDS: dict[str, list[str]] = {
    "info": ["pvf", "info", "{bad}", "--json"],
    "ls": ["pvf", "ls", "{bad}"],
    "cat": ["pvf", "cat", "{bad}", "equipment/a.equ"],
    "verify": ["pvf", "verify", "{bad}"],
    "extract": ["pvf", "extract", "{bad}", "{out}"],
    "diff": ["pvf", "diff", "{bad}", "{bad}"],
    "table": ["pvf", "table", "equipment", "{bad}"],
    "search": ["pvf", "search", "{bad}", "-q", "price", "--json"],
    "read": ["pvf", "read", "{bad}", "--path", "equipment/a.equ"],
    "explain": ["pvf", "explain", "{bad}", "equipment/a.equ"],
    "history log": ["pvf", "history", "log", "{bad}"],
    "export": ["pvf", "export", "{bad}", "--format", "direct", "--name", "out"],
    "script run": ["pvf", "script", "run", "{bad}", "{bad}"],
    "script check": ["pvf", "script", "check", "{bad}"],
    "mod inspect": ["pvf", "mod", "inspect", "{bad}"],
    "docs check": ["pvf", "docs", "check", "{bad}", "--json"],
    "docs search": ["pvf", "docs", "search", "price", "--rules", "{bad}", "--json"],
    "docs get": ["pvf", "docs", "get", "rule:x", "--rules", "{bad}", "--json"],
    "docs explain": ["pvf", "docs", "explain", "{bad}", "equipment/a.equ", "--json"],
    "pack": ["pvf", "pack", "{bad}", "{out}"],
}


def _run(argv: list[str], capfd: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as ended:
        main(argv)
    out, err = capfd.readouterr()
    code = ended.value.code
    return (code if isinstance(code, int) else 1), out, err


CASES = [(c, b) for c in sorted(COMMANDS) for b in sorted(BAD_FILES) if (c, b) not in VALID]


@pytest.mark.parametrize(("command", "bad_kind"), CASES)
def test_bad_input_is_a_clear_error(
    command: str,
    bad_kind: str,
    tmp_path: Path,
    capfd: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.setenv("MODDESK_CONFIG_DIR", str(tmp_path / "config"))  # no running serve is found
    monkeypatch.chdir(tmp_path)
    bad = BAD_FILES[bad_kind](tmp_path)
    argv = [
        arg.replace("{bad}", str(bad)).replace("{out}", str(tmp_path / "out")) for arg in COMMANDS[command]
    ]
    status, out, err = _run(argv, capfd)
    shown = out + err
    assert "Traceback" not in shown, shown
    assert "INTERNAL_ERROR" not in shown, shown
    assert status != 0, f"{command} accepted a {bad_kind} file: {shown}"
    if "--json" in argv:
        payload = json.loads(out)
        if command == "docs check" and "valid" in payload:  # a check's own report: each file's problems
            assert payload["valid"] is False and payload["issues"], payload
            return
        assert payload["ok"] is False and payload["error"] and payload["message"], payload
    assert CODE.search(shown), f"no error code in: {shown}"
