"""Classic GUID-header archives (spec §1): directory parsing and streaming rewrite."""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from moddesk.pvf.format.crypto import (
    align4,
    classic_decrypt,
    classic_decrypt_many,
    classic_encrypt,
    crc32_seeded,
    name_hash,
)
from moddesk.pvf.format.errors import PvfFormatError
from moddesk.pvf.format.source import ByteSource

#: Real archives carry a 36-character GUID; anything longer than this is not a classic header.
MAX_GUID_LEN = 1024
DEFAULT_VERSION = 0x102EA
DEFAULT_GUID = b"fa08bf71-4395-6a4b-a3e3-2617c9fee116"


@dataclass
class ClassicDirectory:
    """The decoded header and directory tree of a classic archive (no file data)."""

    guid: bytes
    version: int
    tree_len: int
    tree_crc: int
    names: list[bytes]
    hashes: npt.NDArray[np.uint32]
    sizes: npt.NDArray[np.int64]
    crcs: npt.NDArray[np.uint32]
    offsets: npt.NDArray[np.int64]
    base: int
    trailing_offset: int
    problems: list[str] = field(default_factory=list)

    @property
    def count(self) -> int:
        """Number of entries."""
        return len(self.names)


def empty_directory() -> ClassicDirectory:
    """The directory of a new, empty classic archive."""
    return ClassicDirectory(
        DEFAULT_GUID,
        DEFAULT_VERSION,
        0,
        0,
        [],
        np.zeros(0, dtype=np.uint32),
        np.zeros(0, dtype=np.int64),
        np.zeros(0, dtype=np.uint32),
        np.zeros(0, dtype=np.int64),
        0,
        0,
    )


def read_classic_directory(src: ByteSource) -> ClassicDirectory:
    """Parse header and tree; every size is checked against the file before anything is allocated."""
    size = src.size
    (guid_len,) = struct.unpack("<i", src.read(0, 4, what="classic header"))
    if not 0 <= guid_len <= MAX_GUID_LEN:
        raise PvfFormatError("BAD_HEADER", f"GUID length {guid_len} is not plausible", offset=0)
    guid = src.read(4, guid_len, what="GUID")
    version, tree_len, tree_crc, count = struct.unpack(
        "<iiIi", src.read(4 + guid_len, 16, what="classic header")
    )
    base = 20 + guid_len + tree_len
    if tree_len < 0 or tree_len % 4 or base > size:
        raise PvfFormatError(
            "BAD_HEADER", f"directory length {tree_len} does not fit the file", offset=8 + guid_len
        )
    if count < 0 or count * 20 > tree_len:
        raise PvfFormatError("BAD_HEADER", f"file count {count} does not fit a {tree_len}-byte directory")
    tree = classic_decrypt(src.read(20 + guid_len, tree_len, what="directory"), tree_crc)
    problems: list[str] = []
    if crc32_seeded(tree, count) != tree_crc:
        problems.append("directory checksum does not match crc32(tree, count)")
    names: list[bytes] = []
    hashes = np.empty(count, dtype=np.uint32)
    sizes = np.empty(count, dtype=np.int64)
    crcs = np.empty(count, dtype=np.uint32)
    offsets = np.empty(count, dtype=np.int64)
    unpack_head = struct.Struct("<Ii").unpack_from
    unpack_tail = struct.Struct("<iIi").unpack_from
    data_area = size - base
    p = 0
    for i in range(count):
        if p + 8 > tree_len:
            raise PvfFormatError(
                "TRUNCATED", f"directory entry {i} runs past the directory", offset=20 + guid_len + p
            )
        h, n = unpack_head(tree, p)
        if n < 0 or p + 20 + n > tree_len:
            raise PvfFormatError(
                "BAD_HEADER", f"directory entry {i} has name length {n}", offset=20 + guid_len + p
            )
        names.append(tree[p + 8 : p + 8 + n])
        p += 8 + n
        dlen, crc, off = unpack_tail(tree, p)
        p += 12
        if dlen < 0 or off < 0 or off + align4(dlen) > data_area:
            raise PvfFormatError(
                "BAD_OFFSET",
                f"entry {i} data ({dlen} bytes at {off}) is outside the data area",
                offset=base + max(off, 0),
            )
        hashes[i], sizes[i], crcs[i], offsets[i] = h, dlen, crc, off
    end = int((offsets + ((sizes + 3) & ~3)).max()) if count else 0
    return ClassicDirectory(
        guid, version, tree_len, tree_crc, names, hashes, sizes, crcs, offsets, base, base + end, problems
    )


