"""Format 3 of the content index (the native core's: the corpus as compressed blocks, searched
natively) answers exactly as the Python core's format 2 does.

The oracle is the reference build (``ContentIndex.build_folded`` on the Python core, format 2) of the
same archive; the native format-3 index must give the same answers to every question the search
layer asks (``containing`` from any ordinal and in pages, ``regex_candidates`` after the per-file
check, ``folded_text`` / ``read``, whole ``Searcher`` pages of content, regex and path queries with
cursors, scopes, extensions, byte caps and time budgets), on generated archives of both families and
on the real corpus; and a damaged, truncated or mismatched cache file is never loaded (rebuilt).
"""

from __future__ import annotations

import itertools
import os
import random
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from moddesk.pvf.archive import Archive, PvfFormatError
from moddesk.pvf.samples.generate import generate_archive
from moddesk.pvf.workbench.search import Matcher, Searcher, SearchQuery
from moddesk.pvf.workbench.searchindex import BLOCK_FORMAT, HEADER_SIZE, INDEX_FORMAT, ContentIndex
from moddesk.pvf.workbench.workspace import Workspace

from ..cores import use_core as _core

pytest.importorskip("moddesk_native", reason="the native core is not built (make native)")

FAMILIES = ("90US", "classic")
NEEDLES = (
    "[name]",
    "`",
    "之心",
    "项链",
    "star roar",
    "[/level info]",
    "\t",
    "1",
    "zz-no-such-text-zz",
    "攻击力",
)
QUERIES = (
    SearchQuery("content", "[price]"),
    SearchQuery("content", "项链"),
    SearchQuery("content", "STAR ROAR"),
    SearchQuery("content", "[grade]", scope="equipment/character/common", extensions=(".equ",)),
    SearchQuery("content", "equ`", scope="equipment", extensions=(".lst",)),
    SearchQuery("content", "Star", case_sensitive=True),
    SearchQuery("content", "zz-no-such-text-zz"),
    SearchQuery("regex", r"\[grade\]\s+9\d"),
    SearchQuery("regex", r"^\t\d{6}$"),
    SearchQuery("regex", r"[雷霆]+之心"),
    SearchQuery("regex", r"e\]\s*\n\s*\d"),  # across lines: blocks cut between files only
    SearchQuery("regex", r"zz\d{3}no"),
    SearchQuery("path", "**/*.equ", scope="equipment/character/gunner"),
    SearchQuery("path", "AMULET"),
)


@dataclass
class Pair:
    """The same archive indexed by both cores: the Python core's format 2, the native format 3."""

    reference: ContentIndex
    blocks: ContentIndex
    python_ws: Workspace
    native_ws: Workspace


def _pair(path: Path, folder: Path) -> Pair:
    with _core("python"):
        python_ws = Workspace.open(path)
    with _core("native"):
        native_ws = Workspace.open(path)
    assert native_ws.archive.native and not python_ws.archive.native
    reference = ContentIndex.build_folded(
        python_ws.base_folded(), folder=folder / "python", base_paths=python_ws.index_paths()
    )
    keys = native_ws.native_index_keys()
    assert keys is not None
    blocks = ContentIndex.build_native(native_ws.archive, keys, folder=folder / "native")
    assert reference.format == INDEX_FORMAT and blocks.format == BLOCK_FORMAT
    return Pair(reference, blocks, python_ws, native_ws)


def _close(pair: Pair) -> None:
    pair.python_ws.close()
    pair.native_ws.close()


