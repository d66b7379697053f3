"""NKPI archives (spec §4): standard "90US" and protected "90CN" — directory, chunks, rewrite.

Paged110 ("110US") uses the same logical layout behind AES-encrypted page heads; it is recognised
(see ``detect``) and refused with UNSUPPORTED_FORMAT because it needs key material (``sk.dat`` and
the client's RSA/metadata keys) that moddesk does not ship.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import NoReturn

import numpy as np
import numpy.typing as npt

from moddesk.pvf.format.classic import copy_slices
from moddesk.pvf.format.crypto import MAGIC_MAIN, MAGIC_POOL, lcg_crypt, seed_ascii, seed_wide
from moddesk.pvf.format.errors import PvfFormatError
from moddesk.pvf.format.source import ByteSource
from moddesk.pvf.format.strings import StringPools

SIGNATURE = 0x69706B6E  # "nkpi"
HEADER_SIZE = 48
ROW_SIZE = 24
ROOT_PATH = 0xFFFFFFFF
#: New content is packed into chunks of about this many decompressed bytes (real archives: ~72 KB).
CHUNK_TARGET = 64 * 1024
#: zlib cannot expand more than ~1032:1; a chunk announcing more than this is lying.
MAX_RATIO = 1100
DATA_SCRIPT = 1
DATA_TEXT = 3

ROW_DTYPE = np.dtype(
    [("name", "<u4"), ("path", "<u4"), ("chunk", "<i4"), ("offset", "<i4"), ("size", "<i4"), ("type", "<i4")]
)


@dataclass(frozen=True)
class NkpiVariant:
    """The section keys of one NKPI family (spec §4.3)."""

    name: str
    header_seed: int
    hash_seed: int
    grpi_seed: int
    body_seed: int
    pool_a_seed: int
    pool_w_seed: int
    mask_a: int
    mask_w: int
    guardable: bool


STANDARD = NkpiVariant(
    "90US",
    seed_ascii("HeaD"),
    seed_ascii("HASH"),
    seed_ascii("GRPI"),
    seed_ascii("BodY"),
    seed_ascii("sTrA"),
    seed_ascii("sTrW"),
    0xAA74472E,
    0x9A82F037,
    True,
)
PROTECTED = NkpiVariant(
    "90CN",
    seed_wide("hEAd"),
    seed_wide("hash"),
    seed_wide("grpi"),
    seed_wide("bODy"),
    seed_wide("StRa"),
    seed_wide("StRw"),
    0xAA74472E,
    0x9A82F037,
    False,
)
#: Paged110's logical keys; only the header key is used here (to recognise a page-decrypted stream).
PAGED110 = NkpiVariant(
    "110US",
    seed_wide("iNfO"),
    0x5824C072,
    seed_wide("Gidx"),
    seed_wide("mAIn"),
    seed_wide("stAs"),
    seed_wide("stWs"),
    0xE7ADF7EA,
    0xB8DEA7AC,
    False,
)
VARIANTS = {v.name: v for v in (STANDARD, PROTECTED)}


@dataclass
class NkpiHeader:
    """The decrypted 48-byte header."""

    guid: bytes
    count: int
    padding: int
    body_size: int
    group_count: int
    hash_size: int
    name_size: int

    def pack(self) -> bytes:
        """Plain header bytes."""
        return struct.pack(
            "<I20siiiiii",
            SIGNATURE,
            self.guid,
            self.count,
            self.padding,
            self.body_size,
            self.group_count,
            self.hash_size,
            self.name_size,
        )


def _apply_guard(data: bytes) -> bytes:
    b = bytearray(data)
    for i in range(24, 28):
        b[i] ^= 0x55
    return bytes(b)


def decrypt_header(raw: bytes, variant: NkpiVariant, magic: int, guard: bool) -> NkpiHeader | None:
    """The header if it decrypts to the ``nkpi`` signature with these keys, else None."""
    if len(raw) < HEADER_SIZE:
        return None
    data = _apply_guard(raw[:HEADER_SIZE]) if guard else raw[:HEADER_SIZE]
    plain = lcg_crypt(data, variant.header_seed, magic)
    sig, guid, count, padding, body, groups, hsize, nsize = struct.unpack("<I20siiiiii", plain)
    if sig != SIGNATURE:
        return None
    return NkpiHeader(guid, count, padding, body, groups, hsize, nsize)


def encrypt_header(h: NkpiHeader, variant: NkpiVariant, magic: int, guard: bool) -> bytes:
    """Header bytes as stored (encrypted, guard applied after)."""
    enc = lcg_crypt(h.pack(), variant.header_seed, magic)
    return _apply_guard(enc) if guard else enc


@dataclass
class NkpiDirectory:
    """Everything an NKPI archive holds except file data: header, table, pools, chunk index."""

    variant: NkpiVariant
    magic: int
    guard: bool
    header: NkpiHeader
    rows: npt.NDArray[np.void]
    pools: StringPools
    name_prefix: bytes
    name_tail: bytes
    cumulative: npt.NDArray[np.int64]
    original_sizes: npt.NDArray[np.int64]
    table_offset: int = HEADER_SIZE
    problems: list[str] = field(default_factory=list)

    @property
    def hash_offset(self) -> int:
        """Where the HASH section starts."""
        return HEADER_SIZE + ROW_SIZE * self.header.count

    @property
    def name_offset(self) -> int:
        """Where the name table starts."""
        return self.hash_offset + self.header.hash_size

    @property
    def grpi_offset(self) -> int:
        """Where GRPI starts."""
        return self.name_offset + self.header.name_size

    @property
    def body_offset(self) -> int:
        """Where the body starts."""
        return self.grpi_offset + 8 * self.header.group_count

    def chunk_span(self, index: int) -> tuple[int, int]:
        """Absolute (start, end) of stored chunk ``index``."""
        start = int(self.cumulative[index - 1]) if index else 0
        return self.body_offset + start, self.body_offset + int(self.cumulative[index])


def probe_header(src: ByteSource) -> tuple[NkpiVariant, int, bool, NkpiHeader] | None:
    """Find the keys under which the header decrypts and whose sections sum to the file size."""
    if src.size < HEADER_SIZE:
        return None
    raw = src.read(0, HEADER_SIZE)
    mismatched: tuple[NkpiVariant, NkpiHeader, int] | None = None
    for variant in (STANDARD, PROTECTED, PAGED110):
        for magic in (MAGIC_MAIN, MAGIC_POOL):
            for guard in (False, True) if variant.guardable else (False,):
                h = decrypt_header(raw, variant, magic, guard)
                if h is None:
                    continue
                total = (
                    HEADER_SIZE
                    + ROW_SIZE * h.count
                    + h.hash_size
                    + h.name_size
                    + 8 * h.group_count
                    + h.body_size
                )
                if min(h.count, h.hash_size, h.name_size, h.group_count, h.body_size) < 0:
                    continue
                if total == src.size:
                    return variant, magic, guard, h
                if mismatched is None and variant is not PAGED110:
                    mismatched = (variant, h, total)  # other keys may still fit exactly: try them first
    if mismatched is not None:
        _size_mismatch(*mismatched, src.size)
    return None


def _size_mismatch(variant: NkpiVariant, h: NkpiHeader, total: int, size: int) -> NoReturn:
    """A header that decrypts under real keys but whose sections do not add up to the file size.

    The signature matched, so this *is* an NKPI archive: a cut copy (an interrupted download or
    copy) must say how much is missing and where, not that the format is unknown.
    """
    directory_end = total - h.body_size
    if size < total:
        where = "the data area" if size >= directory_end else "the directory"
        raise PvfFormatError(
            "TRUNCATED",
            f"this {variant.name} archive is cut short: {total - size} bytes missing from {where} "
            f"(the header announces {total} bytes, the file has {size}); copy or download it again",
            offset=size,
        )
    raise PvfFormatError(
        "BAD_HEADER",
        f"this {variant.name} archive has {size - total} bytes after the end its header announces "
        f"({total} bytes); the file may have been appended to or damaged",
        offset=total,
    )


def _read_pool(src: ByteSource, pos: int, end: int, seed: int, mask: int, what: str) -> tuple[bytes, int]:
    if pos + 8 > end:
        raise PvfFormatError("TRUNCATED", f"{what} pool header runs past the name table", offset=pos)
    a, b = struct.unpack("<II", src.read(pos, 8))
    enc_size = a ^ mask
    raw_len = b ^ enc_size
    pos += 8
    if enc_size == 0:
        return b"", pos
    if pos + enc_size > end:
        raise PvfFormatError(
            "BAD_STRING_TABLE", f"{what} pool of {enc_size} bytes overruns the name table", offset=pos
        )
    if raw_len > enc_size * MAX_RATIO + 1024:
        raise PvfFormatError(
            "BAD_STRING_TABLE", f"{what} pool claims {raw_len} bytes from {enc_size}", offset=pos
        )
    plain = lcg_crypt(src.read(pos, enc_size), seed, MAGIC_POOL)
    pool = _inflate(plain, raw_len, what=f"{what} pool", offset=pos)
    return pool, pos + enc_size


def _inflate(data: bytes, size: int, *, what: str, offset: int | None = None) -> bytes:
    """Inflate exactly ``size`` bytes and reach the stream end (so zlib's Adler-32 check runs)."""
    try:
        d = zlib.decompressobj()
        out = d.decompress(data, size + 1)
        if len(out) == size and not d.eof:
            extra = d.decompress(d.unconsumed_tail, 1)
            if extra:
                out += extra
    except zlib.error as exc:
        raise PvfFormatError("BAD_COMPRESSION", f"{what}: {exc}", offset=offset) from None
    if len(out) != size:
        raise PvfFormatError(
            "BAD_COMPRESSION", f"{what} inflates to {len(out)}+ bytes, not {size}", offset=offset
        )
    if not d.eof:
        raise PvfFormatError("BAD_COMPRESSION", f"{what}: compressed stream is cut short", offset=offset)
    return out


def read_nkpi_directory(src: ByteSource, probe: tuple[NkpiVariant, int, bool, NkpiHeader]) -> NkpiDirectory:
    """Parse table, pools and GRPI; the HASH section and the body are not touched."""
    variant, magic, guard, h = probe
    if variant is PAGED110:
        raise unsupported_paged110()
    rows = np.frombuffer(src.read(HEADER_SIZE, ROW_SIZE * h.count, what="file table"), dtype=ROW_DTYPE).copy()
    name_off = HEADER_SIZE + ROW_SIZE * h.count + h.hash_size
    name_end = name_off + h.name_size
    if h.name_size < 8:
        raise PvfFormatError(
            "BAD_HEADER", f"name table of {h.name_size} bytes has no prefix", offset=name_off
        )
    prefix = src.read(name_off, 8)
    pool_a, pos = _read_pool(src, name_off + 8, name_end, variant.pool_a_seed, variant.mask_a, "UTF-8")
    pool_w, pos = _read_pool(src, pos, name_end, variant.pool_w_seed, variant.mask_w, "UTF-16")
    tail = src.read(pos, name_end - pos)
    grpi_off = name_end
    grpi = np.frombuffer(
        lcg_crypt(src.read(grpi_off, 8 * h.group_count, what="GRPI"), variant.grpi_seed, magic), dtype="<i4"
    ).reshape(-1, 2)
    cumulative = grpi[:, 0].astype(np.int64)
    originals = grpi[:, 1].astype(np.int64)
    if h.group_count:
        stored = np.diff(np.concatenate(([0], cumulative)))
        if np.any(stored <= 0) or cumulative[-1] != h.body_size:
            raise PvfFormatError(
                "BAD_OFFSET", "GRPI sizes are not increasing up to the body size", offset=grpi_off
            )
        if np.any(originals < 0) or np.any(originals > stored * MAX_RATIO + 1024):
            raise PvfFormatError(
                "BAD_HEADER", "a chunk claims an impossible decompressed size", offset=grpi_off
            )
    elif h.body_size:
        raise PvfFormatError("BAD_HEADER", "a body without chunks", offset=grpi_off)
    d = NkpiDirectory(
        variant, magic, guard, h, rows, StringPools(pool_a, pool_w), prefix, tail, cumulative, originals
    )
    _check_rows(d)
    return d


def _check_rows(d: NkpiDirectory) -> None:
    r = d.rows
    if not len(r):
        return
    chunk = r["chunk"].astype(np.int64)
    bad = (chunk < 0) | (chunk >= max(d.header.group_count, 0)) | (r["offset"] < 0) | (r["size"] < 0)
    if np.any(bad):
        i = int(np.flatnonzero(bad)[0])
        raise PvfFormatError(
            "BAD_OFFSET", f"file table row {i} points outside the chunks", offset=HEADER_SIZE + 24 * i
        )
    end = r["offset"].astype(np.int64) + r["size"]
    over = end > d.original_sizes[chunk]
    if np.any(over):
        i = int(np.flatnonzero(over)[0])
        raise PvfFormatError(
            "BAD_OFFSET", f"file table row {i} runs past its chunk", offset=HEADER_SIZE + 24 * i
        )


def unsupported_paged110() -> PvfFormatError:
    """The refusal for Paged110 archives, naming the key material they need."""
    return PvfFormatError(
        "UNSUPPORTED_FORMAT",
        "this is a Paged110 ('110US') archive: reading it needs the page-key table from the sidecar sk.dat, "
        "decrypted with the client's RSA-1024 private key and its 32-byte metadata key (found in DFO.exe); "
        "moddesk does not ship that key material",
    )


def read_chunk(src: ByteSource, d: NkpiDirectory, index: int) -> bytes:
    """The decompressed bytes of chunk ``index``."""
    start, end = d.chunk_span(index)
    plain = lcg_crypt(src.read(start, end - start, what=f"chunk {index}"), d.variant.body_seed, d.magic)
    return _inflate(plain, int(d.original_sizes[index]), what=f"chunk {index}", offset=start)


def read_hash_section(
    src: ByteSource, d: NkpiDirectory
) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.uint32]]:
    """The HASH section: (pairs[N,2], unique magics)."""
    raw = lcg_crypt(src.read(d.hash_offset, d.header.hash_size, what="HASH"), d.variant.hash_seed, d.magic)
    if len(raw) < 4:
        raise PvfFormatError("TRUNCATED", "HASH section has no pair count", offset=d.hash_offset)
    (pairs_n,) = struct.unpack_from("<I", raw, 0)
    if 4 + 8 * pairs_n + 4 > len(raw):
        raise PvfFormatError("BAD_HEADER", f"HASH announces {pairs_n} pairs", offset=d.hash_offset)
    pairs = np.frombuffer(raw, dtype="<u4", count=2 * pairs_n, offset=4).reshape(-1, 2)
    (uniq_n,) = struct.unpack_from("<I", raw, 4 + 8 * pairs_n)
    if 8 + 8 * pairs_n + 4 * uniq_n > len(raw):
        raise PvfFormatError("BAD_HEADER", f"HASH announces {uniq_n} unique names", offset=d.hash_offset)
    uniq = np.frombuffer(raw, dtype="<u4", count=uniq_n, offset=8 + 8 * pairs_n)
    return pairs, uniq


