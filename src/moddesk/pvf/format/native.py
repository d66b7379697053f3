"""The native core's side of the format layer: open, read and render through ``moddesk_native.pvf``.

``Archive`` decides once per archive which core it uses (``moddesk.kit.native.native_core``); when
it is the native one, this module opens the directory natively and hands back the same
``ClassicDirectory`` / ``NkpiDirectory`` the reference builds — their arrays are zero-copy views of
the native answer — plus a :class:`PathTable` (every path in one buffer, a ``str`` made only for
the path asked for). Bulk passes ask the native core for a buffer of many entries at once.

Errors cross the boundary as ``NativeFormatError(code, message, offset)`` and leave here as the
reference's :class:`PvfFormatError` with the same code. The Python modules stay the oracle: the
differential tests (tests/pvf/format/test_native_core.py) compare both cores entry by entry.
"""

from __future__ import annotations

import functools
import importlib
import sys
from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, overload

import numpy as np

from moddesk.pvf.format import classic as classic_fmt
from moddesk.pvf.format import nkpi as nkpi_fmt
from moddesk.pvf.format.detect import PAGED110_SIDECAR
from moddesk.pvf.format.encodings import NAME_ENCODING
from moddesk.pvf.format.errors import PvfFormatError
from moddesk.pvf.format.source import ByteSource
from moddesk.pvf.format.strings import StringPools, StringTable

#: Entries per native bulk call (one buffer each): big enough to use both cores, small enough to stream.
BATCH_FILES = 2048
#: Stored bytes per native bulk call at most (rendered texts are ~5× that, held three times over).
BATCH_BYTES = 1 << 20


def _offsets(raw: bytes) -> array[int]:
    ends = array("Q")
    ends.frombytes(raw)
    return ends


class PathTable(Sequence[str]):
    """Every entry's path: the source's held natively (a ``str`` made on access), added ones in a list.

    Classic names are CP949 bytes (``surrogateescape``, as the reference decodes them); NKPI paths
    are UTF-8 made natively from the pools (``surrogatepass``), except rows whose pool bytes are
    GB18030, which the reference's own decoder gives (``overrides``). Nothing per entry is kept
    here: 10^6 paths as one str and its offsets held ~47 MiB beside the native copy.
    """

    #: Paths fetched per native call while iterating.
    BLOCK = 1 << 16

    def __init__(
        self, handle: Any, count: int, encoding: str, errors: str, overrides: dict[int, str]
    ) -> None:
        self._handle = handle
        self._count = count
        self._encoding = encoding
        self._errors = errors
        self._overrides = overrides
        self._extra: list[str] = []

    def __len__(self) -> int:
        return self._count + len(self._extra)

    def _source(self, i: int) -> str:
        if self._overrides:
            found = self._overrides.get(i)
            if found is not None:
                return found
        path = self._handle.path_at(i)
        return path if isinstance(path, str) else path.decode(self._encoding, self._errors)

    @overload
    def __getitem__(self, i: int) -> str: ...
    @overload
    def __getitem__(self, i: slice) -> list[str]: ...
    def __getitem__(self, i: int | slice) -> str | list[str]:
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        if 0 <= i < self._count:
            return self._source(i)
        if self._count <= i < len(self):
            return self._extra[i - self._count]
        raise IndexError("path index out of range")

    def __iter__(self) -> Iterator[str]:
        for lo in range(0, self._count, self.BLOCK):
            blob, ends_raw = self._handle.paths_between(lo, lo + self.BLOCK)
            ends = _offsets(ends_raw)
            if blob.isascii():
                text = blob.decode("ascii")
                yield from (text[ends[k] : ends[k + 1]] for k in range(len(ends) - 1))
            else:
                yield from (self._source(lo + k) for k in range(len(ends) - 1))
        yield from self._extra

    def append(self, path: str) -> None:
        """Add the path of a new entry."""
        self._extra.append(path)


@dataclass
class NativeOpened:
    """What a native open gives ``Archive``: the native handle, the reference's directory, the paths."""

    handle: Any
    format: str
    classic: classic_fmt.ClassicDirectory | None
    nkpi: nkpi_fmt.NkpiDirectory | None
    paths: PathTable


