"""The content index built natively (``ContentIndex.build_native``, one call) against the reference.

The reference (``ContentIndex.build_folded`` over ``Workspace.base_folded`` on the Python core) is
the oracle: the native build must write the same index file byte for byte (format 2) — on generated
archives of the three formats, on the real corpus compiled into each, and on archives with damaged
entries (where both builds fail with the same error code, or write the same file) — and its
format 3 (the native core's default: the corpus as compressed blocks) must hold the same corpus,
offsets, text mask and permutation.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from moddesk.kit.errors import ServiceError
from moddesk.pvf.archive import Archive, PvfFormatError
from moddesk.pvf.samples.generate import generate_archive
from moddesk.pvf.workbench.searchindex import BLOCK_FORMAT, HEADER_SIZE, INDEX_FORMAT, ContentIndex
from moddesk.pvf.workbench.workspace import Workspace

from ..cores import use_core as _core

pytest.importorskip("moddesk_native", reason="the native core is not built (make native)")

FORMATS = ("classic", "90US", "90CN")
FUZZ = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _open(path: Path, core: str) -> Workspace:
    with _core(core):
        ws = Workspace.open(path)
    assert ws.archive.native == (core == "native")
    return ws


def _published(index: ContentIndex, target: Path) -> bytes:
    index.publish(target, "sha-of-the-archive")
    return target.read_bytes()


def _reference(path: Path, folder: Path) -> bytes | str:
    """The reference build's published file, or the code of the error it failed with."""
    ws = _open(path, "python")
    try:
        index = ContentIndex.build_folded(ws.base_folded(), folder=folder, base_paths=ws.index_paths())
        return _published(index, folder / "reference.idx")
    except PvfFormatError as exc:
        return exc.code
    finally:
        ws.close()


def _native(path: Path, folder: Path, progress: list[int] | None = None) -> bytes | str:
    ws = _open(path, "native")
    try:
        keys = ws.native_index_keys()
        assert keys is not None
        index = ContentIndex.build_native(
            ws.archive,
            keys,
            folder=folder,
            progress=None if progress is None else progress.append,
            compressed=False,
        )
        assert index.loadable and len(index.all_paths) == ws.base_count and index.format == INDEX_FORMAT
        written = _published(index, folder / "native.idx")
        _assert_blocks_hold(ws, folder, written)
        # the paths are read from the key table (no list), and the file loads back on both cores
        assert list(index.all_paths) == sorted(ws.index_paths())
        loaded = ContentIndex.load_native(folder / "native.idx", "sha-of-the-archive", keys)
        assert loaded is not None and list(loaded.paths) == list(index.paths)
        assert ContentIndex.load(folder / "native.idx", "sha-of-the-archive", ws.index_paths()) is not None
        assert ContentIndex.load_native(folder / "native.idx", "other-content", keys) is None
        return written
    except PvfFormatError as exc:
        return exc.code
    finally:
        ws.close()


def _assert_blocks_hold(ws: Workspace, folder: Path, plain: bytes) -> None:
    """The format-3 build of ``ws`` holds what the format-2 file ``plain`` holds: the same corpus
    (decoded), offsets, text mask and permutation; it loads back natively, never on the Python core."""
    keys = ws.native_index_keys()
    assert keys is not None
    index = ContentIndex.build_native(ws.archive, keys, folder=folder)
    assert index.format == BLOCK_FORMAT and index.loadable
    corpus = index.nbytes
    assert index.read(0, corpus) == plain[HEADER_SIZE : HEADER_SIZE + corpus]
    arrays = plain[HEADER_SIZE + corpus :]
    written = _published(index, folder / "blocks.idx")
    start = HEADER_SIZE + index.compressed_bytes
    assert written[start : start + len(arrays)] == arrays
    assert len(written) < len(plain) or corpus < 4096  # compressed (a tiny corpus may not shrink)
    loaded = ContentIndex.load_native(folder / "blocks.idx", "sha-of-the-archive", keys)
    assert loaded is not None and loaded.format == BLOCK_FORMAT
    assert loaded.read(0, corpus) == plain[HEADER_SIZE : HEADER_SIZE + corpus]
    assert ContentIndex.load(folder / "blocks.idx", "sha-of-the-archive", ws.index_paths()) is None
    (folder / "blocks.idx").unlink()


