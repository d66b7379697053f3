"""Results of many entries in one buffer: what bulk passes hand over instead of an object per entry.

``Archive.rendered_batches`` and ``Archive.byte_batches`` yield :class:`EntryBatch` values: the
directory indexes of a run of entries, their results back to back in one ``bytes``, the offsets
between them, and which entries have a result at all. A caller that only needs the results (the
content index, a benchmark, a checksum pass) reads them as slices or hands the buffer on whole; at
10^6 entries one ``ArchiveEntry`` and one ``bytes`` each cost more than the native render itself.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt


@dataclass(frozen=True, slots=True)
class EntryBatch:
    """Entry ``k`` of the batch is the one at directory index ``indexes[k]``; its result is
    ``blob[ends[k]:ends[k + 1]]``, or None where ``present[k]`` is false (no text form)."""

    indexes: npt.NDArray[np.uint32]
    blob: bytes
    ends: npt.NDArray[np.uint64]
    present: npt.NDArray[np.bool_]

    def __len__(self) -> int:
        return len(self.indexes)

    def get(self, k: int) -> bytes | None:
        """The result of entry ``k`` of the batch."""
        if not self.present[k]:
            return None
        return self.blob[int(self.ends[k]) : int(self.ends[k + 1])]

    def items(self) -> Iterator[tuple[int, bytes | None]]:
        """(directory index, result) of every entry (a ``bytes`` each: for callers that want them)."""
        ends = self.ends.tolist()
        blob = self.blob
        for k, (i, there) in enumerate(zip(self.indexes.tolist(), self.present.tolist(), strict=True)):
            yield i, blob[ends[k] : ends[k + 1]] if there else None

    @property
    def sizes(self) -> npt.NDArray[np.int64]:
        """The length of each entry's result (0 where there is none)."""
        return np.diff(self.ends).astype(np.int64)

    @classmethod
    def of(cls, indexes: Iterable[int], results: list[bytes | None]) -> EntryBatch:
        """A batch made from one result per entry (the Python core's, and edited entries)."""
        lengths = np.fromiter(
            (0 if r is None else len(r) for r in results), dtype=np.uint64, count=len(results)
        )
        ends = np.zeros(len(results) + 1, dtype=np.uint64)
        np.cumsum(lengths, out=ends[1:])
        return cls(
            np.fromiter(indexes, dtype=np.uint32, count=len(results)),
            b"".join(r for r in results if r is not None),
            ends,
            np.fromiter((r is not None for r in results), dtype=np.bool_, count=len(results)),
        )

    @classmethod
    def native(
        cls,
        indexes: npt.NDArray[np.uint32],
        blob: bytes,
        ends_raw: bytes,
        present: npt.NDArray[np.bool_] | None = None,
    ) -> EntryBatch:
        """A batch of a native answer (buffer + uint64 ends); every entry has a result unless
        ``present`` says otherwise."""
        ends = np.frombuffer(ends_raw, dtype="<u8").astype(np.uint64, copy=False)
        n = len(ends) - 1
        return cls(indexes[:n], blob, ends, np.ones(n, dtype=np.bool_) if present is None else present[:n])


def batched(pairs: Iterable[tuple[int, bytes | None]], size: int) -> Iterator[EntryBatch]:
    """``(index, result)`` pairs gathered into batches of ``size``."""
    indexes: list[int] = []
    results: list[bytes | None] = []
    for i, result in pairs:
        indexes.append(i)
        results.append(result)
        if len(indexes) >= size:
            yield EntryBatch.of(indexes, results)
            indexes, results = [], []
    if indexes:
        yield EntryBatch.of(indexes, results)


def storage_runs(
    order: npt.NDArray[np.int64],
    alone: npt.NDArray[np.bool_],
    sizes: npt.NDArray[np.int64],
    max_files: int,
    max_bytes: int,
) -> Iterator[tuple[npt.NDArray[np.uint32], bool]]:
    """``order`` (directory indexes) cut into runs for one native call each — at most ``max_files``
    entries, cut after the entry that reaches ``max_bytes`` stored bytes — and the entries marked
    ``alone`` (edited or added: read by Python) each on its own, as ``(run, is_alone)``."""
    start = 0
    stops = [*np.flatnonzero(alone).tolist(), len(order)]
    for stop in stops:
        segment = order[start:stop].astype(np.uint32)
        if len(segment):
            total = np.cumsum(sizes[segment])
            lo = 0
            while lo < len(segment):
                base = int(total[lo - 1]) if lo else 0
                by_bytes = int(np.searchsorted(total, base + max_bytes, side="left")) + 1
                hi = min(lo + max_files, by_bytes, len(segment))
                yield segment[lo:hi], False
                lo = hi
        if stop < len(order):
            yield order[stop : stop + 1].astype(np.uint32), True
        start = stop + 1