class RawNames(Sequence[bytes]):
    """The classic directory's raw names (trailing NULs kept), asked of the native archive when
    saving or verifying needs them (not held in Python beside the native copy)."""

    def __init__(self, handle: Any, count: int) -> None:
        self._handle = handle
        self._count = count

    def __len__(self) -> int:
        return self._count

    @overload
    def __getitem__(self, i: int) -> bytes: ...
    @overload
    def __getitem__(self, i: slice) -> list[bytes]: ...
    def __getitem__(self, i: int | slice) -> bytes | list[bytes]:
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError("name index out of range")
        name: bytes = self._handle.classic_name(i)
        return name


def format_error(exc: BaseException) -> PvfFormatError:
    """The reference's error for a ``NativeFormatError(code, message, offset)``."""
    code, message, offset = exc.args
    return PvfFormatError(str(code), str(message), offset=offset)


def source_buffer(src: ByteSource) -> Any:
    """The object whose buffer holds the archive's bytes (its mmap or bytes)."""
    return src.buffer()


def open_native(core: ModuleType, src: ByteSource, path: Path | None) -> NativeOpened:
    """Detect and read the directory natively; the same errors as ``detect`` + ``read_*_directory``."""
    pvf = core.pvf
    try:
        handle = pvf.open_archive(source_buffer(src))
    except pvf.NativeFormatError as exc:
        error = format_error(exc)
        if error.code == "UNKNOWN_FORMAT" and path is not None and (path.parent / PAGED110_SIDECAR).exists():
            raise nkpi_fmt.unsupported_paged110() from None
        raise error from None
    legacy_raw = handle.legacy_rows()
    info = handle.classic_info()
    if info is not None:
        directory = _classic_directory(info, RawNames(handle, len(handle)))
        paths = PathTable(handle, len(handle), NAME_ENCODING, "surrogateescape", {})
        return NativeOpened(handle, handle.format, directory, None, paths)
    nd = _nkpi_directory(handle.nkpi_info())
    overrides = {row: _reference_path(nd, row) for row in _offsets(legacy_raw)}
    paths = PathTable(handle, len(handle), "utf-8", "surrogatepass", overrides)
    return NativeOpened(handle, handle.format, None, nd, paths)


def _classic_directory(info: dict[str, Any], names: RawNames) -> classic_fmt.ClassicDirectory:
    return classic_fmt.ClassicDirectory(
        info["guid"],
        info["version"],
        info["tree_len"],
        info["tree_crc"],
        names,  # type: ignore[arg-type]
        np.frombuffer(info["hashes"], dtype="<u4"),
        np.frombuffer(info["sizes"], dtype="<i8"),
        np.frombuffer(info["crcs"], dtype="<u4"),
        np.frombuffer(info["offsets"], dtype="<i8"),
        info["base"],
        info["trailing_offset"],
        list(info["problems"]),
    )


def _nkpi_directory(info: dict[str, Any]) -> nkpi_fmt.NkpiDirectory:
    header = nkpi_fmt.NkpiHeader(
        info["guid"],
        info["count"],
        info["padding"],
        info["body_size"],
        info["group_count"],
        info["hash_size"],
        info["name_size"],
    )
    return nkpi_fmt.NkpiDirectory(
        nkpi_fmt.VARIANTS[info["variant"]],
        info["magic"],
        info["guard"],
        header,
        np.frombuffer(info["rows"], dtype=nkpi_fmt.ROW_DTYPE),
        StringPools(info["pool_a"], info["pool_w"]),
        info["prefix"],
        info["tail"],
        np.frombuffer(info["cumulative"], dtype="<i8"),
        np.frombuffer(info["originals"], dtype="<i8"),
    )


def _reference_path(d: nkpi_fmt.NkpiDirectory, row: int) -> str:
    """One row's path decoded by the reference (a GB18030 name or folder in a 90CN UTF-8 pool)."""
    name_magic, folder_magic = int(d.rows["name"][row]), int(d.rows["path"][row])
    folder = "" if folder_magic == nkpi_fmt.ROOT_PATH else d.pools.string_at(folder_magic) or ""
    name = "" if name_magic == nkpi_fmt.ROOT_PATH else d.pools.string_at(name_magic) or ""
    return f"{folder}/{name}" if folder else name


def batches(indexes: list[int], sizes: Sequence[int]) -> Iterator[list[int]]:
    """``indexes`` cut into runs of at most BATCH_FILES entries / about BATCH_BYTES stored bytes."""
    run: list[int] = []
    size = 0
    for i in indexes:
        run.append(i)
        size += sizes[i]
        if len(run) >= BATCH_FILES or size >= BATCH_BYTES:
            yield run
            run, size = [], 0
    if run:
        yield run


