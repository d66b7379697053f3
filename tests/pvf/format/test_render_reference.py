"""The renderer as it was before the fast path (commit 3288449), kept verbatim as the reference.

``test_render_matches_reference`` checks the optimised :func:`render_script` against it byte for byte.
"""

from __future__ import annotations

import random
from pathlib import Path
from weakref import WeakKeyDictionary

import pytest

from moddesk.pvf.archive import Archive
from moddesk.pvf.format import text as fast
from moddesk.pvf.format.text import (
    HEADER,
    SECTION_LAYOUT,
    DictStrings,
    LinkResolver,
    StringSource,
    _is_tag,
    _signed,
    format_float,
    quote,
)
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
    Family,
    TokenStream,
    decode_tokens,
    make_tokens,
)
from moddesk.pvf.generate import generate_archive

_OPEN, _CLOSE, _NUM, _STR = 0, 1, 2, 3

#: Rendered pieces of string units per string source (sources only ever append, so entries stay true).
_PIECES: WeakKeyDictionary[object, dict[int, tuple[int, str]]] = WeakKeyDictionary()
_FLOATS: dict[int, str] = {}
#: Strings used by many files (tags, common values) are cached; list paths used once stop filling it.
PIECE_CACHE_LIMIT = 1 << 17


def _float_piece(v: int) -> str:
    text = _FLOATS.get(v)
    if text is None:
        f = format_float(v)
        text = f if f is not None else f"{{4={_signed(v)}}}"
        if len(_FLOATS) < 65536:
            _FLOATS[v] = text
    return text


def _string_piece(strings: StringSource, raw: int, view: int, v: int) -> tuple[int, str] | None:
    """The rendered piece of a string unit, or None when its reference does not resolve."""
    s = strings.string_at(v)
    if s is None:
        return None
    if view == SECTION and _is_tag(s):
        return (_CLOSE if s.startswith("[/") else _OPEN, s)
    if view == STRING:
        return (_STR, quote(s))
    number = str(view) if view >= 0 else f"#{raw}"
    return (_STR, f"{{{number}={quote(s)}}}")


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
            append((_NUM, _float_piece(v)))
            i += 1
            continue
        if raw in string_types:
            key = raw << 32 | v
            piece = cache.get(key)
            if piece is None:
                view = raw if classic else NKPI_TO_VIEW.get(raw, -1)
                piece = _string_piece(strings, raw, view, v)
                if piece is None:
                    number = str(view) if view >= 0 else f"#{raw}"
                    append((_STR, f"{{{number}={_signed(v)}}}"))
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
        view = raw if classic else NKPI_TO_VIEW.get(raw, -1)
        if view >= 0:
            append((_NUM, f"{{{view}={_signed(v)}}}"))
        else:
            append((_STR, f"{{#{raw}={_signed(v)}}}"))
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
            if kind == _STR and cur:
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


# ------------------------------------------------------------------------------- the comparison test


@pytest.mark.parametrize("fmt", ["classic", "90US"])
def test_render_matches_reference_on_generated_archives(fmt: str, tmp_path: Path) -> None:
    path = tmp_path / "Script.pvf"
    generate_archive(path, fmt=fmt, files=3000, seed=7)
    compared = 0
    with Archive.open(path) as pvf:
        for entry, data in pvf.iter_bytes():
            if entry.kind != "script":
                continue
            stream = decode_tokens(data, pvf.family)
            for newline in ("\n", "\r\n"):
                # twice: the first call fills the piece cache, the second reads from it
                for _ in range(2):
                    got = fast.render_script(
                        stream, pvf.strings, path=entry.path, links=pvf.resolve_link, newline=newline
                    )
                    want = render_script(
                        stream, pvf.strings, path=entry.path, links=pvf.resolve_link, newline=newline
                    )
                    assert got == want, entry.path
            compared += 1
    assert compared > 2500


_TAGS = ["[a]", "[/a]", "[b]", "[/b]", "[level info]", "[/level info]", "[skill data up]", "[input item]"]
_TEXTS = ["x", "a`b", "[c", "[/zz]", "line\nbreak", "", "<3::k>"]


@pytest.mark.parametrize("family", list(Family))
def test_render_matches_reference_on_random_units(family: Family) -> None:
    rng = random.Random(11)
    strings = DictStrings(_TAGS + _TEXTS + ["name_1", "bad`key"])
    n_strings = len(strings.strings)
    types = list(range(0, 13))
    for case in range(600):
        pairs = []
        for _ in range(rng.randrange(0, 60)):
            t = rng.choice([*types, 2, 2, 5, 5, 3, 6, 7])
            r = rng.random()
            if r < 0.5:
                v = rng.randrange(n_strings + 2)
            elif r < 0.8:
                v = rng.choice([0, 1, 2, 7, 0x80000000, 0xFFFFFFFF, 0x3F800000, 0x7FC00000, 0x80000000])
            else:
                v = rng.getrandbits(32)
            pairs.append((t, v))
        stream = TokenStream(family, make_tokens(pairs))
        path = "a/list.lst" if case % 7 == 0 else "a/b.equ"
        links = (lambda i, k: f"{i}:{k}") if case % 2 else None
        for _ in range(2):
            got = fast.render_script(stream, strings, path=path, links=links)
            assert got == render_script(stream, strings, path=path, links=links), pairs
