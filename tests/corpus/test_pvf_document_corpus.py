"""Every real corpus script parses to the model the previous parser built (digests captured from
it, commit aa354b3, before the parser was replaced): the source texts as they are, and the text
``render_script`` gives for them compiled into each family's units."""

from __future__ import annotations

from pathlib import Path

import pytest

from moddesk.pvf.docparse import build_document
from moddesk.pvf.format.text import DictStrings, compile_script, render_script
from moddesk.pvf.format.tokens import Family
from moddesk.pvf.samples.equality import Digest

pytestmark = pytest.mark.corpus

SKIP_NAMES = {"README.md", "MANIFEST.tsv", "stringtable.bin"}
EXPECTED = {
    "text": ("77535b6e45a8158d949e3eaba25a54b8b6354a9461e7c7806dce4506fec81660", 113),
    "classic": ("86cbe1af2e7d4051a411b71cdb90a062ef3fd5759bab3218c7296d5c796c4ec2", 113),
    "nkpi": ("3666f75dda9c1ea87a3303e2aedcdc0335d6d9606a7bb5dbc42af9dc5c77ff31", 113),
}


def _scripts(root: Path) -> list[tuple[str, str]]:
    out = []
    for p in sorted(root.rglob("*")):
        if not p.is_file() or p.name in SKIP_NAMES or p.name.endswith(".str"):
            continue
        rel = p.relative_to(root).as_posix()
        if rel.endswith(".excerpt"):  # excerpts of lists are .lst files of their own
            stem, _, span = rel[: -len(".excerpt")].rpartition(".lst.")
            rel = f"{stem}_{span.replace('-', '_')}.lst"
        out.append((rel, p.read_text(encoding="utf-8")))
    return out


def test_corpus_texts_parse_as_before(pvf_corpus: Path) -> None:
    digest = Digest()
    for path, text in _scripts(pvf_corpus):
        digest.add(path, build_document(text))
    assert (digest.hexdigest(), digest.count) == EXPECTED["text"]


@pytest.mark.parametrize("family", list(Family))
def test_corpus_rendered_from_units_parses_as_before(family: Family, pvf_corpus: Path) -> None:
    digest = Digest()
    for path, text in _scripts(pvf_corpus):
        strings = DictStrings()
        stream = compile_script(text, family, strings)
        digest.add(path, build_document(render_script(stream, strings, path=path), family))
    assert (digest.hexdigest(), digest.count) == EXPECTED[family.value]
