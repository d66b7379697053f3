"""Script text (pvfUtility's ``#PVF_File`` form) for both families: lex, render, compile.

* ``123`` integer, ``1.5`` float (always with a dot), `` `text` `` string (a backtick inside is doubled),
  ``[tag]`` / ``[/tag]`` section tags, ``{N=value}`` or ``{N=`text`}`` a unit of type N,
  ``<id::key`display`>`` a classic string link (9 + 10; the display text is ignored when compiling).
* The escape number N is the unit type *of the entry's family*, as each family's tools write it:
  classic (pvfUtility) ``{6=`(DOWN)`}`` command, ``{8=`,`}`` separator, ``{3=n}`` IntEx;
  NKPI (pvfine, ``dof-dev/pvfine:internal/pvf/file.go`` / ``script.go``) ``{5=`(DOWN)`}`` command,
  ``{7=`,`}`` separator, ``{1=n}`` IntEx, ``{8=`<3::key>`}`` 110US placeholder, ``{3=`x`}`` a section
  unit whose string is not a ``[tag]``. Floats that have no decimal form (NaN, infinities, -0.0)
  render as ``{4=<bits>}`` (classic) / ``{2=<bits>}`` (NKPI).
* Earlier moddesk versions wrote NKPI text in the classic numbering (``{6=…}``, ``{8=…}``, raw NKPI
  types as ``{#N=…}``). NKPI text is compiled in that *legacy* numbering when it carries one of its
  markers (``{6=`…`}`` or any ``{#N=…}``) and none of the NKPI-only numbers (0, 1, 5, 7, 9, 10); text
  with markers of both is refused (``BAD_TEXT``) rather than guessed. :func:`escape_numbering` is
  the rule.

Round trip: compile(render(x)) gives the same units as x (the unit *values* of strings may differ
when a string table holds duplicates: compile picks the first index). Layout — which values share a
line, indentation, blank lines — is not stored in the binary, so render(compile(text)) equals
``text`` only up to that layout; :func:`normalize_text` is the documented normalisation.
A value that follows a multi-line string goes on the next line when rendering (pvfUtility accepts
it on the closing line, other compilers do not); the lexer accepts both. Classic multi-line strings
are stored with CRLF breaks, as pvfUtility's compiler joins them, and render with the text's own
breaks; a string the table already holds as written (LF-only, mixed) keeps its bytes.
"""

from __future__ import annotations

import bisect
import os
import re
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol, cast
from weakref import WeakKeyDictionary

import numpy as np

from moddesk.kit.native import CORE_ENV, native_core
from moddesk.pvf.format.errors import PvfFormatError
from moddesk.pvf.format.tokens import (
    CLASSIC_STRING_TYPES,
    FLOAT,
    INT,
    LINK,
    LINK_INDEX,
    NKPI_STRING_TYPES,
    NKPI_TO_VIEW,
    SECTION,
    STRING,
    VIEW_TO_NKPI,
    Family,
    TokenStream,
    decode_tokens,
    encode_tokens,
    make_tokens,
)

HEADER = "#PVF_File"


class StringSource(Protocol):
    """Resolves a unit's string reference (string-table index or pool magic) to text."""

    def string_at(self, ref: int) -> str | None:
        """The string for ``ref``, or None when it does not resolve."""
        ...


class StringSink(StringSource, Protocol):
    """A string source that can also add strings (the compiler's side)."""

    def intern(self, text: str) -> int:
        """The reference of ``text``, adding it when missing."""
        ...


#: Resolves a classic string link (n_string.lst id, key) to its display text.
LinkResolver = Callable[[int, str], str | None]


class DictStrings:
    """A simple in-memory string table: references are list positions."""

    def __init__(self, strings: list[str] | None = None) -> None:
        self.strings: list[str] = list(strings or [])
        self._index: dict[str, int] = {}
        for i, s in enumerate(self.strings):
            self._index.setdefault(s, i)

    def string_at(self, ref: int) -> str | None:
        """The string at position ``ref``."""
        return self.strings[ref] if 0 <= ref < len(self.strings) else None

    def find(self, text: str) -> int | None:
        """The first position holding ``text``, or None."""
        return self._index.get(text)

    def find_many(self, texts: list[str]) -> list[int] | None:
        """The position of every text when all are held (nothing appended), else None."""
        refs = list(map(self._index.get, texts))
        return None if None in refs else refs  # type: ignore[return-value]

    def intern(self, text: str) -> int:
        """The first position holding ``text``, appending it when missing."""
        i = self._index.get(text)
        if i is None:
            i = len(self.strings)
            self.strings.append(text)
            self._index[text] = i
        return i


