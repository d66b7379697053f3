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


def guid_plausible(guid: bytes) -> bool:
    """Whether ``guid`` looks like a classic header's GUID: non-empty printable ASCII (real files: 36 chars).

    A GUID that is not (a damaged byte, another tool's header) is still read when the directory
    behind it proves the header right (:func:`first_entry_verifies`): the game and every peer
    reader (pvfUtility, pvf-parser-ts, godof, DNF_pvf_python) skip the GUID without looking at it.
    """
    return bool(guid) and all(0x20 <= b < 0x7F for b in guid)


def guid_problem(guid: bytes) -> str | None:
    """The warning for a GUID that is not printable ASCII, or None."""
    if guid_plausible(guid):
        return None
    bad = [f"{i}:{b:#04x}" for i, b in enumerate(guid) if not 0x20 <= b < 0x7F]
    shown = ", ".join(bad[:8]) + (" …" if len(bad) > 8 else "")
    return f"the GUID holds {len(bad)} byte(s) that are not printable ASCII ({shown}); read leniently as the peers do"


def first_entry_verifies(src: ByteSource, guid_len: int, tree_len: int, tree_crc: int, count: int) -> bool:
    """Whether the first directory entry decrypts to a name whose hash matches (garbage never does)."""
    if count <= 0 or tree_len < 20:
        return False
    head = classic_decrypt(src.read(20 + guid_len, min(tree_len, 1024) & ~3), tree_crc)
    h, n = struct.unpack_from("<Ii", head, 0)
    if not 0 < n <= len(head) - 20:
        return False
    return bool(name_hash(head[8 : 8 + n]) == h)


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
    if not guid:
        raise PvfFormatError("BAD_HEADER", "the GUID is empty", offset=4)
    version, tree_len, tree_crc, count = struct.unpack(
        "<iiIi", src.read(4 + guid_len, 16, what="classic header")
    )
    problems: list[str] = []
    warning = guid_problem(guid)
    if warning is not None:
        problems.append(warning)
    base = 20 + guid_len + tree_len
    if tree_len < 0 or tree_len % 4 or base > size:
        raise PvfFormatError(
            "BAD_HEADER", f"directory length {tree_len} does not fit the file", offset=8 + guid_len
        )
    if count < 0 or count * 20 > tree_len:
        raise PvfFormatError("BAD_HEADER", f"file count {count} does not fit a {tree_len}-byte directory")
    tree = classic_decrypt(src.read(20 + guid_len, tree_len, what="directory"), tree_crc)
    tree_ok = crc32_seeded(tree, count) == tree_crc
    if not tree_ok:
        problems.append("directory checksum does not match crc32(tree, count)")
    names: list[bytes] = []
    hashes = np.empty(count, dtype=np.uint32)
    sizes = np.empty(count, dtype=np.int64)
    crcs = np.empty(count, dtype=np.uint32)
    offsets = np.empty(count, dtype=np.int64)
    unpack_head = struct.Struct("<Ii").unpack_from
    unpack_tail = struct.Struct("<iIi").unpack_from
    data_area = size - base
    cut_end = 0  # the furthest end of an entry whose data lies past the end of the file
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
        if dlen < 0 or off < 0 or (off + align4(dlen) > data_area and tree_ok is False):
            raise PvfFormatError(
                "BAD_OFFSET",
                f"entry {i} data ({dlen} bytes at {off}) is outside the data area",
                offset=base + max(off, 0),
            )
        cut_end = max(cut_end, off + align4(dlen) - data_area)
        hashes[i], sizes[i], crcs[i], offsets[i] = h, dlen, crc, off
    if cut_end > 0:
        # the directory verified, so its offsets are true: the file itself is short
        raise PvfFormatError(
            "TRUNCATED",
            f"this classic archive is cut short: {cut_end} bytes missing from the data area "
            f"(the file has {size} bytes); copy or download it again",
            offset=size,
        )
    end = int((offsets + ((sizes + 3) & ~3)).max()) if count else 0
    return ClassicDirectory(
        guid, version, tree_len, tree_crc, names, hashes, sizes, crcs, offsets, base, base + end, problems
    )


def read_classic_block(src: ByteSource, d: ClassicDirectory, index: int) -> bytes:
    """The plaintext data of entry ``index`` (padding removed)."""
    size = int(d.sizes[index])
    block = src.read(d.base + int(d.offsets[index]), align4(size), what=f"entry {index}")
    return classic_decrypt(block, int(d.crcs[index]))[:size]


