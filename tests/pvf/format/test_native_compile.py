"""The native compiler (``moddesk_native.pvf.compile_text`` / ``compile_texts``) against the reference.

Every text is compiled by ``reference_compile_script`` and by the native path of
``compile_script_bytes`` / ``compile_scripts_bytes`` into twin string sinks (a plain list, a classic
``StringTable`` holding strings already, NKPI ``StringPools``): the bytes, the error (code, message,
offset) and the sink afterwards — every string interned, in the same order, even by a text that
then fails — must be the same. Texts: the real corpus, every script of generated archives of each
family, hypothesis texts built from the lexer's own pieces, and broken texts.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from moddesk.pvf.archive import Archive
from moddesk.pvf.format.errors import PvfFormatError
from moddesk.pvf.format.strings import StringPools, StringTable
from moddesk.pvf.format.text import (
    DictStrings,
    StringSink,
    compile_script,
    compile_script_bytes,
    compile_scripts_bytes,
    reference_compile_script,
)
from moddesk.pvf.format.tokens import Family, encode_tokens
from moddesk.pvf.samples.generate import generate_archive

from ..cores import use_core as _core

pytest.importorskip("moddesk_native", reason="the native core is not built (make native)")

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
Outcome = tuple[object, ...]


def _state(sink: StringSink) -> object:
    if isinstance(sink, DictStrings):
        return list(sink.strings)
    if isinstance(sink, StringTable):
        return (list(sink.raw), sink.added)
    assert isinstance(sink, StringPools)
    return (bytes(sink.pool_a), bytes(sink.pool_w))


def _error(exc: PvfFormatError) -> Outcome:
    return ("error", exc.code, exc.message, exc.offset, exc.path)


def _reference(text: str, family: Family, sink: StringSink) -> Outcome:
    try:
        return ("ok", encode_tokens(reference_compile_script(text, family, sink)))
    except PvfFormatError as exc:
        return _error(exc)


def _native(text: str, family: Family, sink: StringSink) -> Outcome:
    with _core("native"):
        try:
            return ("ok", compile_script_bytes(text, family, sink))
        except PvfFormatError as exc:
            return _error(exc)


def _sinks(family: Family) -> list[StringSink]:
    if family is Family.CLASSIC:
        return [
            DictStrings(),
            StringTable.new("cp950", ["[name]", "one\ntwo", "x", "`", "三"]),
            StringTable.new("cp949", ["[name]"]),
        ]
    return [DictStrings(["[name]"]), StringPools.new(), StringPools.new(ascii_in_utf8=False)]


def _assert_same(texts: list[str], family: Family) -> int:
    """Each text alone, then all of them as one batch, into every kind of sink; the failures seen."""
    failures = 0
    for base in _sinks(family):
        ref_sink, nat_sink = copy.deepcopy(base), copy.deepcopy(base)
        expected = []
        for text in texts:
            want = _reference(text, family, ref_sink)
            got = _native(text, family, nat_sink)
            assert got == want, (text[:300], family)
            assert _state(nat_sink) == _state(ref_sink), text[:300]
            expected.append(want)
            failures += want[0] == "error"
        batch_sink = copy.deepcopy(base)
        with _core("native"):
            answers = compile_scripts_bytes(texts, family, batch_sink)
        got_all = [_error(a) if isinstance(a, PvfFormatError) else ("ok", a) for a in answers]
        assert got_all == expected
        assert _state(batch_sink) == _state(ref_sink)
    return failures


def test_corpus_texts_compile_alike(pvf_corpus: Path) -> None:
    files = [
        p for p in sorted(pvf_corpus.rglob("*")) if p.is_file() and p.suffix not in (".md", ".tsv", ".bin")
    ]
    texts = [p.read_text(encoding="utf-8", errors="surrogateescape") for p in files]
    assert len(texts) > 100
    for family in Family:
        _assert_same(texts, family)


@pytest.fixture(scope="module")
def generated_texts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Family, list[str]]]:
    root = tmp_path_factory.mktemp("compile")
    out = {}
    for fmt in ("classic", "90US", "90CN"):
        path = root / f"{fmt}.pvf"
        generate_archive(path, fmt=fmt, files=600, seed=28)
        with _core("python"), Archive.open(path) as archive:
            texts = [t.decode("utf-8", "surrogateescape") for _, t in archive.iter_rendered() if t]
            out[fmt] = (archive.family, [t for t in texts if t.startswith("#PVF_File")])
    return out


@pytest.mark.parametrize("fmt", ["classic", "90US", "90CN"])
def test_generated_archive_texts_compile_alike(
    generated_texts: dict[str, tuple[Family, list[str]]], fmt: str
) -> None:
    family, texts = generated_texts[fmt]
    assert len(texts) > 400
    _assert_same(texts, family)


BAD = [
    "`open",
    "[open",
    "[a\n]",
    "{6=`x`",
    "{x=1}",
    "{1234=1}",
    "{999=1}",
    "{6=}",
    "{6=1",
    "<3::k",
    "<::k>",
    "<3:k>",
    "<3::k`d`x>",
    "<3::k`open",
    "<99999999999::k>",
    "abc",
    "中文 1",
    "1.2.3x",
    "1e",
    "+",
    ".",
    "-.e1",
    "1 # not a comment",
    "\r# not a comment either",
    "99999999999",
    "-2147483649",
    "-0000000000000000000002147483648",
    "4294967296",
    "{4=`x`}",
    "{#6=`x`}",
    "{6=`x`} {5=`y`}",
    "{#3=1} {7=`,`}",
    "{11=`x`}",
    "<3::key>",
    "`a`\n\n{6=99999999999}",
    "x" * 100,
    "1" * 5000,
    "7" * 700,
    "{3=" + "9" * 5000 + "}",
    "<" + "1" * 5000 + "::k>",
    "1" * 700 + ".5",
    "\x00\x01 1",
    "1\x0b",
    "`a\nb`\nbad`",
    "{6=`a\nb`}\nbad",
    "1e39",
    "-3.4028236e38",
    "3.4028235677973366e38",
    "1" * 39 + ".0",
    "1e400",
]


@pytest.mark.parametrize("family", list(Family))
def test_broken_texts_fail_alike(family: Family) -> None:
    texts = [f"#PVF_File\n[name]\n`before`\t`a\nb`\n{bad}\n`after`\n" for bad in BAD] + BAD
    assert _assert_same(texts, family) >= len(BAD)


@pytest.mark.filterwarnings("error")  # numpy's overflow warning included: the cast never overflows
@pytest.mark.parametrize("core", ["python", "native"])
def test_float32_overflow_is_bad_text(core: str) -> None:
    """A float written larger than float32 holds is BAD_TEXT naming its line and offset, not an
    infinity; float32's largest value itself compiles."""
    for family in Family:
        with _core(core):
            with pytest.raises(PvfFormatError) as caught:
                compile_script_bytes("[a]\n\t1.5\t-1e39\n", family, DictStrings())
            assert (caught.value.code, caught.value.message, caught.value.offset) == (
                "BAD_TEXT",
                "float -1e39 does not fit in float32 (line 2)",
                9,
            )
            assert compile_script_bytes("[a]\n3.4028235e38\n", family, DictStrings()).endswith(
                bytes([4 if family is Family.CLASSIC else 2]) + (0x7F7FFFFF).to_bytes(4, "little")
            )


