"""Item-table field reading agrees with the document model on every real script of the corpus."""

from __future__ import annotations

from pathlib import Path

import pytest

from moddesk.pvf.docparse import build_document
from moddesk.pvf.format.errors import PvfFormatError
from moddesk.pvf.workflows.itemtables import first_values

pytestmark = pytest.mark.corpus

FIELDS = {"name", "grade", "rarity", "minimum level", "price", "usable job", "icon", "level info"}


def _scripts(root: Path) -> list[Path]:
    return sorted(
        p for p in root.rglob("*") if p.is_file() and p.suffix in {".equ", ".stk", ".skl", ".chr", ".dgn"}
    )


def test_first_values_match_the_document_model(pvf_corpus: Path) -> None:
    checked = 0
    for path in _scripts(pvf_corpus):
        text = path.read_text("utf-8", errors="replace")
        try:
            doc = build_document(text)
        except PvfFormatError:
            continue
        found = first_values(text, FIELDS)
        for name in FIELDS:
            want = doc.get(name)
            got = found.get(name)
            assert (want is None) == (got is None), (path, name)
            if want is not None and got is not None:
                assert (want.start, want.end) == (got.start, got.end), (path, name)
        checked += 1
    assert checked >= 20, "the corpus has real scripts to compare"