def _assert_same(path: Path, tmp: Path) -> bytes | str:
    reference = _reference(path, tmp / "reference")
    native = _native(path, tmp / "native")
    assert native == reference
    for folder in ("reference", "native"):  # no spool or half-written file is left behind
        assert sorted(p.name for p in (tmp / folder).iterdir() if not p.name.endswith(".idx")) == []
    return reference


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("native-index")
    out = {}
    for fmt in FORMATS:
        out[fmt] = root / f"{fmt}.pvf"
        generate_archive(out[fmt], fmt=fmt, files=1500, seed=28)
    return out


@pytest.mark.parametrize("fmt", FORMATS)
def test_generated_archives_index_byte_for_byte(generated: dict[str, Path], fmt: str, tmp_path: Path) -> None:
    written = _assert_same(generated[fmt], tmp_path)
    assert isinstance(written, bytes) and len(written) > 100_000


def test_progress_is_reported_and_a_cancel_stops_the_build(
    generated: dict[str, Path], tmp_path: Path
) -> None:
    progress: list[int] = []
    _native(generated["90US"], tmp_path / "a", progress)
    assert progress and progress == sorted(progress) and progress[-1] == 1500

    class Cancelled(Exception):
        pass

    def cancel() -> None:
        raise Cancelled

    ws = _open(generated["classic"], "native")
    try:
        keys = ws.native_index_keys()
        assert keys is not None
        for compressed in (False, True):
            with pytest.raises(Cancelled):
                ContentIndex.build_native(
                    ws.archive, keys, folder=tmp_path / "b", check_cancelled=cancel, compressed=compressed
                )
    finally:
        ws.close()
    assert list((tmp_path / "b").iterdir()) == []  # the spool and the unfinished index are gone


def test_the_corpus_in_every_format_indexes_byte_for_byte(pvf_corpus: Path, tmp_path: Path) -> None:
    files = [
        p for p in sorted(pvf_corpus.rglob("*")) if p.is_file() and p.suffix not in (".md", ".tsv", ".bin")
    ]
    assert len(files) > 100
    for fmt in FORMATS:
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
        written = _assert_same(target, tmp_path / fmt)
        assert isinstance(written, bytes)


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    root = tmp_path_factory.mktemp("small-index")
    out = {}
    for fmt in FORMATS:
        generate_archive(root / f"{fmt}.pvf", fmt=fmt, files=60, seed=5)
        out[fmt] = (root / f"{fmt}.pvf").read_bytes()
    return out


@FUZZ
@given(st.sampled_from(FORMATS), st.integers(0, 2**32 - 1), st.integers(1, 6))
def test_damaged_entries_fail_or_index_alike(
    small: dict[str, bytes], tmp_path_factory: pytest.TempPathFactory, fmt: str, seed: int, flips: int
) -> None:
    """Bytes flipped in the entries' data (past the directory): both builds fail with the same code,
    or write the same file (a script that no longer renders is left out by both)."""
    rng = random.Random(seed)
    data = bytearray(small[fmt])
    for _ in range(flips):
        pos = rng.randrange(len(data) // 3, len(data))
        data[pos] ^= 1 << rng.randrange(8)
    tmp = tmp_path_factory.mktemp("damaged")
    target = tmp / "damaged.pvf"
    target.write_bytes(bytes(data))
    try:
        _open(target, "python").close()
    except ServiceError:  # OPEN_FAILED: the flips broke the directory (test_native_core covers that)
        return
    _assert_same(target, tmp)
