"""Building the document model (``moddesk.pvf.document``) from script text, fast.

``build_document`` reads text in one regex scan (``_SCAN``: whitespace, then one token) into flat
tuples, then builds sections and values in one pass. Text the scan cannot read token by token
(anything ``format.text.lex`` would refuse, or accepts only through a rarer path) goes through
``lex`` instead, so errors and edge cases stay exactly ``lex``'s; the model built is the same
either way. The spans and line numbers follow ``lex``: lines are counted in the gaps between
tokens and inside plain strings (not inside escape or link payloads).
"""

from __future__ import annotations

import re
import struct
from typing import TYPE_CHECKING, Any

from moddesk.pvf.document import (
    _ESCAPE_KINDS_BY_NUMBERING,
    Document,
    LazySection,
    ParseWarning,
    Section,
    Value,
    ValueKind,
    ValueLine,
)
from moddesk.pvf.format.errors import PvfFormatError
from moddesk.pvf.format.text import (
    Lexeme,
    escape_numbering,
    escape_parts,
    lex,
    link_parts,
    native_pvf,
    parse_float_bits,
)
from moddesk.pvf.format.tokens import Family

if TYPE_CHECKING:
    from moddesk.pvf.document import Line

__all__ = ["build_document"]

# Token kinds of the flat form: a tag (value = the tag text) or a value (value = its Value).
_OPEN, _CLOSE, _VALUE = 0, 1, 2

#: Whitespace, then one token. Possessive/atomic parts make each alternative match exactly what
#: ``lex`` reads at that position (no backtracking into a shorter or different token). The common
#: forms come first with groups of their own (a one-line string with no doubled backtick, an
#: integer), so most tokens need no further look.
_SCAN = re.compile(
    r"""[ \t\r\n]*+(?:
      (`[^`\n]*+`)(?!`)                                                      # 1 plain one-line string
    | (\[[^\]\r\n]*\])                                                       # 2 section tag
    | ([+-]?\d++)(?=[ \t\r\n]|\Z)                                             # 3 integer
    | (`(?:[^`]|``)*+`)                                                       # 4 any other string
    | ((?>[+-]?(?:\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)))(?=[ \t\r\n]|\Z)  # 5 float
    | \{(\#?)(\d{1,3})=(?:(`(?:[^`]|``)*+`)|([+-]?\d+))\}                    # 6-9 escape
    | <(\d+)::([^`>\r\n]*+)(`(?:[^`]|``)*+`)?>                               # 10-12 link
    | (\#[^\n]*+)                                                             # 13 comment?
    | (.)                                                                     # 14 anything else
    | (\Z)                                                                    # 15 the end
    )""",
    re.VERBOSE | re.DOTALL,
)

_FLOAT_CACHE: dict[str, float] = {}


def _float(word: str) -> float:
    """The float32 value of a text float (as ``Value.value`` holds it)."""
    f = _FLOAT_CACHE.get(word)
    if f is None:
        f = struct.unpack("<f", struct.pack("<I", parse_float_bits(word)))[0]
        if len(_FLOAT_CACHE) < 65536:
            _FLOAT_CACHE[word] = f
    return f


class _Slow(Exception):
    """The fast scan met something only ``lex`` decides (an error, or a rare form)."""


# What the first pass leaves for the second, in source order: a tag (kind, tag text, start, end,
# line, col, gap before it) or a value line (_VALUE, the line, …). Values are placed in their lines
# in the first pass; only tags and lines need the pairing, which is known after it.
_Event = tuple[int, object, int, int, int, int, str]
# An escape seen while scanning, for the numbering decision: (number, raw, payload, line, start).
_Escape = tuple[int, bool, "str | int", int, int]


