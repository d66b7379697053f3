"""Every real script text of ../shared/corpora/pvf, compiled for both families and rendered in one
bulk pass, equals render_script of each file byte for byte (text and case-folded forms)."""

from __future__ import annotations

from pathlib import Path

import pytest

from moddesk.pvf.format.bulk import render_many
from moddesk.pvf.format.text import DictStrings, compile_script, render_script
from moddesk.pvf.format.tokens import Family, decode_tokens, encode_tokens

pytestmark = pytest.mark.corpus

SKIP_NAMES = {"README.md", "MANIFEST.tsv", "stringtable.bin"}


def _files(root: Path) -> list[tuple[str, str]]:
    out = []
    for p in sorted(root.rglob("*")):
        if p.is_file() and p.name not in SKIP_NAMES and not p.name.endswith(".str"):
            rel = p.relative_to(root).as_posix()
            # the list excerpts keep their list layout
            out.append(
                (rel.replace(".lst.", "_") + ".lst" if rel.endswith(".excerpt") else rel, p.read_text())
            )
    return out


@pytest.mark.parametrize("family", list(Family))
def test_corpus_renders_alike_in_bulk(family: Family, pvf_corpus: Path) -> None:
    files = _files(pvf_corpus)
    assert len(files) >= 100
    strings = DictStrings()
    entries = [(path, encode_tokens(compile_script(text, family, strings))) for path, text in files]
    texts = dict(render_many(entries, family, strings, chunk_files=32))
    folded = dict(render_many(entries, family, strings, fold=True))
    for path, data in entries:
        want = render_script(decode_tokens(data, family), strings, path=path)
        assert texts[path] == want.encode("utf-8", "surrogatepass"), path
        assert folded[path] == want.casefold().encode("utf-8", "surrogatepass"), path
