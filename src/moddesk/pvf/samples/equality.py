"""Digests that prove a faster path gives the results of an earlier one: parsed documents, plans.

``structure(doc)`` lists every field of the model — header and tail text, warnings, and for each
section and value line its name, occurrence, end tag, spans, the source text kept around it, and
each value's kind, Python value, type, source text and span — as plain JSON data. ``Digest``
folds many of them (with their paths) into one SHA-256, which tests and benchmarks compare with
a digest captured from an earlier implementation. ``archive_documents`` digests the parse of
every script entry of an archive; ``plan_digest`` a script run's plan (paths, kinds, new and old
text); ``EVERY_EQU_SCRIPT`` is the workload both the tests and ``benchmarks/pvf_scale.py`` run.
"""

from __future__ import annotations

import hashlib
import json
import struct
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from moddesk.pvf.docparse import build_document
from moddesk.pvf.document import Document, Line, Section, Value
from moddesk.pvf.format.errors import PvfFormatError

if TYPE_CHECKING:
    from moddesk.pvf.archive import Archive
    from moddesk.pvf.scripting.plan import PlannedChange

#: Reads every .equ, raises the prices under 1000 by one (about 1% of generated items).
EVERY_EQU_SCRIPT = """let touched = 0, changed = 0;
for (const file of pvf.glob("**/*.equ")) {
  const doc = file.parse();
  touched++;
  const price = doc.getValue("price");
  if (typeof price === "number" && price < 1000) { doc.set("price", price + 1); file.write(doc); changed++; }
}
pvf.log(touched, changed);"""

__all__ = ["EVERY_EQU_SCRIPT", "Digest", "archive_documents", "plan_digest", "structure"]


def _plain(v: object) -> object:
    """Floats as their float32 bits (exact), tuples as lists."""
    if isinstance(v, float):
        return {"f": struct.unpack("<I", struct.pack("<f", v))[0] if abs(v) < 3.5e38 else repr(v)}
    if isinstance(v, tuple):
        return [_plain(x) for x in v]
    return v


def _value(v: Value) -> list[Any]:
    return [v.kind, _plain(v.value), v.type, v.raw, v.source, v.lead, v.line, v.col, v.start, v.end]


def _line(line: Line) -> dict[str, Any]:
    return {"before": getattr(line, "before", None), "values": [_value(v) for v in line]}


def _section(s: Section) -> dict[str, Any]:
    return {
        "name": s.name,
        "path": s.path,
        "occurrence": s.occurrence,
        "end_tag": s.has_end_tag,
        "span": [s.line, s.col, s.start, s.end],
        "before": s.before,
        "end_before": s.end_before,
        "body": [_section(i) if isinstance(i, Section) else _line(i) for i in s.body],
    }


def structure(doc: Document) -> dict[str, Any]:
    """Every field of ``doc`` as JSON-ready data (the body in source order)."""
    return {
        "head": doc.head,
        "tail": doc.tail,
        "warnings": [[w.code, w.message, w.line, w.col, w.section] for w in doc.warnings],
        "body": [_section(i) if isinstance(i, Section) else _line(i) for i in doc.body],
    }


class Digest:
    """A running SHA-256 over (path, structure, render) of many documents, in the order given."""

    def __init__(self) -> None:
        self._sha = hashlib.sha256()
        self.count = 0

    def add(self, path: str, doc: Document) -> None:
        blob = json.dumps([path, structure(doc), doc.render()], ensure_ascii=False, sort_keys=True)
        self._sha.update(blob.encode("utf-8", "surrogatepass") + b"\n")
        self.count += 1

    def add_error(self, path: str, code: str) -> None:
        """A file that does not parse counts too: the error code is part of the result."""
        self._sha.update(json.dumps([path, "error", code]).encode() + b"\n")
        self.count += 1

    def hexdigest(self) -> str:
        return self._sha.hexdigest()


def archive_documents(archive: Archive) -> Digest:
    """The parse of every script entry of ``archive`` (in name order) as one digest."""
    digest = Digest()
    for path in sorted(archive.namelist()):
        if not archive.is_script(path):
            continue
        try:
            text = archive.read_text(path)
            digest.add(path, build_document(text, archive.family))
        except PvfFormatError as exc:
            digest.add_error(path, exc.code)
    return digest


def _sha(text: str | None) -> str | None:
    return None if text is None else hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def plan_digest(changes: Iterable[PlannedChange]) -> tuple[str, int]:
    """(SHA-256, count) of a plan: every change's key, path, kind, type, texts, dependencies, warnings."""
    sha = hashlib.sha256()
    count = 0
    for c in changes:
        row = [c.key, c.path, c.kind, c.file_type, _sha(c.text), c.copy_from, _sha(c.old_text)]
        sha.update(json.dumps([*row, c.depends_on, c.warnings]).encode() + b"\n")
        count += 1
    return sha.hexdigest(), count
