"""Script documents on the worker side: JS holds handles, ``moddesk.pvf.document`` does the work.

The JS classes in prelude.js are thin proxies; every read and edit of a section runs here on the
one document model the rest of moddesk uses, so scripts, annotations and the CLI agree on what
a file means.
"""

from __future__ import annotations

from importlib import resources
from typing import Any

from moddesk.pvf.document import Document, Section, Value
from moddesk.pvf.format.errors import PvfFormatError
from moddesk.pvf.format.tokens import Family
from moddesk.pvf.listtext import edit_list, list_entries

ValueIn = int | float | str


class DocumentError(Exception):
    """A refused document operation; its message reaches the script as a JS Error."""


def prelude_source() -> str:
    """The JS runtime that implements api.d.ts."""
    return resources.files("moddesk.pvf.scripting").joinpath("prelude.js").read_text(encoding="utf-8")


def value_json(value: Value) -> dict[str, Any]:
    """A PVFValue for JS: type, plain value, and the string-table key of a link."""
    if value.kind == "link" and isinstance(value.value, tuple):
        link_id, key, display = value.value
        return {"type": "link", "value": display if display is not None else "", "key": f"{link_id}::{key}"}
    out: dict[str, Any] = {"type": value.kind, "value": value.value}
    if value.kind in ("command", "separator", "intex", "escape") and value.type is not None:
        out["escape"] = value.type
    return out


def coerce(value: ValueIn, previous: Value | None, as_string: bool = False) -> Value:
    """The value to store: a string token for text, numbers keep the numeric type they replace."""
    if isinstance(value, bool):
        raise DocumentError("booleans are not PVF values; use 0 or 1")
    if as_string or isinstance(value, str):
        return Value("string", str(value))
    if previous is not None and previous.kind == "float":
        return Value("float", float(value))
    if previous is not None and previous.kind == "integer":
        if isinstance(value, float) and not value.is_integer():
            raise DocumentError(f"this value is an integer; {value} is not (round it first)")
        return Value("integer", int(value))
    if isinstance(value, float) and not value.is_integer():
        return Value("float", value)
    return Value("integer", int(value))


class Documents:
    """Open documents and their sections, addressed by integer handles from JS."""

    def __init__(self, family: Family = Family.CLASSIC) -> None:
        self.family = family
        self._docs: dict[int, tuple[str, Document]] = {}
        self._sections: dict[int, tuple[int, Section]] = {}
        self._ids: dict[int, int] = {}  # id(section) -> handle
        self._next = 1

    def open(self, path: str, text: str) -> int:
        try:
            doc = Document.parse(text, self.family)
        except PvfFormatError as exc:
            raise DocumentError(f"{path}: {exc}") from exc
        handle = self._next
        self._next += 1
        self._docs[handle] = (path, doc)
        return handle

    def doc(self, handle: int) -> Document:
        entry = self._docs.get(handle)
        if entry is None:
            raise DocumentError("this document is no longer available")
        return entry[1]

    def section(self, handle: int) -> Section:
        entry = self._sections.get(handle)
        if entry is None:
            raise DocumentError("this section is no longer available")
        return entry[1]

    def _describe(self, doc_handle: int, section: Section) -> list[Any]:
        handle = self._ids.get(id(section))
        if handle is None:
            handle = self._next
            self._next += 1
            self._ids[id(section)] = handle
            self._sections[handle] = (doc_handle, section)
        doc = self.doc(doc_handle)
        occurrence = next((i for i, s in enumerate(doc.find_all(section.path)) if s is section), 0)
        return [handle, section.name, section.path, occurrence, section.has_end_tag]

    def _doc_of(self, section_handle: int) -> int:
        return self._sections[section_handle][0]

    # ------------------------------------------------------------------ document ops
    def sections(self, doc_handle: int, path: str) -> list[list[Any]]:
        return [self._describe(doc_handle, s) for s in self.doc(doc_handle).find_all(path)]

    def warnings(self, doc_handle: int) -> list[dict[str, Any]]:
        return [{"code": w.code, "line": w.line, "message": w.message} for w in self.doc(doc_handle).warnings]

    def append_section(self, doc_handle: int, name: str, values: list[ValueIn], end_tag: bool) -> list[Any]:
        section = self.doc(doc_handle).append_section(
            name, [coerce(v, None) for v in values], end_tag=end_tag
        )
        return self._describe(doc_handle, section)

    def delete_sections(self, doc_handle: int, path: str, occurrence: int | None) -> int:
        return self.doc(doc_handle).delete(path, occurrence)

    def render(self, doc_handle: int) -> str:
        return self.doc(doc_handle).render()

    # ------------------------------------------------------------------ section ops
    def values(self, handle: int) -> list[dict[str, Any]]:
        return [value_json(v) for v in self.section(handle).values()]

    def children(self, handle: int, name: str | None) -> list[list[Any]]:
        doc = self._doc_of(handle)
        return [self._describe(doc, s) for s in self.section(handle).children(name)]

    def remove_children(self, handle: int, name: str) -> int:
        return self.section(handle).remove_children(name)

    def set_value(self, handle: int, value: ValueIn, index: int, as_string: bool) -> None:
        section = self.section(handle)
        count = len(section.values())
        if not 0 <= index <= count:
            raise DocumentError(f"[{section.name}] has {count} values; index {index} is out of range")
        section.set(coerce(value, section.get(index) if index < count else None, as_string), index)

    def set_values(self, handle: int, values: list[ValueIn]) -> None:
        self.section(handle).set_values([coerce(v, None) for v in values])

    def append(self, handle: int, value: ValueIn) -> None:
        self.section(handle).append(coerce(value, None))

    def append_child(self, handle: int, name: str, values: list[ValueIn], end_tag: bool) -> list[Any]:
        child = self.section(handle).append_section(name, [coerce(v, None) for v in values], end_tag=end_tag)
        return self._describe(self._doc_of(handle), child)

    def delete_section(self, handle: int) -> None:
        doc_handle, section = self._sections[handle]
        doc = self.doc(doc_handle)
        body = section.parent.body if section.parent is not None else doc.body
        if section in body:
            body.remove(section)
            seen: dict[str, int] = {}
            for item in body:
                if isinstance(item, Section):
                    item.occurrence = seen.get(item.name, 0)
                    seen[item.name] = item.occurrence + 1


def list_pairs(text: str) -> list[list[Any]]:
    """The (id, path) entries of a ``.lst`` file's text."""
    return [[ident, path] for ident, path in list_entries(text).items()]


def render_list_pairs(text: str | None, pairs: list[list[Any]]) -> str:
    """``text`` changed to hold the (id, path) entries, touching only the lines that change."""
    return edit_list(text or "", {int(i): str(p) for i, p in pairs})