# ---------------------------------------------------------------------------------------------- lexer


@dataclass(frozen=True, slots=True)
class Lexeme:
    """One token of script text with its source span (character offsets, 1-based line/column)."""

    kind: str  # "section" | "int" | "float" | "string" | "escape" | "link"
    value: object
    start: int
    end: int
    line: int
    col: int


_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)")
_SECTION = re.compile(r"\[[^\]\r\n]*\]")
_ESCAPE_HEAD = re.compile(r"\{(#?)(\d{1,3})=")
_ESCAPE_INT = re.compile(r"[+-]?\d+")
_LINK_HEAD = re.compile(r"<(\d+)::([^`>\r\n]*)")
_SPACE = " \t\r\n"
_ENDERS = frozenset(" \t\r\n")


def _read_backtick(text: str, pos: int) -> tuple[str, int]:
    """The string opening at ``pos`` (a backtick) and the position after its closing backtick."""
    parts: list[str] = []
    j = pos + 1
    while True:
        k = text.find("`", j)
        if k < 0:
            raise PvfFormatError("BAD_TEXT", "unterminated string", offset=pos)
        if text.startswith("`", k + 1):
            parts.append(text[j : k + 1])  # a doubled backtick is one literal backtick
            j = k + 2
            continue
        parts.append(text[j:k])
        return "".join(parts), k + 1


def _text_int(word: str, line: int, pos: int) -> int:
    """``int(word)`` of a lexed digit run, BAD_TEXT when it is longer than Python converts
    (``sys.get_int_max_str_digits()``, 4,300 digits by default)."""
    try:
        return int(word)
    except ValueError:
        raise PvfFormatError(
            "BAD_TEXT", f"integer of {len(word)} characters is too long at line {line}", offset=pos
        ) from None


def _is_comment_line(text: str, pos: int) -> bool:
    line_start = text.rfind("\n", 0, pos) + 1
    return text[line_start:pos].strip(" \t") == ""


def lex(text: str) -> Iterator[Lexeme]:
    """Split script text into lexemes; ``#`` at the start of a line comments out the line."""
    pos = 0
    n = len(text)
    line = 1
    line_start = 0
    while pos < n:
        c = text[pos]
        if c in _SPACE:
            if c == "\n":
                line += 1
                line_start = pos + 1
            pos += 1
            continue
        start = pos
        start_line = line
        col = pos - line_start + 1
        kind: str
        value: object
        if c == "#" and _is_comment_line(text, pos):
            nl = text.find("\n", pos)
            pos = n if nl < 0 else nl
            continue
        if c == "`":
            value, pos = _read_backtick(text, pos)
            kind = "string"
        elif c == "[":
            m = _SECTION.match(text, pos)
            if not m:
                raise PvfFormatError("BAD_TEXT", f"unterminated section tag at line {line}", offset=pos)
            kind, value, pos = "section", m.group(0), m.end()
        elif c == "{":
            m = _ESCAPE_HEAD.match(text, pos)
            if not m:
                raise PvfFormatError("BAD_TEXT", f"bad {{N=value}} escape at line {line}", offset=pos)
            raw, number = m.group(1) == "#", int(m.group(2))
            if number > 255:
                raise PvfFormatError("BAD_TEXT", f"type {number} is not a byte", offset=pos)
            pos = m.end()
            payload: str | int
            if text.startswith("`", pos):
                payload, pos = _read_backtick(text, pos)
            else:
                mi = _ESCAPE_INT.match(text, pos)
                if not mi:
                    raise PvfFormatError("BAD_TEXT", f"bad escape payload at line {line}", offset=pos)
                payload, pos = _text_int(mi.group(0), line, pos), mi.end()
            if not text.startswith("}", pos):
                raise PvfFormatError("BAD_TEXT", f"escape not closed by '}}' at line {line}", offset=pos)
            pos += 1
            kind, value = "escape", (number, raw, payload)
        elif c == "<":
            m = _LINK_HEAD.match(text, pos)
            if not m:
                raise PvfFormatError("BAD_TEXT", f"bad <id::key> link at line {line}", offset=pos)
            pos = m.end()
            display: str | None = None
            if text.startswith("`", pos):
                display, pos = _read_backtick(text, pos)
            if not text.startswith(">", pos):
                raise PvfFormatError("BAD_TEXT", f"link not closed by '>' at line {line}", offset=pos)
            pos += 1
            kind, value = "link", (_text_int(m.group(1), line, start + 1), m.group(2), display)
        else:
            m = _NUMBER.match(text, pos)
            if not m or (m.end() < n and text[m.end()] not in _ENDERS):
                end = pos
                while end < n and text[end] not in _ENDERS:
                    end += 1
                raise PvfFormatError(
                    "BAD_TEXT", f"unknown token {text[pos:end][:40]!r} at line {line}", offset=pos
                )
            word = m.group(0)
            pos = m.end()
            if any(ch in word for ch in ".eE"):
                kind, value = "float", word
            else:
                kind, value = "int", _text_int(word, line, start)
        if kind == "string":
            # strings may span lines: keep the line counter honest
            nls = text.count("\n", start, pos)
            if nls:
                line += nls
                line_start = text.rfind("\n", start, pos) + 1
        yield Lexeme(kind, value, start, pos, start_line, col)


