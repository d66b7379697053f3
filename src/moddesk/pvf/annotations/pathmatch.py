"""Rule path matching through the one archive glob engine (``moddesk.pvf.workbench.search.glob_to_regex``).

Globs match the whole archive path, case-insensitively: ``*`` and ``?`` stay inside one
folder, ``**`` crosses folders (``equipment/**/*.equ``). Unlike search's plain-text path filter,
a rule glob without wildcards is an exact path, never a substring.
"""

from __future__ import annotations

from functools import lru_cache

from moddesk.kit.errors import ServiceError
from moddesk.kit.linear_regex import LinearRegex
from moddesk.pvf.workbench.search import glob_to_regex, normalize_path

MAX_GLOB_LENGTH = 512


class GlobError(ValueError):
    """A glob pattern that cannot be used."""


@lru_cache(maxsize=4096)
def compile_glob(pattern: str) -> LinearRegex:
    """Compile ``pattern`` for whole-path matching; raise ``GlobError`` if unusable."""
    if len(pattern) > MAX_GLOB_LENGTH:
        raise GlobError(f"glob longer than {MAX_GLOB_LENGTH} characters")
    normalized = normalize_path(pattern)
    if not normalized:
        raise GlobError("glob must not be empty")
    try:
        return glob_to_regex(normalized)
    except ServiceError as exc:  # too big for the linear-time engine
        raise GlobError(exc.message) from exc


def glob_match(pattern: str, path: str) -> bool:
    """Whether an archive path matches ``pattern``."""
    return compile_glob(pattern).fullmatch(normalize_path(path))


def glob_literal_extension(pattern: str) -> str | None:
    """The extension a glob provably requires (``equipment/**/*.equ`` → ``.equ``), else None."""
    last = normalize_path(pattern).rsplit("/", 1)[-1]
    if last.startswith("*.") and len(last) > 2 and not any(c in last[2:] for c in "*?"):
        return last[1:]
    return None
