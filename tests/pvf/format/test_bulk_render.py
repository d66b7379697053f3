"""The bulk renderer (format/bulk.py) against render_script, byte for byte.

Generated archives of both families through ``Archive.iter_rendered`` (text and case-folded forms,
as the content index stores them), and random unit streams over a string table made of every
shape render_script treats specially: section tags and their closes, the layout sections, CRLF
and multi-line strings, backticks, link keys that may or may not form links, unresolved
references, floats without a decimal form, raw types of both numberings, list paths.
"""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from moddesk.pvf.archive import Archive
from moddesk.pvf.format import bulk
from moddesk.pvf.format.bulk import BulkRenderer, render_many
from moddesk.pvf.format.errors import PvfFormatError
from moddesk.pvf.format.text import DictStrings, render_script
from moddesk.pvf.format.tokens import Family, TokenStream, decode_tokens, encode_tokens, make_tokens
from moddesk.pvf.samples.generate import generate_archive
from moddesk.pvf.workbench.search import fold_text


def _generated(root: Path, fmt: str) -> Path:
    out = root / f"{fmt}.pvf"
    generate_archive(out, fmt=fmt, files=700, seed=18)
    return out


def _reference(archive: Archive) -> list[str | None]:
    out: list[str | None] = []
    for entry, data in archive.iter_bytes():
        try:
            out.append(archive.render(entry.path, data))
        except PvfFormatError:
            out.append(None)
    return out


def test_generated_archives_render_alike_in_bulk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bulk, "VOCABULARY_LIMIT", 300)  # the vocabulary starts afresh many times
    for fmt in ("classic", "90US", "90CN"):
        with Archive.open(_generated(tmp_path, fmt)) as archive:
            expected = _reference(archive)
            scripts = sum(1 for e, _ in archive.iter_bytes() if archive.is_script(e))
            assert scripts > 600
            # small chunks: files of one shape fall in different chunks, the vocabulary carries over
            texts = [b for _, b in archive.iter_rendered(chunk_files=97)]
            folded = [b for _, b in archive.iter_rendered(fold=True, terminator="\0")]
        assert [None if b is None else b.decode("utf-8", "surrogatepass") for b in texts] == expected, fmt
        assert folded == [fold_text(t) for t in expected], fmt


def test_worker_processes_render_alike(tmp_path: Path) -> None:
    """The pool path: strings and a LinkTable (classic links resolved up front) pickled to a worker."""
    for fmt in ("classic", "90US"):
        with Archive.open(_generated(tmp_path, fmt)) as archive:
            expected = [fold_text(t) for t in _reference(archive)]
            got = [
                b for _, b in archive.iter_rendered(fold=True, terminator="\0", chunk_files=150, workers=1)
            ]
        assert got == expected, fmt
        if fmt == "classic":  # string links were resolved in the worker
            assert sum(1 for b in got if b and b"::" in b and b"`>" in b and b"``>" not in b) > 20


def test_render_many_marks_non_scripts_and_keeps_order() -> None:
    strings = DictStrings(["[a]", "x"])
    good = encode_tokens(TokenStream(Family.CLASSIC, make_tokens([(5, 0), (7, 1), (2, 3)])))
    items = [("a.equ", good), ("b.equ", b"\x00\x01junk"), ("c.lst", good), ("d.equ", b"")]
    out = list(render_many(items, Family.CLASSIC, strings, chunk_files=3))
    assert [p for p, _ in out] == ["a.equ", "b.equ", "c.lst", "d.equ"]
    assert out[0][1] == b"#PVF_File\n\n[a]\n\t`x`\t3\n"
    assert out[1][1] is None and out[3][1] is None
    assert out[2][1] == b"#PVF_File\n\n[a]\n`x`\n3"  # a list: one item per line, no final newline


# ------------------------------------------------------------------------------------- random streams

POOL = [
    "[a]",
    "[/a]",
    "[b]",
    "[/b]",
    "[level info]",
    "[/level info]",
    "[skill data up]",
    "[skill levelup]",
    "[input item]",
    "[/input item]",
    "[output item]",
    "[/]",
    "[]",
    "[x\n]",
    "plain",
    "back`tick",
    "two\r\nlines",
    "two\nlines",
    "lone\rcr",
    "key>bad",
    "7",
    "",
    "粗体",
    "ǅ ß İ",  # case folding changes length
    "nul\x00in",
    "\udcff",
]
#: Types that matter in either numbering, plus a few that are escapes in both.
TYPES = st.one_of(st.sampled_from([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10]), st.integers(0, 255))
FLOAT_BITS = [0x3FC00000, 0x80000000, 0x7F800000, 0x7FC00001, 0x4B000000, 0x00000001, 0xC2F60000]
VALUES = st.one_of(
    st.integers(0, len(POOL) + 2),  # string references, some past the table
    st.sampled_from([*FLOAT_BITS, 0xFFFFFFFF, 0x80000000, 5, 3, 2, 1, 0]),
    st.integers(0, 0xFFFFFFFF),
)
UNIT = st.tuples(TYPES, VALUES)
#: Shapes that exercise the layout: tags with values after them.
SECTIONED = st.lists(
    st.tuples(st.sampled_from([3, 5]), st.integers(0, 13)).flatmap(
        lambda tag: st.lists(UNIT, max_size=9).map(lambda units: [tag, *units])
    ),
    max_size=8,
).map(lambda blocks: [u for block in blocks for u in block])
STREAM = st.one_of(st.lists(UNIT, max_size=40), SECTIONED)