def link_parts(lx: Lexeme) -> tuple[int, str, str | None]:
    """(id, key, display) of a ``link`` lexeme."""
    return cast("tuple[int, str, str | None]", lx.value)


def escape_parts(lx: Lexeme) -> tuple[int, bool, str | int]:
    """(type number, raw NKPI type?, payload) of an ``escape`` lexeme."""
    return cast("tuple[int, bool, str | int]", lx.value)


# --------------------------------------------------------------------------------------------- values


def format_float(bits: int) -> str | None:
    """Shortest positional float32 text with a dot, or None for NaN/inf/-0.0 (use ``{4=bits}``)."""
    f = np.frombuffer(struct.pack("<I", bits & 0xFFFFFFFF), dtype="<f4")[0]
    if not np.isfinite(f) or (f == 0 and np.signbit(f)):
        return None
    s = np.format_float_positional(f, unique=True, trim="0")
    return s if "." in s else s + ".0"


#: 2**128 - 2**103: the least double that rounds to float32 infinity (the tie goes to the even
#: neighbour, which is infinity, float32's largest finite value having an odd significand).
_F32_OVERFLOW = 3.4028235677973366e38
_F32_INF, _F32_NEG_INF = 0x7F800000, 0xFF800000


def parse_float_bits(word: str) -> int:
    """The float32 bits of a decimal text; a magnitude float32 cannot hold is ±infinity (as the
    cast makes it, without numpy's overflow warning). Compilers use :func:`text_float_bits`."""
    try:
        x = float(word)
    except (ValueError, OverflowError) as exc:
        raise PvfFormatError("BAD_TEXT", f"bad float {word!r}") from exc
    if abs(x) >= _F32_OVERFLOW:
        return _F32_NEG_INF if x < 0 else _F32_INF
    return int(np.frombuffer(np.float32(x).tobytes(), dtype="<u4")[0])


def text_float_bits(word: str) -> int:
    """The float32 bits of a float written in script text, as the compilers store it: BAD_TEXT
    (without an offset; the caller names the line) when float32 cannot hold it (``1e39``), rather
    than an infinity the author did not write."""
    bits = parse_float_bits(word)
    if bits in (_F32_INF, _F32_NEG_INF):
        raise PvfFormatError("BAD_TEXT", f"float {word} does not fit in float32")
    return bits


def int_value(v: int) -> int:
    """A 4-byte unit value from a text integer (i32 or u32 range)."""
    if not -(2**31) <= v <= 0xFFFFFFFF:
        raise PvfFormatError("BAD_TEXT", f"integer {v} does not fit in 32 bits")
    return v & 0xFFFFFFFF


def _signed(v: int) -> int:
    return v - (1 << 32) if v & 0x80000000 else v


def quote(s: str) -> str:
    """A string in backticks, doubling any backtick inside."""
    return "`" + s.replace("`", "``") + "`"


def _is_tag(s: str) -> bool:
    return (
        len(s) >= 2
        and s[0] == "["
        and s[-1] == "]"
        and "]" not in s[1:-1]
        and "\n" not in s
        and "\r" not in s
    )