def read_classic_block(src: ByteSource, d: ClassicDirectory, index: int) -> bytes:
    """The plaintext data of entry ``index`` (padding removed)."""
    size = int(d.sizes[index])
    block = src.read(d.base + int(d.offsets[index]), align4(size), what=f"entry {index}")
    return classic_decrypt(block, int(d.crcs[index]))[:size]


def decrypt_run(data: bytes, lengths: list[int], checksums: list[int]) -> bytes:
    """Decrypt adjacent blocks (4-aligned ``lengths``) with their own checksums in one pass."""
    return classic_decrypt_many(
        data, np.asarray(lengths, dtype=np.int64), np.asarray(checksums, dtype=np.uint32)
    )


def stored_block(src: ByteSource, d: ClassicDirectory, index: int) -> bytes:
    """The encrypted block of entry ``index`` exactly as stored."""
    return src.read(d.base + int(d.offsets[index]), align4(int(d.sizes[index])), what=f"entry {index}")


#: Stored bytes are copied in pieces of at most this size, so a save never holds the whole archive.
COPY_PIECE = 8 << 20


def copy_slices(view: memoryview, start: int, end: int) -> Iterator[bytes]:
    """The bytes ``view[start:end]`` in pieces of at most COPY_PIECE."""
    for a in range(start, end, COPY_PIECE):
        yield bytes(view[a : min(a + COPY_PIECE, end)])


@dataclass
class ClassicOutEntry:
    """One entry of an archive being written: either a stored block to copy or new plaintext."""

    name: bytes
    hash: int
    size: int
    crc: int
    source_offset: int | None = None  # absolute offset of the stored encrypted block to copy
    data: bytes | None = None  # new plaintext (encrypted on write)


def new_entry(name: bytes, data: bytes) -> ClassicOutEntry:
    """An entry for new plaintext: hash, padded checksum (spec §1.4)."""
    h = name_hash(name)
    padded = data + b"\0" * (align4(len(data)) - len(data))
    return ClassicOutEntry(name, h, len(data), crc32_seeded(padded, h), data=padded)


def write_classic(
    src: ByteSource | None,
    guid: bytes,
    version: int,
    entries: list[ClassicOutEntry],
    trailing: bytes,
    *,
    sort_by_hash: bool = True,
) -> Iterator[bytes]:
    """Yield the bytes of a classic archive; stored blocks are copied, new ones encrypted."""
    order = (
        sorted(range(len(entries)), key=lambda i: entries[i].hash) if sort_by_hash else range(len(entries))
    )
    ordered = [entries[i] for i in order]
    parts: list[bytes] = []
    rel = 0
    pack_tail = struct.Struct("<iIi").pack
    pack_head = struct.Struct("<Ii").pack
    for e in ordered:
        parts.append(pack_head(e.hash, len(e.name)))
        parts.append(e.name)
        parts.append(pack_tail(e.size, e.crc, rel))
        rel += align4(e.size)
    tree = b"".join(parts)
    tree += b"\0" * (align4(len(tree)) - len(tree))
    tree_crc = crc32_seeded(tree, len(ordered))
    yield (
        struct.pack("<i", len(guid)) + guid + struct.pack("<iiIi", version, len(tree), tree_crc, len(ordered))
    )
    yield classic_encrypt(tree, tree_crc)
    # copy runs of consecutive stored blocks in one slice; encrypt new blocks
    view = src.view() if src is not None else None
    run_start: int | None = None
    run_end = 0
    for e in ordered:
        if e.source_offset is not None:
            assert view is not None
            blen = align4(e.size)
            if run_start is not None and e.source_offset == run_end:
                run_end += blen
                continue
            if run_start is not None:
                yield from copy_slices(view, run_start, run_end)
            run_start, run_end = e.source_offset, e.source_offset + blen
            continue
        if run_start is not None:
            assert view is not None
            yield from copy_slices(view, run_start, run_end)
            run_start = None
        assert e.data is not None
        yield classic_encrypt(e.data, e.crc)
    if run_start is not None:
        assert view is not None
        yield from copy_slices(view, run_start, run_end)
    if trailing:
        yield trailing
