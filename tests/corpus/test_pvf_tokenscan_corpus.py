"""Pre-index answers over the real script texts: a generated archive with every corpus text imported
(escapes, links, multi-line strings, CRLF) answers needles cut from those texts exactly as its built
content index does, or refuses them."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from moddesk.pvf.archive import Archive, PvfFormatError
from moddesk.pvf.samples.generate import generate_archive
from moddesk.pvf.workbench.search import SearchQuery

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "pvf" / "workbench"))
from tokenscan_pair import Pair, cut_needles

pytestmark = pytest.mark.corpus

SKIP_NAMES = {"README.md", "MANIFEST.tsv", "stringtable.bin"}


@pytest.fixture(scope="module", params=["90US", "classic"])
def pair(
    request: pytest.FixtureRequest, pvf_corpus: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Pair]:
    folder = tmp_path_factory.mktemp(request.param)
    plain = folder / "plain.pvf"
    generate_archive(plain, fmt=request.param, files=300, seed=3)
    mixed = folder / "Script.pvf"
    imported = 0
    with Archive.open(plain) as pvf:
        for p in sorted(pvf_corpus.rglob("*")):
            if p.is_file() and p.name not in SKIP_NAMES:
                rel = p.relative_to(pvf_corpus).as_posix().replace(".excerpt", ".lst")
                try:
                    pvf.write_text(f"corpus/{rel}", p.read_text(encoding="utf-8"))
                    imported += 1
                except PvfFormatError:
                    continue  # a text this family cannot hold: the benchmark import skips it too
        pvf.write_copy(mixed)
    assert imported >= 100
    made = Pair(mixed)
    yield made
    made.ws.close()


def test_needles_cut_from_the_corpus_texts_answer_as_the_index(pair: Pair) -> None:
    texts = [t for p, t in sorted(pair.texts.items()) if t and p.startswith("corpus/")]
    compared = 0
    for needle in cut_needles(texts, "`{}=<>:.-0123456789[]_#\"'/ 攻的", seed=5, per_char=10):
        pair.same(SearchQuery("content", needle), limit=8, pages=2)
        compared += 1
    for needle in ("[/level info]", "攻击力", "STAR ROAR", "[skill data up]", "(DOWN)"):
        pair.same(SearchQuery("content", needle), limit=25, pages=2)
    assert compared > 50