def _link(link_id: int, key: str) -> str | None:
    return None if link_id % 3 == 0 else f"shown {link_id} {key}`"


@settings(max_examples=70, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.tuples(STREAM, st.sampled_from(["f.equ", "g.LST", "dir.lst/h.skl"])), max_size=6),
    st.sampled_from(list(Family)),
    st.booleans(),
    st.sampled_from(["\n", "\r\n"]),
    st.sampled_from([bulk.BIG_FILE_UNITS, 3]),
)
# a classic link id with the high bit set (hypothesis found the bulk pair overflowing int64)
@example([([(9, 2_147_483_648), (10, 0)], "f.equ")], Family.CLASSIC, False, "\n", 3)
def test_random_streams_render_alike(
    files: list[tuple[list[tuple[int, int]], str]], family: Family, fold: bool, newline: str, big: int
) -> None:
    strings = DictStrings(POOL)
    streams = [TokenStream(family, make_tokens(units)) for units, _ in files]
    datas = [encode_tokens(s) for s in streams]
    paths = [p for _, p in files]
    renderer = BulkRenderer(family, strings, links=_link, fold=fold, newline=newline, terminator="\0")
    saved = bulk.BIG_FILE_UNITS
    bulk.BIG_FILE_UNITS = big  # 3: most files count as big (lists in slices, others one at a time)
    try:
        outs = [renderer.render_chunk(paths, datas) for _ in range(2)]  # the second on a filled vocabulary
    finally:
        bulk.BIG_FILE_UNITS = saved
    for got in outs:
        for data, path, out in zip(datas, paths, got, strict=True):
            text = render_script(
                decode_tokens(data, family), strings, path=path, links=_link, newline=newline
            )
            want = (text.casefold() if fold else text) + "\0"
            assert out == want.encode("utf-8", "surrogatepass")


@given(st.lists(st.integers(0, (1 << 40) - 1) | st.integers(0, 9), max_size=300))
def test_unique_inverse_is_numpy_unique(keys: list[int]) -> None:
    arr = np.array(keys, dtype=np.int64)
    uniq, inverse = bulk._unique_inverse(arr, 40)
    want_uniq, want_inverse = np.unique(arr, return_inverse=True)
    assert uniq.tolist() == want_uniq.tolist()
    assert inverse.tolist() == want_inverse.reshape(-1).tolist()


def test_hand_picked_layouts() -> None:
    """Layout sections, nesting and pairing quirks (each line here is a branch of render_script)."""
    strings = DictStrings(POOL)
    f32 = struct.unpack("<I", struct.pack("<f", 1.5))[0]
    shapes = [
        [(5, 4), (2, 3), *[(2, i) for i in range(8)], (5, 5)],  # [level info] 3 per line
        [(5, 4), (4, f32), (2, 1), (2, 2)],  # a float count: no per-line layout
        [(5, 4), (7, 20), (2, 1), (2, 2)],  # a string count
        [(5, 6), *[(2, i) for i in range(9)], (7, 16), (2, 1)],  # 7 per line, a multi-line string
        [(5, 0), (5, 2), (2, 1), (5, 1), (5, 3), (2, 2)],  # [a][b] 1 [/a] [/b]: a closes over b
        [(5, 3), (2, 1), (5, 0), (5, 1), (2, 2), (5, 1)],  # an orphan close, a doubled close
        [(2, 7), (7, 14), (5, 1), (2, 1)],  # values before any tag, then a lone close
        [(9, 5), (10, 14), (9, 6), (10, 19), (9, 3), (10, 14), (9, 1)],  # links, a bad key, a lone 9
    ]
    streams = [TokenStream(Family.CLASSIC, make_tokens(units)) for units in shapes]
    got = BulkRenderer(Family.CLASSIC, strings, links=_link).render_chunk(
        ["s.skl"] * len(shapes), [encode_tokens(s) for s in streams]
    )
    for stream, out in zip(streams, got, strict=True):
        assert out is not None
        assert out.decode("utf-8", "surrogatepass") == render_script(stream, strings, links=_link)


def test_big_entries(monkeypatch: pytest.MonkeyPatch) -> None:
    """Entries past BIG_FILE_UNITS: lists in slices (a link pair on a slice edge stays whole), other
    scripts one at a time; both equal render_script."""
    monkeypatch.setattr(bulk, "BIG_FILE_UNITS", 3)
    strings = DictStrings(POOL)
    units = [(2, 1), (2, 2), (9, 5), (10, 14), (2, 3), (7, 14), (5, 0), (2, 4)]
    stream = TokenStream(Family.CLASSIC, make_tokens(units))
    renderer = BulkRenderer(Family.CLASSIC, strings, links=_link)
    got = renderer.render_chunk(["a.lst", "b.equ", "c.lst"], [encode_tokens(stream)] * 2 + [b"\xb0\xd0"])
    want_list = render_script(stream, strings, path="a.lst", links=_link)
    assert "\n<5::plain`shown 5 plain```>\n" in want_list
    assert got[0] == want_list.encode()
    assert got[1] == render_script(stream, strings, path="b.equ", links=_link).encode()
    assert got[2] == b"#PVF_File\n"
