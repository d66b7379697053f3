"""Random access to archive bytes without loading them: a file (memory-mapped) or bytes in memory."""

from __future__ import annotations

import mmap
import os
from pathlib import Path
from typing import IO

from moddesk.pvf.format.errors import PvfFormatError


class ByteSource:
    """Read-only random access to the bytes of an archive."""

    def __init__(
        self, data: bytes | mmap.mmap, *, path: Path | None = None, handle: object | None = None
    ) -> None:
        self._data: bytes | mmap.mmap | None = data
        self.path = path
        self._handle = handle
        self.size = len(data)

    @classmethod
    def from_path(cls, path: str | os.PathLike[str]) -> ByteSource:
        """Map a file read-only (an empty file becomes empty bytes)."""
        p = Path(path)
        return cls.from_handle(open(p, "rb"), p)

    @classmethod
    def from_handle(cls, f: IO[bytes], path: Path | None = None) -> ByteSource:
        """Map a file already opened for reading (e.g. without following links); the source owns it."""
        p = path
        try:
            size = os.fstat(f.fileno()).st_size
            if size == 0:
                f.close()
                return cls(b"", path=p)
            m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        except BaseException:
            f.close()
            raise
        return cls(m, path=p, handle=f)

    @classmethod
    def from_bytes(cls, data: bytes) -> ByteSource:
        """Wrap bytes already in memory."""
        return cls(bytes(data))

    def read(self, offset: int, length: int, *, what: str = "data") -> bytes:
        """Exactly ``length`` bytes at ``offset`` or TRUNCATED."""
        if self._data is None:
            raise PvfFormatError("CLOSED", "the archive is closed")
        if offset < 0 or length < 0 or offset + length > self.size:
            raise PvfFormatError(
                "TRUNCATED",
                f"{what}: {length} bytes at {offset} run past the end ({self.size} bytes)",
                offset=offset,
            )
        return bytes(self._data[offset : offset + length])

    def view(self) -> memoryview:
        """A zero-copy view of all bytes."""
        if self._data is None:
            raise PvfFormatError("CLOSED", "the archive is closed")
        return memoryview(self._data)

    def buffer(self) -> bytes | mmap.mmap:
        """The object holding the bytes (its mmap or bytes), for the native core to read through
        the buffer protocol for the length of one call."""
        if self._data is None:
            raise PvfFormatError("CLOSED", "the archive is closed")
        return self._data

    def close(self) -> None:
        """Release the mapping and the file handle."""
        data, self._data = self._data, None
        if isinstance(data, mmap.mmap):
            data.close()
        if self._handle is not None:
            self._handle.close()  # type: ignore[attr-defined]
            self._handle = None