def _scan(text: str) -> tuple[list[_Event], list[Value], list[_Escape], int, int]:
    """Events of ``text`` (escape values get kind "escape", retyped afterwards), and the spans of
    the first token's start and the last token's end (-1 when there is none)."""
    events: list[_Event] = []
    add = events.append
    escapes: list[Value] = []
    escape_info: list[_Escape] = []
    line = 1
    line_start = 0
    pos = 0  # where line counting continues (after the last token or comment)
    prev_end = -1  # end of the last token (-1: none yet)
    first = -1
    last: ValueLine | None = None  # the value line a value on the same line joins
    last_line = -1
    count = text.count
    for m in _SCAN.finditer(text):
        g = m.lastindex
        if g is not None and g <= 5:
            start = m.start(g)
        elif g == 8 or g == 9:
            start = m.start(6) - 1  # an escape ends with an optional group: it starts before {
        elif g == 11 or g == 12:
            start = m.start(10) - 1
        elif g == 13:
            start = m.start(13)
            nl = count("\n", pos, start)
            if nl:
                line += nl
                line_start = text.rfind("\n", pos, start) + 1
            if text[line_start:start].strip(" \t"):
                raise _Slow  # a '#' after a token on its line is not a comment: lex refuses it
            pos = m.end()
            continue
        elif g == 14:
            raise _Slow
        else:
            break  # the end
        nl = count("\n", pos, start)
        if nl:
            line += nl
            line_start = text.rfind("\n", pos, start) + 1
        pos = end = m.end()
        if prev_end < 0:
            first = prev_end = start
        gap = text[prev_end:start]
        prev_end = end
        inside = 0
        if g == 3:
            word = m.group(3)
            value = Value(
                "integer", int(word), None, False, word, None, line, start - line_start + 1, start, end
            )
        elif g == 1:
            src = m.group(1)
            value = Value(
                "string", src[1:-1], None, False, src, None, line, start - line_start + 1, start, end
            )
        elif g == 2:
            tag = m.group(2)
            add((_CLOSE if tag[1] == "/" else _OPEN, tag, start, end, line, start - line_start + 1, gap))
            last = None
            continue
        elif g == 4:
            src = m.group(4)
            inner = src[1:-1].replace("``", "`")
            value = Value("string", inner, None, False, src, None, line, start - line_start + 1, start, end)
            inside = src.count("\n")
        elif g == 5:
            word = m.group(5)
            value = Value(
                "float", _float(word), None, False, word, None, line, start - line_start + 1, start, end
            )
        elif g == 8 or g == 9:
            number = int(m.group(7))
            if number > 255:
                raise _Slow
            raw = m.group(6) == "#"
            quoted = m.group(8)
            payload: str | int = quoted[1:-1].replace("``", "`") if quoted is not None else int(m.group(9))
            src = text[start:end]
            col = start - line_start + 1
            value = Value("escape", payload, number, raw, src, None, line, col, start, end)
            escapes.append(value)
            escape_info.append((number, raw, payload, line, start))
            inside = src.count("\n")
        else:
            shown = m.group(12)
            display = shown[1:-1].replace("``", "`") if shown is not None else None
            src = text[start:end]
            link = (int(m.group(10)), m.group(11), display)
            value = Value("link", link, 9, False, src, None, line, start - line_start + 1, start, end)
            inside = src.count("\n")
        if last is not None and line == last_line and "\n" not in gap:
            value.lead = gap
            last.append(value)
        else:
            last = ValueLine((value,))
            last.before = gap
            add((_VALUE, last, start, end, line, 0, gap))
        last_line = line + inside
        if inside and g == 4:  # lex counts the lines inside plain strings only
            line += inside
            line_start = text.rfind("\n", start, end) + 1
    return events, escapes, escape_info, first, prev_end


