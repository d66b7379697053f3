"""Every parser either parses or raises PvfFormatError with a code — never another exception."""

import struct
import tracemalloc
from functools import lru_cache
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from moddesk.pvf.archive import Archive
from moddesk.pvf.docparse import build_document
from moddesk.pvf.format.errors import ERROR_CODES, PvfFormatError
from moddesk.pvf.format.lists import parse_list, parse_str
from moddesk.pvf.format.strings import StringPools, StringTable
from moddesk.pvf.format.text import DictStrings, compile_script, render_script
from moddesk.pvf.format.tokens import Family, decode_tokens
from moddesk.pvf.samples.generate import generate_archive

FUZZ = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@lru_cache(maxsize=4)
def _generated(fmt: str) -> bytes:
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "g.pvf"
        generate_archive(p, fmt=fmt, files=40, seed=5)
        return p.read_bytes()


def _exercise(data: bytes) -> None:
    """Open, list and read every entry the way a user would."""
    try:
        with Archive.from_bytes(data) as pvf:
            for entry in pvf.entries[:50]:
                try:
                    pvf.read_text(entry)
                except PvfFormatError as exc:
                    assert exc.code in ERROR_CODES
            pvf.verify()
    except PvfFormatError as exc:
        assert exc.code in ERROR_CODES


@FUZZ
@given(st.binary(max_size=600))
def test_random_bytes_as_archive(data: bytes) -> None:
    _exercise(data)


@FUZZ
@given(st.sampled_from(["classic", "90US", "90CN"]), st.data())
def test_mutated_generated_archives(fmt: str, data: st.DataObject) -> None:
    raw = bytearray(_generated(fmt))
    kind = data.draw(st.sampled_from(["flip", "truncate", "splice"]))
    if kind == "flip":
        for _ in range(data.draw(st.integers(1, 8))):
            pos = data.draw(st.integers(0, len(raw) - 1))
            raw[pos] ^= data.draw(st.integers(1, 255))
    elif kind == "truncate":
        raw = raw[: data.draw(st.integers(0, len(raw) - 1))]
    else:
        pos = data.draw(st.integers(0, len(raw) - 4))
        raw[pos : pos + 4] = struct.pack(
            "<I", data.draw(st.sampled_from([0, 0x7FFFFFFF, 0xFFFFFFFF, 0x10000000]))
        )
    _exercise(bytes(raw))


def test_lying_headers_do_not_allocate_what_they_claim() -> None:
    """A classic header claiming 2^31 files and an NKPI pool claiming 2 GiB fail fast and small."""
    guid = b"x" * 36
    classic = struct.pack("<i", 36) + guid + struct.pack("<iiIi", 1, 0x7FFFFFFC, 0, 0x7FFFFFFF) + b"\0" * 64
    nkpi = bytearray(_generated("90US"))
    tracemalloc.start()
    for data in (classic, bytes(nkpi[:200]), bytes(nkpi[:-5])):
        with pytest.raises(PvfFormatError):
            Archive.from_bytes(data).namelist()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 16 << 20


@FUZZ
@given(st.binary(max_size=400), st.sampled_from(list(Family)))
def test_random_token_streams_decode_and_render(data: bytes, family: Family) -> None:
    strings = DictStrings(
        [
            "[a]",
            "[/a]",
            "text",
            "`odd`",
            "line\nbreak",
            "[b",
            "c\r\nr",
            "m\r\nx\ny",
            "w\r\r\nz",
            "t\nu",
            "t\r\nu",
        ]
    )
    try:
        stream = decode_tokens(data, family)
    except PvfFormatError as exc:
        assert exc.code == "BAD_TOKEN"
        return
    text = render_script(stream, strings)
    again = compile_script(text, family, strings)
    assert again.tokens.tolist() == stream.tokens.tolist()


TEXT_ALPHABET = st.sampled_from(list("[]/`{}<>=:#.-+0123456789 \t\nabc粗体"))


@FUZZ
@given(st.text(TEXT_ALPHABET, max_size=200), st.sampled_from(list(Family)))
def test_random_text_compiles_or_raises_bad_text(text: str, family: Family) -> None:
    try:
        stream = compile_script(text, family, DictStrings())
    except PvfFormatError as exc:
        assert exc.code == "BAD_TEXT"
        return
    assert len(stream) >= 0


@FUZZ
@given(st.text(TEXT_ALPHABET, max_size=200))
def test_random_text_as_document(text: str) -> None:
    try:
        doc = build_document(text)
    except PvfFormatError as exc:
        assert exc.code == "BAD_TEXT"
        return
    rendered = doc.render()
    assert build_document(rendered).render() == rendered


@FUZZ
@given(st.binary(max_size=300))
def test_random_string_tables(data: bytes) -> None:
    try:
        table = StringTable.parse(data, "cp950")
    except PvfFormatError as exc:
        assert exc.code == "BAD_STRING_TABLE"
        return
    assert table.to_bytes() == data
    for i in range(len(table)):
        assert isinstance(table.string_at(i), str)


@FUZZ
@given(st.binary(max_size=200), st.binary(max_size=200), st.integers(0, 400))
def test_random_pools(a: bytes, w: bytes, magic: int) -> None:
    pools = StringPools(a, w)
    s = pools.string_at(magic)
    assert s is None or isinstance(s, str)


@FUZZ
@given(st.binary(max_size=200), st.sampled_from(list(Family)))
def test_random_lists(data: bytes, family: Family) -> None:
    strings = DictStrings(["a.equ", "b/c.stk"])
    try:
        stream = decode_tokens(data, family)
        parse_list(stream, strings)
    except PvfFormatError as exc:
        assert exc.code in {"BAD_TOKEN", "BAD_LIST"}


@FUZZ
@given(st.text(max_size=300))
def test_random_str_files(text: str) -> None:
    table = parse_str(text)
    assert all(">" not in k for k in table)
