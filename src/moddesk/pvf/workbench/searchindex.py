"""The content index: every text entry's case-folded UTF-8, sorted by path, in one file on disk.

A real archive's folded texts are several times its size (≈560 MiB for 10^6 generated files),
so the corpus is never held in memory: the build spools each folded text to a temp file as it
arrives (storage order), then copies the texts into path order in a second file whose layout is

    header (HEADER_SIZE bytes: magic, JSON) | corpus | offsets (<i8, texts + 1) | text mask (u1,
    sorted paths) | sorting permutation of the workspace's path list (<i8, paths)

and searches read it in blocks (``os.pread``: no shared file position, so concurrent searches
need no lock). The process keeps only the sorted path list (the workspace's own strings), one
offset per text and one flag per path.

The file doubles as the index cache: published under the archive's sha256 it is loaded on the
next open of the same content. The workspace computes that hash anyway to identify its source
(``read_source``), so keying by it costs nothing extra, and unlike size + mtime it cannot be
fooled by an edit that keeps both. No path is stored: the same content lists the same paths in
the same order, so the stored permutation rebuilds the sorted list (checked: a permutation, and
sorted); a file that fails any check (version, key, sizes, offsets) is ignored and rebuilt.
"""

from __future__ import annotations

import bisect
import contextlib
import ctypes
import functools
import itertools
import json
import mmap
import operator
import os
import sys
import tempfile
import time
import zlib
from array import array
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager
from pathlib import Path
from typing import IO, Any, Protocol, overload

import numpy as np
import numpy.typing as npt

from moddesk.kit.errors import ServiceError
from moddesk.kit.files import temp_prefix
from moddesk.kit.linear_regex import LinearRegex

INDEX_FORMAT = 2
BLOCK_FORMAT = 3  # the native core's: the corpus as compressed blocks (``moddesk_pvf::blocks``)
HEADER_SIZE = 4096
_MAGIC = b"MODDESK-PVF-INDEX\n"
SEPARATOR = b"\x00"  # ends every text; never part of a query, so no match spans two files
SPOOL_FLUSH = 8 << 20  # folded bytes gathered before one spool write
COPY_FILES = 8192  # texts copied into path order per write (bounds the mapped pages touched)
FIRST_BLOCK = 256 << 10  # a substring scan reads this much first (a common word answers from it)
MAX_BLOCK = 8 << 20  # ... doubling up to this
FIRST_HITS = 64  # hits a native literal search answers first (one page's worth) …
MAX_HITS = 16384  # … then four times more per call, up to this
REGEX_BLOCK = 4 << 20  # corpus bytes scanned per regex pass, at most
MIN_REGEX_BLOCK = 256 << 10  # … and at least (a costlier pattern's block goes to a worker process)


class SortedKeys(Protocol):
    """The base archive's keys in sorted order, held natively (``pathtable.NativeBasePaths``)."""

    def __len__(self) -> int: ...

    def sorted_keys(self, lo: int = 0, hi: int | None = None) -> list[str]: ...

    def sorted_entries(self) -> npt.NDArray[np.int64] | None: ...

    def sorted_crc32(self) -> int: ...

    def bisect(self, key: str) -> int: ...


KEY_BLOCK = 4096  # keys made into strings per native call when a KeyPaths is read


class KeyPaths(Sequence[str]):
    """Sorted paths read from a native key table a block at a time: no string per path is held.

    ``ranks``: the sorted rank of each item (a subset, e.g. the text entries), else every key.
    """

    def __init__(self, keys: SortedKeys, ranks: npt.NDArray[np.int64] | None = None) -> None:
        self.keys = keys
        self.ranks = ranks
        self._block: tuple[int, list[str]] = (0, [])  # replaced whole: concurrent readers are safe

    def __len__(self) -> int:
        return len(self.keys) if self.ranks is None else len(self.ranks)

    @overload
    def __getitem__(self, item: int) -> str: ...

    @overload
    def __getitem__(self, item: slice) -> list[str]: ...

    def __getitem__(self, item: int | slice) -> str | list[str]:
        if isinstance(item, slice):
            return [self[i] for i in range(*item.indices(len(self)))]
        if item < 0:
            item += len(self)
        if not 0 <= item < len(self):
            raise IndexError(item)
        rank = item if self.ranks is None else int(self.ranks[item])
        start, block = self._block
        if not start <= rank < start + len(block):
            start = rank - rank % KEY_BLOCK
            block = self.keys.sorted_keys(start, start + KEY_BLOCK)
            self._block = (start, block)
        return block[rank - start]

    def bisect(self, key: str) -> int:
        """``bisect.bisect_left(self, key)`` by the native table (no string per probe)."""
        rank = self.keys.bisect(key)
        return rank if self.ranks is None else int(np.searchsorted(self.ranks, rank))


class NativeIndexSource(Protocol):
    """What ``ContentIndex.build_native`` asks of the archive (``Archive.build_native_index``)."""

    def build_native_index(
        self,
        order: npt.NDArray[np.uint32],
        spool: Path,
        out: Path,
        progress: Callable[[int], None],
        lock: Any,
        compressed: bool = False,
    ) -> tuple[bytes, bytes]: ...