def build_hash_section(rows: npt.NDArray[np.void], pools: StringPools) -> bytes:
    """Plain HASH bytes with pvfUtility's ordering: unique magics by raw pool bytes, then magic."""
    names = rows["name"].astype(np.uint32)
    paths = rows["path"].astype(np.uint32)
    pairs = np.empty((len(rows), 2), dtype="<u4")
    pairs[:, 0] = names
    pairs[:, 1] = paths
    uniq = set(np.unique(np.concatenate((names, paths))).tolist())
    uniq.discard(ROOT_PATH)
    ordered = sorted(uniq, key=lambda m: (pools.raw_at(m) or b"", m))
    return (
        struct.pack("<I", len(rows))
        + pairs.tobytes()
        + struct.pack("<I", len(ordered))
        + np.asarray(ordered, dtype="<u4").tobytes()
    )


def build_name_table(d_prefix: bytes, pools: StringPools, variant: NkpiVariant) -> bytes:
    """Name table bytes: prefix + both pools compressed and encrypted (spec §4.6)."""
    out = [d_prefix]
    for pool, seed, mask in (
        (bytes(pools.pool_a), variant.pool_a_seed, variant.mask_a),
        (bytes(pools.pool_w), variant.pool_w_seed, variant.mask_w),
    ):
        if not pool:
            out.append(struct.pack("<II", mask, 0))
            continue
        enc = lcg_crypt(zlib.compress(pool, 6), seed, MAGIC_POOL)
        out.append(struct.pack("<II", len(enc) ^ mask, len(pool) ^ len(enc)))
        out.append(enc)
    return b"".join(out)


