"""Exports write the same bytes as before the #18 speed work (digests captured from that code).

Each family's generated archive (1,000 files) is exported whole (direct, 110USextend) and its
unsaved edits (a changed script, a whitespace-only change, a deletion, a new script, a new list
entry, a binary file) as direct, 110USextend and 115CN-mod. The 100,000-file version with the
real corpus texts runs from ``benchmarks/pvf_scale.py --check``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .export_scenario import FAMILIES, expected, export_digests, scenario

FILES = 1000


@pytest.mark.parametrize("family", FAMILIES)
def test_exports_write_the_captured_bytes(family: str, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    with scenario(tmp_path, family, FILES) as s:
        assert export_digests(s, out) == expected(f"{family}-{FILES}")
    # a few literal samples, so a digest mismatch has something readable beside it
    direct = out / "direct-memory" / "direct-memory"
    assert (direct / "equipment/export18/new.equ").read_bytes() == (
        "#PVF_File\n[name]\n`export18 新装备`\n[grade]\n\t7\n".encode()
    )
    assert (direct / "etc/export18.bin").read_bytes() == bytes(range(256)) * 3
    mod = out / "110USextend-memory" / "Export18-1.0"
    assert (mod / "merge/equipment/equipment.lst").read_bytes() == b"990001\t`export18/new.equ`\n"
    assert sorted(p.name for p in mod.iterdir()) == ["merge", "pack.json", "pvf"]


@pytest.mark.corpus
def test_exports_with_corpus_texts_write_the_captured_bytes(tmp_path: Path, pvf_corpus: Path) -> None:
    corpus = pvf_corpus.parent
    out = tmp_path / "out"
    out.mkdir()
    with scenario(tmp_path, "90US", FILES, corpus) as s:
        assert export_digests(s, out) == expected(f"90US-{FILES}+corpus")
    # a real corpus script comes back as its own text, rendered from the saved archive's tokens
    sample = pvf_corpus / "pvf_1031-sample/stackable/flask_freeze.stk"
    exported = out / "direct-all" / "direct-all" / "stackable/flask_freeze.stk"
    assert exported.read_bytes() == sample.read_bytes()
