"""Integrity checks of both container families: every problem found, not just the first."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from moddesk.pvf.format.classic import ClassicDirectory
from moddesk.pvf.format.crypto import align4, classic_decrypt, crc32_seeded, name_hash
from moddesk.pvf.format.errors import PvfFormatError
from moddesk.pvf.format.nkpi import ROOT_PATH, NkpiDirectory, entry_paths, read_chunk, read_hash_section
from moddesk.pvf.format.source import ByteSource

ProgressFn = Callable[[int, int], None]
#: Stop listing problems of one kind after this many (the count is still reported).
MAX_LISTED = 50


class _Problems:
    def __init__(self) -> None:
        self.items: list[str] = []
        self.counts: dict[str, int] = {}

    def add(self, kind: str, text: str) -> None:
        n = self.counts.get(kind, 0) + 1
        self.counts[kind] = n
        if n <= MAX_LISTED:
            self.items.append(text)

    def result(self) -> list[str]:
        out = list(self.items)
        for kind, n in self.counts.items():
            if n > MAX_LISTED:
                out.append(f"… {n - MAX_LISTED} more {kind} problems")
        return out


def verify_classic(src: ByteSource, d: ClassicDirectory, progress: ProgressFn | None = None) -> list[str]:
    """Directory checksum, name hashes, per-file checksums and overlapping blocks."""
    p = _Problems()
    for text in d.problems:
        p.add("directory", text)
    view = src.view()
    total = d.count
    for i in range(total):
        name = d.names[i]
        label = name.decode("cp949", errors="replace")
        if name_hash(name) != int(d.hashes[i]):
            p.add("hash", f"{label}: name hash {int(d.hashes[i]):#010x} != {name_hash(name):#010x}")
        start = d.base + int(d.offsets[i])
        blen = align4(int(d.sizes[i]))
        plain = bytearray(classic_decrypt(view[start : start + blen], int(d.crcs[i])))
        plain[int(d.sizes[i]) :] = b"\0" * (blen - int(d.sizes[i]))
        if crc32_seeded(plain, int(d.hashes[i])) != int(d.crcs[i]):
            p.add("checksum", f"{label}: data checksum does not match")
        if progress is not None and (i % 4096 == 0 or i + 1 == total):
            progress(i + 1, total)
    if total:
        order = np.argsort(d.offsets, kind="stable")
        starts = d.offsets[order]
        ends = starts + ((d.sizes[order] + 3) & ~3)
        overlap = np.flatnonzero((starts[1:] < ends[:-1]) & (d.sizes[order][1:] > 0))
        for j in overlap[:MAX_LISTED].tolist():
            p.add("overlap", f"entry {int(order[j + 1])} overlaps entry {int(order[j])}")
    return p.result()


def verify_nkpi(src: ByteSource, d: NkpiDirectory, progress: ProgressFn | None = None) -> list[str]:
    """HASH section against the file table, every chunk inflating to its size."""
    p = _Problems()
    for text in d.problems:
        p.add("directory", text)
    try:
        pairs, uniq = read_hash_section(src, d)
        if len(pairs) != len(d.rows):
            p.add("hash", f"HASH holds {len(pairs)} pairs for {len(d.rows)} files")
        else:
            bad = np.flatnonzero((pairs[:, 0] != d.rows["name"]) | (pairs[:, 1] != d.rows["path"]))
            for i in bad[:MAX_LISTED].tolist():
                p.add("hash", f"HASH pair {i} does not match file table row {i}")
        expected = set(np.concatenate((d.rows["name"], d.rows["path"])).tolist()) - {ROOT_PATH}
        if set(uniq.tolist()) != expected:
            p.add("hash", "HASH unique-name set differs from the file table's names")
    except PvfFormatError as exc:
        p.add("hash", f"HASH section unreadable: {exc.message}")
    _nkpi_layout(d, p)
    total = d.header.group_count
    for c in range(total):
        try:
            read_chunk(src, d, c)
        except PvfFormatError as exc:
            p.add("chunk", exc.message)
        if progress is not None and (c % 256 == 0 or c + 1 == total):
            progress(c + 1, total)
    return p.result()


def _nkpi_layout(d: NkpiDirectory, p: _Problems) -> None:
    """Rows inside their chunk, and no two rows sharing part of a chunk (as the classic check does).

    A partial overlap means a size or offset was corrupted — e.g. a DataSize grown by 40 reads the
    next file's first bytes as its own. Two rows with the very same range are reported too, worded
    apart: no known writer deduplicates NKPI data, and a damaged offset that happens to land on a
    row of the same size would otherwise read another file's bytes silently.
    """
    rows = d.rows
    if not len(rows):
        return
    chunk = rows["chunk"].astype(np.int64)
    start = rows["offset"].astype(np.int64)
    size = rows["size"].astype(np.int64)
    inside = (chunk >= 0) & (chunk < d.header.group_count) & (start >= 0) & (size >= 0)
    limit = np.where(inside, d.original_sizes[np.clip(chunk, 0, max(len(d.original_sizes) - 1, 0))], 0)
    names: list[str] = []

    def name(row: int) -> str:  # paths are decoded only when there is something to report
        if not names:
            names.extend(entry_paths(d))
        return f"row {row} ({names[row]})" if row < len(names) else f"row {row}"

    for i in np.flatnonzero(~inside | (start + size > limit))[:MAX_LISTED].tolist():
        p.add(
            "bounds",
            f"{name(i)}: {int(size[i])} bytes at {int(start[i])} of chunk {int(chunk[i])} are outside it",
        )
    live = np.flatnonzero(inside & (size > 0))
    order = live[np.lexsort((start[live], chunk[live]))]
    c, a, z = chunk[order], start[order], start[order] + size[order]
    same = (c[1:] == c[:-1]) & (a[1:] < z[:-1])
    shared = (a[1:] == a[:-1]) & (z[1:] == z[:-1])
    for j in np.flatnonzero(same).tolist():
        i, k = int(order[j]), int(order[j + 1])
        if shared[j]:
            p.add("overlap", f"{name(k)} overlaps {name(i)}: both read the same bytes of chunk {int(c[j])}")
        else:
            where = f"chunk {int(c[j])} bytes {int(a[j + 1])}..{int(z[j])}"
            p.add("overlap", f"{name(k)} overlaps {name(i)} in {where}")
