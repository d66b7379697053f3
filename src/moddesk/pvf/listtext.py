"""Entries of list files (``.lst``) and string tables (``.str``) in their text forms.

A ``.lst`` script is a run of (integer id, string path) values; how the text lays them out
(one pair a line, or each value on its own line) does not matter. A ``.str`` file holds
``key>value`` lines, ``//`` comments and blank lines.
"""

from __future__ import annotations

import bisect
import posixpath

from moddesk.pvf.document import Document, Value
from moddesk.pvf.format.errors import PvfFormatError
from moddesk.pvf.format.text import quote


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


def _newline(text: str) -> str:
    return "\r\n" if "\r\n" in text else "\n"


def _line_span(text: str, start: int, end: int) -> tuple[int, int]:
    """Widen ``[start, end)`` to whole lines (with one line break) when nothing else is on them."""
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", end)
    line_end = len(text) if line_end < 0 else line_end + 1
    if text[line_start:start].strip() or text[end:line_end].strip():
        return start, end
    return line_start, line_end


def edit_list(text: str, entries: dict[int, str]) -> str:
    """``text`` changed to hold exactly ``entries``, touching only the lines of changed entries.

    A changed path is replaced where it stands; a removed entry loses its lines; a new entry is
    written after the entry with the next lower id, in the layout of the entries around it (one pair
    a line or a value a line, the file's own line breaks). Text that does not parse is rebuilt.
    """
    try:
        values = Document.parse(text).preamble if text else []
    except PvfFormatError:
        values = []
    pairs: dict[int, tuple[Value, Value]] = {}
    for i in range(0, len(values) - 1, 2):
        id_value, path_value = values[i], values[i + 1]
        if id_value.kind == "integer" and path_value.kind == "string" and path_value.start >= 0:
            pairs[int(id_value.value)] = (id_value, path_value)  # type: ignore[arg-type]
    if not pairs:
        return render_list(entries) if entries or not text else text
    newline = _newline(text)
    any_pair = next(iter(pairs.values()))
    between = text[any_pair[0].end : any_pair[1].start]  # "\t" or a line break and indentation
    edits: list[tuple[int, int, str]] = []  # (start, end, replacement), applied from the end
    for ident, (id_value, path_value) in pairs.items():
        if ident not in entries:
            start, end = _line_span(text, id_value.start, path_value.end)
            edits.append((start, end, ""))
        elif entries[ident] != path_value.value:
            edits.append((path_value.start, path_value.end, quote(entries[ident])))
    known = sorted(pairs)
    for ident in sorted(set(entries) - set(pairs)):
        below = bisect.bisect_left(known, ident)  # entries with a lower id
        record = f"{ident}{between}{quote(entries[ident])}"
        if below:
            at = pairs[known[below - 1]][1].end
            edits.append((at, at, newline + record))
        else:
            at = _line_span(text, pairs[known[0]][0].start, pairs[known[0]][0].end)[0]
            edits.append((at, at, record + newline))
    out = text
    for start, end, replacement in sorted(edits, key=lambda e: (e[0], e[1]), reverse=True):
        out = out[:start] + replacement + out[end:]
    return out


def edit_str(text: str, entries: dict[str, str]) -> str:
    """A ``.str`` text changed to hold ``entries``: changed lines replaced, removed lines dropped,
    new keys appended; comments, blank lines and the order of the others kept."""
    newline = _newline(text)
    lines = text.split(newline) if text else []
    out: list[str] = []
    seen: set[str] = set()
    for line in lines:
        if not line.strip() or line.lstrip().startswith("//") or ">" not in line:
            out.append(line)
            continue
        key, value = line.split(">", 1)
        name = key.strip()
        seen.add(name)  # every line of a duplicated key follows the change: no reader sees the old value
        if name not in entries:
            continue
        out.append(line if entries[name] == value else f"{key}>{entries[name]}")
    added = [f"{key}>{value}" for key, value in entries.items() if key not in seen]
    if added:
        trailing = bool(out) and out[-1] == ""
        body = out[:-1] if trailing else out
        out = [*body, *added, *([""] if trailing else [])]
    return newline.join(out)


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
