"""Entries of list files (``.lst``) and string tables (``.str``) in their text forms.

A ``.lst`` script is a run of (integer id, string path) values; how the text lays them out
(one pair a line, or each value on its own line) does not matter. A ``.str`` file holds
``key>value`` lines, ``//`` comments and blank lines.
"""

from __future__ import annotations

import bisect
import posixpath
import re

from moddesk.pvf.docparse import build_document
from moddesk.pvf.document import Document, Value
from moddesk.pvf.format.errors import PvfFormatError
from moddesk.pvf.format.text import quote

#: One list value: an integer or a backtick string (doubled backticks inside), or a comment line.
_LIST_TOKEN = re.compile(r"[ \t\r\n]*(?:([+-]?\d+)(?=[ \t\r\n]|\Z)|`((?:[^`]|``)*)`|(#[^\n]*))")

ListValue = tuple[str, object, int, int]  # kind ("int" | "string" | other), value, start, end


def _fast_values(text: str) -> list[ListValue] | None:
    """The values of a text made only of integers, strings and comment lines (every real list);
    None for anything else, which the full lexer then reads."""
    out: list[ListValue] = []
    pos, size = 0, len(text)
    while pos < size:
        m = _LIST_TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            return out if not text[pos:].strip() else None
        if m.group(1) is not None:
            out.append(("int", int(m.group(1)), m.start(1), m.end(1)))
        elif m.group(2) is not None:
            out.append(("string", m.group(2).replace("``", "`"), m.start(2) - 1, m.end(2) + 1))
        else:
            line_start = text.rfind("\n", 0, m.start(3)) + 1
            if text[line_start : m.start(3)].strip(" \t"):
                return None  # a '#' that is not at the start of its line is not a comment
        pos = m.end()
    return out


def list_values(text: str) -> list[ListValue]:
    """The values before the first section, with their spans (empty when the text does not parse)."""
    fast = _fast_values(text)
    if fast is not None:
        return fast
    try:
        values = build_document(text).preamble
    except PvfFormatError:
        return []
    kinds = {"integer": "int", "string": "string"}
    return [(kinds.get(v.kind, v.kind), v.value, v.start, v.end) for v in values]


def list_entries(text: str | None) -> dict[int, str]:
    """id → path of a ``.lst`` text (a text that does not parse has no entries)."""
    if not text:
        return {}
    values = list_values(text)
    out: dict[int, str] = {}
    for i in range(0, len(values) - 1, 2):
        (kind_a, ident, _, _), (kind_b, path, _, _) = values[i], values[i + 1]
        if kind_a == "int" and kind_b == "string":
            out[int(ident)] = str(path)  # type: ignore[call-overload]
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
    values = list_values(text) if text else []
    pairs: dict[int, tuple[ListValue, ListValue]] = {}
    for i in range(0, len(values) - 1, 2):
        id_value, path_value = values[i], values[i + 1]
        if id_value[0] == "int" and path_value[0] == "string" and path_value[2] >= 0:
            pairs[int(id_value[1])] = (id_value, path_value)  # type: ignore[call-overload]
    if not pairs:
        return render_list(entries) if entries or not text else text
    newline = _newline(text)
    any_pair = next(iter(pairs.values()))
    between = text[any_pair[0][3] : any_pair[1][2]]  # "\t" or a line break and indentation
    edits: list[tuple[int, int, str]] = []  # (start, end, replacement), applied in one pass
    for ident, (id_value, path_value) in pairs.items():
        if ident not in entries:
            start, end = _line_span(text, id_value[2], path_value[3])
            edits.append((start, end, ""))
        elif entries[ident] != path_value[1]:
            edits.append((path_value[2], path_value[3], quote(entries[ident])))
    # new entries go after the next lower entry that stays (never inside a line being removed)
    kept = sorted(k for k in pairs if k in entries)
    top = min(pairs.values(), key=lambda pair: pair[0][2])[0]  # the first entry in the text
    for ident in sorted(set(entries) - set(pairs)):
        below = bisect.bisect_left(kept, ident)
        record = f"{ident}{between}{quote(entries[ident])}"
        if below:
            at = pairs[kept[below - 1]][1][3]
            edits.append((at, at, newline + record))
        else:
            first = pairs[kept[0]][0] if kept else top
            at = _line_span(text, first[2], first[3])[0]
            edits.append((at, at, record + newline))
    pieces: list[str] = []
    pos = 0
    for start, end, replacement in sorted(edits, key=lambda e: (e[0], e[1])):  # one pass, no re-copying
        pieces += (text[pos:start], replacement)
        pos = end
    pieces.append(text[pos:])
    return "".join(pieces)


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
