"""The native document scanner (``moddesk_native.pvf.parse_document``, its sections' bodies made on first use) against the reference.

``build_document`` under ``MODDESK_CORE=native`` and ``python`` must build the same document —
every field of every section, line and value, the warnings, head and tail (``structure``) and its
render — or fail with the same error (code, message, offset), on the real corpus, every script of
generated archives of each family, broken texts and hypothesis texts (both numberings).
"""

from __future__ import annotations

import copy
import pickle
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from moddesk.pvf.archive import Archive
from moddesk.pvf.docparse import _CLASSES, build_document
from moddesk.pvf.document import LazySection
from moddesk.pvf.format.errors import PvfFormatError
from moddesk.pvf.format.tokens import Family
from moddesk.pvf.samples.equality import structure
from moddesk.pvf.samples.generate import generate_archive

from .cores import use_core as _core

moddesk_native = pytest.importorskip("moddesk_native", reason="the native core is not built (make native)")

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _parse(text: str, family: Family, core: str) -> object:
    with _core(core):
        try:
            doc = build_document(text, family)
        except PvfFormatError as exc:
            return ("error", exc.code, exc.message, exc.offset)
        return (structure(doc), doc.render())


def _assert_same(texts: list[str]) -> int:
    """Both cores alike on every text, both families; how many the native scanner read itself."""
    native_read = 0
    for family in Family:
        for text in texts:
            assert _parse(text, family, "native") == _parse(text, family, "python"), (text[:300], family)
            native_read += (
                moddesk_native.pvf.parse_document(text, family is Family.CLASSIC, _CLASSES) is not None
            )
    return native_read


def test_corpus_documents_alike(pvf_corpus: Path) -> None:
    files = [
        p for p in sorted(pvf_corpus.rglob("*")) if p.is_file() and p.suffix not in (".md", ".tsv", ".bin")
    ]
    texts = [p.read_text(encoding="utf-8", errors="surrogateescape") for p in files]
    assert len(texts) > 100
    assert _assert_same(texts) > len(texts)  # most of them natively, in both families


@pytest.mark.parametrize("fmt", ["classic", "90US", "90CN"])
def test_generated_archive_documents_alike(tmp_path: Path, fmt: str) -> None:
    path = tmp_path / f"{fmt}.pvf"
    generate_archive(path, fmt=fmt, files=400, seed=28)
    with _core("python"), Archive.open(path) as archive:
        texts = [t.decode("utf-8", "surrogateescape") for _, t in archive.iter_rendered() if t]
    texts = [t for t in texts if t.startswith("#PVF_File")]
    assert len(texts) > 300
    assert _assert_same(texts) == 2 * len(texts)


BROKEN = [
    "`open", "[open", "{6=`x`", "{x=1}", "<3::k", "abc", "1 # no", "{999=1}", "[a]\n\t`x`\n\t1x",
    "[a]\n[/b]\n[c]\n[/a]\n[/c]", "[a]\n[b]\n[/a]\n[/b]\n[b]", "{6=`x`} {5=`y`}", "{#3=1}", "١٢",
    "`\udcff`", "[a]\n\t{6=`a\nb`}\t1\n\t<3::k`多\n行`>\t2", "\n\n# only a comment\n", "", "  \t\n",
    "1e999\t-1e999\t1.\t.5\t-0.0\t99999999999999999999999\t{3=-99999999999999999999}",
    "[a]\n\t" + "1" * 5000, "{3=" + "9" * 5000 + "}", "<" + "1" * 5000 + "::k>", "[a]\n" + "7" * 700,
    "[" + "长名" * 40 + "]\n\t1\n[" + "n" * 64 + "]\n[" + "n" * 65 + "]\n[/" + "n" * 65 + "]",
]  # fmt: skip


def test_broken_and_odd_texts_alike() -> None:
    _assert_same(BROKEN)


PIECES = st.sampled_from(
    [
        "[a]", "[/a]", "[b c]", "[/b c]", "[level info]", "[", "]", "`", "``", "`x`", "`a``b`",
        "`l1\nl2`", "`cr\r\nlf`", "{", "}", "{6=", "{#5=", "{3=", "{5=`(DOWN)`}", "{7=`,`}",
        "{8=`,`}", "{6=`c`}", "{1=2}", "{255=0}", "{256=0}", "{01=1}", "{6=`a\nb`}", "<", ">",
        "<3::", "<12::key`shown`>", "<0::k>", "<1::k`a\nb`>", "#", "# c\n", "0", "7", "-1", "+5",
        "00012", "4294967296", "1.5", "1.", ".5", "1e5", "-.5e+2", "3.4e39", "e", ".", "+", "x",
        "中文", "ß", "١", "\t", " ", "\n", "\r\n", "\r", "\x00", "\f",
    ]
)  # fmt: skip


@FUZZ
@given(st.lists(st.one_of(st.lists(PIECES, max_size=40).map("".join), st.text(max_size=60)), max_size=4))
def test_hypothesis_documents_alike(texts: list[str]) -> None:
    _assert_same(texts)


