"""A parsed script document: sections (with occurrence numbers and nesting), typed values, end tags.

    doc = build_document(text)                  # moddesk.pvf.docparse builds the model
    doc.get("grade")                          # Value(kind="integer", value=74, …)
    doc.set("price", 500)                     # first [price], first value
    doc.section("dungeon/level info").values()
    doc.append_section("usable job", ["[all]"], end_tag=True)
    text = doc.render()

Paths are section names joined by ``/`` (brackets optional): ``"dungeon/level info"``. A section
is a *block* (has children and an end tag) when its ``[/name]`` closes it; other sections end at
the next tag. Occurrences count same-named siblings from 0. Values keep their line grouping, so
``render()`` reproduces the source layout except blank lines inside sections, comments and
trailing tabs. Parse warnings (never errors):

* ``orphan-close``: ``[/x]`` with no open ``[x]``;
* ``mismatched-close``: ``[/x]`` closes ``[x]`` while an inner block (a name closed elsewhere in the
  file) is still open — the inner one is closed implicitly;
* ``missing-close``: a section whose name is closed elsewhere in the file is never closed.

Text that cannot be lexed at all (an unterminated string, an unknown token) raises
``PvfFormatError("BAD_TEXT")``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from moddesk.pvf.format.text import (
    HEADER,
    NUMBERING_CLASSIC,
    NUMBERING_LEGACY,
    NUMBERING_NKPI,
    format_float,
    parse_float_bits,
    quote,
)

__all__ = ["Document", "ParseWarning", "Section", "Value", "ValueKind"]

ValueKind = Literal["integer", "float", "string", "command", "separator", "intex", "link", "escape"]

#: Escape type numbers with their own value kind, per escape numbering (classic, NKPI, legacy view).
_ESCAPE_KINDS: dict[int, ValueKind] = {6: "command", 8: "separator", 3: "intex"}
_ESCAPE_KINDS_BY_NUMBERING: dict[str, dict[int, ValueKind]] = {
    NUMBERING_CLASSIC: _ESCAPE_KINDS,
    NUMBERING_LEGACY: _ESCAPE_KINDS,
    NUMBERING_NKPI: {5: "command", 7: "separator", 1: "intex"},
}


@dataclass(eq=False, slots=True)
class Value:
    """A typed value: ``integer``/``float``/``string``, ``command`` ({6=`…`}), ``separator`` ({8=`…`}),
    ``intex`` ({3=n}), ``link`` (<id::key`…`>, value = (id, key, display)) or another ``escape``
    (value = payload, ``type`` = its number, ``raw`` = an NKPI raw ``{#N=…}``)."""

    kind: ValueKind
    value: int | float | str | tuple[int, str, str | None]
    type: int | None = None
    raw: bool = False
    source: str | None = None  # text as written in the source, reused when rendering unchanged values
    lead: str | None = None  # whitespace before it in the source when it is not first on its line
    line: int = 0
    col: int = 0
    start: int = -1
    end: int = -1

    @classmethod
    def of(cls, v: int | float | str | Value) -> Value:
        """A value from a Python int (integer), float, or str (backquoted string)."""
        if isinstance(v, Value):
            return v
        if isinstance(v, bool):
            raise TypeError("booleans are not PVF values")
        if isinstance(v, int):
            return cls("integer", v)
        if isinstance(v, float):
            return cls("float", v)
        if isinstance(v, str):
            return cls("string", v)
        raise TypeError(f"cannot store {type(v).__name__} in a PVF value")

    @classmethod
    def command(cls, text: str) -> Value:
        """A ``{6=`text`}`` command value."""
        return cls("command", text, type=6)

    @classmethod
    def separator(cls, text: str) -> Value:
        """A ``{8=`text`}`` separator value."""
        return cls("separator", text, type=8)

    def render(self) -> str:
        """The value's text."""
        if self.source is not None:
            return self.source
        v = self.value
        if self.kind == "integer":
            return str(v)
        if self.kind == "float":
            assert isinstance(v, float)
            bits = parse_float_bits(repr(v))
            text = format_float(bits)
            return text if text is not None else f"{{4={bits - (1 << 32) if bits & 0x80000000 else bits}}}"
        if self.kind == "string":
            assert isinstance(v, str)
            return quote(v)
        if self.kind == "link":
            assert isinstance(v, tuple)
            link_id, key, display = v
            return f"<{link_id}::{key}{quote(display or '')}>"
        number = f"#{self.type}" if self.raw else str(self.type)
        payload = quote(v) if isinstance(v, str) else str(v)
        return f"{{{number}={payload}}}"

    def __repr__(self) -> str:
        return f"Value({self.kind}, {self.value!r})"


@dataclass(frozen=True)
class ParseWarning:
    """A structural problem found while parsing (the document is still usable)."""

    code: Literal["orphan-close", "missing-close", "mismatched-close"]
    message: str
    line: int
    col: int
    section: str | None = None


class ValueLine(list[Value]):
    """A line of values; ``before`` keeps the source text before it (line break, indentation, comments)."""

    before: str | None = None


Line = list[Value]


@dataclass(eq=False, slots=True)
class Section:
    """A ``[name]`` section: its value lines and (for blocks) child sections, in source order."""

    name: str
    parent: Section | None = None
    occurrence: int = 0
    has_end_tag: bool = False
    body: list[Line | Section] = field(default_factory=list)
    line: int = 0
    col: int = 0
    start: int = -1
    end: int = -1  # end of the section's last token (its end tag when it has one)
    before: str | None = None  # source text before the tag (blank lines, indentation, comments)
    end_before: str | None = None  # source text before the end tag

    @property
    def tag(self) -> str:
        """The opening tag ``[name]``."""
        return f"[{self.name}]"

    @property
    def path(self) -> str:
        """Names from the top level down, joined by ``/``."""
        return self.name if self.parent is None else f"{self.parent.path}/{self.name}"

    def values(self) -> list[Value]:
        """All direct values, in order."""
        return [v for item in self.body if isinstance(item, list) for v in item]

    def lines(self) -> list[Line]:
        """The direct value lines as laid out."""
        return [item for item in self.body if isinstance(item, list)]

    def children(self, name: str | None = None) -> list[Section]:
        """Direct child sections (only those called ``name`` when given)."""
        key = _name(name) if name is not None else None
        return [s for s in self.body if isinstance(s, Section) and (key is None or s.name == key)]

    def get(self, index: int = 0) -> Value | None:
        """The value at ``index`` (None when there is none)."""
        vals = self.values()
        return vals[index] if -len(vals) <= index < len(vals) else None

    def get_value(self, index: int = 0) -> int | float | str | tuple[int, str, str | None] | None:
        """The Python value at ``index``."""
        v = self.get(index)
        return v.value if v is not None else None

    def set(self, value: int | float | str | Value, index: int = 0) -> None:
        """Replace the value at ``index``; ``index == len(values)`` appends. Numbers keep a float's type."""
        new = Value.of(value)
        count = 0
        for item in self.body:
            if isinstance(item, list):
                for j, old in enumerate(item):
                    if count == index:
                        if old.kind == "float" and new.kind == "integer":
                            new = Value("float", float(new.value))  # type: ignore[arg-type]
                        elif new is value and new.lead is None:
                            new = Value(new.kind, new.value, new.type, new.raw)
                        new.lead = old.lead
                        item[j] = new
                        return
                    count += 1
        if index == count:
            self.append(new)
            return
        raise IndexError(f"[{self.name}] has {count} values; cannot set index {index}")

    def set_values(self, values: Sequence[int | float | str | Value]) -> None:
        """Replace all direct values with ``values`` on one line (child sections stay)."""
        self.body = [item for item in self.body if isinstance(item, Section)]
        if values:
            self.body.insert(0, [Value.of(v) for v in values])

    def append(self, value: int | float | str | Value) -> None:
        """Append a value to the last value line (a string starts a new line, as the renderer does)."""
        v = Value.of(value)
        last = self.body[-1] if self.body else None
        if isinstance(last, list) and last and v.kind not in ("string", "command", "separator", "link"):
            last.append(v)
        else:
            self.body.append([v])

    def append_section(
        self, name: str, values: Sequence[int | float | str | Value] | None = None, *, end_tag: bool = False
    ) -> Section:
        """Add a child section (this section becomes a block with an end tag)."""
        child = _new_section(self, name, values, end_tag, self.children(_name(name)))
        self.has_end_tag = True
        self.body.append(child)
        return child

    def remove_children(self, name: str) -> int:
        """Remove child sections called ``name``; returns how many."""
        key = _name(name)
        before = len(self.body)
        self.body = [s for s in self.body if not (isinstance(s, Section) and s.name == key)]
        _renumber(self.body)
        return before - len(self.body)

    def walk(self) -> Iterator[Section]:
        """This section and all its descendants, depth first."""
        yield self
        for child in self.children():
            yield from child.walk()

    def __repr__(self) -> str:
        return f"Section({self.path!r}, occurrence={self.occurrence}, values={len(self.values())})"


#: The storage of ``Section.body`` (a slot), which ``LazySection`` fills on first use.
_SECTION_BODY: Any = Section.__dict__["body"]


class LazySection(Section):
    """A section whose body and fields the native core makes when they are first asked for.

    ``_pending`` is (the native document, this section's index there) until the body is made;
    every read or write of ``body`` goes through the property, so nothing can see the section
    half made. ``_source`` is the same pair, for the fields the native core leaves unset at first
    (``_DEFERRED``: everything but ``name`` and ``parent``, which it sets): each one's property
    reads the slot, or on a first read the native document's value into it; a write goes to the
    slot, so a value written is never replaced. The native core makes these without ``__init__``
    (it sets ``name``, ``parent``, ``_pending`` and ``_source`` itself).
    """

    __slots__ = ("_pending", "_source")
    _pending: tuple[Any, int] | None
    _source: tuple[Any, int]

    @property
    def body(self) -> list[Line | Section]:
        """Values lines and child sections, in source order (made from the native document once)."""
        pending = self._pending
        if pending is not None:
            native, k = pending
            body = native.body(k, self)  # may run Python code (Value.__init__): fill, then clear
            if self._pending is pending:  # not filled or replaced meanwhile
                _SECTION_BODY.__set__(self, body)
                self._pending = None
        return cast("list[Line | Section]", _SECTION_BODY.__get__(self))

    @body.setter
    def body(self, value: list[Line | Section]) -> None:
        self._pending = None
        _SECTION_BODY.__set__(self, value)

    def __getstate__(self) -> object:
        """The state for copies and pickles: the body and every field made first (they never hold
        the native document)."""
        self.body  # noqa: B018 - reading it makes it
        for name in _DEFERRED:
            getattr(self, name)
        dict_state, slots = cast("tuple[None, dict[str, object]]", super().__getstate__())
        return dict_state, {k: v for k, v in slots.items() if k != "_source"}


#: The fields a ``LazySection`` fills on first read, in the native core's order (``field``).
_DEFERRED = ("occurrence", "has_end_tag", "line", "col", "start", "end", "before", "end_before")


def _deferred(name: str, index: int) -> property:
    """``LazySection.<name>``: the slot of ``Section``, filled from ``_source`` on first read."""
    slot = Section.__dict__[name]
    get_slot, set_slot = slot.__get__, slot.__set__

    def read(self: LazySection) -> Any:
        try:
            return get_slot(self)
        except AttributeError:
            native, k = self._source
            value = native.field(k, index)
            set_slot(self, value)
            return value

    def write(self: LazySection, value: Any) -> None:
        set_slot(self, value)

    return property(read, write, doc=f"``Section.{name}`` (from the native document on first read)")


for _index, _field_name in enumerate(_DEFERRED):
    setattr(LazySection, _field_name, _deferred(_field_name, _index))
del _index, _field_name


def _name(name: str) -> str:
    n = name.strip()
    return n[1:-1] if n.startswith("[") and n.endswith("]") else n


def _new_section(
    parent: Section | None,
    name: str,
    values: Sequence[int | float | str | Value] | None,
    end_tag: bool,
    siblings: list[Section],
) -> Section:
    s = Section(_name(name), parent=parent, occurrence=len(siblings), has_end_tag=end_tag)
    if values:
        s.body.append([Value.of(v) for v in values])
    return s


def _renumber(body: list[Line | Section]) -> None:
    seen: dict[str, int] = {}
    for item in body:
        if isinstance(item, Section):
            item.occurrence = seen.get(item.name, 0)
            seen[item.name] = item.occurrence + 1


class Document:
    """A parsed ``#PVF_File`` script.

    A document the native core parsed keeps its top level there until ``body`` is first read
    (``_native``): ``sections`` and ``find_all`` make only the sections they return (never the
    value lines around them — a ``.lst`` is thousands of them), each once (``_made``, a slot per
    native section), and the body made later holds those very objects.
    """

    def __init__(self) -> None:
        self._body: list[Line | Section] = []
        self._native: Any = None  # the native document while the top level is not made
        self._made: list[Section | None] | None = None  # its sections handed out so far, by index
        self.warnings: list[ParseWarning] = []
        self.head: str | None = None  # source text before the first token (the #PVF_File header)
        self.tail: str | None = None  # source text after the last token

    @property
    def body(self) -> list[Line | Section]:
        """Value lines and top-level sections, in source order."""
        native = self._native
        if native is not None:
            self._body = native.body(-1, None, self._made)
            self._native = self._made = None
        return self._body

    @body.setter
    def body(self, value: list[Line | Section]) -> None:
        self._native = self._made = None
        self._body = value

    def __getstate__(self) -> object:
        """The state for copies and pickles: the top level made first (they never hold the native
        document)."""
        self.body  # noqa: B018 - reading it makes it
        return dict(self.__dict__)

    # ---------------------------------------------------------------------------------- queries

    @property
    def sections(self) -> list[Section]:
        """Top-level sections."""
        native = self._native
        if native is not None:
            return cast("list[Section]", native.sections(-1, None, self._made))
        return [s for s in self._body if isinstance(s, Section)]

    @property
    def preamble(self) -> list[Value]:
        """Values before the first section (a ``.lst`` file is all preamble)."""
        out: list[Value] = []
        for item in self.body:
            if isinstance(item, Section):
                break
            out.extend(item)
        return out

    def walk(self) -> Iterator[Section]:
        """Every section, depth first."""
        for s in self.sections:
            yield from s.walk()

    def find_all(self, path: str) -> list[Section]:
        """All sections at ``path`` (every occurrence at every level of the path)."""
        parts = [_name(p) for p in path.split("/") if p.strip()]
        if not parts:
            return []
        native = self._native
        if native is not None:  # only the sections of that name are made
            level: list[Section] = native.sections(-1, None, self._made, parts[0])
        else:
            level = [s for s in self._body if isinstance(s, Section) and s.name == parts[0]]
        for part in parts[1:]:
            level = [c for s in level for c in s.children(part)]
        return level

    def section(self, path: str, occurrence: int = 0) -> Section | None:
        """The ``occurrence``-th section at ``path`` (counted over the whole path), or None."""
        found = self.find_all(path)
        return found[occurrence] if -len(found) <= occurrence < len(found) else None

    def get(self, path: str, occurrence: int = 0, index: int = 0) -> Value | None:
        """A value by section path, occurrence and value index."""
        s = self.section(path, occurrence)
        return s.get(index) if s is not None else None

    def get_value(self, path: str, occurrence: int = 0, index: int = 0) -> object:
        """The Python value of :meth:`get`."""
        v = self.get(path, occurrence, index)
        return v.value if v is not None else None

    # ---------------------------------------------------------------------------------- edits

    def set(
        self,
        path: str,
        value: int | float | str | Value,
        *,
        occurrence: int = 0,
        index: int = 0,
        create: bool = False,
        end_tag: bool = False,
    ) -> Section:
        """Set a value; with ``create`` a missing section is appended (under its parent path)."""
        s = self.section(path, occurrence)
        if s is None:
            if not create:
                raise KeyError(f"no section {path!r} (occurrence {occurrence})")
            parent_path, _, name = path.rstrip("/").rpartition("/")
            if parent_path:
                parent = self.section(parent_path)
                if parent is None:
                    raise KeyError(f"no parent section {parent_path!r}")
                s = parent.append_section(name, end_tag=end_tag)
            else:
                s = self.append_section(name, end_tag=end_tag)
        s.set(value, index)
        return s

    def delete(self, path: str, occurrence: int | None = None) -> int:
        """Delete the section(s) at ``path`` (one occurrence, or all when None); returns how many."""
        found = self.find_all(path)
        if occurrence is not None:
            found = found[occurrence : occurrence + 1] if -len(found) <= occurrence < len(found) else []
        for s in found:
            body = s.parent.body if s.parent is not None else self.body
            body.remove(s)
            _renumber(body)
        return len(found)

    def append_section(
        self, name: str, values: Sequence[int | float | str | Value] | None = None, *, end_tag: bool = False
    ) -> Section:
        """Append a top-level section."""
        s = _new_section(None, name, values, end_tag, [x for x in self.sections if x.name == _name(name)])
        self.body.append(s)
        return s

    # ---------------------------------------------------------------------------------- output

    def render(self, newline: str = "\n") -> str:
        """The document as ``#PVF_File`` text.

        Parts kept from the source (header, blank lines, indentation, comments, value separators)
        are reproduced as they were, so an unedited document renders to its source text exactly;
        new or moved parts get the canonical layout (tabs, a blank line between top-level sections).
        """
        out: list[str] = [self.head if self.head is not None else HEADER + newline + newline]
        first = True
        for item in self.body:
            gap = _gap(item)
            if first:
                if gap is None:
                    gap = ""
                elif self.head is not None and out[0].endswith("\n"):
                    gap = gap[gap.rfind("\n") + 1 :]  # the head already ends the line
            if isinstance(item, Section):
                _render_section(item, 0, out, newline, gap if gap is not None else newline + newline)
            else:
                _render_line(item, 0, out, newline, gap if gap is not None else newline)
            first = False
        if self.tail is not None:
            out.append(self.tail)
        elif self.body and not all(isinstance(i, list) for i in self.body):
            out.append(newline)
        return "".join(out)

    def __repr__(self) -> str:
        return f"Document(sections={len(self.sections)}, warnings={len(self.warnings)})"


def _gap(item: Line | Section) -> str | None:
    return item.before if isinstance(item, Section | ValueLine) else None


def _render_line(line: Line, depth: int, out: list[str], newline: str, gap: str) -> None:
    out.append(gap if getattr(line, "before", None) is not None else newline + "\t" * depth)
    for k, v in enumerate(line):
        if k:
            out.append(v.lead if v.lead is not None else "\t")
        out.append(v.render())


def _render_section(s: Section, depth: int, out: list[str], newline: str, gap: str) -> None:
    out.append(gap if s.before is not None else (gap if depth == 0 else newline + "\t" * depth))
    out.append(s.tag)
    for item in s.body:
        if isinstance(item, Section):
            _render_section(item, depth + 1, out, newline, item.before or "")
        else:
            _render_line(item, depth + 1, out, newline, getattr(item, "before", None) or "")
    if s.has_end_tag:
        out.append(s.end_before if s.end_before is not None else newline + "\t" * depth)
        out.append(f"[/{s.name}]")
