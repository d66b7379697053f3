"""Saving an edited archive: the new container's bytes from its directory plus the pending edits.

Unchanged entries keep their stored (encrypted / compressed) bytes; only replaced and added
entries are encoded, and the directory (classic tree, NKPI table and chunk index) is rebuilt.
The ``Archive`` object owns the edits; this module only reads them.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from moddesk.kit.files import temp_prefix
from moddesk.pvf.format import classic as classic_fmt
from moddesk.pvf.format import nkpi as nkpi_fmt
from moddesk.pvf.format.crypto import name_hash
from moddesk.pvf.format.encodings import NAME_ENCODING, encode_text
from moddesk.pvf.format.source import ByteSource


@dataclass(frozen=True)
class Edits:
    """An archive's entries and pending changes (shared with the Archive, not copied)."""

    paths: Sequence[str]  # every entry: the source's entries first, then added ones
    source_count: int
    overlay: dict[int, bytes]  # entry index -> new plaintext bytes
    deleted: set[int]
    types: list[int]  # NKPI data types of the added entries

    def live(self) -> Iterator[int]:
        """Indexes of the entries that are not deleted, in directory order."""
        deleted = self.deleted
        return (i for i in range(len(self.paths)) if i not in deleted)


def classic_parts(src: ByteSource | None, d: classic_fmt.ClassicDirectory, edits: Edits) -> Iterator[bytes]:
    """A classic archive with ``edits`` applied, streamed in pieces."""
    src_count = edits.source_count
    overlay = edits.overlay
    live = np.fromiter(edits.live(), dtype=np.int64)
    old = live[live < src_count]
    n_old = len(old)
    names = [d.names[i] for i in old.tolist()]
    hashes = np.empty(len(live), dtype=np.uint32)
    sizes = np.empty(len(live), dtype=np.int64)
    crcs = np.empty(len(live), dtype=np.uint32)
    offsets = np.full(len(live), -1, dtype=np.int64)
    # sources first (directory order), then added entries; only the overlay rows are recomputed
    hashes[:n_old], sizes[:n_old], crcs[:n_old] = d.hashes[old], d.sizes[old], d.crcs[old]
    offsets[:n_old] = d.base + d.offsets[old]
    new_data: dict[int, bytes] = {}
    row_of = {i: r for r, i in enumerate(live.tolist())} if overlay else {}
    for i in sorted(overlay):
        if i in edits.deleted:
            continue
        r = row_of[i]
        if i >= src_count:
            names.append(encode_text(edits.paths[i], NAME_ENCODING))
            hashes[r] = name_hash(names[-1])
        padded, crc = classic_fmt.padded_block(overlay[i], int(hashes[r]))
        sizes[r], crcs[r], offsets[r] = len(overlay[i]), crc, -1
        new_data[r] = padded
    out = classic_fmt.ClassicOutput(names, hashes, sizes, crcs, offsets, new_data)
    trailing = b""
    if src is not None and d.trailing_offset < src.size:
        trailing = src.read(d.trailing_offset, src.size - d.trailing_offset)
    yield from classic_fmt.write_classic(src, d.guid, d.version, out, trailing)


def nkpi_parts(src: ByteSource | None, d: nkpi_fmt.NkpiDirectory, edits: Edits) -> Iterator[bytes]:
    """An NKPI archive with ``edits`` applied, streamed in pieces (new names are interned into ``d``)."""
    src_count = edits.source_count
    deleted = edits.deleted
    keep = np.fromiter((i for i in range(src_count) if i not in deleted), dtype=np.int64)
    replaced = {i: data for i, data in edits.overlay.items() if i < src_count and i not in deleted}
    added: list[nkpi_fmt.NkpiNewFile] = []
    for i in range(src_count, len(edits.paths)):
        if i in deleted:
            continue
        folder, _, name = edits.paths[i].rpartition("/")
        name_magic = d.pools.intern(name)
        path_magic = d.pools.intern(folder) if folder else nkpi_fmt.ROOT_PATH
        added.append(
            nkpi_fmt.NkpiNewFile(name_magic, path_magic, edits.types[i - src_count], edits.overlay[i])
        )
    files_changed = bool(deleted) or len(edits.paths) != src_count
    yield from nkpi_fmt.write_nkpi(src, d, keep, replaced, added, files_changed=files_changed)


def atomic_write(path: Path, parts: Iterable[bytes], before_replace: Callable[[], None] | None = None) -> int:
    """Stream ``parts`` to a temp file beside ``path``, fsync, then rename over it; returns bytes written.

    ``before_replace`` runs between the fsync and the rename (the caller unmaps the file it is
    replacing: Windows cannot replace a mapped file).
    """
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=temp_prefix(path.name), dir=path.parent or ".")
    written = 0
    try:
        with os.fdopen(fd, "wb") as f:
            for part in parts:
                f.write(part)
                written += len(part)
            f.flush()
            os.fsync(f.fileno())
        # keep the replaced file's permissions; a new file gets rw-r--r-- instead of mkstemp's 0600
        try:
            os.chmod(tmp, stat.S_IMODE(os.stat(path).st_mode))
        except FileNotFoundError:
            os.chmod(tmp, 0o644)
        if before_replace is not None:
            before_replace()
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    if os.name == "posix":
        dfd = os.open(path.parent or ".", os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    return written
