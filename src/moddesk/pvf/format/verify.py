"""Integrity checks of both container families: every problem found, not just the first."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from moddesk.pvf.format.classic import ClassicDirectory
from moddesk.pvf.format.crypto import align4, classic_decrypt, crc32_seeded, name_hash
from moddesk.pvf.format.errors import PvfFormatError
from moddesk.pvf.format.nkpi import ROOT_PATH, NkpiDirectory, read_chunk, read_hash_section
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
    total = d.header.group_count
    for c in range(total):
        try:
            read_chunk(src, d, c)
        except PvfFormatError as exc:
            p.add("chunk", exc.message)
        if progress is not None and (c % 256 == 0 or c + 1 == total):
            progress(c + 1, total)
    return p.result()