MMAP_THRESHOLD = 4 << 20  # glibc: a buffer this big or bigger is its own mapping, returned when freed
TRIM_THRESHOLD = 32 << 20  # … and the heap's free top is given back only past this much
ARENA_MAX = 2  # … and the native workers share one arena beside the main one (not one per thread)


@functools.cache
def bound_retained_heap() -> bool:
    """Fix glibc's mmap and trim thresholds for this process (once; True if set).

    glibc raises the threshold after each big buffer is freed (up to 32 MiB), so the multi-MiB
    buffers of a native index build (rendered steps, blocks) are then carved from the heap and
    kept there after they are freed: at 10^6 files that held ~100 MiB at the build's peak and
    ~200 MiB after it. With the threshold fixed they are mappings returned as they are freed.
    Fixing it also fixes the trim threshold at its 128 KiB default, and then the heap's top is
    given back and faulted in again around every few-MiB buffer (a regex full pass at 10^6 took
    twice the CPU), hence ``TRIM_THRESHOLD``. Measured at 10^6 90US on a loaded box: the build's
    peak 484 → 390 MiB, after the build 482 → 323 MiB, build time and the regex pass's CPU
    (0.50 s) unchanged. glibc also gives each new thread an arena of its own (up to 8 per core),
    each keeping what its thread freed: ``ARENA_MAX`` arenas held the quiet-box 10^6 90US open +
    index at +389/390 MiB against +403/405 MiB (two runs each, build time the same); one arena made
    the build 25% slower (the workers contend for its lock). Only on Linux with glibc; a setting
    given in the environment (``MALLOC_MMAP_THRESHOLD_``, ``MALLOC_TRIM_THRESHOLD_``,
    ``MALLOC_ARENA_MAX``) is the user's and left alone.
    """
    told = {"MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_ARENA_MAX"} & set(os.environ)
    if not sys.platform.startswith("linux") or told:
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # not glibc (musl has no mallopt)
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    # <malloc.h> M_TRIM_THRESHOLD, M_MMAP_THRESHOLD, M_ARENA_MAX
    m_trim_threshold, m_mmap_threshold, m_arena_max = -1, -3, -8
    return (
        bool(mallopt(m_trim_threshold, TRIM_THRESHOLD))
        and bool(mallopt(m_mmap_threshold, MMAP_THRESHOLD))
        and bool(mallopt(m_arena_max, ARENA_MAX))
    )


def normalize_path(path: str) -> str:
    """Archive paths compare case-insensitively with forward slashes and no leading slash."""
    return path.replace("\\", "/").strip("/").lower()


def fold_text(text: str | None) -> bytes | None:
    """What the index stores for one text: case-folded UTF-8 plus the separator (None: binary)."""
    return None if text is None else text.casefold().encode("utf-8", "surrogatepass") + SEPARATOR


def paths_crc(paths: list[str]) -> int:
    """A cheap check value of the sorted path list an index file belongs to (not a security hash:
    the archive's sha256 already names the content; this catches a changed path derivation)."""
    return zlib.crc32("\n".join(paths).encode("utf-8", "surrogatepass"))


class IndexBlocks(Protocol):
    """A format-3 corpus read natively (``moddesk_native.pvf.IndexBlocks``)."""

    @property
    def blocks(self) -> int: ...

    def block_of(self, ordinal: int) -> int: ...

    def read(self, begin: int, end: int) -> bytes: ...

    def block_range(self, first: int, last: int) -> bytes: ...

    def containing(
        self, needle: bytes, lo: int, hi: int, max_hits: int, budget: float | None = None
    ) -> tuple[bytes, int, bool]: ...


def _read_at(handle: IO[bytes], size: int, offset: int) -> bytes:
    if hasattr(os, "pread"):
        return os.pread(handle.fileno(), size, offset)
    handle.seek(offset)  # pragma: no cover - Windows has no pread; the index serialises nothing else
    return handle.read(size)


