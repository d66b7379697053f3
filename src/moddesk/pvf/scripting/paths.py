"""Archive path normalisation and glob patterns for scripts (case-insensitive, "/"-separated)."""

from __future__ import annotations

import functools
import re


def normalize_path(path: str) -> str:
    """Lower case, forward slashes, no leading slash, no empty or dot segments."""
    parts = [p for p in str(path).replace("\\", "/").strip().lower().split("/") if p not in ("", ".")]
    if ".." in parts:
        raise ValueError(f"archive paths cannot contain '..': {path!r}")
    if not parts:
        raise ValueError("empty archive path")
    return "/".join(parts)


@functools.lru_cache(maxsize=256)
def glob_regex(pattern: str) -> re.Pattern[str]:
    """``*`` within a folder, ``**`` across folders (``**/`` also matches none), ``?`` one character."""
    text = pattern.replace("\\", "/").strip().lower().lstrip("/")
    out: list[str] = []
    i = 0
    while i < len(text):
        if text.startswith("**/", i):
            out.append("(?:[^/]*/)*")
            i += 3
        elif text.startswith("**", i):
            out.append(".*")
            i += 2
        elif text[i] == "*":
            out.append("[^/]*")
            i += 1
        elif text[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(text[i]))
            i += 1
    return re.compile("".join(out))