@pytest.fixture(scope="module", params=FAMILIES)
def pair(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    root = tmp_path_factory.mktemp(f"blocks-{request.param}")
    # ~3 MiB of folded text: many blocks (the first 256 KiB, then doubling to 1 MiB)
    generate_archive(root / "Script.pvf", fmt=request.param, files=6000, seed=28)
    made = _pair(root / "Script.pvf", root)
    yield made
    _close(made)


def _pages(searcher: Searcher, query: SearchQuery, limit: int, budget: float, byte_cap: int) -> list[object]:
    """Every page of ``query`` (cursor to cursor) as plain data."""
    out: list[object] = []
    after = None
    for _ in range(200):
        page = searcher.page(query, after, limit=limit, byte_cap=byte_cap, time_budget=budget)
        out.append(([h.to_dict() for h in page.hits], page.next_position, page.truncated, page.reason))
        if page.next_position is None:
            return out
        after = page.next_position
    return out


def _searcher(index: ContentIndex, ws: Workspace) -> Searcher:
    return Searcher(index, {}, frozenset(), ws.base_text_or_none)


def _all_hits(pages: list[object]) -> list[object]:
    return [hit for hits, *_ in pages for hit in hits]  # type: ignore[attr-defined]


def test_the_same_paths_texts_and_literal_answers(pair: Pair) -> None:
    ref, blk = pair.reference, pair.blocks
    assert list(ref.all_paths) == list(blk.all_paths) and list(ref.paths) == list(blk.paths)
    assert (ref.offsets == blk.offsets).all() and (ref.text_mask == blk.text_mask).all()
    assert blk.compressed_bytes < ref.nbytes / 4  # the corpus is stored compressed
    assert len(blk._block_ords) > 4  # and in many blocks: the tests cross their boundaries
    n = len(ref)
    assert blk.read(0, blk.nbytes) == ref.read(0, ref.nbytes)
    rng = random.Random(28)
    for ordinal in [0, n - 1, *rng.sample(range(n), 200)]:
        assert blk.folded_text(ordinal) == ref.folded_text(ordinal)
    for _ in range(50):
        begin = rng.randrange(ref.nbytes)
        end = begin + rng.randrange(3 << 20)
        assert blk.read(begin, end) == ref.read(begin, min(end, ref.nbytes))
    ranges = [(0, n), (n // 3, n), (n - 5, n), (7, 8), (5, 5)]
    ranges += [tuple(sorted(rng.sample(range(n + 1), 2))) for _ in range(10)]  # type: ignore[misc]
    for needle in NEEDLES:
        folded = needle.casefold().encode("utf-8")
        for lo, hi in ranges:
            assert list(blk.containing(folded, lo, hi)) == list(ref.containing(folded, lo, hi)), (
                needle,
                lo,
                hi,
            )
        # paging: a consumer that stops after k hits and resumes after the last one sees the same
        whole = list(ref.containing(folded, 0, n))
        got: list[int] = []
        start = 0
        while True:
            page = list(itertools.islice(blk.containing(folded, start, n, time.monotonic() + 60), 37))
            got += page
            if len(page) < 37:
                break
            start = page[-1] + 1
        assert got == whole, needle


def _matching(index: ContentIndex, matcher: Matcher) -> list[int]:
    """The regex candidates of the whole index that pass the per-file check (what a page keeps)."""
    assert matcher.block_regex is not None
    found = index.regex_candidates(matcher.block_regex, 0, len(index), time.monotonic() + 60)
    return [o for o in found if matcher.lines(index.folded_text(o).decode("utf-8", "surrogatepass"))]


def test_regex_candidates_keep_every_matching_file(pair: Pair) -> None:
    ref, blk = pair.reference, pair.blocks
    for query in QUERIES:
        if query.mode != "regex":
            continue
        matcher = Matcher(query)
        assert matcher.block_regex is not None

        assert _matching(blk, matcher) == _matching(ref, matcher), query.query


@pytest.mark.parametrize("limit,byte_cap", [(20, 1 << 20), (100, 1024)])
def test_searcher_pages_are_the_same(pair: Pair, limit: int, byte_cap: int) -> None:
    reference = _searcher(pair.reference, pair.python_ws)
    blocks = _searcher(pair.blocks, pair.native_ws)
    for query in QUERIES:
        assert _pages(blocks, query, limit, 60.0, byte_cap) == _pages(
            reference, query, limit, 60.0, byte_cap
        ), query


def test_a_spent_time_budget_gives_partial_pages_that_resume_to_the_same_hits(pair: Pair) -> None:
    """With no time at all every page stops early (after one block at least), yet the pages read on
    from their cursors add up to the same hits as unhurried ones."""
    reference = _searcher(pair.reference, pair.python_ws)
    blocks = _searcher(pair.blocks, pair.native_ws)
    for query in (
        QUERIES[0],
        QUERIES[1],
        QUERIES[6],
    ):  # (a regex block past its budget is too costly on both)
        hurried = _pages(blocks, query, 50, 0.0, 1 << 20)
        assert _all_hits(hurried) == _all_hits(_pages(reference, query, 50, 60.0, 1 << 20)), query
    n = len(pair.blocks)
    raw = list(pair.blocks.containing(b"zz-no-such-text-zz", 0, n, time.monotonic() - 1))
    assert len(raw) == 1 and -raw[0] - 1 > 0  # the first step ran (progress), then the time was up


def test_the_corpus_answers_the_same(pvf_corpus: Path, tmp_path: Path) -> None:
    files = [
        p for p in sorted(pvf_corpus.rglob("*")) if p.is_file() and p.suffix not in (".md", ".tsv", ".bin")
    ]
    for fmt in FAMILIES:
        with _core("python"):
            archive = Archive.new(fmt, region="cn")
            for p in files:
                rel = p.relative_to(pvf_corpus).as_posix().replace(".excerpt", ".lst")
                try:
                    archive.write_text(rel, p.read_text(encoding="utf-8"))
                except PvfFormatError:
                    continue
            target = tmp_path / f"corpus.{fmt}.pvf"
            archive.save_as(target)
        made = _pair(target, tmp_path / fmt)
        try:
            assert made.blocks.read(0, made.blocks.nbytes) == made.reference.read(0, made.reference.nbytes)
            reference = _searcher(made.reference, made.python_ws)
            blocks = _searcher(made.blocks, made.native_ws)
            for query in (*QUERIES, SearchQuery("content", "攻击力"), SearchQuery("regex", r"`[^`]*剑`")):
                assert _pages(blocks, query, 10, 60.0, 1 << 20) == _pages(reference, query, 10, 60.0, 1 << 20)
        finally:
            _close(made)


def test_damaged_truncated_or_mismatched_cache_files_are_not_loaded(tmp_path: Path) -> None:
    path = tmp_path / "Script.pvf"
    generate_archive(path, fmt="90US", files=3000, seed=3)
    with _core("native"):
        ws = Workspace.open(path)
    try:
        keys = ws.native_index_keys()
        assert keys is not None
        index = ContentIndex.build_native(ws.archive, keys, folder=tmp_path)
        good = tmp_path / "good.idx"
        index.publish(good, "content-key")
        data = good.read_bytes()
        assert ContentIndex.load_native(good, "content-key", keys) is not None
        assert ContentIndex.load_native(good, "other-key", keys) is None  # another archive's
        probe = tmp_path / "probe.idx"
        rng = random.Random(7)
        tables = len(data) - 8 - 16 * (int.from_bytes(data[-8:], "little") + 1)
        cuts = [0, 10, HEADER_SIZE, HEADER_SIZE + 100, len(data) // 2, tables, len(data) - 8, len(data) - 1]
        for cut in cuts:  # truncated anywhere
            probe.write_bytes(data[:cut])
            assert ContentIndex.load_native(probe, "content-key", keys) is None, cut
        probe.write_bytes(data + b"\0" * 8)  # grown
        assert ContentIndex.load_native(probe, "content-key", keys) is None
        # a flipped byte in the header, the arrays or the block table: refused at load
        for at in [
            20,
            30,
            tables + 3,
            tables + 8 * 2 + 1,
            len(data) - 3,
            *rng.sample(range(tables, len(data)), 20),
        ]:
            damaged = bytearray(data)
            damaged[at] ^= 0x41
            probe.write_bytes(bytes(damaged))
            loaded = ContentIndex.load_native(probe, "content-key", keys)
            assert loaded is None, at
        # a flipped byte inside a compressed block: the frame's checksum refuses it when it is read
        # (an error naming the block, never wrong text and never a crash)
        for at in rng.sample(range(HEADER_SIZE, HEADER_SIZE + index.compressed_bytes), 20):
            damaged = bytearray(data)
            damaged[at] ^= 0x41
            probe.write_bytes(bytes(damaged))
            loaded = ContentIndex.load_native(probe, "content-key", keys)
            assert loaded is not None
            with pytest.raises(OSError, match="index block"):
                loaded.read(0, loaded.nbytes)
            with pytest.raises(OSError, match="index block"):
                list(loaded.containing(b"zz-no-such", 0, len(loaded)))
        # the Python core never loads format 3 (it rebuilds its own format 2)
        assert ContentIndex.load(good, "content-key", ws.index_paths()) is None
    finally:
        ws.close()


def test_the_native_build_bounds_the_heap_glibc_keeps_unless_told_otherwise() -> None:
    """``bound_retained_heap`` fixes glibc's mmap threshold once per process (Linux), and leaves a
    threshold given in the environment alone (each case in a fresh interpreter)."""
    import subprocess
    import sys

    code = "from moddesk.pvf.workbench.searchindex import bound_retained_heap as b; print(b(), b())"
    settings = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_ARENA_MAX")
    env = {k: v for k, v in os.environ.items() if k not in settings}
    plain = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    expected = "True True" if sys.platform.startswith("linux") else "False False"
    assert plain.stdout.split() == expected.split()
    told = subprocess.run(
        [sys.executable, "-c", code],
        env={**env, "MALLOC_TRIM_THRESHOLD_": "131072"},
        capture_output=True,
        text=True,
        check=True,
    )
    assert told.stdout.split() == ["False", "False"]
    arenas = subprocess.run(
        [sys.executable, "-c", code],
        env={**env, "MALLOC_ARENA_MAX": "4"},
        capture_output=True,
        text=True,
        check=True,
    )
    assert arenas.stdout.split() == ["False", "False"]