class ContentIndex:
    """Sorted paths of all entries; the folded texts of the text ones in an index file."""

    def __init__(
        self,
        all_paths: list[str] | KeyPaths,
        text_mask: npt.NDArray[np.bool_],
        offsets: npt.NDArray[np.int64],
        handle: IO[bytes],
        corpus_start: int,
        temp_path: Path | None = None,
        blocks: tuple[IndexBlocks, npt.NDArray[np.int64], int] | None = None,
    ) -> None:
        self.all_paths: Sequence[str] = all_paths
        self.paths: Sequence[str]
        if isinstance(all_paths, KeyPaths):  # the native key table's: no list of every path
            self.paths = KeyPaths(all_paths.keys, np.flatnonzero(text_mask).astype(np.int64))
        else:
            self.paths = list(itertools.compress(all_paths, text_mask.tolist()))
        self.text_mask = text_mask
        self.offsets = offsets
        self._handle = handle
        self._start = corpus_start
        self._temp_path = temp_path  # an unpublished build in the cache folder
        self.loadable = False  # the file stores the permutation of the caller's paths
        # format 3: the native reader, the first ordinal of each block (+ the text count), and
        # the compressed size of the corpus; None: format 2, the corpus plain in the file
        self._blocks: IndexBlocks | None = None
        self._block_ords: npt.NDArray[np.int64] = np.zeros(1, dtype=np.int64)
        self.compressed_bytes = int(offsets[-1])
        if blocks is not None:
            self._blocks, self._block_ords, self.compressed_bytes = blocks

    # ------------------------------------------------------------------ building

    @classmethod
    def build(
        cls,
        entries: Iterable[tuple[str, str | None]],
        progress: Callable[[int], None] | None = None,
        check_cancelled: Callable[[], None] | None = None,
        folder: Path | None = None,
    ) -> ContentIndex:
        """Index ``(path, text)`` pairs; ``None`` text = a binary entry (path search only)."""
        pairs = [(normalize_path(path), text) for path, text in entries]
        base = list(dict.fromkeys(key for key, _ in pairs))
        return cls.build_folded(
            in_chunks((key, fold_text(text)) for key, text in pairs),
            base_paths=base,
            progress=progress,
            check_cancelled=check_cancelled,
            folder=folder,
        )

    @classmethod
    def build_folded(
        cls,
        chunks: Iterable[tuple[list[str], list[bytes | None]]],
        *,
        folder: Path | None = None,
        base_paths: list[str] | None = None,
        progress: Callable[[int], None] | None = None,
        check_cancelled: Callable[[], None] | None = None,
    ) -> ContentIndex:
        """Index chunks of ``(keys, fold_text(text) of each)`` in any order (the first of a key wins).

        Keys are ``normalize_path`` results already (the caller knows when that is a no-op);
        chunks keep the per-entry Python work to a few list operations.

        ``folder``: where the index file is written (the cache folder: ``publish`` then renames
        it into place); None = an anonymous temp file. ``base_paths``: every key, unique, in the
        caller's own order (the workspace's); when they are the index's keys, the index shares
        their strings and stores their sorting permutation, which is what lets ``load`` rebuild
        the sorted list from the same archive without sorting or storing a path.
        """
        if folder is not None:
            folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder) as spool:
            keys, lengths = _spool(chunks, spool, progress, check_cancelled)
            ordered = _argsort(keys)  # stable: a repeated key's entries stay in storage order
            all_paths = [keys[i] for i in ordered.tolist()]
            del keys
            if any(map(operator.eq, all_paths, itertools.islice(all_paths, 1, None))):
                first = [True, *map(operator.ne, all_paths, itertools.islice(all_paths, 1, None))]
                ordered = ordered[np.array(first, dtype=np.bool_)]  # the first entry of a key wins
                all_paths = list(itertools.compress(all_paths, first))
            base_order = None
            if base_paths is not None:
                base_order = _argsort(base_paths)
                known = [base_paths[i] for i in base_order.tolist()]
                if known == all_paths:
                    all_paths = known
                else:
                    base_order = None  # not this index's keys: the file will not be loadable
            sizes = np.frombuffer(lengths, dtype=np.int64)
            starts = np.zeros(len(sizes), dtype=np.int64)
            if len(sizes) > 1:
                np.cumsum(np.maximum(sizes[:-1], 0), out=starts[1:])
            text_mask = sizes[ordered] >= 0
            texts = ordered[text_mask]
            offsets = np.zeros(len(texts) + 1, dtype=np.int64)
            np.cumsum(sizes[texts], out=offsets[1:])
            handle, temp_path = _index_file(folder)
            try:
                handle.write(bytes(HEADER_SIZE))
                _copy_in_order(spool, starts[texts], sizes[texts], handle, check_cancelled)
                _finish(handle, text_mask, offsets, base_order)
            except BaseException:
                handle.close()
                if temp_path is not None:
                    temp_path.unlink(missing_ok=True)
                raise
        index = cls(all_paths, text_mask, offsets, handle, HEADER_SIZE, temp_path)
        index.loadable = base_order is not None
        return index

    @classmethod
    def build_native(
        cls,
        archive: NativeIndexSource,
        keys: SortedKeys,
        *,
        folder: Path | None = None,
        progress: Callable[[int], None] | None = None,
        check_cancelled: Callable[[], None] | None = None,
        lock: AbstractContextManager[object] | None = None,
        compressed: bool = True,
    ) -> ContentIndex:
        """``build_folded`` of every entry of a native ``archive`` in one native call.

        ``compressed``: the file is format 3 (the same corpus, offsets, mask and permutation, the
        corpus stored as compressed blocks and searched natively); else format 2, byte for byte
        ``build_folded``'s file.

        ``keys``: the workspace's native key table, where every name is its own key (distinct), so
        its sorted entries are the file's permutation and its sorted keys the index's paths, read
        from it as needed (``KeyPaths``: no string per path is made). Scripts are rendered and
        folded on every core with the GIL released, spooled, and copied into path order natively;
        ``progress(done)`` and ``check_cancelled()`` run after each batch (either may raise to stop).
        """
        if folder is not None:
            folder.mkdir(parents=True, exist_ok=True)
        bound_retained_heap()
        order = keys.sorted_entries()
        if order is None or len(order) != len(keys):
            raise ValueError("build_native needs a native key table of distinct keys")

        def step(done: int) -> None:
            if progress is not None:
                progress(done)
            if check_cancelled is not None:
                check_cancelled()

        fd, spool_name = tempfile.mkstemp(prefix=temp_prefix("index.spool"), dir=folder)
        os.close(fd)
        handle, temp_path = _index_file(folder)
        out_path = temp_path
        if out_path is None:  # an anonymous index: named for the native writer, unlinked at once after
            handle.close()
            out_fd, out_name = tempfile.mkstemp(prefix=temp_prefix("index.idx"))
            handle, out_path = os.fdopen(out_fd, "w+b", buffering=0), Path(out_name)
        try:
            offsets_raw, mask_raw = archive.build_native_index(
                order.astype(np.uint32),
                Path(spool_name),
                out_path,
                step,
                lock or contextlib.nullcontext(),
                compressed=compressed,
            )
            offsets = np.frombuffer(offsets_raw, dtype="<i8").astype(np.int64)
            text_mask = np.frombuffer(mask_raw, dtype=np.uint8).astype(np.bool_)
            blocks = None
            if compressed:  # opened by name before an anonymous file is unlinked
                tables = _block_tables(handle, len(offsets) - 1, len(text_mask))
                if tables is None:
                    raise ValueError("the native index build wrote no sound block table")
                blocks = _open_blocks(out_path, offsets, *tables)
        except BaseException:
            handle.close()
            out_path.unlink(missing_ok=True)
            raise
        finally:
            Path(spool_name).unlink(missing_ok=True)
        if temp_path is None:
            out_path.unlink(missing_ok=True)  # the open handles keep reading it (POSIX)
        index = cls(KeyPaths(keys), text_mask, offsets, handle, HEADER_SIZE, temp_path, blocks)
        index.loadable = True
        return index

    def publish(self, target: Path, key: str) -> None:
        """Make the built file the cache of the archive content ``key`` (durable, then renamed)."""
        if self._temp_path is None or not self.loadable:
            self.discard()
            return
        _write_header(self._handle, self, key)
        os.fsync(self._handle.fileno())
        os.replace(self._temp_path, target)
        self._temp_path = None

    def discard(self) -> None:
        """Forget an unpublished build file (the open handle still serves this index)."""
        if self._temp_path is not None:
            with contextlib.suppress(OSError):
                self._temp_path.unlink()
            self._temp_path = None

    @classmethod
    def load(cls, path: Path, key: str, base_paths: list[str]) -> ContentIndex | None:
        """The index file stored for archive content ``key`` whose keys are ``base_paths``, or None.

        ``base_paths`` in the order given at build time (the same archive lists them the same way).
        """
        try:
            handle: IO[bytes] = open(path, "rb", buffering=0)  # noqa: SIM115 - the index keeps it open
        except OSError:
            return None
        try:
            index = cls._from_file(handle, key, base_paths)
        except (OSError, ValueError, KeyError, TypeError, UnicodeDecodeError):
            index = None
        if index is None:
            handle.close()
        return index

    @classmethod
    def load_native(cls, path: Path, key: str, keys: SortedKeys) -> ContentIndex | None:
        """``load`` for the native key table ``keys`` (``build_native``'s): the stored permutation
        must be the table's sorted entries and the path check value its sorted keys', both checked
        natively; the paths stay in the table (``KeyPaths``), so no list is rebuilt."""
        order = keys.sorted_entries()
        if order is None:
            return None
        try:
            handle: IO[bytes] = open(path, "rb", buffering=0)  # noqa: SIM115 - the index keeps it open
        except OSError:
            return None
        index = None
        try:
            arrays = _read_arrays(handle, key, len(order), (INDEX_FORMAT, BLOCK_FORMAT))
            if arrays is not None:
                header, offsets, text_mask, stored = arrays
                if np.array_equal(stored, order) and header.get("pathsCrc") == keys.sorted_crc32():
                    blocks = None
                    if header["version"] == BLOCK_FORMAT:
                        tables = _block_tables(handle, len(offsets) - 1, len(order))
                        if (
                            tables is None
                            or tables[1][-1] != int(header.get("compressed", -1))
                            or header.get("arraysCrc") != _arrays_crc(handle, int(tables[1][-1]))
                        ):
                            handle.close()
                            return None
                        blocks = _open_blocks(path, offsets, *tables)
                    index = cls(KeyPaths(keys), text_mask, offsets, handle, HEADER_SIZE, blocks=blocks)
        except (OSError, ValueError, KeyError, TypeError, UnicodeDecodeError):
            index = None
        if index is None:
            handle.close()
        return index

    @classmethod
    def _from_file(cls, handle: IO[bytes], key: str, base_paths: list[str]) -> ContentIndex | None:
        arrays = _read_arrays(handle, key, len(base_paths))
        if arrays is None:
            return None
        header, offsets, text_mask, order = arrays
        count = len(base_paths)
        if (count and (int(order.min()) < 0 or int(order.max()) >= count)) or bool(
            np.any(np.bincount(order, minlength=count) != 1)  # a permutation
        ):
            return None
        all_paths = [base_paths[i] for i in order.tolist()]
        if not all(map(operator.lt, all_paths, itertools.islice(all_paths, 1, None))):
            return None  # not the sorted order of these paths
        if header.get("pathsCrc") != paths_crc(all_paths):
            return None  # other paths (e.g. a changed path normalisation) for the same content
        return cls(all_paths, text_mask, offsets, handle, HEADER_SIZE)

    # ------------------------------------------------------------------ reading

    def __len__(self) -> int:
        return len(self.paths)

    @property
    def nbytes(self) -> int:
        """Bytes of folded text in the index (uncompressed)."""
        return int(self.offsets[-1])

    @property
    def format(self) -> int:
        """The index file's format: ``INDEX_FORMAT`` (plain corpus) or ``BLOCK_FORMAT``."""
        return INDEX_FORMAT if self._blocks is None else BLOCK_FORMAT

    @property
    def memory_bytes(self) -> int:
        """What the index itself keeps in memory besides the path strings (offsets, mask, lists)."""
        arrays = int(self.offsets.nbytes + self.text_mask.nbytes)
        if isinstance(self.paths, KeyPaths) and self.paths.ranks is not None:
            return arrays + int(self.paths.ranks.nbytes)
        return arrays + 8 * (len(self.paths) + len(self.all_paths))

    def paths_crc(self) -> int:
        """``paths_crc`` of ``all_paths`` (natively for a ``KeyPaths``)."""
        if isinstance(self.all_paths, KeyPaths):
            return self.all_paths.keys.sorted_crc32()
        return paths_crc(list(self.all_paths))

    def read(self, begin: int, end: int) -> bytes:
        """Corpus bytes ``[begin, end)``."""
        if end <= begin:
            return b""
        if self._blocks is not None:
            return self._blocks.read(begin, end)
        return _read_at(self._handle, end - begin, self._start + begin)

    def folded_text(self, ordinal: int) -> bytes:
        """The folded UTF-8 text of one entry (without the separator)."""
        return self.read(int(self.offsets[ordinal]), int(self.offsets[ordinal + 1]) - 1)

    def ordinal_range(self, prefix: str, start_path: str) -> tuple[int, int]:
        """Ordinals of paths under ``prefix`` from ``start_path`` on (paths are sorted)."""
        return ordinal_range(self.paths, prefix, start_path)

    def _block_end(self, start: int, hi: int, size: int) -> int:
        """The ordinal ending a block of about ``size`` bytes from ``start`` (at least one file)."""
        limit = int(self.offsets[start]) + size
        return min(hi, max(start + 1, int(np.searchsorted(self.offsets, limit, side="right")) - 1))

    def containing(self, needle: bytes, lo: int, hi: int, deadline: float | None = None) -> Iterator[int]:
        """Ordinals in ``[lo, hi)`` whose folded text contains ``needle``, ascending.

        Blocks end on file boundaries (no match spans a separator), start small so a common
        needle answers after one short read, and double so a rare one streams the file.
        ``deadline`` is not consulted: the file streams at disk speed (``Searcher`` checks the
        budget per hit); it is there for sources that read slower (``tokenscan.TokenSource``).
        """
        if self._blocks is not None:
            yield from self._containing_blocks(self._blocks, needle, lo, hi, deadline)
            return
        offsets = self.offsets
        start, size = lo, FIRST_BLOCK
        while start < hi:
            end = self._block_end(start, hi, size)
            base = int(offsets[start])
            block = self.read(base, int(offsets[end]))
            pos = block.find(needle)
            while pos >= 0:
                ordinal = int(np.searchsorted(offsets, base + pos, side="right")) - 1
                yield ordinal
                pos = block.find(needle, int(offsets[ordinal + 1]) - base)
            start, size = end, min(size * 2, MAX_BLOCK)

    def _containing_blocks(
        self, blocks: IndexBlocks, needle: bytes, lo: int, hi: int, deadline: float | None
    ) -> Iterator[int]:
        """``containing`` over a format-3 corpus: natively, a page of hits per call (the first
        small, so a common needle answers after one block), the deadline checked per step of
        blocks natively (there a rare needle decodes the whole corpus): ``-(ordinal + 1)`` when
        the time ran out before ``ordinal``, as ``regex_candidates`` says it."""
        start, batch = lo, FIRST_HITS
        while start < hi:
            budget = None if deadline is None else max(0.0, deadline - time.monotonic())
            raw, resume, timed_out = blocks.containing(needle, start, hi, batch, budget)
            hits = np.frombuffer(raw, dtype="<u8").tolist()
            yield from hits
            if timed_out:
                yield -resume - 1
                return
            if len(hits) < batch:
                return  # the range is scanned
            start, batch = resume, min(batch * 4, MAX_HITS)

    def regex_candidates(
        self, regex: LinearRegex, lo: int, hi: int, deadline: float, block_bytes: int | None = None
    ) -> Iterator[int]:
        """Ordinals in ``[lo, hi)`` that may match ``regex`` (a superset; callers check each file).

        Files are scanned in blocks of whole files, the separators read as newlines so ``^``/``$``
        behave per file (``regex`` is the variant with ``\\A``/``\\Z`` at every line). A match
        that crosses into the next file marks every file it touches for the exact per-file check,
        so nothing is lost. ``-(ordinal + 1)`` means the time budget ran out before ``ordinal``.
        A block is as big as the engine may search in this process (``regex.inline_bytes``).
        """
        size = block_bytes or max(MIN_REGEX_BLOCK, min(REGEX_BLOCK, regex.inline_bytes))
        windows = self._windows(lo, hi, size)
        try:
            yield from self._regex_windows(regex, windows, lo, deadline)
        finally:
            windows.close()  # a page that stops early waits for the one window decoded ahead

    def _regex_windows(
        self, regex: LinearRegex, windows: Iterator[tuple[int, int, bytes]], lo: int, deadline: float
    ) -> Iterator[int]:
        offsets = self.offsets
        for start, end, block in windows:
            if start > lo and time.monotonic() > deadline:  # one block at least: always progress
                yield -start - 1
                return
            base = int(offsets[start])
            try:
                spans = regex.first_match_per_segment(block, b"\x00", deadline, superset=True)
            except ServiceError as exc:
                if exc.code != "QUERY_TOO_COSTLY" or start == lo:
                    raise
                yield -start - 1  # this page spent its budget before the block: the next page runs it
                return
            found: set[int] = set()
            for match_start, match_end in spans:
                first = int(np.searchsorted(offsets, base + match_start, side="right")) - 1
                last = int(np.searchsorted(offsets, base + max(match_start, match_end - 1), side="right")) - 1
                found.update(range(first, last + 1))
            for ordinal in sorted(found):
                if ordinal < end:
                    yield ordinal

    def _windows(self, lo: int, hi: int, size: int) -> Generator[tuple[int, int, bytes], None, None]:
        """``(start, end, texts of [start, end))`` from ``lo`` to ``hi``, about ``size`` bytes each.

        Format 3: whole stored blocks (``_decoded``), the next window decoded natively on a helper
        thread (the GIL released) while the caller scans this one — decoding is as much CPU as the
        regex scan itself, and the box has two cores. Format 2: plain reads."""
        blocks, offsets = self._blocks, self.offsets
        if blocks is None:
            start = lo
            while start < hi:
                end = self._block_end(start, hi, size)
                yield start, end, self.read(int(offsets[start]), int(offsets[end]))
                start = end
            return
        if lo >= hi:
            return
        with ThreadPoolExecutor(1, thread_name_prefix="index-decode") as ahead:
            start, pending = lo, ahead.submit(self._decoded, blocks, lo, hi, size)
            while True:
                end, data = pending.result()
                if end < hi:
                    pending = ahead.submit(self._decoded, blocks, end, hi, size)
                yield start, end, data
                if end >= hi:
                    return
                start = end

    def _decoded(self, blocks: IndexBlocks, start: int, hi: int, size: int) -> tuple[int, bytes]:
        """The texts of ordinals ``[start, end)`` and ``end``: the stored blocks from the one holding
        ``start`` while they add up to about ``size`` bytes (one at least), decoded side by side,
        ``end`` at a block boundary (or ``hi``) so no block is decoded twice by a full pass."""
        ords, offsets = self._block_ords, self.offsets
        first = blocks.block_of(start)
        limit = int(offsets[int(ords[first])]) + size
        last = first + 1
        while last < len(ords) - 1 and int(ords[last]) < hi and int(offsets[int(ords[last + 1])]) <= limit:
            last += 1
        end = min(hi, int(ords[last]))
        data = blocks.block_range(first, last)
        base = int(offsets[int(ords[first])])
        return end, data[int(offsets[start]) - base : int(offsets[end]) - base]


