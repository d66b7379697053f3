"""Item tables: one row per list entry (id, path, name, chosen fields), as CSV, JSON or XLSX.

``equipment`` reads ``equipment/equipment.lst``, ``stackable`` reads ``stackable/stackable.lst``,
``skill`` every ``skill/*skill.lst``; any other list is named with ``list_paths``. A field is a
section name (``grade``, ``minimum level``, ``price``…); its value is the section's first value,
with string links (``<id::key`…`>``) resolved through ``n_string.lst``. A file the list names but
the archive lacks, or that does not parse, still gets its row, with ``problem`` saying why.
"""

from __future__ import annotations

import csv
import io
import json
import re
import struct
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any
from xml.sax.saxutils import escape

from moddesk.kit.errors import ServiceError
from moddesk.pvf.archive import Archive, normalize_path
from moddesk.pvf.format.errors import PvfFormatError
from moddesk.pvf.format.lists import resolve_list_path
from moddesk.pvf.format.text import Lexeme, lex, link_parts, parse_float_bits
from moddesk.pvf.listtext import list_entries

KINDS: dict[str, tuple[list[str], list[str]]] = {
    "equipment": (["equipment/equipment.lst"], ["grade", "rarity", "minimum level", "price"]),
    "stackable": (["stackable/stackable.lst"], ["grade", "rarity", "minimum level", "price"]),
    "skill": ([], ["type", "maximum level", "required level"]),
}
FORMATS = ("csv", "json", "xlsx")


@dataclass(frozen=True)
class TableSource:
    """What a table reads: archive paths, their text, and string-link resolution."""

    paths: Callable[[], list[str]]
    text: Callable[[str], str | None]  # None: no such file, or not text
    resolve_link: Callable[[int, str], str | None]


def archive_source(archive: Archive) -> TableSource:
    """What a table reads from an archive file (scripts and text entries; binary ones are None)."""
    names = {normalize_path(p): p for p in archive.namelist()}

    def text(path: str) -> str | None:
        name = names.get(normalize_path(path))
        if name is None or archive.getinfo(name).kind == "binary":
            return None
        return archive.read_text(name)

    return TableSource(lambda: sorted(names), text, archive.resolve_link)


def list_paths_for(kind: str, paths: list[str]) -> list[str]:
    if kind not in KINDS:
        raise ServiceError(
            "INVALID_ARGUMENT", f"unknown table kind {kind!r}", hint=f"Use one of {', '.join(KINDS)}."
        )
    wanted, _ = KINDS[kind]
    if kind == "skill":
        wanted = sorted(
            p for p in paths if p.startswith("skill/") and p.endswith("skill.lst") and p.count("/") == 1
        )
    return wanted


# Backtick strings and comment lines are matched (and skipped) first, so a tag-like string such as
# `[fighter]` is never taken for a section.
_TAGS = re.compile(r"`[^`]*`|^#[^\n]*|\[(/?)([^\[\]\r\n`]+)\]", re.MULTILINE)


def first_values(text: str, wanted: set[str]) -> dict[str, Lexeme]:
    """The first value of each wanted top-level section; only those values are lexed.

    Blocks are told apart as the document model does (a name closed by ``[/name]`` somewhere in the
    file opens a block), so a section nested in a block is not taken for a top-level one.
    """
    tags = [(g[0], g[1], m.end()) for m in _TAGS.finditer(text) if (g := m.groups())[1] is not None]
    blocks = {name for slash, name, _ in tags if slash}
    stack: list[str] = []
    out: dict[str, Lexeme] = {}
    for slash, name, end in tags:
        if slash:
            if name in stack:
                del stack[len(stack) - 1 - stack[::-1].index(name) :]
            continue
        if not stack and name in wanted and name not in out:
            first = next(lex(text[end:]), None)
            if first is not None and first.kind != "section":
                out[name] = replace(first, start=first.start + end, end=first.end + end)
            if len(out) == len(wanted):
                break
        if name in blocks:
            stack.append(name)
    return out


def _plain(lx: Lexeme | None, text: str, resolve_link: Callable[[int, str], str | None]) -> Any:
    if lx is None:
        return None
    if lx.kind == "link":
        link_id, key, display = link_parts(lx)
        return resolve_link(link_id, key) or display or f"<{link_id}::{key}>"
    if lx.kind == "int":
        return lx.value
    if lx.kind == "float":
        bits = parse_float_bits(str(lx.value))
        return round(struct.unpack("<f", struct.pack("<I", bits))[0], 6)
    if lx.kind == "string":
        return lx.value
    return text[lx.start : lx.end]


