"""A located view of script text: tokens, nested sections with occurrences, UTF-16 positions.

The annotation engine needs exact source ranges for every token and section tag, in the
editor's coordinates: text with CRLF/CR normalised to LF, 0-based UTF-16 offsets and 1-based
line/column in UTF-16 code units. This module produces that view from the pvfUtility/pvfine
text form (``#PVF_File`` header, ``[tag]`` / ``[/tag]``, tab-separated values, back-quoted
strings that may span lines, ``{N=…}`` typed escapes, ``<id::key`text`>`` links).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from moddesk.pvf.docparse import build_document
from moddesk.pvf.document import Document, Value
from moddesk.pvf.format.errors import PvfFormatError

_TOKEN_RE = re.compile(
    r"""
      (?P<ws>[ \t\n\f\v]+)
    | (?P<header>(?<![^\n])\#pvf_file(?:_add)?[ \t]*(?=\n|\Z))
    | (?P<comment>\#[^\n]*)
    | (?P<string>`[^`]*(?:`|\Z))
    | (?P<escape>\{(?P<etype>\d{1,4})=(?:`(?P<estr>[^`]*)`|(?P<eint>-?\d{1,12}))\})
    | (?P<link><(?P<lid>\d{1,10})::(?P<lkey>[^`>\s]*)(?:`(?P<ltext>[^`]*)`)?>)
    | (?P<tag>\[[^\]\n]*\])
    | (?P<bare>[^ \t\n\f\v`]+)
    """,
    re.VERBOSE | re.IGNORECASE,
)
_INT_RE = re.compile(r"[+-]?\d+\Z")
_FLOAT_RE = re.compile(r"[+-]?(?:\d+\.\d*|\.\d+)(?:[eE][+-]?\d+)?\Z|[+-]?\d+[eE][+-]?\d+\Z")
_ASTRAL_RE = re.compile("[\U00010000-\U0010ffff]")
_PLACEHOLDER_RE = re.compile(r"<(\d{1,10})::([^<>`\s]+)>")


def normalize_newlines(text: str) -> str:
    """Editor newline normalisation: CRLF and lone CR become LF."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


@dataclass(frozen=True, slots=True)
class Token:
    """One value token: ``kind`` int|float|string|escape|link|bare, ``value`` = its key text."""

    kind: str
    raw: str
    value: str
    start: int
    end: int
    type_code: int | None = None

    @property
    def is_number(self) -> bool:
        """Whether the token is an integer or a float."""
        return self.kind in ("int", "float")

    def as_int(self) -> int | None:
        """The integer value, if the token is an integer (or an integer escape)."""
        if self.kind == "int" or (
            self.kind == "escape" and _INT_RE.match(self.value) and not self.raw.endswith("`}")
        ):
            try:
                return int(self.value)
            except ValueError:
                return None
        return None


@dataclass(eq=False)
class Section:
    """A ``[tag]`` with its direct tokens, children and the range it covers."""

    name: str
    path: str
    occurrence: int
    depth: int
    paired: bool
    tag_start: int
    tag_end: int
    end: int = 0
    close_start: int | None = None
    close_end: int | None = None
    parent: Section | None = None
    tokens: list[Token] = field(default_factory=list)
    children: list[Section] = field(default_factory=list)

    @property
    def key(self) -> str:
        """Case-folded path used for matching."""
        return self.path.casefold()

    def names(self) -> list[str]:
        """Case-folded names from the outermost ancestor down to this section."""
        return [p.casefold() for p in self.path.split("/")]

    def contains(self, other: Section) -> bool:
        """Whether ``other`` is this section or nested inside it."""
        node: Section | None = other
        while node is not None:
            if node is self:
                return True
            node = node.parent
        return False


@dataclass(frozen=True)
class ParseWarning:
    """A structural problem: ``orphan-close``, ``missing-close``, ``mismatched-close``, ``unterminated-string``."""

    code: str
    message: str
    start: int
    end: int


def crlf_positions(original: str) -> list[int]:
    """Indexes, in the newline-normalised text, of each LF that was a CRLF in ``original``."""
    return [m.start() - k for k, m in enumerate(re.finditer("\r\n", original))]


class Positions:
    """Maps Python string indexes to UTF-16 offsets and 1-based line/column (UTF-16 units).

    The parse runs on newline-normalised text; ``crlf`` (see ``crlf_positions``) maps offsets
    back to the text as read (``read_file`` keeps CRLF), so ``range`` counts each CRLF as two
    units. Lines and columns are the same either way.
    """

    def __init__(self, text: str, crlf: Sequence[int] = ()) -> None:
        self._line_starts = [0] + [m.end() for m in re.finditer("\n", text)]
        self._astral = [m.start() for m in _ASTRAL_RE.finditer(text)] if not text.isascii() else []
        self._crlf = list(crlf)

    def original(self, index: int) -> int:
        """UTF-16 offset of ``index`` in the text as read (CRLF kept)."""
        return self.utf16(index) + bisect.bisect_left(self._crlf, index)

    def utf16(self, index: int) -> int:
        """UTF-16 offset of the Python index ``index``."""
        return index + bisect.bisect_left(self._astral, index)

    def line_col(self, index: int) -> tuple[int, int]:
        """1-based line and column (UTF-16 code units) of ``index``."""
        line = bisect.bisect_right(self._line_starts, index) - 1
        return line + 1, self.utf16(index) - self.utf16(self._line_starts[line]) + 1

    def line_of(self, index: int) -> int:
        """1-based line of ``index``."""
        return bisect.bisect_right(self._line_starts, index)

    @property
    def line_starts(self) -> list[int]:
        """Python index where each line starts."""
        return self._line_starts

    @property
    def line_count(self) -> int:
        """Number of lines (an empty text has one)."""
        return len(self._line_starts)

    def locate(self, start: int, end: int) -> dict[str, object]:
        """The seed's location block for a half-open Python index range."""
        start_line, start_col = self.line_col(start)
        end_line, end_col = self.line_col(end)
        return {
            "range": {"start": self.original(start), "end": self.original(end)},
            "startLine": start_line,
            "startColumn": start_col,
            "endLine": end_line,
            "endColumn": end_col,
        }


@dataclass
class ScriptView:
    """The whole located parse of one file's text."""

    text: str
    sections: list[Section]
    root_tokens: list[Token]
    warnings: list[ParseWarning]
    positions: Positions

    def top_level(self) -> list[Section]:
        """Sections that have no parent."""
        return [s for s in self.sections if s.parent is None]


def _make_token(m: re.Match[str]) -> Token | None:
    kind = m.lastgroup
    raw = m.group(0)
    start, end = m.span()
    if kind == "string":
        inner = raw[1:-1] if len(raw) >= 2 and raw.endswith("`") else raw[1:]
        return Token("string", raw, inner, start, end)
    if kind == "escape":
        estr = m.group("estr")
        payload = estr if estr is not None else (m.group("eint") or "")
        return Token("escape", raw, payload, start, end, int(m.group("etype")))
    if kind == "link":
        return Token("link", raw, m.group("lkey"), start, end, int(m.group("lid")))
    if kind == "bare":
        if _INT_RE.match(raw):
            return Token("int", raw, raw, start, end)
        if _FLOAT_RE.match(raw):
            return Token("float", raw, raw, start, end)
        return Token("bare", raw, raw, start, end)
    return None


def parse_script(text: str) -> ScriptView:
    """Parse script text (newlines normalised first) into a located view; never raises on content.

    The structure comes from ``moddesk.pvf.document`` (the parser scripts use, so sections,
    paths and occurrences agree with the script API); text that parser rejects (``BAD_TEXT``)
    is still explained through a tolerant tokenizer, with a ``bad-text`` warning.
    """
    crlf = crlf_positions(text)
    text = normalize_newlines(text)
    try:
        document = build_document(text)
    except PvfFormatError as exc:
        view = tolerant_parse(text)
        at = exc.offset if exc.offset is not None and 0 <= exc.offset <= len(text) else 0
        view.warnings.insert(0, ParseWarning("bad-text", f"{exc.message}; tokens read tolerantly", at, at))
    else:
        view = _view_from_document(text, document)
    if crlf:
        view.positions = Positions(text, crlf)
    return view


def _document_token(value: Value) -> Token:
    source = value.source if value.source is not None else value.render()
    if value.kind == "integer":
        return Token("int", source, source, value.start, value.end)
    if value.kind == "float":
        return Token("float", source, source, value.start, value.end)
    if value.kind == "string":
        return Token("string", source, str(value.value), value.start, value.end)
    if value.kind == "link":
        link = value.value
        assert isinstance(link, tuple)
        return Token("link", source, str(link[1]), value.start, value.end, int(link[0]))
    return Token("escape", source, str(value.value), value.start, value.end, value.type)


def _view_from_document(text: str, document: Document) -> ScriptView:
    sections: list[Section] = []
    counts: dict[str, int] = {}
    by_id: dict[int, Section] = {}
    for doc_section in document.walk():
        parent = by_id.get(id(doc_section.parent)) if doc_section.parent is not None else None
        path = doc_section.path
        occurrence = counts.get(path.casefold(), 0)
        counts[path.casefold()] = occurrence + 1
        tag_end = text.find("]", doc_section.start) + 1 if doc_section.start >= 0 else 0
        section = Section(
            name=doc_section.name,
            path=path,
            occurrence=occurrence,
            depth=0 if parent is None else parent.depth + 1,
            paired=doc_section.has_end_tag,
            tag_start=doc_section.start,
            tag_end=tag_end,
            end=max(doc_section.end, tag_end),
            parent=parent,
            tokens=[_document_token(v) for v in doc_section.values()],
        )
        if parent is not None:
            parent.children.append(section)
        by_id[id(doc_section)] = section
        sections.append(section)
    _extend_ends(sections)
    positions = Positions(text)
    warnings: list[ParseWarning] = []
    for w in document.warnings:
        at = _offset_of(positions, text, w.line, w.col)
        warnings.append(ParseWarning(w.code, w.message, at, at))
    root = [_document_token(v) for v in document.preamble]
    return ScriptView(text, sections, root, warnings, positions)


def _offset_of(positions: Positions, text: str, line: int, col: int) -> int:
    """Python index of a 1-based (line, character column) pair."""
    starts = positions.line_starts
    if not 1 <= line <= len(starts):
        return 0
    return min(len(text), starts[line - 1] + max(col - 1, 0))


def tolerant_parse(text: str) -> ScriptView:
    """The fallback tokenizer: accepts any text, reading unknown words as bare tokens."""
    matches = list(_TOKEN_RE.finditer(text))
    # A tag is "paired" when a matching close tag follows it anywhere later in the file.
    last_close: dict[str, int] = {}
    for m in matches:
        if m.lastgroup == "tag" and m.group(0).startswith("[/"):
            last_close[m.group(0)[2:-1].strip().casefold()] = m.start()
    sections: list[Section] = []
    root_tokens: list[Token] = []
    warnings: list[ParseWarning] = []
    stack: list[Section] = []
    counts: dict[str, int] = {}

    def close_unpaired(at: int) -> None:
        while stack and not stack[-1].paired:
            stack.pop().end = at

    for m in matches:
        kind = m.lastgroup
        if kind in ("ws", "header", "comment"):
            continue
        if kind == "string" and (len(m.group(0)) < 2 or not m.group(0).endswith("`")):
            warnings.append(
                ParseWarning("unterminated-string", "a back-quoted string is not closed", *m.span())
            )
        if kind == "tag":
            raw = m.group(0)
            if raw.startswith("[/"):
                name = raw[2:-1].strip()
                folded = name.casefold()
                close_unpaired(m.start())
                if stack and stack[-1].name.casefold() == folded:
                    done = stack.pop()
                    done.close_start, done.close_end, done.end = m.start(), m.end(), m.end()
                elif any(s.name.casefold() == folded for s in stack):
                    while stack and stack[-1].name.casefold() != folded:
                        lost = stack.pop()
                        lost.end = m.start()
                        warnings.append(
                            ParseWarning(
                                "mismatched-close", f"[{lost.name}] closed by {raw}", lost.tag_start, m.end()
                            )
                        )
                    done = stack.pop()
                    done.close_start, done.close_end, done.end = m.start(), m.end(), m.end()
                else:
                    warnings.append(ParseWarning("orphan-close", f"{raw} has no opening tag", *m.span()))
                continue
            name = raw[1:-1].strip()
            close_unpaired(m.start())
            parent = stack[-1] if stack else None
            path = f"{parent.path}/{name}" if parent else name
            occurrence = counts.get(path.casefold(), 0)
            counts[path.casefold()] = occurrence + 1
            paired = last_close.get(name.casefold(), -1) > m.start()
            section = Section(
                name=name,
                path=path,
                occurrence=occurrence,
                depth=len(stack),
                paired=paired,
                tag_start=m.start(),
                tag_end=m.end(),
                end=m.end(),
                parent=parent,
            )
            if parent is not None:
                parent.children.append(section)
            sections.append(section)
            stack.append(section)
            continue
        token = _make_token(m)
        if token is None:
            continue
        if stack:
            stack[-1].tokens.append(token)
            stack[-1].end = token.end
        else:
            root_tokens.append(token)
    for section in stack:
        if section.tokens:
            section.end = max(section.end, section.tokens[-1].end)
        if section.paired:
            warnings.append(
                ParseWarning(
                    "missing-close", f"[{section.name}] is never closed", section.tag_start, section.tag_end
                )
            )
    _extend_ends(sections)
    return ScriptView(text, sections, root_tokens, warnings, Positions(text))


def _extend_ends(sections: list[Section]) -> None:
    """Make every section's end cover its last token and its children."""
    for section in reversed(sections):
        for child in section.children:
            section.end = max(section.end, child.end)
        if section.tokens:
            section.end = max(section.end, section.tokens[-1].end)
        if section.close_end is not None:
            section.end = max(section.end, section.close_end)


def find_placeholders(value: str) -> list[tuple[int, int, str, str]]:
    """``<table::key>`` placeholders inside a string: (start, end, table, key) relative to ``value``."""
    return [(m.start(), m.end(), m.group(1), m.group(2)) for m in _PLACEHOLDER_RE.finditer(value)]
