"""Entries of list files (``.lst``) and string tables (``.str``) in their text forms.

A ``.lst`` script is a run of (integer id, string path) values; how the text lays them out
(one pair a line, or each value on its own line) does not matter. A ``.str`` file holds
``key>value`` lines, ``//`` comments and blank lines.
"""

from __future__ import annotations

import posixpath

from moddesk.pvf.document import Document, Value
from moddesk.pvf.format.errors import PvfFormatError


def list_entries(text: str | None) -> dict[int, str]:
    """id → path of a ``.lst`` text (a text that does not parse has no entries)."""
    if not text:
        return {}
    try:
        values = Document.parse(text).preamble
    except PvfFormatError:
        return {}
    out: dict[int, str] = {}
    for i in range(0, len(values) - 1, 2):
        ident, path = values[i], values[i + 1]
        if ident.kind == "integer" and path.kind == "string":
            out[int(ident.value)] = str(path.value)  # type: ignore[arg-type]
    return out


def render_list(entries: dict[int, str]) -> str:
    """``.lst`` text for the entries, sorted by id as the game's lists are."""
    doc = Document()
    for ident, path in sorted(entries.items()):
        doc.body.append([Value("integer", ident), Value("string", path)])
    return doc.render()


def string_entries(text: str | None) -> dict[str, str]:
    """key → value of a ``.str`` text."""
    out: dict[str, str] = {}
    for line in (text or "").splitlines():
        if not line.strip() or line.lstrip().startswith("//") or ">" not in line:
            continue
        key, value = line.split(">", 1)
        out[key.strip()] = value
    return out


def list_target_candidates(lst_path: str, entry: str) -> list[str]:
    """Archive paths a list entry may name: relative to the list's folder (classic), or from the root."""
    base = posixpath.dirname(lst_path)
    relative = posixpath.normpath(posixpath.join(base, entry.lower()))
    return [relative] if relative == entry.lower() else [relative, entry.lower()]