# ------------------------------------------------------------------------------------------- rendering

#: Per-section line layouts: values per line, or ("first", n) = the first value alone, then n per line,
#: or "index" = the first value is the count per line (pvfine's rendering rules).
SECTION_LAYOUT: dict[str, int | str] = {
    "[level info]": "index",
    "[skill data up]": 7,
    "[skill levelup]": 3,
    "[input item]": 2,
    "[output item]": 2,
}


_OPEN, _CLOSE, _NUM, _STR = 0, 1, 2, 3

#: Rendered pieces of string units per string source (sources only ever append, so entries stay true).
_PIECES: WeakKeyDictionary[object, dict[int, tuple[int, str]]] = WeakKeyDictionary()
_FLOATS: dict[int, str] = {}
#: Strings used by many files (tags, common values) are cached; list paths used once stop filling it.
PIECE_CACHE_LIMIT = 1 << 17


def _float_piece(v: int, float_type: int) -> str:
    text = _FLOATS.get(v)
    if text is None:
        f = format_float(v)
        if f is None:  # the bits escape uses the family's float type number: not cached
            return f"{{{float_type}={_signed(v)}}}"
        text = f
        if len(_FLOATS) < 65536:
            _FLOATS[v] = text
    return text


def _crlf_shown(s: str, strings: StringSource) -> str:
    """A classic string as text: CRLF line breaks (pvfUtility stores them) show as the text's own
    line breaks when that is unambiguous — the string has no other CR/LF and no LF-only twin in the
    table — so the compiler's CRLF rule (:func:`_crlf_stored`) gives the same string back."""
    rest = s.replace("\r\n", "")
    if len(rest) == len(s) or "\r" in rest or "\n" in rest:
        return s
    shown = s.replace("\r\n", "\n")
    find = getattr(strings, "find", None)
    return shown if find is not None and find(shown) is None else s


_BARE_LF = re.compile(r"(?<!\r)\n")


def _crlf_stored(s: str, strings: StringSink) -> str:
    """A classic string from text: line breaks are stored as CRLF, as pvfUtility's compiler joins
    a multi-line string's lines — unless the table already holds the string exactly as written."""
    if "\n" not in s or not _BARE_LF.search(s):
        return s
    find = getattr(strings, "find", None)
    if find is not None and find(s) is not None:
        return s
    return _BARE_LF.sub("\r\n", s)


def _string_piece(strings: StringSource, raw: int, classic: bool, v: int) -> tuple[int, str] | None:
    """The rendered piece of a string unit, or None when its reference does not resolve."""
    s = strings.string_at(v)
    if s is None:
        return None
    if classic and "\r\n" in s:
        s = _crlf_shown(s, strings)
    view = raw if classic else NKPI_TO_VIEW.get(raw, -1)
    if view == SECTION and _is_tag(s):
        return (_CLOSE if s.startswith("[/") else _OPEN, s)
    if view == STRING:
        return (_STR, quote(s))
    return (_STR, f"{{{raw}={quote(s)}}}")


def _view_items(
    stream: TokenStream, strings: StringSource, links: LinkResolver | None
) -> list[tuple[int, str]]:
    items: list[tuple[int, str]] = []
    append = items.append
    types = stream.tokens["type"].tolist()
    values = stream.tokens["value"].tolist()
    classic = stream.family is Family.CLASSIC
    if classic:
        int_t, float_t, string_types = INT, FLOAT, CLASSIC_STRING_TYPES
    else:
        int_t, float_t, string_types = 0, 2, NKPI_STRING_TYPES
    family_bit = (1 << 32) if classic else 0
    try:
        cache = _PIECES.setdefault(strings, {})
    except TypeError:  # a source that cannot be weakly referenced: no cache
        cache = {}
    i, n = 0, len(types)
    while i < n:
        raw = types[i]
        v = values[i]
        if raw == int_t:
            append((_NUM, str(v - 4294967296 if v & 0x80000000 else v)))
            i += 1
            continue
        if raw == float_t:
            append((_NUM, _float_piece(v, float_t)))
            i += 1
            continue
        if raw in string_types:
            # the same type number means different views in the two families: key by family too
            key = raw << 33 | family_bit | v
            piece = cache.get(key)
            if piece is None:
                piece = _string_piece(strings, raw, classic, v)
                if piece is None:
                    append((_STR, f"{{{raw}={_signed(v)}}}"))
                    i += 1
                    continue
                if len(cache) < PIECE_CACHE_LIMIT:
                    cache[key] = piece
            append(piece)
            i += 1
            continue
        if classic and raw == LINK_INDEX and i + 1 < n and types[i + 1] == LINK:
            key_text = strings.string_at(values[i + 1])
            if key_text is not None and not any(c in key_text for c in "`>\r\n"):
                shown = links(_signed(v), key_text) if links else None
                append((_STR, f"<{_signed(v)}::{key_text}{quote(shown or '')}>"))
                i += 2
                continue
        # escapes carry the family's own type number (spec §2.2 classic, §5.1 NKPI); NKPI types with
        # no classic equivalent start their own line, as they did in the earlier {#N=…} form
        append((_NUM if classic or raw in NKPI_TO_VIEW else _STR, f"{{{raw}={_signed(v)}}}"))
        i += 1
    return items


