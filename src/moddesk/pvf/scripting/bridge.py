"""Script documents on the worker side: JS holds handles, ``moddesk.pvf.document`` does the work.

The JS classes in prelude.js are thin proxies; every read and edit of a section runs here on the
one document model the rest of moddesk uses, so scripts, annotations and the CLI agree on what
a file means.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from importlib import resources
from typing import Any

from moddesk.pvf.docparse import build_document
from moddesk.pvf.document import Document, Section, Value
from moddesk.pvf.format.errors import PvfFormatError
from moddesk.pvf.format.text import native_pvf
from moddesk.pvf.format.tokens import Family
from moddesk.pvf.listtext import edit_list, list_entries

ValueIn = int | float | str


class DocumentError(Exception):
    """A refused document operation; its message reaches the script as a JS Error."""


def native_ready() -> None:
    """Load the native core the document parser uses (when it is built), before the first parse."""
    native_pvf()


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


#: Unedited documents kept parsed; older ones are dropped and parsed again if a script comes back
#: to them (a script over 10^6 files would otherwise hold every parsed file until it ends).
KEEP_PARSED = 256


class _Open:
    """A parsed document and what it takes to parse it again: its text when that is not the
    snapshot's (an edited file), and once edited, the handles of its sections."""

    __slots__ = ("doc", "edited", "ids", "keys", "path", "text")

    def __init__(self, path: str, doc: Document, text: str | None) -> None:
        self.path = path
        self.doc = doc
        self.text = text
        self.edited = False
        self.keys: dict[str, Section] = {}  # section handle -> section (edited documents)
        self.ids: dict[int, str] = {}  # id(section) -> its handle (edited documents)


def _index_path(doc: Document, section: Section) -> list[int]:
    """Positions of ``section`` and its parents in their bodies, from the top."""
    out: list[int] = []
    node: Section | None = section
    while node is not None:
        body = node.parent.body if node.parent is not None else doc.body
        out.append(next(i for i, item in enumerate(body) if item is node))
        node = node.parent
    return out[::-1]