def split(blob: bytes, ends_raw: bytes) -> list[bytes]:
    """The pieces of a native answer (buffer + uint64 ends)."""
    ends = _offsets(ends_raw)
    return [blob[ends[k] : ends[k + 1]] for k in range(len(ends) - 1)]


def raise_batch_error(error: tuple[int, str, str, int | None] | None) -> None:
    """Raise the first error of a bulk answer, if any (the entries before it were answered)."""
    if error is not None:
        _position, code, message, offset = error
        raise PvfFormatError(code, message, offset=offset)


def index_bytes(indexes: list[int]) -> bytes:
    """uint32 little-endian bytes of directory indexes."""
    return np.asarray(indexes, dtype="<u4").tobytes()


class StringResolver:
    """Decodes (and case-folds) the strings only Python's codecs can: asked by the native renderer."""

    def __init__(self, strings: StringTable | StringPools) -> None:
        self.strings = strings

    def __call__(self, refs_raw: bytes) -> tuple[bytes, bytes, bytes, bytes]:
        refs = np.frombuffer(refs_raw, dtype="<u4").astype(np.int64)
        # the reference's own decoders, many strings per call and without filling its memo
        texts = [t or "" for t in self.strings.strings_at(refs)]
        encoded = [t.encode("utf-8", "surrogatepass") for t in texts]
        folded = [t.encode("utf-8", "surrogatepass") for t in map(str.casefold, texts)]
        return b"".join(encoded), _ends(encoded), b"".join(folded), _ends(folded)


def _ends(parts: list[bytes]) -> bytes:
    ends = np.zeros(len(parts) + 1, dtype="<u8")
    if parts:
        ends[1:] = np.cumsum(np.fromiter(map(len, parts), dtype=np.int64, count=len(parts)))
    return ends.tobytes()


def native_module(handle: Any) -> Any:
    """The ``moddesk_native.pvf`` module that made ``handle`` (a native archive)."""
    return importlib.import_module(type(handle).__module__.rpartition(".")[0] or "moddesk_native").pvf


def key_table(handle: Any, rows: bytes, keys: list[bytes], given_are_names: bool) -> Any:
    """The native key table of an archive (``moddesk_native.pvf.key_table``)."""
    module = importlib.import_module(type(handle).__module__.rpartition(".")[0] or "moddesk_native")
    return module.pvf.key_table(handle, rows, keys, given_are_names)


def set_strings(handle: Any, strings: StringTable | StringPools, *, legacy: bool = False) -> None:
    """Give the native renderer the archive's current strings, with the tables that let it decode
    and fold them as the reference does (``legacy``: GB18030 bytes may stand in the UTF-8 pool)."""
    casefold = casefold_table()
    if isinstance(strings, StringPools):
        codec = codec_table(LEGACY_POOL_ENCODING) if legacy else None
        # a pool still viewing the archive's own (no intern yet) is shared by the renderer, not copied
        handle.set_nkpi_strings(_pool_source(strings.pool_a), _pool_source(strings.pool_w), codec, casefold)
    else:
        codec = codec_table(strings.encoding) if strings.encoding in TABLE_ENCODINGS else None
        handle.set_classic_strings(strings.to_bytes(), codec, casefold)


def _pool_source(pool: bytearray | memoryview) -> Any:
    """What ``set_nkpi_strings`` is given for a pool: the native ``TableView`` a view shows (shared
    natively), else the ``bytearray`` (copied natively under the GIL)."""
    return pool.obj if isinstance(pool, memoryview) else pool


#: ``render_many``'s outcome of an entry: its text is in the buffer / its raw bytes are (the
#: caller renders it) / it has no text form (nothing in the buffer).
OUTCOME_TEXT, OUTCOME_RAW, OUTCOME_NO_TEXT = 0, 1, 2


def set_text_decoders(handle: Any, encoding: str | None, korean_mojibake: bool) -> None:
    """Let the native renderer make the texts of non-script entries: classic text in the region's
    code page ``encoding`` (``.nut`` in CP949) and the string table dump; NKPI UTF-16 text."""
    region = codec_table(encoding) if encoding in TABLE_ENCODINGS else None
    # .nut files are rare: their own table only when it is the region's (else the caller decodes them)
    names = region if encoding == NAME_ENCODING else None
    handle.set_text_decoders(region, names, casefold_table(), korean_mojibake)