def _pairing(items: list[tuple[int, str]]) -> set[int]:
    """Indexes of opening tags that have a matching close tag (the block sections)."""
    paired: set[int] = set()
    stack: list[tuple[str, int]] = []
    for idx, (kind, text) in enumerate(items):
        if kind == _OPEN:
            stack.append((text, idx))
        elif kind == _CLOSE:
            want = "[" + text[2:]
            for pos in range(len(stack) - 1, -1, -1):
                if stack[pos][0] == want:
                    paired.add(stack[pos][1])
                    del stack[pos:]
                    break
    return paired


def render_script(
    stream: TokenStream,
    strings: StringSource,
    *,
    path: str | None = None,
    links: LinkResolver | None = None,
    newline: str = "\n",
) -> str:
    """Render a decoded script as ``#PVF_File`` text (layout as pvfUtility's pretty exporter)."""
    items = _view_items(stream, strings, links)
    is_list = path is not None and path.lower().rsplit("/", 1)[-1].endswith(".lst")
    if is_list:
        return newline.join([HEADER, "", *(text for _, text in items)])
    paired = _pairing(items) if any(kind == _CLOSE for kind, _ in items) else set()
    lines: list[str] = [HEADER, ""]
    add = lines.append
    cur: list[str] = []
    stack: list[str] = []
    indent = ""
    layout: int | str | None = None
    per_line = 0
    seen_section = False
    index_seen = False
    for idx, (kind, text) in enumerate(items):
        if kind >= _NUM:  # a value
            if kind == _STR and cur:  # strings start a line
                add(indent + "\t".join(cur))
                cur = []
            cur.append(text)
            if layout is not None:
                if layout == "index" and not index_seen:
                    index_seen = True
                    try:
                        per_line = max(int(text), 0)
                    except ValueError:
                        per_line = 0
                    add(indent + "\t".join(cur))
                    cur = []
                elif per_line and len(cur) >= per_line:
                    add(indent + "\t".join(cur))
                    cur = []
            if kind == _STR and cur and "\n" in text:
                # nothing follows a multi-line string's closing backtick (only pvfUtility accepts it)
                add(indent + "\t".join(cur))
                cur = []
            continue
        if cur:
            add(indent + "\t".join(cur))
            cur = []
        if kind == _OPEN:
            depth = len(stack)
            if depth == 0 and seen_section:
                add("")
            seen_section = True
            add("\t" * depth + text)
            indent = "\t" * (depth + 1)
            if idx in paired:
                stack.append(text)
            layout = SECTION_LAYOUT.get(text)
            per_line = layout if isinstance(layout, int) else 0
            index_seen = False
        else:
            want = "[" + text[2:]
            if want in stack:
                del stack[len(stack) - 1 - stack[::-1].index(want) :]
            add("\t" * len(stack) + text)
            indent = "\t" * (len(stack) + 1) if stack else ("\t" if seen_section else "")
            layout, per_line = None, 0
    if cur:
        add(indent + "\t".join(cur))
    return newline.join(lines) + newline


# ------------------------------------------------------------------------------------------- compiling


#: Escape numbers only the NKPI (pvfine) numbering writes, and those only the legacy classic view wrote.
NKPI_ONLY_ESCAPES = frozenset({0, 1, 5, 7, 9, 10})
LEGACY_ONLY_ESCAPES = frozenset({6})

