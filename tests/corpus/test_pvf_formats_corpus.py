"""Real script text (../shared/corpora/pvf) through compile → pack (every format) → read → render.

The documented normalisation (``moddesk.pvf.format.text.normalize_text``): the binary stores units,
not layout, so rendered text equals the source up to which values share a line, indentation,
blank lines, trailing tabs and a missing ``#PVF_File`` header; every value, string (including
multi-line strings), section tag and escape is preserved exactly.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from moddesk.pvf.archive import Archive
from moddesk.pvf.docparse import build_document
from moddesk.pvf.format.text import DictStrings, compile_script, normalize_text, render_script
from moddesk.pvf.format.tokens import Family

pytestmark = pytest.mark.corpus

SKIP_NAMES = {"README.md", "MANIFEST.tsv", "stringtable.bin"}  # stringtable.bin here is a text dump


def _archive_path(rel: str) -> str:
    """Where a corpus file goes in the archive (excerpts become .lst files of their own)."""
    if rel.endswith(".excerpt"):
        stem, _, span = rel[: -len(".excerpt")].rpartition(".lst.")
        return f"{stem}_{span.replace('-', '_')}.lst"
    return rel


def _corpus_files(root: Path) -> list[tuple[str, str]]:
    out = []
    for p in sorted(root.rglob("*")):
        if p.is_file() and p.name not in SKIP_NAMES:
            out.append((_archive_path(p.relative_to(root).as_posix()), p.read_text(encoding="utf-8")))
    return out


def test_every_file_parses_compiles_and_renders_to_the_same_content(pvf_corpus: Path) -> None:
    files = _corpus_files(pvf_corpus)
    assert len(files) >= 110
    exact = 0
    for path, text in files:
        if path.endswith(".str"):
            continue
        for family in Family:
            strings = DictStrings()
            stream = compile_script(text, family, strings)
            rendered = render_script(stream, strings, path=path)
            # corpus texts are pvfUtility (classic-numbered) exports; as NKPI they render in pvfine's numbering
            assert normalize_text(rendered, family) == normalize_text(text, family), path
            assert render_script(compile_script(rendered, family, strings), strings, path=path) == rendered
        exact += rendered == text
    # the pretty layout matches pvfUtility's export for most files (the rest differ in layout only)
    assert exact >= 60, exact


def test_document_model_over_the_corpus(pvf_corpus: Path) -> None:
    exact = 0
    total = 0
    for path, text in _corpus_files(pvf_corpus):
        if path.endswith(".str"):
            continue
        doc = build_document(text)
        rendered = doc.render()
        assert normalize_text(rendered) == normalize_text(text), path
        total += 1
        exact += rendered == text
    assert exact == total, (exact, total)  # unedited documents render to their source exactly
    earth = build_document((pvf_corpus / "pvf_1031-sample/skill/atfighter/earthbreak.skl").read_text("utf-8"))
    assert earth.get_value("dungeon/level info") == 5
    assert earth.section("dungeon/level info", 0) is not None


@pytest.mark.parametrize("fmt", ["classic", "90US", "90CN"])
def test_corpus_packs_into_every_format_and_reads_back(fmt: str, tmp_path: Path, pvf_corpus: Path) -> None:
    files = _corpus_files(pvf_corpus)
    pvf = Archive.new(fmt, region="cn")
    for path, text in files:
        pvf.write_text(path, text)
    target = tmp_path / f"corpus {fmt}.pvf"
    pvf.save_as(target)
    first = {path: pvf.read_text(path) for path, _ in files}
    pvf.close()
    with Archive.open(target) as back:
        assert back.verify() == []
        for path, text in files:
            got = back.read_text(path)
            assert got == first[path], path
            if path.endswith(".str"):
                assert got == text
            else:
                assert normalize_text(got, back.family) == normalize_text(text, back.family), path
        # unchanged save: identical bytes
        copy = tmp_path / "copy.pvf"
        back.save_as(copy)
    assert copy.read_bytes() == target.read_bytes()


def test_pack_command_builds_an_archive_from_the_sample_folder(tmp_path: Path, pvf_corpus: Path) -> None:
    folder = pvf_corpus / "pvf_1031-sample"
    out = tmp_path / "sample out.pvf"
    cmd = [sys.executable, "-m", "moddesk", "pvf", "pack", str(folder), str(out), "--format", "90US"]
    run = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120)
    assert run.returncode == 0, run.stderr
    check = subprocess.run(
        [sys.executable, "-m", "moddesk", "pvf", "verify", str(out)],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=120,
    )
    assert check.returncode == 0, check.stdout + check.stderr
    source = (folder / "stackable/gold.stk").read_text("utf-8")
    with Archive.open(out) as pvf:
        assert len(pvf) == sum(1 for p in folder.rglob("*") if p.is_file())
        got = pvf.read_text("stackable/gold.stk")
        assert normalize_text(got, pvf.family) == normalize_text(source, pvf.family)