def _slow_events(text: str) -> tuple[list[_Event], list[Value], list[Lexeme], int, int]:
    """The same events through ``lex`` (which raises BAD_TEXT for what it cannot read)."""
    lexemes = list(lex(text))
    events: list[_Event] = []
    escapes: list[Value] = []
    prev_end = lexemes[0].start if lexemes else -1
    last: ValueLine | None = None
    last_line = -1
    for lx in lexemes:
        gap = text[prev_end : lx.start]
        prev_end = lx.end
        if lx.kind == "section":
            tag = str(lx.value)
            kind = _CLOSE if tag.startswith("[/") else _OPEN
            events.append((kind, tag, lx.start, lx.end, lx.line, lx.col, gap))
            last = None
            continue
        value = _value(lx, text)
        if lx.kind == "escape":
            escapes.append(value)
        if last is None or lx.line != last_line or "\n" in gap:
            last = ValueLine((value,))
            last.before = gap
            events.append((_VALUE, last, lx.start, lx.end, lx.line, lx.col, gap))
        else:
            value.lead = gap
            last.append(value)
        last_line = lx.line + text.count("\n", lx.start, lx.end)
    first = lexemes[0].start if lexemes else -1
    return events, escapes, [lx for lx in lexemes if lx.kind == "escape"], first, prev_end


def _value(lx: Lexeme, text: str) -> Value:
    """The value of a lexeme (escapes get kind "escape"; the numbering retypes them later)."""
    src = text[lx.start : lx.end]
    where = (src, None, lx.line, lx.col, lx.start, lx.end)
    if lx.kind == "int":
        assert isinstance(lx.value, int)
        return Value("integer", lx.value, None, False, *where)
    if lx.kind == "float":
        assert isinstance(lx.value, str)
        return Value("float", _float(lx.value), None, False, *where)
    if lx.kind == "string":
        assert isinstance(lx.value, str)
        return Value("string", lx.value, None, False, *where)
    if lx.kind == "link":
        return Value("link", link_parts(lx), 9, False, *where)
    if lx.kind == "escape":
        number, raw, payload = escape_parts(lx)
        return Value("escape", payload, number, raw, *where)
    raise PvfFormatError("BAD_TEXT", f"unexpected {lx.kind}", offset=lx.start)


def _numbering_kinds(escape_lexemes: list[Lexeme], family: Family) -> dict[int, ValueKind]:
    try:
        return _ESCAPE_KINDS_BY_NUMBERING[escape_numbering(escape_lexemes, family)]
    except PvfFormatError:
        return {}  # mixed numberings: values stay plain escapes; compiling reports the problem


def _pairing(events: list[_Event]) -> tuple[set[int], set[str]]:
    """Indexes of opening tags that have a matching close, and every name that is closed somewhere."""
    paired: set[int] = set()
    closed: set[str] = set()
    stack: list[tuple[str, int]] = []
    for idx, event in enumerate(events):
        kind = event[0]
        if kind == _VALUE:
            continue
        tag = event[1]
        assert isinstance(tag, str)
        if kind == _CLOSE:
            name = tag[2:-1]
            closed.add(name)
            for pos in range(len(stack) - 1, -1, -1):
                if stack[pos][0] == name:
                    paired.add(stack[pos][1])
                    del stack[pos:]
                    break
        else:
            stack.append((tag[1:-1], idx))
    return paired, closed


def build_document(text: str, family: Family = Family.CLASSIC) -> Document:
    """Parse script text; structural problems become ``warnings``, unlexable text BAD_TEXT.

    ``family`` decides what an escape number means (classic ``{6=…}`` command vs NKPI
    ``{5=…}``; see ``format.text.escape_numbering``); values keep their source text either way.
    With the native core the text is scanned and assembled natively (the nesting and warnings
    included) and the model's Python objects are made as they are asked for: top-level sections
    by ``sections`` / ``find_all`` (no value line with them), the whole top level when ``body`` is
    first read, a section's lines and child sections when its ``body`` is first read
    (``LazySection``).
    Text it does not read (it does not lex, or holds what only the reference reads exactly) takes
    the paths below, so errors stay ``lex``'s.
    """
    native = native_pvf()
    if native is not None:
        parsed = native.parse_document(text, family is Family.CLASSIC, _CLASSES)
        if parsed is not None:
            return _native_document(text, parsed)
    try:
        events, escapes, info, first, last = _scan(text)
        escape_lexemes = [
            Lexeme("escape", (number, raw, payload), start, start, line, 0)
            for number, raw, payload, line, start in info
        ]
    except (_Slow, ValueError):  # ValueError: a digit run too long for int(); lex says BAD_TEXT
        events, escapes, escape_lexemes, first, last = _slow_events(text)
    if escapes:
        kinds = _numbering_kinds(escape_lexemes, family)
        for v in escapes:
            if not v.raw:
                assert v.type is not None
                v.kind = kinds.get(v.type, "escape")
    doc = Document()
    doc.head = text[:first] if first >= 0 else text
    doc.tail = text[last:] if first >= 0 else ""
    _assemble(doc, events)
    return doc