def block_checksum_ok(src: ByteSource, d: ClassicDirectory, index: int) -> bool:
    """Whether entry ``index``'s plaintext (padding zeroed) matches its stored checksum (spec §1.4)."""
    size = int(d.sizes[index])
    block = src.read(d.base + int(d.offsets[index]), align4(size), what=f"entry {index}")
    plain = classic_decrypt(block, int(d.crcs[index]))[:size]
    return crc32_seeded(plain + b"\0" * (align4(size) - size), int(d.hashes[index])) == int(d.crcs[index])


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
class ClassicOutput:
    """The entries of an archive being written, as parallel arrays (one row per entry, in tree order).

    ``source_offsets[i]`` is the absolute offset of entry i's stored encrypted block to copy, or -1
    when ``new_data[i]`` holds its new plaintext (already padded to 4 bytes).
    """

    names: list[bytes]
    hashes: npt.NDArray[np.uint32]
    sizes: npt.NDArray[np.int64]
    crcs: npt.NDArray[np.uint32]
    source_offsets: npt.NDArray[np.int64]
    new_data: dict[int, bytes]


def padded_block(data: bytes, name_hash_value: int) -> tuple[bytes, int]:
    """The zero-padded plaintext block of ``data`` and its checksum (spec §1.4)."""
    padded = data + b"\0" * (align4(len(data)) - len(data))
    return padded, crc32_seeded(padded, name_hash_value)


def build_tree(out: ClassicOutput, order: npt.NDArray[np.int64], rel_offsets: npt.NDArray[np.int64]) -> bytes:
    """The plain directory tree (entries in ``order``), built with vectorised scatters."""
    n = len(order)
    names = [out.names[i] for i in order.tolist()]
    lens = np.fromiter((len(x) for x in names), dtype=np.int64, count=n)
    sizes = 20 + lens
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1])) if n else np.zeros(0, dtype=np.int64)
    total = int(sizes.sum()) if n else 0
    buf = np.zeros(align4(total), dtype=np.uint8)
    if n:
        head = np.empty((n, 2), dtype="<u4")
        head[:, 0] = out.hashes[order]
        head[:, 1] = lens
        buf[starts[:, None] + np.arange(8)] = head.view(np.uint8).reshape(n, 8)
        tail = np.empty((n, 3), dtype="<i4")
        tail[:, 0] = out.sizes[order]
        tail[:, 1] = out.crcs[order].view(np.int32)
        tail[:, 2] = rel_offsets
        buf[(starts + 8 + lens)[:, None] + np.arange(12)] = tail.view(np.uint8).reshape(n, 12)
        joined = np.frombuffer(b"".join(names), dtype=np.uint8)
        if len(joined):
            # byte j of the joined names goes to j + (entry start + 8 - where the entry's name starts in joined)
            shift = np.repeat(starts + 8 - (np.cumsum(lens) - lens), lens)
            shift += np.arange(len(joined), dtype=np.int64)
            buf[shift] = joined
    return buf.tobytes()


def write_classic(
    src: ByteSource | None,
    guid: bytes,
    version: int,
    out: ClassicOutput,
    trailing: bytes,
    *,
    sort_by_hash: bool = True,
) -> Iterator[bytes]:
    """Yield the bytes of a classic archive; stored blocks are copied in runs, new ones encrypted."""
    n = len(out.names)
    order = np.argsort(out.hashes, kind="stable") if sort_by_hash else np.arange(n)
    blens = (out.sizes[order] + 3) & ~3
    rel = np.concatenate(([0], np.cumsum(blens)[:-1])) if n else np.zeros(0, dtype=np.int64)
    tree = build_tree(out, order, rel)
    tree_crc = crc32_seeded(tree, n)
    yield struct.pack("<i", len(guid)) + guid + struct.pack("<iiIi", version, len(tree), tree_crc, n)
    yield classic_encrypt(tree, tree_crc)
    if not n:
        if trailing:
            yield trailing
        return
    # runs of stored blocks that are adjacent in the source as well are copied in one slice
    src_off = out.source_offsets[order]
    stored = src_off >= 0
    follows = np.zeros(n, dtype=bool)
    follows[1:] = stored[1:] & stored[:-1] & (src_off[1:] == src_off[:-1] + blens[:-1])
    view = src.view() if src is not None else None
    order_list = order.tolist()
    starts = np.flatnonzero(~follows).tolist()  # each begins a stored run or is a new block
    ends = [*starts[1:], n]
    for k, stop in zip(starts, ends, strict=True):
        if stored[k]:
            assert view is not None
            yield from copy_slices(view, int(src_off[k]), int(src_off[stop - 1] + blens[stop - 1]))
        else:
            i = order_list[k]
            yield classic_encrypt(out.new_data[i], int(out.crcs[i]))
    if trailing:
        yield trailing