def rows(source: TableSource, list_path_names: list[str], fields: list[str]) -> Iterator[dict[str, Any]]:
    """One row per list entry, in list order."""
    for list_path in list_path_names:
        text = source.text(list_path)
        if text is None:
            raise ServiceError(
                "NOT_FOUND", f"the archive has no {list_path}", hint="Name the list with --list PATH."
            )
        root_relative = list_path.startswith("list/")
        for ident, target in list_entries(text).items():
            path = resolve_list_path(list_path, target, root_relative=root_relative).lower()
            row: dict[str, Any] = {"list": list_path, "id": ident, "path": path, "name": None}
            row.update(dict.fromkeys(fields))
            row["problem"] = None
            body = source.text(path)
            if body is None:
                row["problem"] = "missing"
                yield row
                continue
            try:
                found = first_values(body, {"name", *fields})
                row["name"] = _plain(found.get("name"), body, source.resolve_link)
                for name in fields:
                    row[name] = _plain(found.get(name), body, source.resolve_link)
            except PvfFormatError as exc:
                row["problem"] = f"unparsable: {exc.message}"
            yield row


def to_csv(table: list[dict[str, Any]]) -> bytes:
    out = io.StringIO()
    if table:
        writer = csv.DictWriter(out, fieldnames=list(table[0]))
        writer.writeheader()
        writer.writerows(table)
    return ("\ufeff" + out.getvalue()).encode("utf-8")  # the BOM makes Excel read UTF-8


def to_json(table: list[dict[str, Any]]) -> bytes:
    return (json.dumps(table, ensure_ascii=False, indent=1) + "\n").encode("utf-8")


def _column(n: int) -> str:
    name = ""
    n += 1
    while n:
        n, r = divmod(n - 1, 26)
        name = chr(65 + r) + name
    return name


def _cell(ref: str, value: Any) -> str:
    if value is None:
        return f'<c r="{ref}"/>'
    if isinstance(value, bool) or not isinstance(value, int | float):
        text = escape("".join(c for c in str(value) if c in "\t\n" or c >= " "))
        return f'<c r="{ref}" t="inlineStr"><is><t xml:space="preserve">{text}</t></is></c>'
    return f'<c r="{ref}"><v>{value}</v></c>'


def to_xlsx(table: list[dict[str, Any]]) -> bytes:
    """A one-sheet workbook (Office Open XML, inline strings) readable by Excel and LibreOffice."""
    header = list(table[0]) if table else []
    lines = [header, *([row[h] for h in header] for row in table)]
    sheet_rows = []
    for r, values in enumerate(lines, start=1):
        cells = "".join(_cell(f"{_column(c)}{r}", v) for c, v in enumerate(values))
        sheet_rows.append(f'<row r="{r}">{cells}</row>')
    main = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
    rel = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
    pkg = "http://schemas.openxmlformats.org/package/2006/relationships"
    files = {
        "[Content_Types].xml": (
            '<?xml version="1.0" encoding="UTF-8"?>'
            '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
            '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
            '<Default Extension="xml" ContentType="application/xml"/>'
            '<Override PartName="/xl/workbook.xml" '
            'ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>'
            '<Override PartName="/xl/worksheets/sheet1.xml" '
            'ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/>'
            "</Types>"
        ),
        "_rels/.rels": (
            f'<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="{pkg}">'
            f'<Relationship Id="rId1" Type="{rel}/officeDocument" Target="xl/workbook.xml"/></Relationships>'
        ),
        "xl/workbook.xml": (
            f'<?xml version="1.0" encoding="UTF-8"?><workbook xmlns="{main}" xmlns:r="{rel}">'
            '<sheets><sheet name="items" sheetId="1" r:id="rId1"/></sheets></workbook>'
        ),
        "xl/_rels/workbook.xml.rels": (
            f'<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="{pkg}">'
            f'<Relationship Id="rId1" Type="{rel}/worksheet" Target="worksheets/sheet1.xml"/></Relationships>'
        ),
        "xl/worksheets/sheet1.xml": (
            f'<?xml version="1.0" encoding="UTF-8"?><worksheet xmlns="{main}">'
            f"<sheetData>{''.join(sheet_rows)}</sheetData></worksheet>"
        ),
    }
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return out.getvalue()


def render(table: list[dict[str, Any]], fmt: str) -> bytes:
    if fmt not in FORMATS:
        raise ServiceError("INVALID_ARGUMENT", f"unknown format {fmt!r}", hint="Use csv, json or xlsx.")
    return {"csv": to_csv, "json": to_json, "xlsx": to_xlsx}[fmt](table)