@dataclass
class NkpiNewFile:
    """A file added to an archive being written."""

    name: int
    path: int
    data_type: int
    data: bytes


def write_nkpi(
    src: ByteSource | None,
    d: NkpiDirectory,
    keep: npt.NDArray[np.int64],
    replaced: dict[int, bytes],
    added: list[NkpiNewFile],
    *,
    files_changed: bool,
) -> Iterator[bytes]:
    """Yield a rewritten archive.

    ``keep`` lists the source rows that stay, in order; ``replaced`` maps some of them to new data.
    Chunks without a replaced member are copied as stored; touched chunks are rebuilt from their
    members; added files are packed into new chunks at the end; HASH and the name table are
    copied unless the file set / the pools changed.
    """
    variant, magic = d.variant, d.magic
    groups = d.header.group_count
    rows = d.rows[keep].copy() if len(keep) else np.zeros(0, dtype=ROW_DTYPE)
    src_chunks = rows["chunk"].astype(np.int64)
    touched = sorted({int(d.rows["chunk"][r]) for r in replaced})
    used = np.unique(src_chunks) if files_changed else np.arange(groups)
    remap = np.full(max(groups, 1), -1, dtype=np.int64)
    remap[used] = np.arange(len(used))
    if len(rows):
        rows["chunk"] = remap[src_chunks]
    # members of touched chunks, by chunk
    members: dict[int, list[int]] = {c: [] for c in touched}
    if touched:
        for pos in np.flatnonzero(np.isin(src_chunks, touched)).tolist():
            members[int(src_chunks[pos])].append(pos)
    sealed: dict[int, tuple[bytes, int]] = {}
    keep_list = keep.tolist()
    for c in touched:
        original = read_chunk(src, d, c) if src is not None else b""
        parts: list[bytes] = []
        placed: dict[tuple[int, int], int] = {}
        pos = 0
        mine = sorted(members[c], key=lambda p: int(rows["offset"][p]))
        for p in mine:
            r = keep_list[p]
            new = replaced.get(r)
            if new is None:
                off, size = int(d.rows["offset"][r]), int(d.rows["size"][r])
                key = (off, size)
                if key in placed:
                    rows[p]["offset"] = placed[key]
                    continue
                placed[key] = pos
                data = original[off : off + size]
            else:
                data = new
            rows[p]["offset"], rows[p]["size"] = pos, len(data)
            parts.append(data)
            pos += len(data)
        plain = b"".join(parts)
        sealed[c] = (seal_chunk(plain, variant, magic), len(plain))
    # added files: fresh chunks of about CHUNK_TARGET bytes
    new_chunks: list[tuple[bytes, int]] = []
    new_rows = np.zeros(len(added), dtype=ROW_DTYPE)
    batch: list[bytes] = []
    batch_size = 0
    for k, f in enumerate(added):
        if batch and batch_size + len(f.data) > CHUNK_TARGET:
            plain = b"".join(batch)
            new_chunks.append((seal_chunk(plain, variant, magic), len(plain)))
            batch, batch_size = [], 0
        new_rows[k] = (f.name, f.path, len(used) + len(new_chunks), batch_size, len(f.data), f.data_type)
        batch.append(f.data)
        batch_size += len(f.data)
    if batch:
        plain = b"".join(batch)
        new_chunks.append((seal_chunk(plain, variant, magic), len(plain)))
    rows = np.concatenate((rows, new_rows)) if len(added) else rows
    # GRPI
    stored = np.diff(np.concatenate(([0], d.cumulative))) if groups else np.zeros(0, dtype=np.int64)
    sizes = [int(stored[c]) if c not in sealed else len(sealed[c][0]) for c in used.tolist()]
    originals = [int(d.original_sizes[c]) if c not in sealed else sealed[c][1] for c in used.tolist()]
    sizes += [len(b) for b, _ in new_chunks]
    originals += [n for _, n in new_chunks]
    grpi = np.zeros((len(sizes), 2), dtype="<i4")
    if sizes:
        grpi[:, 0] = np.cumsum(sizes)
        grpi[:, 1] = originals
    if d.pools.changed or src is None:
        name_table = build_name_table(d.name_prefix, d.pools, variant) + d.name_tail
    else:
        name_table = src.read(d.name_offset, d.header.name_size)
    if files_changed or src is None:
        hash_section = lcg_crypt(build_hash_section(rows, d.pools), variant.hash_seed, magic)
    else:
        hash_section = src.read(d.hash_offset, d.header.hash_size)
    header = replace(
        d.header,
        count=len(rows),
        body_size=int(sum(sizes)),
        group_count=len(sizes),
        hash_size=len(hash_section),
        name_size=len(name_table),
    )
    yield encrypt_header(header, variant, magic, d.guard)
    yield rows.tobytes()
    yield hash_section
    yield name_table
    yield lcg_crypt(grpi.tobytes(), variant.grpi_seed, magic)
    view = src.view() if src is not None else None
    run: tuple[int, int] | None = None
    for c in used.tolist():
        if c not in sealed:
            start, end = d.chunk_span(c)
            if run is not None and run[1] == start:
                run = (run[0], end)
                continue
            if run is not None:
                assert view is not None
                yield from copy_slices(view, *run)
            run = (start, end)
            continue
        if run is not None:
            assert view is not None
            yield from copy_slices(view, *run)
            run = None
        yield sealed[c][0]
    if run is not None:
        assert view is not None
        yield from copy_slices(view, *run)
    for b, _ in new_chunks:
        yield b


