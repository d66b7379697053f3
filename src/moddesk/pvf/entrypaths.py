"""Archive entry paths as untrusted text: no control characters, shown escaped when refused.

A path with a newline would print as two lines in every listing and tool result (a line that
reads like an instruction); pack, import and script ``createFile`` refuse such paths up front.
"""

from __future__ import annotations

import re

from moddesk.kit.errors import ServiceError, register_codes

register_codes({"INVALID_ENTRY_PATH": "An archive entry path contains control or line-breaking characters."})

# C0 controls, DEL, C1 controls and the Unicode line/paragraph separators: each can break a line
CONTROL_CHARS = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def shown(text: str, limit: int = 200) -> str:
    """``text`` quoted with control characters as escapes (safe to put into a line of output)."""
    cut = text if len(text) <= limit else text[:limit] + "…"
    return repr(cut)


def check_entry_path(path: str, field: str = "path") -> str:
    """``path`` unchanged, or ``INVALID_ENTRY_PATH`` naming the first control character."""
    match = CONTROL_CHARS.search(path)
    if match is not None:
        raise ServiceError(
            "INVALID_ENTRY_PATH",
            f"{field} {shown(path)} contains the control character {match.group()!r} "
            f"at position {match.start()}; archive paths are one line of printable text",
            hint="Rename the file or folder without control characters (newlines, tabs, escapes).",
            field=field,
        )
    return path


_PLAIN = re.compile("[^\\s'\"\\\\\x00-\x1f\x7f-\x9f\u2028\u2029]+")


def label(text: str) -> str:
    """A path or name for a line of tool text: as is when plain, else quoted with escapes, so a
    name from an archive can never start a line of its own."""
    return text if _PLAIN.fullmatch(text) else repr(text)


def one_line(text: str) -> str:
    """``text`` with control and line-breaking characters shown as escapes (``\\n``, ``\\x1b``)."""
    return CONTROL_CHARS.sub(lambda match: repr(match.group())[1:-1], text)