NUMBERING_CLASSIC = "classic"
NUMBERING_NKPI = "nkpi"
NUMBERING_LEGACY = "legacy"


def escape_numbering(lexemes: list[Lexeme], family: Family) -> str:
    """Which numbering the ``{N=…}`` escapes of a text use (see the module docstring).

    Classic text is always classic. NKPI text is ``nkpi`` (pvfine's numbering) unless it carries a
    marker of moddesk's earlier classic view (``{6=`…`}`` or a ``{#N=…}``) and no NKPI-only number;
    markers of both raise BAD_TEXT (guessing would silently retype units).
    """
    if family is Family.CLASSIC:
        return NUMBERING_CLASSIC
    legacy_at: Lexeme | None = None
    nkpi_at: Lexeme | None = None
    for lx in lexemes:
        if lx.kind != "escape":
            continue
        number, raw, payload = escape_parts(lx)
        # NKPI text writes a resolved type-6 string in backticks, never {6=`…`}; {6=n} is an
        # unresolved reference in both numberings and proves nothing
        if raw or (number in LEGACY_ONLY_ESCAPES and isinstance(payload, str)):
            legacy_at = legacy_at or lx
        elif number in NKPI_ONLY_ESCAPES:
            nkpi_at = nkpi_at or lx
    if legacy_at is None:
        return NUMBERING_NKPI
    if nkpi_at is None:
        return NUMBERING_LEGACY
    raise PvfFormatError(
        "BAD_TEXT",
        f"escapes mix the NKPI numbering (line {nkpi_at.line}: {{5=…}} command, {{7=…}} separator) with the "
        f"classic view (line {legacy_at.line}: {{6=…}}, {{#N=…}}); write NKPI text in one numbering",
        offset=legacy_at.start,
    )


def compile_script(text: str, family: Family, strings: StringSink) -> TokenStream:
    """Compile ``#PVF_File`` text into units of ``family``, interning strings into ``strings``.

    The native core compiles when it is the chosen one (:func:`compile_script_bytes`); the result,
    the strings interned and the errors are the reference's (:func:`reference_compile_script`).
    """
    if native_pvf() is None:
        return reference_compile_script(text, family, strings)
    return decode_tokens(compile_script_bytes(text, family, strings), family)


def compile_script_bytes(text: str, family: Family, strings: StringSink) -> bytes:
    """The script bytes of ``text`` (``encode_tokens(compile_script(...))``), natively when the
    native core is chosen: it lexes and compiles, and the strings it found are interned here in
    the order the reference interns them, so the table grows exactly as the reference's would."""
    native = native_pvf()
    if native is not None:
        compiled = native.compile_text(text, family is Family.CLASSIC)
        if compiled is not None:
            try:
                refs = _intern_all(
                    compiled.strings(), family, strings, lambda k: (text, *compiled.site(k)), []
                )
            except _InternError as failed:
                raise failed.error from failed.__cause__
            error = compiled.error()
            if error is not None:
                raise _native_error(error)
            return bytes(compiled.encode(refs))
    return encode_tokens(reference_compile_script(text, family, strings))


def compile_scripts_bytes(
    texts: list[str], family: Family, strings: StringSink
) -> list[bytes | PvfFormatError]:
    """The script bytes of many texts, or each one's error, as if compiled one after another
    (strings of a failed text that precede its error are interned, as the reference does).

    With the native core the texts are compiled in one call on both cores and their strings merged
    in text order; otherwise (and for texts only the reference reads exactly) one by one.
    """
    native = native_pvf()
    if native is None or not texts:
        return [_compile_one(text, family, strings) for text in texts]
    batch = native.compile_texts(texts, family is Family.CLASSIC)
    unsupported = set(batch.unsupported())
    batch_strings: list[str] = batch.strings()
    ends: list[int] = np.frombuffer(batch.string_ends(), dtype="<u4").tolist()
    out: list[bytes | PvfFormatError | None] = [None] * len(texts)
    for i, error in batch.errors():
        out[i] = _native_error(error)

    def site(g: int) -> tuple[str, int, int]:
        line, byte = batch.site(g)
        return texts[bisect.bisect_right(ends, g)], line, byte

    refs: list[int] = []
    try:
        if not unsupported:  # every string in one go: the order is the texts' order already
            _intern_all(batch_strings, family, strings, site, refs)
        else:
            for i, text in enumerate(texts):
                if i in unsupported:
                    out[i] = _compile_one(text, family, strings)
                else:
                    _intern_all(batch_strings[len(refs) : ends[i]], family, strings, site, refs)
    except _InternError as failed:
        # the reference stops that text at the string it cannot intern; later texts may share
        # strings that text never reached: compile them one by one from here
        i = bisect.bisect_right(ends, failed.index)
        out[i] = failed.error
        out[i + 1 :] = [_compile_one(t, family, strings) for t in texts[i + 1 :]]
        refs += [0] * (len(batch_strings) - len(refs))
    # one bytes per text compiled without an error (None for the others, decided above)
    encoded: list[bytes | PvfFormatError | None] = batch.encode(refs)
    for k, done in enumerate(out):
        if done is not None:
            encoded[k] = done
    return cast("list[bytes | PvfFormatError]", encoded)