#: Code pages whose decoder decides from at most two bytes at a time (GB18030's four-byte form
#: is left to the caller): a table of every byte and pair decodes them exactly as Python does.
TABLE_ENCODINGS = frozenset({"cp950", "cp949", "cp932", "gb18030"})
#: The code page of legacy strings in a 90CN UTF-8 pool (``StringPools.string_at``).
LEGACY_POOL_ENCODING = "gb18030"

_STEP_TEXT, _STEP_LEAD, _STEP_INVALID1, _STEP_INVALID2, _STEP_CALLER = range(5)


def _native_pvf() -> Any:
    return importlib.import_module("moddesk_native").pvf


def _probe(raw: bytes, encoding: str) -> tuple[int, str]:
    """What Python's codec does first with ``raw`` (one byte, or a lead byte and a trail byte)."""
    try:
        return _STEP_TEXT, raw.decode(encoding)
    except UnicodeDecodeError as exc:
        if exc.start != 0:
            return _STEP_CALLER, ""
        if exc.reason == "incomplete multibyte sequence":
            return (_STEP_LEAD if len(raw) == 1 else _STEP_CALLER), ""
        width = exc.end - exc.start
        return (_STEP_INVALID1 if width == 1 else _STEP_INVALID2 if width == 2 else _STEP_CALLER), ""


@functools.cache
def codec_table(encoding: str) -> Any:
    """``moddesk_native.pvf.CodecTable`` of ``encoding``: every byte and lead/trail pair as
    Python's own codec decodes it (about 33,000 probes, once per process)."""
    single = bytearray(256)
    single_texts: list[bytes] = []
    pair = bytearray([_STEP_CALLER]) * (1 << 16)
    pair_texts = [b""] * (1 << 16)
    for b in range(256):
        step, text = _probe(bytes([b]), encoding)
        single[b] = step
        single_texts.append(text.encode("utf-8", "surrogatepass"))
        if step != _STEP_LEAD:
            continue
        for t in range(256):
            step, text = _probe(bytes([b, t]), encoding)
            pair[b << 8 | t] = step
            pair_texts[b << 8 | t] = text.encode("utf-8", "surrogatepass")
    return _native_pvf().CodecTable(
        bytes(single),
        b"".join(single_texts),
        _ends(single_texts),
        bytes(pair),
        b"".join(pair_texts),
        _ends(pair_texts),
    )


@functools.cache
def casefold_table() -> Any:
    """``moddesk_native.pvf.CaseFoldTable``: every character ``str.casefold`` changes in this
    Python (its Unicode version), with its folded text (about 1,500; once per process)."""
    points: list[int] = []
    folded: list[bytes] = []
    codes = np.arange(sys.maxunicode + 1, dtype="<u4")
    codes[0xD800:0xE000] = 0x20  # surrogates fold to themselves (and UTF-32 cannot hold them)
    every = codes.tobytes().decode("utf-32-le")  # all characters at once, not one chr() each
    for base in range(0, len(every), 256):
        block = every[base : base + 256]
        if block.casefold() == block:
            continue
        for c in range(base, base + 256):
            f = every[c].casefold()
            if f != every[c] and not 0xD800 <= c < 0xE000:
                points.append(c)
                folded.append(f.encode("utf-8", "surrogatepass"))
    return _native_pvf().CaseFoldTable(
        np.asarray(points, dtype="<u4").tobytes(), b"".join(folded), _ends(folded)
    )


def set_links(handle: Any, tables: dict[int, dict[str, str]]) -> None:
    """Give the native renderer the classic string links (``Archive._link_tables``)."""
    ids: list[int] = []
    keys: list[bytes] = []
    texts: list[bytes] = []
    folded: list[bytes] = []
    for link_id, table in tables.items():
        if not -(2**31) <= link_id < 2**31:
            continue  # a unit value is 32 bits: no script can name this id
        for key, text in table.items():
            ids.append(link_id)
            keys.append(key.encode("utf-8", "surrogatepass"))
            texts.append(text.encode("utf-8", "surrogatepass"))
            folded.append(text.casefold().encode("utf-8", "surrogatepass"))
    handle.set_links(ids, keys, texts, folded)