#: The classes the native core makes a document's objects of (``moddesk_native.pvf.parse_document``).
_CLASSES = (LazySection, Value, ValueLine, ParseWarning)


def _native_document(text: str, parsed: Any) -> Document:
    """The document of a native parse: its top level and section bodies made on first use."""
    doc = Document()
    doc._native, doc._made = parsed, parsed.new_made()  # the top level is made when asked for (Document.body)
    doc.warnings = parsed.warnings()
    first, last = parsed.span()
    doc.head = text[:first] if first is not None else text
    doc.tail = text[last:] if first is not None else ""
    return doc


def _close(
    doc: Document, event: _Event, containers: list[Section], open_stack: list[Section], closed_names: set[str]
) -> None:
    """A ``[/name]`` tag: close the innermost open block of that name, with the warnings it causes."""
    tag = event[1]
    assert isinstance(tag, str)
    name = tag[2:-1]
    line, col = event[4], event[5]
    hit = None
    for k in range(len(containers) - 1, -1, -1):
        if containers[k].name == name:
            hit = k
            break
    if hit is None:
        doc.warnings.append(ParseWarning("orphan-close", f"{tag} closes nothing", line, col, name))
    else:
        closing = containers[hit]
        closing.has_end_tag = True
        closing.end = event[3]
        closing.end_before = event[6]
        del containers[hit:]
    for k in range(len(open_stack) - 1, -1, -1):
        if open_stack[k].name == name:
            for inner in open_stack[k + 1 :]:
                if inner.name in closed_names and not inner.has_end_tag:
                    message = f"{tag} closes [{name}] while [{inner.name}] is still open"
                    doc.warnings.append(ParseWarning("mismatched-close", message, line, col, inner.path))
                    inner.has_end_tag = False
            del open_stack[k:]
            break


def _assemble(doc: Document, events: list[_Event]) -> None:
    """Nest sections and place value lines: a section whose name is closed later is a block."""
    paired, closed_names = _pairing(events)
    containers: list[Section] = []
    open_stack: list[Section] = []  # every open section, for warnings
    counts: dict[int, dict[str, int]] = {}  # per sibling list: name -> sections so far (occurrences)
    target: list[Line | Section] = doc.body
    for idx, event in enumerate(events):
        kind, item = event[0], event[1]
        if kind == _VALUE:
            assert isinstance(item, ValueLine)
            target.append(item)
            if open_stack:
                open_stack[-1].end = item[-1].end  # spans only grow: the line ends after all before
            continue
        if kind == _CLOSE:
            _close(doc, event, containers, open_stack, closed_names)
            target = containers[-1].body if containers else doc.body
            continue
        assert isinstance(item, str)
        name = item[1:-1]
        parent = containers[-1] if containers else None
        siblings = parent.body if parent is not None else doc.body
        seen = counts.setdefault(id(siblings), {})
        occ = seen.get(name, 0)
        seen[name] = occ + 1
        sec = Section(name, parent, occ, False, [], event[4], event[5], event[2], event[3], event[6])
        siblings.append(sec)
        open_stack.append(sec)
        if idx in paired:
            containers.append(sec)
        target = sec.body
    for sec in open_stack:
        if sec.name in closed_names and not sec.has_end_tag:
            message = f"[{sec.name}] is never closed"
            doc.warnings.append(ParseWarning("missing-close", message, sec.line, sec.col, sec.path))