def _compile_one(text: str, family: Family, strings: StringSink) -> bytes | PvfFormatError:
    try:
        return compile_script_bytes(text, family, strings)
    except PvfFormatError as exc:
        return exc


class _InternError(Exception):
    """A string of a compiled list the sink refused: its position and the reference's error."""

    def __init__(self, index: int, error: PvfFormatError) -> None:
        super().__init__(str(error))
        self.index = index
        self.error = error


def _intern_all(
    found: list[str],
    family: Family,
    strings: StringSink,
    site: Callable[[int], tuple[str, int, int]],
    refs: list[int],
) -> list[int]:
    """Intern compiled strings in order (classic ones stored with CRLF breaks), appending their
    references to ``refs`` (``found[k]`` is string ``len(refs) + k`` of its list).

    A string the sink refuses fails as the reference fails (``_InternError``): the message names
    the line of the lexeme where it first occurs, the offset is that lexeme's (``site(index)``
    gives its text, line and byte offset); the strings before it stay interned.
    """
    intern = strings.intern
    add = refs.append
    classic = family is Family.CLASSIC
    # A re-pack compiles texts whose strings the table mostly holds already: when it holds every
    # one, a single lookup pass answers what interning them one by one would (nothing is added,
    # so the order cannot matter); otherwise they are interned one by one below.
    find_many = getattr(strings, "find_many", None)
    if find_many is not None:
        stored = [_crlf_stored(s, strings) if "\n" in s else s for s in found] if classic else found
        held = find_many(stored)
        if held is not None:
            refs += held
            return refs
    try:
        if classic:
            for s in found:
                add(intern(_crlf_stored(s, strings) if "\n" in s else s))
        else:
            for s in found:
                add(intern(s))
    except PvfFormatError as exc:
        index = len(refs)
        if exc.offset is not None:
            raise _InternError(index, exc) from exc
        text, line, byte = site(index)
        start = len(text.encode("utf-8")[:byte].decode("utf-8"))
        error = PvfFormatError(exc.code, f"{exc.message} (line {line})", offset=start)
        raise _InternError(index, error) from exc
    return refs


def _native_error(error: tuple[str, str, int, str | None]) -> PvfFormatError:
    """The reference's error from the native core's (code, message, offset, unknown token)."""
    code, message, offset, token = error
    if token is not None:
        message = f"unknown token {token!r}{message}"
    return PvfFormatError(code, message, offset=offset)


_NATIVE_TEXT: tuple[object, Any] = ("", None)

#: ``os.environ``'s own mapping of encoded names to encoded values, which its ``__setitem__`` /
#: ``__delitem__`` keep in step (CPython's ``os._Environ``): reading it is ``os.environ.get``
#: without the encoding and the KeyError that make that call cost about a microsecond — once
#: per parsed or compiled text. None where ``os.environ`` is not built that way.
_ENV_DATA: dict[Any, Any] | None = getattr(os.environ, "_data", None)
_ENV_KEY: object = None
if isinstance(_ENV_DATA, dict):
    try:
        _ENV_KEY = os.environ.encodekey(CORE_ENV)
    except AttributeError:
        _ENV_DATA = None
else:
    _ENV_DATA = None


def native_pvf() -> Any:
    """``moddesk_native.pvf`` when the native core is chosen (cached per ``MODDESK_CORE`` value)."""
    global _NATIVE_TEXT
    choice = _ENV_DATA.get(_ENV_KEY) if _ENV_DATA is not None else os.environ.get(CORE_ENV)
    if _NATIVE_TEXT[0] != choice:
        module = native_core()
        _NATIVE_TEXT = (choice, None if module is None else module.pvf)
    return _NATIVE_TEXT[1]


