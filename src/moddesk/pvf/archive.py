"""``Archive``: a ``Script.pvf`` you open, list, read, edit and save, in the style of ``zipfile.ZipFile``.

    with Archive.open("Script.pvf") as pvf:
        for entry in pvf.entries: ...
        text = pvf.read_text("equipment/character/common/amulet/100300068.equ")
        pvf.write_text("equipment/...equ", text.replace("[grade]\\n\\t74", "[grade]\\n\\t75"))
        pvf.save()

Opening reads only the directory (classic tree; NKPI table, pools and chunk index); file data is
decrypted and decoded per entry on demand. Saving an unchanged archive writes the same bytes;
saving with changes copies every unchanged entry's stored (encrypted) bytes and rebuilds only
offsets, checksums, the tree / chunk index. Script *text* is not byte-exact: ``write_text``
recompiles only when the text differs from what ``read_text`` returns (see ``format.text``).
Every failure is a :class:`PvfFormatError` with a code.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import IO, Any, BinaryIO

import numpy as np
import numpy.typing as npt

from moddesk.kit.files import atomic_writer
from moddesk.kit.native import native_core
from moddesk.pvf.format import ani as ani_fmt
from moddesk.pvf.format import classic as classic_fmt
from moddesk.pvf.format import mojibake, rewrite
from moddesk.pvf.format import native as native_fmt
from moddesk.pvf.format import nkpi as nkpi_fmt
from moddesk.pvf.format.bulk import CHUNK_BYTES, CHUNK_FILES
from moddesk.pvf.format.bulkpool import LinkTable, render_chunks
from moddesk.pvf.format.crypto import align4
from moddesk.pvf.format.detect import CLASSIC, NKPI_PROTECTED, NKPI_STANDARD, detect
from moddesk.pvf.format.encodings import (
    NAME_ENCODING,
    decode_bytes,
    detect_region_scored,
    encode_text,
    region_encoding,
)
from moddesk.pvf.format.entrybatch import EntryBatch, batched, storage_runs
from moddesk.pvf.format.errors import PvfFormatError
from moddesk.pvf.format.kinds import (
    SCRIPT_EXTENSIONS,
    TEXT_EXTENSIONS,
    classic_content_kind,
    classic_kind,
    classic_write_kind,
    nkpi_kind_for_new,
    nkpi_type_for_new,
)
from moddesk.pvf.format.lists import (
    N_STRING_PATHS,
    STRING_FIRST_LISTS,
    ListRecord,
    build_list,
    parse_list,
    parse_str,
    resolve_list_path,
)
from moddesk.pvf.format.source import ByteSource
from moddesk.pvf.format.strings import STRINGTABLE_PATH, StringPools, StringTable
from moddesk.pvf.format.text import StringSink, compile_script_bytes, render_script
from moddesk.pvf.format.tokens import Family, TokenStream, decode_tokens, encode_tokens, is_classic_script

__all__ = [
    "FORMATS",
    "SCRIPT_EXTENSIONS",
    "TEXT_EXTENSIONS",
    "Archive",
    "ArchiveEntry",
    "PvfFormatError",
    "normalize_path",
]

#: Container formats an Archive can read and write.
FORMATS = (CLASSIC, NKPI_STANDARD, NKPI_PROTECTED)


#: How many decompressed NKPI chunks to keep (a chunk holds many small files).
CHUNK_CACHE = 16
#: Inflated NKPI chunks ``rendered_at`` keeps between calls (a script's read-ahead asks for files
#: in path order, which comes back to the same chunks batch after batch): the ~26 MiB of a
#: 10^5-file archive fit; ``drop_cached_chunks`` lets them go when the reads are over.
RENDERED_AT_CHUNK_CACHE = 32 << 20

ProgressFn = Callable[[int, int], None]


def normalize_path(path: str) -> str:
    """The lookup key of an archive path: ``/`` separators, lower case, no leading ``/`` or ``./``."""
    p = path.replace("\\", "/").strip()
    while p.startswith("./"):
        p = p[2:]
    return p.lstrip("/").lower()


def names_are_normal(names: Sequence[str]) -> bool:
    """Whether ``normalize_path(name) == name`` for every name, with no trailing ``/`` either.

    Proven with a few C-level passes over the names (10^6 ``normalize_path`` calls take seconds);
    a false "no" only sends the caller to its per-name path.
    """
    joined = "\n".join(names)
    return (
        list(map(str.strip, names)) == list(names)  # strip returns the same object when nothing is stripped
        and joined.lower() == joined
        and "\\" not in joined
        and not joined.startswith(("/", "./"))
        and "\n/" not in joined
        and "\n./" not in joined
        and "/\n" not in joined
        and not joined.endswith("/")
    )


@dataclass(frozen=True, slots=True)
class ArchiveEntry:
    """One file of an archive (a snapshot; edits create new entries)."""

    path: str
    index: int
    size: int
    kind: str  # "script" | "text" | "binary" (from NKPI data type or the extension)
    modified: bool
    data_type: int | None = None  # NKPI DataType (1 script, 3 UTF-16 text); None for classic


def utf16_text(data: bytes, path: str) -> str:
    """NKPI text (DataType 3, UTF-16LE); an odd byte count is damage, not text (NOT_TEXT)."""
    if len(data) % 2:
        raise PvfFormatError("NOT_TEXT", f"UTF-16 text of {len(data)} bytes (an odd count)", path=path)
    return data.decode("utf-16-le", errors="surrogatepass")


class Archive:
    """An open PVF archive of any supported format: see the module docstring."""

    def __init__(self, src: ByteSource | None, fmt: str, *, region: str | None = None) -> None:
        self._src = src
        self.format = fmt
        self.family = Family.CLASSIC if fmt == CLASSIC else Family.NKPI
        self._closed = False
        self._overlay: dict[int, bytes] = {}
        self._deleted: set[int] = set()
        self._paths: list[str] | native_fmt.PathTable = []
        #: the native core's handle when this archive was opened by it (decided once, at open)
        self._native: Any = None
        self._keys: Any = None  # the native key table (lookups, sorted keys), built on first need
        self._lookup: dict[str, int] | None = None
        self._region = region
        self._region_confidence: float | None = None
        #: NKPI text stored as painted Korean mojibake reads repaired and writes painted (opt-in)
        self.korean_mojibake = False
        self._strings: StringTable | None = None
        self._links: dict[int, str] | None = None
        self._writes = 0  # entries written or deleted since open
        self._render_stamp: tuple[object, object, int] | None = None  # what rendered_at last handed over
        self._str_files: dict[str, dict[str, str]] = {}
        self._chunks: OrderedDict[int, bytes] = OrderedDict()
        self._types: list[int] = []  # NKPI data types of added files
        self._source_count = 0
        self._lists: tuple[Sequence[int], Sequence[int]] | None = None
        self._classic: classic_fmt.ClassicDirectory | None = None
        self._nkpi: nkpi_fmt.NkpiDirectory | None = None

    # ------------------------------------------------------------------------------------ opening

    @classmethod
    def open(cls, path: str | os.PathLike[str], *, region: str | None = None) -> Archive:
        """Open an archive file (any supported format), reading only its directory."""
        src = ByteSource.from_path(path)
        try:
            return cls._from_source(src, region=region)
        except BaseException:
            src.close()
            raise

    @classmethod
    def open_handle(cls, handle: IO[bytes], *, region: str | None = None) -> Archive:
        """Open an archive from a file opened for reading (the archive closes it)."""
        src = ByteSource.from_handle(handle, Path(handle.name) if isinstance(handle.name, str) else None)
        try:
            return cls._from_source(src, region=region)
        except BaseException:
            src.close()
            raise

    @classmethod
    def from_bytes(cls, data: bytes, *, region: str | None = None) -> Archive:
        """Open an archive held in memory."""
        return cls._from_source(ByteSource.from_bytes(data), region=region)

    @classmethod
    def new(cls, fmt: str = CLASSIC, *, region: str = "tw") -> Archive:
        """An empty archive of ``fmt`` (``classic``, ``90US`` or ``90CN``) to fill and ``save_as``."""
        if fmt not in FORMATS:
            raise PvfFormatError(
                "UNSUPPORTED_FORMAT", f"cannot create {fmt!r}; formats: {', '.join(FORMATS)}"
            )
        region_encoding(region)
        a = cls(None, fmt, region=region)
        if fmt == CLASSIC:
            a._classic = classic_fmt.empty_directory()
        else:
            a._nkpi = nkpi_fmt.empty_directory(nkpi_fmt.VARIANTS[fmt])
        return a

    @classmethod
    def _from_source(cls, src: ByteSource, *, region: str | None) -> Archive:
        core = native_core()
        if core is not None:
            opened = native_fmt.open_native(core, src, src.path)
            a = cls(src, opened.format, region=region)
            a._native = opened.handle
            a._classic = opened.classic
            a._nkpi = opened.nkpi
            a._paths = opened.paths
            a._source_count = len(a._paths)
            if region is not None:
                region_encoding(region)
            return a
        found = detect(src, path=src.path)
        a = cls(src, found.format, region=region)
        if found.format == CLASSIC:
            d = classic_fmt.read_classic_directory(src)
            a._classic = d
            a._paths = [decode_bytes(n.rstrip(b"\0"), NAME_ENCODING) for n in d.names]
        else:
            assert found.nkpi is not None
            nd = nkpi_fmt.read_nkpi_directory(src, found.nkpi)
            a._nkpi = nd
            a._paths = nkpi_fmt.entry_paths(nd)
        a._source_count = len(a._paths)
        if region is not None:
            region_encoding(region)
        return a

    # ----------------------------------------------------------------------------- context manager

    def __enter__(self) -> Archive:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Release the file; unsaved changes are discarded."""
        if self._src is not None:
            self._src.close()
        self._closed = True
        self._chunks.clear()

    def _check_open(self) -> None:
        if self._closed:
            raise PvfFormatError("CLOSED", "the archive is closed")

    # ----------------------------------------------------------------------------------- metadata

    @property
    def path(self) -> Path | None:
        """The file this archive was opened from or last saved to."""
        return self._src.path if self._src is not None else None

    @property
    def region(self) -> str:
        """Region of classic text (``tw``, ``cn``, ``kr``, ``jp``), detected from the string table if not given."""
        if self._region is None:
            if self.family is Family.NKPI:
                self._region = "utf8"
            else:
                idx = self._find(STRINGTABLE_PATH)
                samples: list[bytes] = []
                if idx is not None:
                    raw = self._read_index(idx)
                    try:
                        samples = StringTable.parse(raw, "latin-1").first_raw(5000)
                    except PvfFormatError:
                        samples = []
                self._region, self._region_confidence = (
                    detect_region_scored(samples) if samples else ("tw", 0.0)
                )
        return self._region

    @property
    def region_confidence(self) -> float | None:
        """How sure the region detection is (0..1); None when the region was given or is NKPI's."""
        _ = self.region
        return self._region_confidence

    @property
    def encoding(self) -> str:
        """Code page of text content (classic: the region's; NKPI pools are UTF-8/UTF-16)."""
        return region_encoding(self.region)

    @property
    def version(self) -> dict[str, object]:
        """Version facts: format, family, region, classic file version / NKPI padding and guard."""
        info: dict[str, object] = {"format": self.format, "family": self.family.value, "region": self.region}
        if self.region_confidence is not None:
            info["regionConfidence"] = self.region_confidence  # detected, not given
        if self._classic is not None:
            info["fileVersion"] = self._classic.version
            info["guid"] = self._classic.guid.decode("latin-1")
        if self._nkpi is not None:
            info["guard"] = self._nkpi.guard
            info["padding"] = self._nkpi.header.padding
            info["chunks"] = self._nkpi.header.group_count
        return info

    @property
    def native(self) -> bool:
        """Whether the native core reads this archive (decided once, at open)."""
        return self._native is not None

    @property
    def modified(self) -> bool:
        """Whether there are unsaved changes."""
        return (
            bool(self._overlay or self._deleted or len(self._paths) != self._source_count)
            or self._tables_changed()
        )

    def _tables_changed(self) -> bool:
        if self.family is Family.CLASSIC:
            return self._strings is not None and self._strings.added > 0
        assert self._nkpi is not None
        return self._nkpi.pools.changed

    @property
    def problems(self) -> list[str]:
        """Non-fatal problems noticed while opening (e.g. a directory checksum mismatch)."""
        if self._classic is not None:
            return list(self._classic.problems)
        assert self._nkpi is not None
        return list(self._nkpi.problems)

    # -------------------------------------------------------------------------------------- listing

    def _live(self) -> Iterator[int]:
        deleted = self._deleted
        for i in range(len(self._paths)):
            if i not in deleted:
                yield i

    def namelist(self) -> list[str]:
        """Paths of all entries in directory order (duplicates included)."""
        self._check_open()
        if not self._deleted:
            return list(self._paths)
        return [self._paths[i] for i in self._live()]

    def __len__(self) -> int:
        return len(self._paths) - len(self._deleted)

    def __contains__(self, path: object) -> bool:
        return isinstance(path, str) and self._find(path) is not None

    def __iter__(self) -> Iterator[ArchiveEntry]:
        return iter(self.entries)

    @property
    def entries(self) -> list[ArchiveEntry]:
        """Every entry in directory order."""
        self._check_open()
        return [self._entry(i) for i in self._live()]

    def getinfo(self, path: str) -> ArchiveEntry:
        """The entry of ``path`` or NOT_FOUND."""
        return self._entry(self._require(path))

    def _source_lists(self) -> tuple[Sequence[int], Sequence[int]]:
        """Sizes and NKPI data types of the source entries, indexable as Python ints: memoryviews
        of the directory's arrays (no list and no int object per entry; with the native core the
        arrays are the native tables themselves)."""
        if self._lists is None:
            if self._classic is not None:
                self._lists = (self._classic.sizes.data, ())
            else:
                assert self._nkpi is not None
                self._lists = (self._nkpi.rows["size"].data, self._nkpi.rows["type"].data)
        return self._lists

    def _entry(self, i: int) -> ArchiveEntry:
        path = self._paths[i]
        data = self._overlay.get(i)
        modified = data is not None or i >= self._source_count
        sizes, types = self._source_lists()
        size = len(data) if data is not None else sizes[i]
        if self._nkpi is None:
            return ArchiveEntry(path, i, size, classic_kind(path), modified, None)
        data_type = types[i] if i < self._source_count else self._types[i - self._source_count]
        kind = (
            "script"
            if data_type == nkpi_fmt.DATA_SCRIPT
            else "text"
            if data_type == nkpi_fmt.DATA_TEXT
            else "binary"
        )
        return ArchiveEntry(path, i, size, kind, modified, data_type)

    def kinds_and_sizes(self, indexes: list[int], paths: list[str]) -> tuple[list[str], list[int]]:
        """The ``kind`` and ``size`` of the entries at directory ``indexes`` (whose stored names
        are ``paths``), as ``getinfo`` gives them, without an ``ArchiveEntry`` each."""
        self._check_open()
        sizes, types = self._source_lists()
        n = self._source_count
        out_sizes = (
            [sizes[i] if (data := self._overlay.get(i)) is None else len(data) for i in indexes]
            if self._overlay
            else [sizes[i] for i in indexes]
        )
        if self._nkpi is None:
            return [classic_kind(path) for path in paths], out_sizes
        names = {nkpi_fmt.DATA_SCRIPT: "script", nkpi_fmt.DATA_TEXT: "text"}
        kinds = [names.get(types[i] if i < n else self._types[i - n], "binary") for i in indexes]
        return kinds, out_sizes

    def _index(self) -> dict[str, int]:
        """Lookup key → first live entry; with the native core, of the added entries only (the
        source entries are found natively, without a dictionary of every name)."""
        if self._lookup is None and self._native is not None:
            added: dict[str, int] = {}
            for i in range(self._source_count, len(self._paths)):
                if i not in self._deleted:
                    added.setdefault(normalize_path(self._paths[i]), i)
            self._lookup = added
        if self._lookup is None:
            lookup: dict[str, int] = {}
            if not self._deleted and names_are_normal(self._paths):  # each name is its own key
                lookup = dict(zip(self._paths, range(len(self._paths)), strict=True))
                if len(lookup) < len(self._paths):  # a repeated name: the first entry wins
                    lookup = {}
            if not lookup:
                for i, p in enumerate(self._paths):
                    if i not in self._deleted:
                        lookup.setdefault(normalize_path(p), i)
            self._lookup = lookup
        return self._lookup

    def _find(self, path: str) -> int | None:
        key = normalize_path(path)
        if self._native is not None:
            if self._keys is None:
                self._keys = self._build_key_table()
            for i in self._keys.find_all(key.encode("utf-8", "surrogatepass")):
                if i not in self._deleted:
                    return int(i)
        return self._index().get(key)

    def key_table(self) -> Any | None:
        """The native table of the source entries' lookup keys (``moddesk_native.pvf.KeyTable``:
        sorted and first-entry orders without a Python object per entry; the path lookup too), or
        None with the Python core. ASCII names are keyed natively, the others by ``normalize_path``
        here. Built once."""
        self._check_open()
        if self._native is None:
            return None
        if self._keys is None:
            self._keys = self._build_key_table()
        return self._keys

    def _build_key_table(self) -> Any:
        rows = np.frombuffer(self._native.non_ascii_rows(), dtype="<u4").tolist()
        names = [self._paths[i] for i in rows]
        keys = [normalize_path(name) for name in names]
        own = all(key == name and not name.endswith("/") for key, name in zip(keys, names, strict=True))
        encoded = [key.encode("utf-8", "surrogatepass") for key in keys]
        return native_fmt.key_table(self._native, native_fmt.index_bytes(rows), encoded, own)

    def name_at(self, index: int) -> str:
        """The stored path of the entry at directory ``index``."""
        return self._paths[index]

    def _require(self, path: str) -> int:
        self._check_open()
        i = self._find(path)
        if i is None:
            raise PvfFormatError("NOT_FOUND", "no such entry", path=path)
        return i

    # -------------------------------------------------------------------------------------- reading

    def read(self, path: str | ArchiveEntry) -> bytes:
        """The decoded bytes of an entry (classic: decrypted; NKPI: inflated)."""
        i = path.index if isinstance(path, ArchiveEntry) else self._require(path)
        return self._read_index(i)

    def _read_index(self, i: int) -> bytes:
        self._check_open()
        data = self._overlay.get(i)
        if data is not None:
            return data
        assert self._src is not None and i < self._source_count
        if self._classic is not None:
            return classic_fmt.read_classic_block(self._src, self._classic, i)
        assert self._nkpi is not None
        row = self._nkpi.rows[i]
        chunk = self._chunk(int(row["chunk"]))
        off = int(row["offset"])
        return chunk[off : off + int(row["size"])]

    def _chunk(self, c: int) -> bytes:
        data = self._chunks.get(c)
        if data is None:
            assert self._src is not None and self._nkpi is not None
            data = nkpi_fmt.read_chunk(self._src, self._nkpi, c)
            self._chunks[c] = data
            if len(self._chunks) > CHUNK_CACHE:
                self._chunks.popitem(last=False)
        else:
            self._chunks.move_to_end(c)
        return data

    def iter_bytes(self, progress: ProgressFn | None = None) -> Iterator[tuple[ArchiveEntry, bytes]]:
        """Every entry with its bytes, in storage order (NKPI chunks inflated once, classic blocks batched)."""
        total = len(self)
        for n, (i, data) in enumerate(self.iter_indexed_bytes()):
            yield self._entry(i), data
            if progress is not None and (n % 1024 == 0 or n + 1 == total):
                progress(n + 1, total)

    def iter_indexed_bytes(self) -> Iterator[tuple[int, bytes]]:
        """``iter_bytes`` as (directory index, bytes): no ``ArchiveEntry`` per entry (µs each at 10^6);
        ``script_flags`` tells the scripts of an NKPI archive."""
        self._check_open()
        if self._native is not None:
            for batch in self.byte_batches():
                for i, data in batch.items():
                    assert data is not None
                    yield i, data
            return
        live = self._storage_order()
        if self._nkpi is not None:
            stream: Iterator[tuple[int, bytes]] = self._nkpi_stream(live, self._nkpi.rows["chunk"].tolist())
        else:
            stream = self._classic_stream(live)
        yield from stream

    def _storage_order(self) -> list[int]:
        """Live directory indexes in storage order, then the added entries."""
        order: list[int] = self._storage_order_array().tolist()
        return order

    def _storage_order_array(self) -> npt.NDArray[np.int64]:
        """``_storage_order`` as an array (no Python int per entry)."""
        src_count = self._source_count
        # storage order by a stable numpy argsort (no per-entry key tuples: 10^6 entries stay cheap)
        if self._nkpi is not None:
            order = np.argsort(self._nkpi.rows["chunk"], kind="stable")
        else:
            assert self._classic is not None
            order = np.argsort(self._classic.offsets, kind="stable")
        order = order.astype(np.int64, copy=False)
        added = np.arange(src_count, len(self._paths), dtype=np.int64)
        if len(added):
            order = np.concatenate([order, added])
        if self._deleted:
            order = order[~np.isin(order, np.fromiter(self._deleted, dtype=np.int64))]
        return order

    def _native_runs(self) -> Iterator[tuple[npt.NDArray[np.uint32], bool]]:
        """The live entries in storage order as runs of stored entries for one native call each,
        and the others alone (``(run, True)``: an edited or added entry is read by ``_read_index``)."""
        order = self._storage_order_array()
        alone = order >= self._source_count
        if self._overlay:
            alone |= np.isin(order, np.fromiter(self._overlay, dtype=np.int64))
        sizes = self._classic.sizes if self._classic is not None else self._nkpi_sizes()
        return storage_runs(order, alone, sizes, native_fmt.BATCH_FILES, native_fmt.BATCH_BYTES)

    def _nkpi_sizes(self) -> npt.NDArray[np.int64]:
        assert self._nkpi is not None
        return self._nkpi.rows["size"].astype(np.int64)

    def byte_batches(self) -> Iterator[EntryBatch]:
        """Every entry's bytes in storage order (as ``iter_indexed_bytes``), a batch at a time in one
        buffer each: no ``bytes`` per entry with the native core."""
        self._check_open()
        if self._native is None:
            yield from batched(self.iter_indexed_bytes(), native_fmt.BATCH_FILES)
            return
        assert self._src is not None or not self._source_count
        for run, alone in self._native_runs():
            if alone:
                i = int(run[0])
                yield EntryBatch.of([i], [self._read_index(i)])
                continue
            assert self._src is not None
            blob, ends, error = self._native.read_many(self._src.buffer(), run.tobytes())
            batch = EntryBatch.native(run, blob, ends)
            if len(batch):
                yield batch
            native_fmt.raise_batch_error(error)

    def script_flags(self) -> list[bool] | None:
        """Per directory index, whether an NKPI entry is a script (its data type); None for classic,
        where the bytes decide (``classic_content_kind``)."""
        if self._nkpi is None:
            return None
        n = self._source_count
        types = [*self._source_lists()[1], *self._types[: len(self._paths) - n]]
        return [t == nkpi_fmt.DATA_SCRIPT for t in types]

    def _nkpi_stream(self, order: list[int], chunks: list[int]) -> Iterator[tuple[int, bytes]]:
        """Slice entries out of each chunk, inflating every chunk once."""
        d = self._nkpi
        assert d is not None
        offsets = d.rows["offset"].tolist()
        sizes = d.rows["size"].tolist()
        current, data = -1, b""
        for i in order:
            if i >= self._source_count or i in self._overlay:
                yield i, self._read_index(i)
                continue
            c = chunks[i]
            if c != current:
                assert self._src is not None
                current, data = c, nkpi_fmt.read_chunk(self._src, d, c)
            yield i, data[offsets[i] : offsets[i] + sizes[i]]

    def _classic_stream(self, order: list[int]) -> Iterator[tuple[int, bytes]]:
        """Decrypt runs of adjacent stored blocks in one vectorised pass each."""
        d = self._classic
        assert d is not None and (self._src is not None or not self._source_count)
        offsets = d.offsets.tolist()
        sizes = d.sizes.tolist()
        crcs = d.crcs.tolist()
        batch: list[int] = []
        start = end = 0

        def flush() -> Iterator[tuple[int, bytes]]:
            assert self._src is not None
            lens = [align4(sizes[i]) for i in batch]
            plain = classic_fmt.decrypt_run(
                self._src.read(d.base + start, end - start, what="file data"), lens, [crcs[i] for i in batch]
            )
            pos = 0
            for i, blen in zip(batch, lens, strict=True):
                yield i, plain[pos : pos + sizes[i]]
                pos += blen

        for i in order:
            if i >= self._source_count or i in self._overlay:
                if batch:
                    yield from flush()
                    batch = []
                yield i, self._read_index(i)
                continue
            off = offsets[i]
            if batch and (off != end or end - start > (4 << 20)):
                yield from flush()
                batch = []
            if not batch:
                start = end = off
            batch.append(i)
            end = off + align4(sizes[i])
        if batch:
            yield from flush()

    def entry_problems(self, path: str | ArchiveEntry) -> list[str]:
        """Problems of one stored entry (classic: its data checksum), empty when sound or edited.

        Reading never fails on a checksum (the client does not appear to check it; spec §1.6), so
        ``cat``/``read`` call this to warn that the bytes they show may be damaged.
        """
        i = path.index if isinstance(path, ArchiveEntry) else self._require(path)
        if self._classic is None or i >= self._source_count or i in self._overlay:
            return []
        assert self._src is not None
        if not classic_fmt.block_checksum_ok(self._src, self._classic, i):
            return [f"{self._paths[i]}: stored data checksum does not match (the data may be damaged)"]
        return []

    def is_script(self, path: str | ArchiveEntry) -> bool:
        """Whether the entry is a token script (classic: B0 D0 magic; NKPI: data type 1)."""
        i = path.index if isinstance(path, ArchiveEntry) else self._require(path)
        if self._nkpi is not None:
            return self._entry(i).data_type == nkpi_fmt.DATA_SCRIPT
        data = self._read_index(i)
        return is_classic_script(data)

    def tokens(self, path: str | ArchiveEntry) -> TokenStream:
        """The decoded token units of a script entry."""
        i = path.index if isinstance(path, ArchiveEntry) else self._require(path)
        if not self.is_script(self._entry(i)):
            raise PvfFormatError("NOT_TEXT", "not a script", path=self._paths[i])
        return decode_tokens(self._read_index(i), self.family)

    @property
    def strings(self) -> StringSink:
        """The archive's string store: classic ``stringtable.bin`` or the NKPI pools."""
        if self._nkpi is not None:
            return self._nkpi.pools
        if self._strings is None:
            idx = self._find(STRINGTABLE_PATH)
            if idx is None:
                self._strings = StringTable.new(self.encoding)
            else:
                self._strings = StringTable.parse(self._read_index(idx), self.encoding)
        return self._strings

    def render(self, path: str | ArchiveEntry, data: bytes) -> str:
        """Text of ``data`` as if it were stored at ``path`` (scripts rendered, text decoded).

        Pass the ArchiveEntry (as ``iter_bytes`` yields it) to skip the path lookup.
        """
        if isinstance(path, ArchiveEntry):
            entry = path
            path = entry.path
            kind = entry.kind if self._nkpi is not None else self._kind_of(path, data)
        else:
            kind = self._kind_of(path, data)
        if kind == "script":
            stream = decode_tokens(data, self.family)
            return render_script(stream, self.strings, path=path, links=self._link_text)
        if kind == "animation":
            return ani_fmt.render_ani(data)
        if kind == "text":
            if self.family is Family.NKPI:
                text = utf16_text(data, path)
                if self.korean_mojibake:
                    return mojibake.repair(text) or text
                return text
            enc = NAME_ENCODING if path.lower().endswith(".nut") else self.encoding
            return decode_bytes(data, enc)
        if normalize_path(path) == STRINGTABLE_PATH and self.family is Family.CLASSIC:
            return StringTable.parse(data, self.encoding).dump()
        raise PvfFormatError("NOT_TEXT", "binary entry has no text form", path=path)

    def iter_rendered(
        self,
        *,
        fold: bool = False,
        terminator: str = "",
        chunk_files: int = CHUNK_FILES,
        workers: int = 0,
    ) -> Iterator[tuple[ArchiveEntry, bytes | None]]:
        """Every entry as ``iter_bytes`` yields it, with ``render(entry, data)`` as UTF-8 (surrogatepass),
        case-folded with ``fold``, ``terminator`` appended; None where ``render`` raises.

        Scripts are rendered a chunk at a time by ``format/bulk.py`` (byte-identical to ``render``,
        1.7-3.4x less CPU), in ``workers`` processes when > 0; other entries go through
        ``render`` one by one.
        """
        if self._native is not None:
            yield from self._native_rendered(fold, terminator)
            return
        links: Callable[[int, str], str | None] | None = self._link_text
        if workers > 0:
            links = LinkTable(self._link_tables()) if self.family is Family.CLASSIC else None
        chunks = self._render_chunks(fold, terminator, chunk_files)
        for (chunk, rows), rendered in render_chunks(
            chunks, self.family, self.strings, links=links, fold=fold, terminator=terminator, workers=workers
        ):
            for row, data in zip(rows, rendered, strict=True):
                chunk[row] = (chunk[row][0], data)
            yield from chunk

    def rendered_batches(self, *, fold: bool = False, terminator: str = "") -> Iterator[EntryBatch]:
        """``iter_rendered`` a batch at a time in one buffer each (texts as UTF-8, folded with
        ``fold``, each followed by ``terminator``; no result where ``render`` raises): with the native
        core, scripts are read, rendered and folded natively and no Python object is made per entry."""
        if self._native is None:
            pairs = (
                (entry.index, text) for entry, text in self.iter_rendered(fold=fold, terminator=terminator)
            )
            yield from batched(pairs, native_fmt.BATCH_FILES)
            return
        yield from self._native_rendered_batches(fold, terminator)

    def _native_rendered(self, fold: bool, terminator: str) -> Iterator[tuple[ArchiveEntry, bytes | None]]:
        """``iter_rendered`` through the native core (an ``ArchiveEntry`` per entry: for callers that ask)."""
        for batch in self._native_rendered_batches(fold, terminator):
            for i, text in batch.items():
                yield self._entry(i), text

    def _native_rendered_batches(self, fold: bool, terminator: str) -> Iterator[EntryBatch]:
        """Scripts read and rendered natively a batch at a time on both cores, their strings decoded
        and folded natively (``format.native`` tables); other entries (texts, binaries, edits)
        rendered here as the reference does."""
        self._check_open()
        tail = terminator.encode("utf-8", "surrogatepass")
        resolver = native_fmt.StringResolver(self._prepare_native_render())
        for run, alone in self._native_runs():
            if alone:
                i = int(run[0])
                yield EntryBatch.of(
                    [i], [self._rendered_one(self._entry(i), self._read_index(i), fold, tail)]
                )
                continue
            assert self._src is not None
            blob, ends, kinds, error = self._native.render_many(
                self._src.buffer(), run.tobytes(), fold, tail, resolver
            )
            outcome = np.frombuffer(kinds, dtype=np.uint8)
            batch = EntryBatch.native(run, blob, ends, outcome != native_fmt.OUTCOME_NO_TEXT)
            if (outcome == native_fmt.OUTCOME_RAW).any():  # what only the reference renders (animations…)
                batch = EntryBatch.of(
                    batch.indexes.tolist(),
                    [
                        self._rendered_one(self._entry(i), data or b"", fold, tail)
                        if kind == native_fmt.OUTCOME_RAW
                        else data
                        for (i, data), kind in zip(batch.items(), outcome.tolist(), strict=True)
                    ],
                )
            if len(batch):
                yield batch
            native_fmt.raise_batch_error(error)

    def _prepare_native_render(self) -> StringTable | StringPools:
        """Hand the native renderer what it renders with (strings, text decoders, classic links)."""
        strings = self.strings
        assert isinstance(strings, (StringTable, StringPools))
        native_fmt.set_strings(self._native, strings, legacy=self.format == NKPI_PROTECTED)
        classic = self.family is Family.CLASSIC
        native_fmt.set_text_decoders(self._native, self.encoding if classic else None, self.korean_mojibake)
        if classic:
            self._set_native_links()
        return strings

    def rendered_at(
        self, indexes: Sequence[int]
    ) -> tuple[bytes, npt.NDArray[np.uint64], npt.NDArray[np.bool_]]:
        """``read_text_at`` of the entries at directory ``indexes`` as UTF-8 (surrogatepass), in
        one buffer read, rendered and decoded natively on every core (native core only): the
        buffer, each entry's (start, end) in it, and whether it has a result. An entry has none
        where it must be read on its own (``read_text_at`` then answers, or names its error): it is
        edited or added, has no text form, only the reference renders it, or its batch met an
        error before it. The renderer's inputs are handed over once per state of the archive (the
        classic links alone take ~0.1 s at 10^5 files), not once per call."""
        self._check_open()
        assert self._native is not None and self._src is not None
        wanted = np.asarray(indexes, dtype=np.int64)
        stored = (wanted >= 0) & (wanted < self._source_count)
        if self._overlay:
            stored &= ~np.isin(wanted, np.fromiter(self._overlay, dtype=np.int64))
        if self._deleted:
            stored &= ~np.isin(wanted, np.fromiter(self._deleted, dtype=np.int64))
        rows = np.flatnonzero(stored)
        # entries of one NKPI chunk next to each other: each chunk is inflated once per call
        order = self._nkpi.rows["chunk"][wanted[rows]] if self._nkpi is not None else wanted[rows]
        rows = rows[np.argsort(order, kind="stable")]
        last = self._render_stamp
        if (
            last is None
            or last[0] is not self._strings
            or last[1] is not self._links
            or last[2] != self._writes
        ):
            self._prepare_native_render()
            self._render_stamp = (self._strings, self._links, self._writes)
        blob, ends_raw, kinds, _error = self._native.render_many(
            self._src.buffer(),
            wanted[rows].astype(np.uint32).tobytes(),
            False,
            b"",
            native_fmt.StringResolver(self.strings),  # type: ignore[arg-type]
            RENDERED_AT_CHUNK_CACHE,
        )
        ends = np.frombuffer(ends_raw, dtype="<u8").astype(np.uint64)
        done = rows[: len(ends) - 1]  # an error ends the batch: later entries are read alone
        spans = np.zeros((len(wanted), 2), dtype=np.uint64)
        spans[done, 0] = ends[:-1]
        spans[done, 1] = ends[1:]
        present = np.zeros(len(wanted), dtype=np.bool_)
        present[done] = np.frombuffer(kinds, dtype=np.uint8)[: len(done)] == native_fmt.OUTCOME_TEXT
        return blob, spans, present

    def drop_cached_chunks(self) -> None:
        """Let go of the NKPI chunks ``rendered_at`` kept for its next call."""
        if self._native is not None:
            self._native.drop_cached_chunks()

    def _set_native_links(self) -> None:
        """The classic string links for the native renderer: their ``.str`` tables read and parsed
        natively when the source holds them unedited, else as ``_link_tables`` reads them."""
        ids: list[int] = []
        rows: list[int] = []
        native_ok = self._src is not None
        for link_id, target in self._link_map().items():
            if not -(2**31) <= link_id < 2**31:
                continue  # a unit value is 32 bits: no script can name this id
            i = self._find(target)
            if i is None:
                continue  # a missing table resolves nothing
            native_ok = native_ok and i < self._source_count and i not in self._overlay
            ids.append(link_id)
            rows.append(i)
        if native_ok:
            assert self._src is not None
            if self._native.set_str_links(self._src.buffer(), ids, native_fmt.index_bytes(rows)):
                return
        native_fmt.set_links(self._native, self._link_tables())

    def build_native_index(
        self,
        order: npt.NDArray[np.uint32],
        spool: Path,
        out: Path,
        progress: Callable[[int], None],
        lock: Any,
        compressed: bool = False,
    ) -> tuple[bytes, bytes]:
        """The content index file (``searchindex`` layout, header zeroed; ``compressed``: format 3,
        the corpus as compressed blocks, else format 2) of every entry, written
        natively to ``out`` with ``spool`` as scratch: texts as ``rendered_batches(fold=True,
        terminator="\\0")`` gives them, in the order of ``order`` (directory index of each sorted
        path). Answers (offsets <i8, text mask) bytes; a damaged entry raises its format error, as
        the batches do. ``progress(done)`` may raise to cancel; ``lock`` is held while Python renders
        the entries only it renders (animations …) (the archive is not thread-safe). Native core, no edits."""
        with lock:  # the setup reads (and may fill) the archive's Python state: other readers wait
            self._check_open()
            assert self._native is not None and self._src is not None and not self._overlay
            assert len(self._paths) == self._source_count
            strings = self.strings
            assert isinstance(strings, (StringTable, StringPools))
            native_fmt.set_strings(self._native, strings, legacy=self.format == NKPI_PROTECTED)
            classic = self.family is Family.CLASSIC
            native_fmt.set_text_decoders(
                self._native, self.encoding if classic else None, self.korean_mojibake
            )
            if classic:
                self._set_native_links()
            runs = [run for run, _alone in self._native_runs()]
            source = self._src.buffer()
        indexes = np.concatenate(runs) if runs else np.zeros(0, dtype=np.uint32)
        run_ends = np.zeros(len(runs) + 1, dtype="<u8")
        np.cumsum([len(run) for run in runs], out=run_ends[1:])

        def raw_texts(indexes_raw: bytes, blob: bytes, ends_raw: bytes) -> list[bytes | None]:
            ends = np.frombuffer(ends_raw, dtype="<u8").tolist()
            with lock:
                return [
                    self._rendered_one(self._entry(i), blob[ends[k] : ends[k + 1]], True, b"\x00")
                    for k, i in enumerate(np.frombuffer(indexes_raw, dtype="<u4").tolist())
                ]

        offsets, mask, error = native_fmt.native_module(self._native).build_index(
            self._native,
            source,
            indexes.astype("<u4").tobytes(),
            run_ends.tobytes(),
            order.astype("<u4").tobytes(),
            str(spool),
            str(out),
            native_fmt.StringResolver(strings),
            raw_texts,
            progress,
            compressed,
        )
        native_fmt.raise_batch_error(error)
        return offsets, mask

    def _rendered_one(self, entry: ArchiveEntry, data: bytes, fold: bool, tail: bytes) -> bytes | None:
        """One entry as ``iter_rendered`` gives it: its text (folded) as UTF-8 plus ``tail``, or None."""
        try:
            text = self.render(entry, data)
        except PvfFormatError:
            return None
        folded = text.casefold() if fold else text
        return folded.encode("utf-8", "surrogatepass") + tail

    def _render_chunks(
        self, fold: bool, terminator: str, chunk_files: int
    ) -> Iterator[tuple[tuple[list[tuple[ArchiveEntry, bytes | None]], list[int]], list[str], list[bytes]]]:
        """Chunks of ``iter_rendered``: entries with non-script texts filled in, the rows of the scripts,
        and the scripts' paths and bytes (for the bulk renderer)."""
        tail = terminator.encode("utf-8", "surrogatepass")
        chunk: list[tuple[ArchiveEntry, bytes | None]] = []
        rows: list[int] = []
        paths: list[str] = []
        datas: list[bytes] = []
        nkpi = self._nkpi is not None
        size = 0
        for entry, data in self.iter_bytes():
            if (entry.kind if nkpi else classic_content_kind(entry.path, data)) == "script":
                rows.append(len(chunk))
                paths.append(entry.path)
                datas.append(data)
                chunk.append((entry, None))
                size += len(data)
            else:
                try:
                    text = self.render(entry, data)
                except PvfFormatError:
                    chunk.append((entry, None))
                else:
                    folded = text.casefold() if fold else text
                    chunk.append((entry, folded.encode("utf-8", "surrogatepass") + tail))
            if len(chunk) >= chunk_files or size >= CHUNK_BYTES:
                yield (chunk, rows), paths, datas
                chunk, rows, paths, datas, size = [], [], [], [], 0
        if chunk:
            yield (chunk, rows), paths, datas

    def read_text(self, path: str | ArchiveEntry) -> str:
        """The text form: scripts rendered as ``#PVF_File`` text, ``.str``/text decoded; else NOT_TEXT."""
        i = path.index if isinstance(path, ArchiveEntry) else self._require(path)
        return self.read_text_at(i)

    def read_text_at(self, index: int) -> str:
        """``read_text`` of the entry at directory ``index`` (no path lookup: the first one builds
        the lookup of every name, ~0.7 s at 10^6 files)."""
        self._check_open()
        return self.render(self._paths[index], self._read_index(index))

    def read_list(self, path: str) -> list[ListRecord]:
        """The ``id → path`` records of a ``.lst`` file (or ``n_string.lst``), as stored."""
        return parse_list(self.tokens(path), self.strings, path=path)

    def write_list(self, path: str, records: list[ListRecord], *, string_first: bool | None = None) -> None:
        """Store a list file; NKPI root name lists (``itemname.lst`` …) put the string first by default."""
        if string_first is None:
            string_first = self.family is Family.NKPI and normalize_path(path) in STRING_FIRST_LISTS
        self.write_bytes(
            path, encode_tokens(build_list(records, self.family, self.strings, string_first=string_first))
        )

    def read_strings(self, path: str) -> dict[str, str]:
        """The ``key → value`` table of a ``.str`` file (comments skipped, first key wins)."""
        return parse_str(self.read_text(path))

    def resolve_list_path(self, list_path: str, target: str) -> str:
        """The archive path a list record points to: relative to the list (classic) or to the root."""
        root_relative = normalize_path(list_path).startswith("list/")
        return resolve_list_path(list_path, target, root_relative=root_relative)

    def _kind_of(self, path: str, data: bytes) -> str:
        if self._nkpi is not None:
            i = self._find(path)
            if i is not None:
                dt = self._entry(i).data_type
                return (
                    "script"
                    if dt == nkpi_fmt.DATA_SCRIPT
                    else "text"
                    if dt == nkpi_fmt.DATA_TEXT
                    else "binary"
                )
            return nkpi_kind_for_new(path)
        return classic_content_kind(path, data)

    def resolve_link(self, link_id: int, key: str) -> str | None:
        """The text of a classic string link ``<link_id::key>`` (n_string.lst → .str), or None."""
        return self._link_text(link_id, key)

    def _link_text(self, link_id: int, key: str) -> str | None:
        """Resolve a classic string link through ``n_string.lst`` and its ``.str`` file."""
        target = self._link_map().get(link_id)
        if target is None:
            return None
        return self._str_table(target).get(key)

    def _link_map(self) -> dict[int, str]:
        """``n_string.lst``: link id → ``.str`` path (read once)."""
        if self._links is None:
            self._links = {}
            for candidate in N_STRING_PATHS:
                idx = self._find(candidate)
                if idx is None:
                    continue
                try:
                    stream = decode_tokens(self._read_index(idx), self.family)
                    self._links = {r.id: r.path for r in parse_list(stream, self.strings, path=candidate)}
                except PvfFormatError:
                    self._links = {}
                break
        return self._links

    def _str_table(self, target: str) -> dict[str, str]:
        """The ``key → text`` table of one ``.str`` file (read once; empty when missing or unreadable)."""
        table = self._str_files.get(target)
        if table is None:
            idx = self._find(target)
            table = {}
            if idx is not None:
                try:
                    table = parse_str(self.render(self._paths[idx], self._read_index(idx)))
                except PvfFormatError:
                    table = {}
            self._str_files[target] = table
        return table

    def _link_tables(self) -> dict[int, dict[str, str]]:
        """Every link id with its ``.str`` table: what ``_link_text`` resolves, for worker processes."""
        return {link_id: self._str_table(target) for link_id, target in self._link_map().items()}

    # -------------------------------------------------------------------------------------- writing

    def write_bytes(self, path: str, data: bytes, *, data_type: int | None = None) -> None:
        """Replace or add an entry's bytes (NKPI: ``data_type`` for a new file, default by extension)."""
        self._check_open()
        data = bytes(data)
        i = self._find(path)
        if i is None:
            i = self._add(path, data_type)
        self._overlay[i] = data
        self._invalidate_caches(self._paths[i])

    def _add(self, path: str, data_type: int | None) -> int:
        clean = path.replace("\\", "/").strip().lstrip("/")
        if not clean or clean.endswith("/"):
            raise PvfFormatError("NOT_FOUND", "an entry needs a file name", path=path)
        if self.family is Family.CLASSIC:
            clean = clean.lower()  # classic names are lower-case CP949 (pvfUtility)
            encode_text(clean, NAME_ENCODING, path=path)
        else:
            self._types.append(data_type if data_type is not None else nkpi_type_for_new(clean))
        self._paths.append(clean)
        i = len(self._paths) - 1
        self._index()[normalize_path(clean)] = i
        return i

    def write_text(self, path: str, text: str) -> bool:
        """Store text (scripts compiled, text encoded); returns False when it equals the current text."""
        self._check_open()
        i = self._find(path)
        if i is not None:
            try:
                if self.read_text(self._entry(i)) == text:
                    return False
            except PvfFormatError as exc:
                if exc.code != "NOT_TEXT":
                    raise
        data = self.encode_text(path, text)
        if i is not None and self._read_index(i) == data:
            return False
        self.write_bytes(path, data)
        return True

    def encode_text(self, path: str, text: str, strings: StringSink | None = None) -> bytes:
        """The bytes ``text`` compiles/encodes to when stored at ``path``.

        ``strings`` replaces the archive's string table (a dry run interns into a throwaway sink).
        """
        i = self._find(path)
        if self.family is Family.NKPI:
            kind = self._entry(i).kind if i is not None else nkpi_kind_for_new(path)
        else:
            stored = self._read_index(i) if i is not None else None
            kind = classic_write_kind(path, stored, stringtable=normalize_path(path) == STRINGTABLE_PATH)
        if kind == "animation":
            return ani_fmt.compile_ani(text)
        if kind == "script":
            return compile_script_bytes(text, self.family, self.strings if strings is None else strings)
        if kind == "text":
            if self.family is Family.NKPI:
                if self.korean_mojibake and i is not None and self._painted(i):
                    text = mojibake.paint(text)  # stored painted: store the edit the same way
                return text.encode("utf-16-le", errors="surrogatepass")
            enc = NAME_ENCODING if path.lower().endswith(".nut") else self.encoding
            return encode_text(text, enc, path=path)
        raise PvfFormatError("NOT_TEXT", "this entry cannot be written as text", path=path)

    def _painted(self, i: int) -> bool:
        """Whether NKPI text entry ``i`` is stored as repairable Korean mojibake."""
        try:
            stored = utf16_text(self._read_index(i), self._paths[i])
        except PvfFormatError:
            return False
        return mojibake.repair(stored) is not None

    def delete(self, path: str) -> None:
        """Remove an entry (the first one with that path)."""
        i = self._require(path)
        self._deleted.add(i)
        self._overlay.pop(i, None)
        self._lookup = None
        self._invalidate_caches(self._paths[i])

    def _invalidate_caches(self, path: str) -> None:
        self._writes += 1  # what the native renderer was handed may be stale now (rendered_at)
        key = normalize_path(path)
        if key in N_STRING_PATHS:
            self._links = None
        if key.endswith(".str"):
            self._str_files.clear()
        if key == STRINGTABLE_PATH and self.family is Family.CLASSIC:
            self._strings = None

    # --------------------------------------------------------------------------------------- saving

    def iter_archive_bytes(self) -> Iterator[bytes]:
        """The bytes of the archive as it would be saved, streamed in pieces."""
        self._check_open()
        if not self.modified and self._src is not None:
            view = self._src.view()
            yield from classic_fmt.copy_slices(view, 0, len(view))
            return
        if self.family is Family.CLASSIC:
            yield from self._classic_parts()
        else:
            yield from self._nkpi_parts()

    def _edits(self) -> rewrite.Edits:
        return rewrite.Edits(self._paths, self._source_count, self._overlay, self._deleted, self._types)

    def _classic_parts(self) -> Iterator[bytes]:
        assert self._classic is not None
        if self._strings is not None and self._strings.added:
            idx = self._find(STRINGTABLE_PATH)
            data = self._strings.to_bytes()
            if idx is None:
                idx = self._add(STRINGTABLE_PATH, None)
            self._overlay[idx] = data  # the table object stays: its index is costly to rebuild
        yield from rewrite.classic_parts(self._src, self._classic, self._edits())

    def _nkpi_parts(self) -> Iterator[bytes]:
        assert self._nkpi is not None
        yield from rewrite.nkpi_parts(self._src, self._nkpi, self._edits())

    def to_bytes(self) -> bytes:
        """The whole archive as bytes (for small archives and tests)."""
        return b"".join(self.iter_archive_bytes())

    def write_to(self, f: BinaryIO) -> int:
        """Stream the archive into an open binary file; returns bytes written."""
        n = 0
        for part in self.iter_archive_bytes():
            f.write(part)
            n += len(part)
        return n

    def write_copy(self, path: str | os.PathLike[str]) -> int:
        """Write the archive to another file atomically, keep working on the current one; returns bytes."""
        self._check_open()
        target = Path(path)
        if self.path is not None and target.exists() and target.resolve() == self.path.resolve():
            raise PvfFormatError(
                "READ_ONLY", "write_copy cannot replace the open file; use save()", path=str(path)
            )
        written = 0
        with atomic_writer(target) as f:
            for part in self.iter_archive_bytes():
                f.write(part)
                written += len(part)
        return written

    def save(self) -> int:
        """Write changes back to the file this archive came from (atomically); returns bytes written."""
        self._check_open()
        if self.path is None:
            raise PvfFormatError("NOT_FOUND", "a new or in-memory archive needs save_as(path)")
        if not self.modified:
            return 0
        return self.save_as(self.path)

    def save_as(self, path: str | os.PathLike[str]) -> int:
        """Write the archive to ``path`` atomically (replacing it) and continue working on that file."""
        self._check_open()
        target = Path(path)
        src = self._src

        def release() -> None:
            # Windows cannot replace a file that is still mapped
            if src is not None and src.path is not None and src.path.resolve() == target.resolve():
                src.close()

        written = rewrite.atomic_write(target, self.iter_archive_bytes(), release)
        if src is not None:
            src.close()
        reopened = Archive.open(target, region=self._region)
        reopened.korean_mojibake = self.korean_mojibake
        self.__dict__.update(reopened.__dict__)
        return written

    # ------------------------------------------------------------------------------------- checking

    def verify(self, progress: ProgressFn | None = None) -> list[str]:
        """Check hashes, checksums, chunk and tree consistency; every problem found, empty when sound."""
        self._check_open()
        from moddesk.pvf.format.verify import verify_classic, verify_nkpi

        if self._src is None:
            return []
        if self._classic is not None:
            return verify_classic(self._src, self._classic, progress)
        assert self._nkpi is not None
        return verify_nkpi(self._src, self._nkpi, progress)