def test_strings_that_cannot_be_encoded_fail_alike() -> None:
    texts = ["[a]\n`ok`", "[b]\n`😀`\n`later`", "`later`\n`ok`", "[c]\n`fine`"]
    for sink in (StringTable.new("cp949"), StringTable.new("cp950", ["ok"])):
        ref_sink, nat_sink, batch_sink = copy.deepcopy(sink), copy.deepcopy(sink), copy.deepcopy(sink)
        want = [_reference(t, Family.CLASSIC, ref_sink) for t in texts]
        assert [_native(t, Family.CLASSIC, nat_sink) for t in texts] == want
        assert want[1][1] == "ENCODING"
        with _core("native"):
            got = compile_scripts_bytes(texts, Family.CLASSIC, batch_sink)
        assert [_error(a) if isinstance(a, PvfFormatError) else ("ok", a) for a in got] == want
        assert _state(batch_sink) == _state(ref_sink) == _state(nat_sink)


def test_batches_whose_strings_are_all_held_compile_alike() -> None:
    """A batch compiled a second time into the same sink finds every string held already (one
    lookup pass, ``find_many``); a string that cannot be stored still fails as the reference's."""
    texts = [
        "#PVF_File\n[name]\n\t`Sword`\t12\t1.5\n\t`a\nb`\t`a\r\nb`\n[/name]\n",
        "[a]\n`x`\t`三`\t{6=`c`}\t{8=`,`}\t<3::key`shown`>",
        "[a]\n١٢ `q`",
        "[b]\n`😀`\n`after`",
        "[c]\n`x`\n99999999999",
    ]
    for family in Family:
        for base in _sinks(family):
            ref_sink, batch_sink = copy.deepcopy(base), copy.deepcopy(base)
            for _ in range(2):
                want = [_reference(t, family, ref_sink) for t in texts]
                with _core("native"):
                    got = compile_scripts_bytes(texts, family, batch_sink)
                assert [_error(a) if isinstance(a, PvfFormatError) else ("ok", a) for a in got] == want
                assert _state(batch_sink) == _state(ref_sink)


