"""String tables: classic ``stringtable.bin`` (spec §3.1) and the NKPI UTF-8/UTF-16 pools (spec §4.5)."""

from __future__ import annotations

import struct
from array import array
from collections.abc import Iterator
from typing import Any

import numpy as np
import numpy.typing as npt

from moddesk.pvf.format.encodings import decode_bytes, encode_text
from moddesk.pvf.format.errors import PvfFormatError

STRINGTABLE_PATH = "stringtable.bin"
#: Decoded strings remembered per table; past this the memo starts afresh. It is only a memo (the
#: bytes stay), and a 10^6-file archive decodes ~10^6 names once each: unbounded, it held ~10^6 str.
DECODED_LIMIT = 1 << 18


class StringTable:
    """A classic ``stringtable.bin``: raw entries kept as read, new strings appended.

    A parsed table keeps only its source bytes and the offsets of its strings (8 bytes a string:
    a real table holds 10^5-10^6 of them); ``raw``, the list of every string's bytes, is made on
    first use — by ``intern`` or a caller that asks for it — and is the table from then on.
    """

    def __init__(
        self,
        raw: list[bytes] | None,
        encoding: str,
        *,
        source: bytes | None = None,
        bounds: npt.NDArray[np.int64] | None = None,
    ) -> None:
        self._raw = raw
        self.encoding = encoding
        self._source = source
        # parsed and unchanged: string i is source[bounds[i]:bounds[i + 1]] (an array indexes fast
        # and pickles: render worker processes get the table)
        self._bounds: array[int] | None = None
        if raw is None:
            assert source is not None and bounds is not None, "a table without raw strings needs its source"
            self._bounds = array("q", bounds.astype("=i8").tobytes())
        self._decoded: dict[int, str] = {}
        self._index: dict[bytes, int] | None = None
        self.added = 0

    @property
    def raw(self) -> list[bytes]:
        """Every string's stored bytes (made from the source on first use, then kept)."""
        if self._raw is None:
            self._raw = [self._at(i) for i in range(len(self))]
            self._bounds = None
        return self._raw

    def first_raw(self, count: int) -> list[bytes]:
        """The stored bytes of the first ``count`` strings (``raw[:count]`` without making ``raw``:
        region detection samples 5,000 of a table that may hold 10^6)."""
        return [self._at(i) for i in range(min(count, len(self)))]

    def _at(self, ref: int) -> bytes:
        """The stored bytes of string ``ref`` (0 <= ref < len(self))."""
        if self._raw is not None:
            return self._raw[ref]
        assert self._bounds is not None and self._source is not None
        return self._source[self._bounds[ref] : self._bounds[ref + 1]]

    @classmethod
    def parse(cls, data: bytes, encoding: str) -> StringTable:
        """Read ``stringtable.bin`` bytes (count, count+1 offsets, string bytes)."""
        if len(data) < 4:
            raise PvfFormatError(
                "BAD_STRING_TABLE", "string table shorter than its count", path=STRINGTABLE_PATH
            )
        (count,) = struct.unpack_from("<I", data, 0)
        if 4 + 4 * (count + 1) > len(data):
            raise PvfFormatError(
                "BAD_STRING_TABLE", f"string table announces {count} strings in {len(data)} bytes", offset=0
            )
        offs = np.frombuffer(data, dtype="<u4", count=count + 1, offset=4).astype(np.int64) + 4
        if count and (np.any(np.diff(offs) < 0) or offs[0] < 4 + 4 * (count + 1) or offs[-1] > len(data)):
            raise PvfFormatError("BAD_STRING_TABLE", "string table offsets are out of order or out of range")
        return cls(None, encoding, source=bytes(data), bounds=offs)

    @classmethod
    def new(cls, encoding: str, strings: list[str] | None = None) -> StringTable:
        """An empty (or pre-filled) table."""
        table = cls([], encoding)
        for s in strings or []:
            table.raw.append(encode_text(s, encoding, path=STRINGTABLE_PATH))
        table.added = len(table.raw)
        return table

    def __len__(self) -> int:
        if self._raw is not None:
            return len(self._raw)
        assert self._bounds is not None
        return len(self._bounds) - 1

    def string_at(self, ref: int) -> str | None:
        """The string at index ``ref`` (trailing NULs stripped), or None when out of range."""
        if not 0 <= ref < len(self):
            return None
        s = self._decoded.get(ref)
        if s is None:
            s = decode_bytes(self._at(ref).rstrip(b"\0"), self.encoding)
            if len(self._decoded) >= DECODED_LIMIT:
                self._decoded.clear()
            self._decoded[ref] = s
        return s

    def iter_strings_at(self, refs: npt.NDArray[np.int64], block: int) -> Iterator[list[str | None]]:
        """``strings_at`` of ``refs`` ``block`` at a time."""
        for lo in range(0, len(refs), block):
            yield self.strings_at(refs[lo : lo + block])

    def strings_at(self, refs: npt.NDArray[np.int64]) -> list[str | None]:
        """``string_at`` of many refs, without filling the decode cache (a pass over every string)."""
        at, count, encoding = self._at, len(self), self.encoding
        return [
            decode_bytes(at(ref).rstrip(b"\0"), encoding) if 0 <= ref < count else None
            for ref in refs.tolist()
        ]

    def find(self, text: str) -> int | None:
        """The first index holding ``text``."""
        if self._index is None:
            # keyed by raw bytes: building it decodes nothing (a real table holds 10^5+ strings)
            index: dict[bytes, int] = {}
            for i in range(len(self)):
                index.setdefault(self._at(i).rstrip(b"\0"), i)
            self._index = index
        try:
            key = text.encode(self.encoding, errors="surrogateescape")
        except UnicodeEncodeError:
            return None
        return self._index.get(key)

    def find_many(self, texts: list[str]) -> list[int] | None:
        """``find`` of every text when the table holds them all (what ``intern`` would answer,
        nothing added), else None: a compiled batch's strings looked up in one pass."""
        if self._index is None:
            self.find("")  # builds the index
        assert self._index is not None
        get, encoding = self._index.get, self.encoding
        try:
            refs = [get(t.encode(encoding, errors="surrogateescape")) for t in texts]
        except UnicodeEncodeError:
            return None
        return None if None in refs else refs  # type: ignore[return-value]

    def intern(self, text: str) -> int:
        """The first index of ``text``, appending it (region code page) when missing."""
        i = self.find(text)
        if i is None:
            raw = encode_text(text, self.encoding, path=STRINGTABLE_PATH)
            i = len(self.raw)
            self.raw.append(raw)
            self._decoded[i] = text
            assert self._index is not None
            self._index[raw] = i
            self.added += 1
        return i

    @property
    def changed(self) -> bool:
        """Whether strings were added since reading."""
        return self._source is None or self.added > 0

    def to_bytes(self) -> bytes:
        """The table's bytes: the original bytes when nothing was added."""
        if self._source is not None and self.added == 0:
            return self._source
        raw = self.raw
        count = len(raw)
        offs = np.empty(count + 1, dtype="<u4")
        lens = np.fromiter((len(r) for r in raw), dtype=np.int64, count=count)
        offs[0] = 4 * (count + 1)
        if count:
            offs[1:] = 4 * (count + 1) + np.cumsum(lens)
        return struct.pack("<I", count) + offs.tobytes() + b"".join(raw)

    def dump(self) -> str:
        """A text view ``index>string`` per line (as pvfVSCode shows it)."""
        return "\n".join(f"{i}>{self.string_at(i)}" for i in range(len(self)))