def reference_compile_script(text: str, family: Family, strings: StringSink) -> TokenStream:
    """The reference compiler (pure Python): lex, decide the escape numbering, emit units."""
    pairs: list[tuple[int, int]] = []
    classic = family is Family.CLASSIC
    lexemes = list(lex(text))
    numbering = escape_numbering(lexemes, family) if any(lx.kind == "escape" for lx in lexemes) else ""
    for lx in lexemes:
        kind = lx.kind
        try:
            if kind == "int":
                assert isinstance(lx.value, int)
                pairs.append((INT if classic else 0, int_value(lx.value)))
            elif kind == "float":
                assert isinstance(lx.value, str)
                pairs.append((FLOAT if classic else 2, text_float_bits(lx.value)))
            elif kind == "section":
                assert isinstance(lx.value, str)
                pairs.append((SECTION if classic else 3, strings.intern(lx.value)))
            elif kind == "string":
                assert isinstance(lx.value, str)
                text = _crlf_stored(lx.value, strings) if classic else lx.value
                pairs.append((STRING if classic else 6, strings.intern(text)))
            elif kind == "link":
                if not classic:
                    raise PvfFormatError("BAD_TEXT", "NKPI has no <id::key> links; write {8=`<t::key>`}")
                link_id, key, _ = link_parts(lx)
                pairs.append((LINK_INDEX, int_value(link_id)))
                pairs.append((LINK, strings.intern(key)))
            else:
                number, raw, payload = escape_parts(lx)
                pairs.append(_escape_unit(number, raw, payload, numbering, strings))
        except PvfFormatError as exc:
            if exc.offset is None:
                raise PvfFormatError(exc.code, f"{exc.message} (line {lx.line})", offset=lx.start) from exc
            raise
    return TokenStream(family, make_tokens(pairs))


def _escape_type(number: int, raw: bool, numbering: str) -> int:
    """The unit type an escape ``{N=…}`` / ``{#N=…}`` stands for in ``numbering``."""
    if numbering == NUMBERING_CLASSIC:
        if raw:
            raise PvfFormatError("BAD_TEXT", f"{{#{number}=…}} is an NKPI raw type; classic uses {{N=…}}")
        return number
    if raw or numbering == NUMBERING_NKPI:
        return number
    if number not in VIEW_TO_NKPI:
        raise PvfFormatError("BAD_TEXT", f"classic type {number} has no NKPI equivalent; use {{#N=…}}")
    return VIEW_TO_NKPI[number]


def _escape_unit(
    number: int, raw: bool, payload: str | int, numbering: str, strings: StringSink
) -> tuple[int, int]:
    unit_type = _escape_type(number, raw, numbering)
    if isinstance(payload, str):
        if numbering == NUMBERING_CLASSIC:
            payload = _crlf_stored(payload, strings)
        return unit_type, strings.intern(payload)
    return unit_type, int_value(payload)


# -------------------------------------------------------------------------------------- normalisation


def normalize_text(text: str, family: Family = Family.CLASSIC) -> list[tuple[str, object]]:
    """The layout-free content of script text: its lexemes' kinds and values, floats as float32 bits.

    Escapes become ``(unit type of family, False, payload)``, so NKPI text in pvfine's numbering and
    in moddesk's earlier classic view normalise alike when they mean the same units. Two texts with
    equal normalisations compile to the same units; this is the documented equivalence for text
    round trips (layout and comments are not stored in the binary).
    """
    lexemes = list(lex(text))
    numbering = escape_numbering(lexemes, family)
    out: list[tuple[str, object]] = []
    for lx in lexemes:
        if lx.kind == "float":
            assert isinstance(lx.value, str)
            out.append(("float", parse_float_bits(lx.value)))
        elif lx.kind == "link":
            link_id, key, _ = link_parts(lx)
            out.append(("link", (link_id, key)))
        elif lx.kind == "escape":
            number, raw, payload = escape_parts(lx)
            unit = _escape_type(number, raw, numbering)
            out.append(("escape", (unit, False, payload)))
        else:
            out.append((lx.kind, lx.value))
    return out
