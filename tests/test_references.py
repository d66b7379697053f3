"""Every repository path that code, tests, benchmarks and docs name exists.

A moved test or a renamed script leaves its old path behind in a docstring, a hint or the README
(``.ci/node-tools.json`` in a test docstring, a test path in the README after the tests moved to
rooms). Paths under ``.ci/``, ``tests/``, ``benchmarks/``, ``src/moddesk/`` and ``docs/`` are
checked; globs must match something.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCES = (
    "src/**/*.py",
    "src/**/*.md",
    "src/**/*.js",
    "tests/**/*.py",
    "benchmarks/*.py",
    "benchmarks/*.md",
    "docs/**/*.md",
    "README.md",
    "README.zh-CN.md",
    "Makefile",
    ".ci/run",
)
# a path-like word right after these is not a path of this repository
PATH = re.compile(r"(?<![\w./-])((?:\.ci|tests|benchmarks|src/moddesk|docs)/[\w./*-]*[\w*])")
NOT_OURS = {
    "benchmarks/.out": "written by the benchmarks at run time",
    "tests/perft.sh": "a file of Fairy-Stockfish's repository, cited as the perft source",
}


def named_paths() -> list[tuple[str, int, str]]:
    """(file, line, path) for every repository path named in the sources."""
    found = []
    for pattern in SOURCES:
        for source in sorted(ROOT.glob(pattern)):
            if source == Path(__file__).resolve():
                continue  # this file names wrong paths on purpose
            text = source.read_text(encoding="utf-8", errors="replace")
            for number, line in enumerate(text.splitlines(), start=1):
                for match in PATH.finditer(line):
                    found.append((str(source.relative_to(ROOT)), number, match.group(1).rstrip(".")))
    return found


def test_the_check_sees_paths() -> None:
    paths = {path for _, _, path in named_paths()}
    assert "tests/kit/test_typescript_clients.py" in paths  # named in the README
    assert PATH.search("see .ci/nope.json here") and not PATH.search("native/fairy-stockfish")


def test_every_named_repository_path_exists() -> None:
    missing = [
        f"{source}:{line} names {path}"
        for source, line, path in named_paths()
        if path not in NOT_OURS and not list(ROOT.glob(path))
    ]
    assert not missing, "paths that do not exist (moved or renamed?):\n" + "\n".join(missing)
