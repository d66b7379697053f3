"""The fast document parser gives exactly the model the ``lex``-based parser gave.

* Random texts: the one-regex scan and the ``lex`` path build the same model (every field) or
  both refuse with BAD_TEXT.
* Generated archives (both families): the parse of every script entry matches a digest captured
  from the previous implementation (``lex`` + one-token-at-a-time building) before it was replaced.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from moddesk.pvf.archive import Archive
from moddesk.pvf.docparse import _assemble, _scan, _Slow, _slow_events, build_document
from moddesk.pvf.document import Document
from moddesk.pvf.format.errors import PvfFormatError
from moddesk.pvf.format.tokens import Family
from moddesk.pvf.samples.equality import archive_documents, structure
from moddesk.pvf.samples.generate import generate_archive

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

#: Captured with the previous parser (commit aa354b3) over ``generate_archive(files=3000, seed=0)``.
GENERATED_DOCS = {
    "classic": ("563a9b923e389ec7f9040e251b7205721ba0ba2a9a8c5a8b8fe27fc9c5b31d6e", 2998),
    "90US": ("63532d073b4e55f0f065fd294bb301dc0cec56b1caf6bb78451cc3bdf9bed5f9", 2998),
}

PIECES = st.sampled_from(
    [
        "[a]", "[/a]", "[b c]", "[/b c]", "[x]", "[/x]", "12", "-3", "+4", "1.5", "-0.25", "1e3", ".5",
        "`s`", "`多 行\n文本`", "`back``tick`", "{6=`(DOWN)`}", "{8=`,`}", "{3=7}", "{5=`c`}",
        "{7=`,`}", "{1=2}", "{#12=5}", "{6=`a\nb`}", "<3::name_1`剑`>", "<3::k>", "#PVF_File",
        "# note", "`", "{", "<", "[", "12x", "{999=1}", "#x", "\f", "\r",
    ]
)  # fmt: skip
GAPS = st.sampled_from(["", " ", "\t", "\n", "\n\t", "\r\n", "\n\n", "\t\t", "\n#c\n"])


@st.composite
def texts(draw: st.DrawFn) -> str:
    parts = draw(st.lists(st.tuples(GAPS, PIECES), max_size=40))
    return "".join(gap + piece for gap, piece in parts) + draw(GAPS)


def _slow_document(text: str, family: Family) -> Document:
    """The model built from ``lex``'s tokens only (the reference for the one-regex scan)."""
    events, escapes, escape_lexemes, first, last = _slow_events(text)
    from moddesk.pvf.docparse import _numbering_kinds

    kinds = _numbering_kinds(escape_lexemes, family)
    for v in escapes:
        if not v.raw:
            v.kind = kinds.get(v.type or 0, "escape")
    doc = Document()
    doc.head = text[:first] if first >= 0 else text
    doc.tail = text[last:] if first >= 0 else ""
    _assemble(doc, events)
    return doc


@FUZZ
@given(texts(), st.sampled_from(list(Family)))
def test_fast_scan_builds_what_lex_builds(text: str, family: Family) -> None:
    try:
        expected = structure(_slow_document(text, family))
    except PvfFormatError as exc:
        assert exc.code == "BAD_TEXT"
        with pytest.raises(PvfFormatError):
            build_document(text, family)
        return
    assert structure(build_document(text, family)) == expected
    try:
        _scan(text)
    except _Slow:
        return
    assert structure(build_document(text, family)) == expected


def test_canonical_text_takes_the_fast_path() -> None:
    text = "#PVF_File\n\n[name]\n\t`剑`\n\n[set]\n\t1\t2\n[/set]\n"
    events = _scan(text)[0]  # raises _Slow if the scan gave up
    assert [e[1] for e in events if e[0] != 2] == ["[name]", "[set]", "[/set]"]


@pytest.fixture(scope="module", params=sorted(GENERATED_DOCS))
def generated(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    fmt = str(request.param)
    path = tmp_path_factory.mktemp("gen") / f"{fmt}.pvf"
    generate_archive(path, fmt=fmt, files=3000, seed=0)
    return fmt, path


def test_generated_archive_parses_as_before(generated: tuple[str, Path]) -> None:
    fmt, path = generated
    with Archive.open(path) as archive:
        digest = archive_documents(archive)
    assert (digest.hexdigest(), digest.count) == GENERATED_DOCS[fmt]