def test_section_bodies_are_made_on_first_use_and_edits_hold() -> None:
    text = "#PVF_File\n\n[name]\n\t`剑`\n\n[set]\n\t[inner]\n\t\t1\t2\n\t[/inner]\n[/set]\n\n[price]\n\t5\n"
    with _core("native"):
        doc = build_document(text, Family.CLASSIC)
    name, block, price = doc.sections
    assert all(isinstance(s, LazySection) and s._pending is not None for s in doc.sections)
    block.body = []  # replaced before it was ever made: the pending body is dropped
    assert block._pending is None and block.body == []
    assert price.get_value() == 5 and price._pending is None
    doc.set("price", 6)
    with _core("python"):
        expected = build_document(text, Family.CLASSIC)
    expected.section("set").body = []
    expected.set("price", 6)
    assert doc.render() == expected.render()
    assert name.children() == [] and name.values()[0].value == "剑"


def test_documents_copy_and_pickle_with_bodies_not_yet_made() -> None:
    text = "#PVF_File\n[a]\n\t1\t`x`\n[b]\n\t[c]\n\t\t2.5\n\t[/c]\n[/b]\n"
    with _core("native"):
        doc = build_document(text, Family.CLASSIC)
    with _core("python"):
        expected = structure(build_document(text, Family.CLASSIC))
    assert structure(copy.deepcopy(doc)) == expected
    assert structure(pickle.loads(pickle.dumps(doc))) == expected
    assert structure(doc) == expected


@pytest.mark.filterwarnings("error")  # numpy's overflow warning included
def test_floats_beyond_float32_parse_as_infinity_alike() -> None:
    """The document keeps what the float32 cast makes of ``1e39`` (its source renders unchanged);
    compiling it is BAD_TEXT (tests/pvf/format/test_native_compile.py)."""
    text = "[a]\n\t1e39\t-3.4028236e38\t3.4028235e38\n"
    _assert_same([text])
    for core in ("python", "native"):
        with _core(core):
            doc = build_document(text, Family.CLASSIC)
        values = [v.value for v in doc.sections[0].values()]
        assert values == [float("inf"), float("-inf"), 3.4028234663852886e38]
        assert doc.render() == text


def _lazy_reads_alike(text: str, family: Family) -> None:
    """A native document read the lazy ways first (``sections``, ``find_all``, fields written
    before they are read) is the reference's document, holding the very objects it handed out."""
    with _core("python"):
        try:
            expected = build_document(text, family)
        except PvfFormatError:
            return
        want = (structure(expected), expected.render())
    with _core("native"):
        doc = build_document(text, family)
    # text the native lexer leaves to the reference (e.g. a non-ASCII digit such as '١') is the
    # reference's document: plain sections, no native top level
    made_natively = doc._native is not None
    tops = doc.sections
    names = [s.name for s in tops]
    assert names == [s.name for s in expected.sections]
    assert len(tops) == len(doc.sections) and all(a is b for a, b in zip(tops, doc.sections, strict=True))
    for name in dict.fromkeys(names):
        found = doc.find_all(name)
        assert [s.occurrence for s in found] == [s.occurrence for s in expected.find_all(name)]
        assert all(any(s is t for t in tops) for s in found)
    assert doc.find_all("no such section") == []
    assert (structure(doc), doc.render()) == want
    lazy = [s for s in doc.body if isinstance(s, LazySection)]
    assert lazy == (tops if made_natively else [])  # the same objects (eq is identity)


@FUZZ
@given(st.lists(st.lists(PIECES, max_size=40).map("".join), min_size=1, max_size=4))
@example(["[a]\u0661"])  # a digit only the reference reads: the reference's document (hypothesis found it)
def test_hypothesis_documents_read_lazily_alike(texts: list[str]) -> None:
    for family in Family:
        for text in texts:
            _lazy_reads_alike(text, family)


def test_corpus_documents_read_lazily_alike(pvf_corpus: Path) -> None:
    files = [
        p for p in sorted(pvf_corpus.rglob("*")) if p.is_file() and p.suffix not in (".md", ".tsv", ".bin")
    ]
    for p in files:
        _lazy_reads_alike(p.read_text(encoding="utf-8", errors="surrogateescape"), Family.CLASSIC)


def test_lazy_fields_written_before_read_keep_the_written_value() -> None:
    text = "#PVF_File\n[a]\n\t1\n[b]\n\t[c]\n\t\t2\n\t[/c]\n[/b]\n[a]\n\t3\n"
    with _core("native"):
        doc = build_document(text, Family.CLASSIC)
    a0, b, a1 = doc.sections
    assert isinstance(a0, LazySection) and isinstance(b, LazySection)
    a0.end = 99
    a0.before = "\n\n\n"
    b.has_end_tag = False
    assert (a0.end, a0.line, a0.start, a0.before, a0.occurrence) == (99, 2, 10, "\n\n\n", 0)
    assert (b.has_end_tag, b.end_before, a1.occurrence) == (False, "\n", 1)
    assert doc.delete("a", 0) == 1 and a1.occurrence == 0 and doc.sections == [b, a1]
    assert doc.render() == "#PVF_File\n[b]\n\t[c]\n\t\t2\n\t[/c]\n[a]\n\t3\n"
    copied = pickle.loads(pickle.dumps(doc))
    assert copied.render() == doc.render() and structure(copied) == structure(doc)
    with _core("native"):
        fresh = build_document(text, Family.CLASSIC)
    fresh.sections  # noqa: B018 - handed out, then copied before the body is made
    assert structure(copy.deepcopy(fresh)) == structure(fresh)