def test_texts_only_the_reference_reads_go_to_it() -> None:
    """Non-ASCII numerals (Python's \\d) and lone surrogates: the reference compiles them."""
    texts = ["[a]\n١٢ {٣=5}\n", "`\udcff`\n[b]", "[a]\n7\n"]
    for family in Family:
        _assert_same(texts, family)


def test_compile_script_follows_the_core() -> None:
    text = "#PVF_File\n[name]\n\t`Sword`\t12\t1.5\t{3=7}\n"
    for family in Family:
        with _core("native"):
            native = compile_script(text, family, DictStrings())
        with _core("python"):
            python = compile_script(text, family, DictStrings())
        assert native.tokens.tolist() == python.tokens.tolist()


# ------------------------------------------------------------------------------- hypothesis texts

PIECES = st.sampled_from(
    [
        "[a]", "[/a]", "[level info]", "[", "]", "`", "``", "`x`", "`a``b`", "`l1\nl2`", "`cr\r\nlf`",
        "{", "}", "{6=", "{#5=", "{3=", "{5=`(DOWN)`}", "{7=`,`}", "{8=`,`}", "{6=`c`}", "{1=2}",
        "{255=0}", "{256=0}", "{01=1}", "<", ">", "<3::", "<12::key`shown`>", "<0::k>", "::", "=",
        "#", "# c\n", "0", "7", "-1", "+5", "00012", "4294967295", "4294967296", "-2147483648",
        "1.5", "1.", ".5", "1e5", "1E-3", "-.5e+2", "3.4e39", "1e-50", "3.4028235e38", "-3.4028236e38", "e", ".", "+", "-",
        "x", "中文", "ß", "١", "\t", " ", "\n", "\r\n", "\r", "\x00", "\x0b",
    ]
)  # fmt: skip
TEXTS = st.lists(PIECES, max_size=30).map("".join)
SPACED = st.lists(PIECES, max_size=30).map(" ".join)


@FUZZ
@given(st.lists(st.one_of(TEXTS, SPACED, st.text(max_size=60)), min_size=1, max_size=6))
def test_hypothesis_texts_compile_alike(texts: list[str]) -> None:
    for family in Family:
        _assert_same(texts, family)