#: A pool's bytes: a ``bytearray`` (appended to by ``intern``) or a read-only view of the native
#: archive's own pool, read in place until the first ``intern`` copies it.
Pool = bytearray | memoryview


def _pool(raw: Any) -> Pool:
    """``bytes`` are copied into a ``bytearray``; any other buffer (the native archive's
    ``TableView`` of its pool) is viewed in place, not copied (``StringPools``)."""
    if isinstance(raw, bytes | bytearray):
        return bytearray(raw)
    return memoryview(raw)


def _find(pool: Pool, needle: bytes, start: int) -> int:
    """``pool.find(needle, start)``, also for a memoryview (which has no ``find``): a window at a
    time, growing, so a short string costs a short copy."""
    if isinstance(pool, bytearray):
        return pool.find(needle, start)
    size, at, step = len(pool), max(start, 0), 256
    while at < size:
        stop = min(size, at + step)
        k = bytes(pool[at:stop]).find(needle)
        if k >= 0:
            return at + k
        if stop == size:
            break
        at = stop - (len(needle) - 1)  # a match may start in the window's last bytes
        step *= 2
    return -1


class StringPools:
    """The NKPI UTF-8 (``sTrA``) and UTF-16LE (``sTrW``) pools addressed by magic offsets.

    ``pool_a`` / ``pool_w`` are ``bytearray``s, except in an archive the native core opened: there
    they are read-only views of the native archive's pools (held once, shared with the native
    renderer) until the first ``intern`` copies them into ``bytearray``s to append to.
    """

    def __init__(self, pool_a: Any, pool_w: Any, *, ascii_in_utf8: bool | None = None) -> None:
        self.pool_a: Pool = _pool(pool_a)
        # pvfine: ASCII goes to the UTF-8 pool only when the archive already uses it
        self.ascii_in_utf8 = len(self.pool_a) > 1 if ascii_in_utf8 is None else ascii_in_utf8
        self.pool_w: Pool = _pool(pool_w)
        self.source_lengths = (len(self.pool_a), len(self.pool_w))
        self._cache: dict[int, str | None] = {}
        self._index: dict[str, int] | None = None

    def __getstate__(self) -> dict[str, Any]:
        """Pickled / deep-copied with its pools as ``bytearray``s (a view of native memory cannot
        travel; a render worker process or a copy gets the bytes)."""
        state = dict(self.__dict__)
        for name in ("pool_a", "pool_w"):
            if isinstance(state[name], memoryview):
                state[name] = bytearray(state[name])
        return state

    @classmethod
    def new(cls, *, ascii_in_utf8: bool = True) -> StringPools:
        """Pools holding only the empty string at offset 0 (pvfine's convention)."""
        return cls(b"\0", b"\0\0", ascii_in_utf8=ascii_in_utf8)

    @property
    def changed(self) -> bool:
        """Whether strings were appended since reading."""
        return (len(self.pool_a), len(self.pool_w)) != self.source_lengths

    def raw_at(self, magic: int) -> bytes | None:
        """The raw pool bytes of the string at ``magic`` (without its terminator)."""
        if magic & 1:
            pos = (magic >> 1) * 2
            pool = self.pool_w
            if pos >= len(pool):
                return None
            end = pos
            while True:
                end = _find(pool, b"\0\0", end)
                if end < 0:
                    end = len(pool)
                    break
                if (end - pos) % 2 == 0:
                    break
                end += 1
            return bytes(pool[pos:end])
        pos = magic >> 1
        if pos >= len(self.pool_a):
            return None
        end = _find(self.pool_a, b"\0", pos)
        return bytes(self.pool_a[pos : end if end >= 0 else len(self.pool_a)])

    def string_at(self, ref: int) -> str | None:
        """The string at magic offset ``ref`` (even: UTF-8 pool, odd: UTF-16 pool)."""
        ref &= 0xFFFFFFFF
        if ref in self._cache:
            return self._cache[ref]
        raw = self.raw_at(ref)
        s: str | None = None
        if raw is not None:
            if ref & 1:
                s = raw[: len(raw) & ~1].decode("utf-16-le", errors="surrogatepass")
            else:
                # 90CN's UTF-8 pool may hold GB18030 bytes (spec §4.5)
                try:
                    s = raw.decode("utf-8")
                except UnicodeDecodeError:
                    s = decode_bytes(raw, "gb18030")
        if len(self._cache) >= DECODED_LIMIT:
            self._cache.clear()
        self._cache[ref] = s
        return s

    def strings_at(self, magics: npt.NDArray[np.int64]) -> list[str | None]:
        """The strings at many magics at once (None where a magic does not resolve).

        Terminators are located with numpy; only the decoding is per string.
        """
        return [s for block in self.iter_strings_at(magics, max(len(magics), 1)) for s in block]

    def iter_strings_at(self, magics: npt.NDArray[np.int64], block: int) -> Iterator[list[str | None]]:
        """``strings_at`` of ``magics`` ``block`` at a time (the terminators are located once)."""
        a, w = _readable(self.pool_a), _readable(self.pool_w)
        a_zeros = np.flatnonzero(np.frombuffer(a, dtype=np.uint8) == 0)
        w_zeros = np.flatnonzero(np.frombuffer(w[: len(w) & ~1], dtype="<u2") == 0) * 2
        for lo in range(0, len(magics), block):
            yield _strings_in(magics[lo : lo + block], ((0, a, a_zeros), (1, w, w_zeros)))

    def _build_index(self) -> dict[str, int]:
        index: dict[str, int] = {}
        a = bytes(self.pool_a)
        pos = 0
        while pos < len(a):
            end = a.find(b"\0", pos)
            if end < 0:
                end = len(a)
            s = self.string_at(pos << 1)
            if s is not None and s.isascii():
                index.setdefault(s, pos << 1)
            pos = end + 1
        w = bytes(self.pool_w)
        pos = 0
        while pos + 1 < len(w):
            magic = (pos // 2) << 1 | 1
            raw = self.raw_at(magic) or b""
            s = self.string_at(magic)
            if s is not None:
                index.setdefault(s, magic)
            pos += len(raw) + 2
        return index

    def _own(self) -> tuple[bytearray, bytearray]:
        """The pools as ``bytearray``s to append to (a view of the native pools is copied once)."""
        if not isinstance(self.pool_a, bytearray):
            self.pool_a = bytearray(self.pool_a)
        if not isinstance(self.pool_w, bytearray):
            self.pool_w = bytearray(self.pool_w)
        return self.pool_a, self.pool_w

    def find_many(self, texts: list[str]) -> list[int] | None:
        """The magic of every text when the pools hold them all (what ``intern`` would answer,
        nothing appended, the pools not copied), else None: a compiled batch's strings looked up
        in one pass."""
        if self._index is None:
            self._index = self._build_index()
        refs = list(map(self._index.get, texts))
        return None if None in refs else refs  # type: ignore[return-value]

    def intern(self, text: str) -> int:
        """The magic of ``text``, appending it (ASCII → UTF-8 pool when it is in use, else UTF-16)."""
        pool_a, pool_w = self._own()
        if self._index is None:
            self._index = self._build_index()
        magic = self._index.get(text)
        if magic is not None:
            return magic
        if text.isascii() and self.ascii_in_utf8:
            pos = len(pool_a)
            pool_a += text.encode("ascii") + b"\0"
            magic = pos << 1
        else:
            if len(pool_w) % 2:
                pool_w += b"\0"
            pos = len(pool_w)
            pool_w += text.encode("utf-16-le", errors="surrogatepass") + b"\0\0"
            magic = pos | 1
        self._index[text] = magic
        self._cache[magic] = text
        return magic


def _readable(pool: Pool) -> bytes | memoryview:
    """A pool to slice and decode many strings of: a view as it is, a ``bytearray`` as ``bytes``
    (a snapshot: appending to it while a view of it is exported would fail)."""
    return pool if isinstance(pool, memoryview) else bytes(pool)


def _strings_in(
    magics: npt.NDArray[np.int64], pools: tuple[tuple[int, bytes | memoryview, npt.NDArray[np.intp]], ...]
) -> list[str | None]:
    """The strings at ``magics`` given each pool's bytes and terminator positions (``strings_at``)."""
    out: list[str | None] = [None] * len(magics)
    for odd, pool, zeros in pools:
        rows = np.flatnonzero((magics & 1) == odd)
        if not len(rows):
            continue
        starts = (magics[rows] >> 1) * (2 if odd else 1)
        limit = len(pool) & ~1 if odd else len(pool)
        idx = np.searchsorted(zeros, starts)
        ends = np.full(len(starts), limit, dtype=np.int64)
        found = idx < len(zeros)
        ends[found] = zeros[idx[found]]
        for r, st, en in zip(rows.tolist(), starts.tolist(), ends.tolist(), strict=True):
            if st >= len(pool):
                continue
            raw = pool[st:en]
            if odd:
                out[r] = str(raw, "utf-16-le", "surrogatepass")
            else:
                try:
                    out[r] = str(raw, "utf-8")
                except UnicodeDecodeError:
                    out[r] = decode_bytes(bytes(raw), "gb18030")
    return out