def bisect_paths(paths: Sequence[str], key: str) -> int:
    """``bisect.bisect_left(paths, key)``; a ``KeyPaths`` asks its native table."""
    if isinstance(paths, KeyPaths):
        return paths.bisect(key)
    return bisect.bisect_left(paths, key)


def ordinal_range(paths: Sequence[str], prefix: str, start_path: str) -> tuple[int, int]:
    """Positions in sorted ``paths`` of the paths under ``prefix`` from ``start_path`` on."""
    lo = bisect_paths(paths, max(prefix, start_path))
    hi = len(paths) if not prefix else bisect_paths(paths, prefix[:-1] + "0")
    return lo, max(lo, hi)  # '0' sorts right after '/': the end of the folder


def _read_arrays(
    handle: IO[bytes], key: str, count: int, versions: tuple[int, ...] = (INDEX_FORMAT,)
) -> tuple[dict[str, Any], npt.NDArray[np.int64], npt.NDArray[np.bool_], npt.NDArray[np.int64]] | None:
    """The header, offsets, text mask and stored permutation of an index file for archive content
    ``key`` with ``count`` paths, when its header and sizes are sound (the permutation unchecked).

    ``versions``: the formats accepted; a format-3 file's corpus is its compressed blocks, and its
    block table follows the permutation (``_block_tables`` reads it)."""
    head = _read_at(handle, HEADER_SIZE, 0)
    if not head.startswith(_MAGIC):
        return None
    pos = len(_MAGIC)
    size = int.from_bytes(head[pos : pos + 4], "little")
    header: dict[str, Any] = json.loads(head[pos + 4 : pos + 4 + size])
    texts, corpus = int(header["texts"]), int(header["corpus"])
    version = header.get("version")
    stored = corpus
    tail = 0
    if version == BLOCK_FORMAT:
        stored = int(header["compressed"])
        tail = 16 * (int(header["blocks"]) + 1) + 8
        if stored < 0 or int(header["blocks"]) < 0:
            return None
    if (
        version not in versions
        or header.get("source") != key
        or int(header["paths"]) != count
        or not 0 <= texts <= count
    ):
        return None
    offsets_at = HEADER_SIZE + stored
    mask_at = offsets_at + 8 * (texts + 1)
    order_at = mask_at + count
    if os.fstat(handle.fileno()).st_size != order_at + 8 * count + tail:
        return None
    offsets = np.frombuffer(_read_at(handle, 8 * (texts + 1), offsets_at), dtype="<i8").astype(np.int64)
    text_mask = np.frombuffer(_read_at(handle, count, mask_at), dtype=np.uint8).astype(np.bool_)
    order = np.frombuffer(_read_at(handle, 8 * count, order_at), dtype="<i8").astype(np.int64)
    if (
        len(offsets) != texts + 1
        or int(offsets[0]) != 0
        or int(offsets[-1]) != corpus
        or bool(np.any(np.diff(offsets) < 1))  # every text has at least its separator
        or int(text_mask.sum()) != texts
        or len(order) != count
    ):
        return None
    return header, offsets, text_mask, order