def seal_chunk(plain: bytes, variant: NkpiVariant, magic: int) -> bytes:
    return lcg_crypt(zlib.compress(plain, 6), variant.body_seed, magic)


def empty_directory(variant: NkpiVariant, *, guid: bytes = b"\0" * 20) -> NkpiDirectory:
    """The directory of a new, empty archive of ``variant``."""
    header = NkpiHeader(guid, 0, 0, 0, 0, 0, 0)
    return NkpiDirectory(
        variant,
        MAGIC_MAIN,
        False,
        header,
        np.zeros(0, dtype=ROW_DTYPE),
        StringPools.new(),
        b"\0" * 8,
        b"",
        np.zeros(0, dtype=np.int64),
        np.zeros(0, dtype=np.int64),
    )


def entry_paths(d: NkpiDirectory) -> list[str]:
    """Every file table row's full path (``dir/name``), names resolved in one numpy pass."""
    names = d.rows["name"].astype(np.int64)
    folders = d.rows["path"].astype(np.int64)
    uniq, inverse = np.unique(np.concatenate((names, folders)), return_inverse=True)
    texts = d.pools.strings_at(uniq)
    root = int(np.searchsorted(uniq, ROOT_PATH))
    if root < len(uniq) and uniq[root] == ROOT_PATH:
        texts[root] = ""
    bad = [k for k, t in enumerate(texts) if t is None]
    if bad:
        row = int(np.flatnonzero(np.isin(inverse, bad))[0]) % max(len(names), 1)
        raise PvfFormatError(
            "BAD_OFFSET", f"file table row {row} names a string outside the pools", offset=48 + 24 * row
        )
    n = len(names)
    name_ix = inverse[:n].tolist()
    folder_ix = inverse[n:].tolist()
    out: list[str] = []
    for ni, fi in zip(name_ix, folder_ix, strict=True):
        folder = texts[fi]
        name = texts[ni] or ""
        out.append(f"{folder}/{name}" if folder else name)
    return out