class Documents:
    """Open documents and their sections, addressed by handles from JS.

    A section of an unedited document is named by its position (``"<doc>:<i>.<j>"``), so a
    document can be dropped and parsed again without breaking the handles JS holds; the first
    edit pins every section of it to its handle (positions move when sections are added or
    removed), and edited documents are never dropped.
    """

    def __init__(self, family: Family = Family.CLASSIC, reload: Callable[[str], str] | None = None) -> None:
        self.family = family
        self._reload = reload
        self._open: dict[int, _Open] = {}
        self._unedited: OrderedDict[int, None] = OrderedDict()  # parsed and unedited, least recent first
        self._dropped: dict[int, str | tuple[str, str]] = {}  # path, or (path, text) when not the snapshot's
        self._next = 1

    def _parse(self, path: str, text: str) -> Document:
        try:
            return build_document(text, self.family)
        except PvfFormatError as exc:
            raise DocumentError(f"{path}: {exc}") from exc

    def open(self, path: str, text: str, from_snapshot: bool = False) -> int:
        """A handle on the document of ``text``; ``from_snapshot``: it is the snapshot's text of ``path``."""
        doc = self._parse(path, text)
        handle = self._next
        self._next += 1
        self._open[handle] = _Open(path, doc, None if from_snapshot and self._reload else text)
        self._unedited[handle] = None
        self._drop_old()
        return handle

    def _drop_old(self) -> None:
        while len(self._unedited) > KEEP_PARSED:
            handle, _ = self._unedited.popitem(last=False)
            entry = self._open.pop(handle)
            self._dropped[handle] = entry.path if entry.text is None else (entry.path, entry.text)

    def _entry(self, handle: int) -> _Open:
        entry = self._open.get(handle)
        if entry is not None:
            if not entry.edited:
                self._unedited.move_to_end(handle)
            return entry
        dropped = self._dropped.pop(handle, None) if isinstance(handle, int) else None
        if dropped is None:
            raise DocumentError("this document is no longer available")
        path, text = (dropped, None) if isinstance(dropped, str) else dropped
        if text is None:
            assert self._reload is not None
            source = self._reload(path)
        else:
            source = text
        entry = _Open(path, self._parse(path, source), text)
        self._open[handle] = entry
        self._unedited[handle] = None
        self._drop_old()
        return entry

    def doc(self, handle: int) -> Document:
        return self._entry(handle).doc

    def _edit(self, handle: int) -> Document:
        """The document, about to be edited: its section handles are pinned and it stays parsed."""
        entry = self._entry(handle)
        if not entry.edited:
            for section in entry.doc.walk():
                key = self._key(handle, entry, section)
                entry.keys[key] = section
                entry.ids[id(section)] = key
            entry.edited = True
            del self._unedited[handle]
        return entry.doc

    def _key(self, doc_handle: int, entry: _Open, section: Section) -> str:
        if entry.edited:
            key = entry.ids.get(id(section))
            if key is None:
                key = f"{doc_handle}#{len(entry.keys)}"
                entry.keys[key] = section
                entry.ids[id(section)] = key
            return key
        return f"{doc_handle}:{'.'.join(map(str, _index_path(entry.doc, section)))}"

    @staticmethod
    def _doc_of(handle: str) -> int:
        head = str(handle).replace("#", ":").split(":", 1)[0]
        if not head.isdigit():
            raise DocumentError("this section is no longer available")
        return int(head)

    def section(self, handle: str) -> Section:
        handle = str(handle)
        entry = self._entry(self._doc_of(handle))
        if entry.edited:
            found = entry.keys.get(handle)
            if found is None:
                raise DocumentError("this section is no longer available")
            return found
        node: Section | None = None
        body: list[Any] = entry.doc.body
        for part in handle.split(":", 1)[1].split("."):
            item = body[int(part)] if part.isdigit() and int(part) < len(body) else None
            if not isinstance(item, Section):
                raise DocumentError("this section is no longer available")
            node, body = item, item.body
        assert node is not None
        return node

    def _describe(self, doc_handle: int, section: Section) -> list[Any]:
        entry = self._entry(doc_handle)
        occurrence = next((i for i, s in enumerate(entry.doc.find_all(section.path)) if s is section), 0)
        key = self._key(doc_handle, entry, section)
        return [key, section.name, section.path, occurrence, section.has_end_tag]

    # ------------------------------------------------------------------ document ops
    def sections(self, doc_handle: int, path: str) -> list[list[Any]]:
        return [self._describe(doc_handle, s) for s in self.doc(doc_handle).find_all(path)]

    def get(self, doc_handle: int, path: str, occurrence: int, index: int) -> dict[str, Any] | None:
        """The value at ``index`` of the ``occurrence``-th section at ``path`` (both ≥ 0), or None."""
        found = self.doc(doc_handle).find_all(path)
        values = found[occurrence].values() if occurrence < len(found) else []
        return value_json(values[index]) if index < len(values) else None

    def warnings(self, doc_handle: int) -> list[dict[str, Any]]:
        return [{"code": w.code, "line": w.line, "message": w.message} for w in self.doc(doc_handle).warnings]

    def append_section(self, doc_handle: int, name: str, values: list[ValueIn], end_tag: bool) -> list[Any]:
        section = self._edit(doc_handle).append_section(
            name, [coerce(v, None) for v in values], end_tag=end_tag
        )
        return self._describe(doc_handle, section)

    def delete_sections(self, doc_handle: int, path: str, occurrence: int | None) -> int:
        return self._edit(doc_handle).delete(path, occurrence)

    def render(self, doc_handle: int) -> str:
        return self.doc(doc_handle).render()

    # ------------------------------------------------------------------ section ops
    def _edit_section(self, handle: str) -> Section:
        self._edit(self._doc_of(handle))
        return self.section(handle)

    def values(self, handle: str) -> list[dict[str, Any]]:
        return [value_json(v) for v in self.section(handle).values()]

    def children(self, handle: str, name: str | None) -> list[list[Any]]:
        doc = self._doc_of(handle)
        return [self._describe(doc, s) for s in self.section(handle).children(name)]

    def remove_children(self, handle: str, name: str) -> int:
        return self._edit_section(handle).remove_children(name)

    def set_value(self, handle: str, value: ValueIn, index: int, as_string: bool) -> None:
        section = self._edit_section(handle)
        count = len(section.values())
        if not 0 <= index <= count:
            raise DocumentError(f"[{section.name}] has {count} values; index {index} is out of range")
        section.set(coerce(value, section.get(index) if index < count else None, as_string), index)

    def set_values(self, handle: str, values: list[ValueIn]) -> None:
        self._edit_section(handle).set_values([coerce(v, None) for v in values])

    def append(self, handle: str, value: ValueIn) -> None:
        self._edit_section(handle).append(coerce(value, None))

    def append_child(self, handle: str, name: str, values: list[ValueIn], end_tag: bool) -> list[Any]:
        child = self._edit_section(handle).append_section(
            name, [coerce(v, None) for v in values], end_tag=end_tag
        )
        return self._describe(self._doc_of(handle), child)

    def delete_section(self, handle: str) -> None:
        doc_handle = self._doc_of(handle)
        doc = self._edit(doc_handle)
        section = self.section(handle)
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