# ---------------------------------------------------------------------- build steps


def in_chunks(
    items: Iterable[tuple[str, bytes | None]], size: int = 4096
) -> Iterator[tuple[list[str], list[bytes | None]]]:
    """``(key, data)`` pairs regrouped as the ``(keys, datas)`` chunks ``build_folded`` takes."""
    iterator = iter(items)
    while chunk := list(itertools.islice(iterator, size)):
        yield [key for key, _ in chunk], [data for _, data in chunk]


def _spool(
    chunks: Iterable[tuple[list[str], list[bytes | None]]],
    spool: IO[bytes],
    progress: Callable[[int], None] | None,
    check_cancelled: Callable[[], None] | None,
) -> tuple[list[str], array[int]]:
    """Write every folded text to ``spool``; the keys and lengths (-1: binary), storage order.

    A repeated key is spooled too (the sort keeps its first entry): no set of 10^6 keys.
    """
    keys: list[str] = []
    lengths = array("q")
    pending: list[bytes] = []
    pending_size = done = 0
    for chunk_keys, datas in chunks:
        done += len(chunk_keys)
        keys.extend(chunk_keys)
        lengths.extend([-1 if data is None else len(data) for data in datas])
        for data in datas:
            if data is None:
                continue
            if len(data) >= SPOOL_FLUSH:  # a big text goes straight out (no joined copy of it)
                spool.write(b"".join(pending))
                spool.write(data)
                pending, pending_size = [], 0
                continue
            pending.append(data)
            pending_size += len(data)
        if pending_size >= SPOOL_FLUSH:
            spool.write(b"".join(pending))
            pending, pending_size = [], 0
        if progress is not None:
            progress(done)
        if check_cancelled is not None:
            check_cancelled()
    spool.write(b"".join(pending))
    spool.flush()
    return keys, lengths


def _block_tables(
    handle: IO[bytes], texts: int, count: int
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]] | None:
    """The block ordinals and compressed block ends of a format-3 file with ``texts`` texts and
    ``count`` paths, read from its end (the number of blocks is the last <i8), when they fit the
    file's size (their order is checked by the native reader)."""
    size = os.fstat(handle.fileno()).st_size
    if size < HEADER_SIZE + 8:
        return None
    blocks = int.from_bytes(_read_at(handle, 8, size - 8), "little", signed=True)
    if not 0 <= blocks <= max(texts, 0):
        return None
    tables_at = size - 8 - 16 * (blocks + 1)
    raw = _read_at(handle, 16 * (blocks + 1), tables_at)
    if len(raw) != 16 * (blocks + 1):
        return None
    ords = np.frombuffer(raw[: 8 * (blocks + 1)], dtype="<i8").astype(np.int64)
    ends = np.frombuffer(raw[8 * (blocks + 1) :], dtype="<i8").astype(np.int64)
    if tables_at != HEADER_SIZE + int(ends[-1]) + 8 * (texts + 1) + 9 * count:
        return None
    return ords, ends


def _open_blocks(
    path: Path, offsets: npt.NDArray[np.int64], ords: npt.NDArray[np.int64], ends: npt.NDArray[np.int64]
) -> tuple[IndexBlocks, npt.NDArray[np.int64], int]:
    """The native reader of a format-3 corpus (ValueError when its tables do not fit together)."""
    from moddesk_native import pvf as native_pvf  # only the native core writes format 3

    reader: IndexBlocks = native_pvf.IndexBlocks(
        str(path),
        HEADER_SIZE,
        offsets.astype("<i8").tobytes(),
        ords.astype("<i8").tobytes(),
        ends.astype("<i8").tobytes(),
    )
    return reader, ords, int(ends[-1])


def _arrays_crc(handle: IO[bytes], compressed: int) -> int:
    """CRC-32 of what follows a format-3 file's blocks (offsets, mask, permutation, block table):
    a flipped bit there can leave every array well formed, so the header stores this check value
    (a block checks itself: its zstd frame carries its content's checksum)."""
    at = HEADER_SIZE + compressed
    size = os.fstat(handle.fileno()).st_size
    crc = 0
    while at < size:
        chunk = _read_at(handle, min(8 << 20, size - at), at)
        if not chunk:
            break
        crc = zlib.crc32(chunk, crc)
        at += len(chunk)
    return crc


def _index_file(folder: Path | None) -> tuple[IO[bytes], Path | None]:
    """A new index file: named in the cache ``folder`` (published later), else anonymous."""
    if folder is None:
        return tempfile.TemporaryFile(), None
    fd, name = tempfile.mkstemp(prefix=temp_prefix("index.idx"), dir=folder)
    return os.fdopen(fd, "w+b", buffering=0), Path(name)


def _copy_in_order(
    spool: IO[bytes],
    starts: npt.NDArray[np.int64],
    sizes: npt.NDArray[np.int64],
    out: IO[bytes],
    check_cancelled: Callable[[], None] | None,
) -> None:
    """Copy the spooled texts at ``starts``/``sizes`` (path order) to ``out``.

    The spool is mapped and read in path order; after each batch its pages are dropped from
    this process (MADV_DONTNEED: they stay in the page cache) so the copy never holds the
    corpus resident.
    """
    total = int(sizes.sum())
    if total == 0:
        return
    with mmap.mmap(spool.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
        view = memoryview(mapped)
        try:
            for batch in range(0, len(starts), COPY_FILES):
                begins = starts[batch : batch + COPY_FILES].tolist()
                ends = (starts[batch : batch + COPY_FILES] + sizes[batch : batch + COPY_FILES]).tolist()
                out.write(b"".join([view[b:e] for b, e in zip(begins, ends, strict=True)]))
                if hasattr(mapped, "madvise") and hasattr(mmap, "MADV_DONTNEED"):
                    mapped.madvise(mmap.MADV_DONTNEED)
                if check_cancelled is not None:
                    check_cancelled()
        finally:
            view.release()


def _argsort(keys: list[str]) -> npt.NDArray[np.int64]:
    """The sorting permutation of ``keys`` (an object-array argsort: 8 bytes per key, no int list)."""
    objects = np.empty(len(keys), dtype=object)
    objects[:] = keys
    return np.argsort(objects, kind="stable").astype(np.int64)


def _finish(
    handle: IO[bytes],
    text_mask: npt.NDArray[np.bool_],
    offsets: npt.NDArray[np.int64],
    base_order: npt.NDArray[np.int64] | None,
) -> None:
    handle.write(offsets.astype("<i8").tobytes())
    handle.write(text_mask.astype(np.uint8).tobytes())
    if base_order is not None:
        handle.write(base_order.astype("<i8").tobytes())
    handle.flush()


def _write_header(handle: IO[bytes], index: ContentIndex, key: str) -> None:
    """The header that makes the file loadable (written last: a torn file has no valid header)."""
    fields: dict[str, Any] = {
        "version": index.format,
        "source": key,
        "texts": len(index.paths),
        "paths": len(index.all_paths),
        "corpus": index.nbytes,
        "pathsCrc": index.paths_crc(),
    }
    if index.format == BLOCK_FORMAT:
        fields.update(
            codec="zstd",
            compressed=index.compressed_bytes,
            blocks=len(index._block_ords) - 1,
            arraysCrc=_arrays_crc(handle, index.compressed_bytes),
        )
    header = json.dumps(fields).encode()
    blob = _MAGIC + len(header).to_bytes(4, "little") + header
    if len(blob) > HEADER_SIZE:
        raise ValueError("index header too large")
    if hasattr(os, "pwrite"):
        os.pwrite(handle.fileno(), blob, 0)
    else:  # pragma: no cover - Windows
        handle.seek(0)
        handle.write(blob)
        handle.seek(0, os.SEEK_END)
