"""The base archive's lookup keys as the workspace asks for them: membership, the stored name or
entry of a key, every key (directory or sorted order), prefix ranges and folder children.

Two tables answer alike. :class:`DictBasePaths` is the reference: a dictionary ``key → name``
(first entry wins) and, on first need, the sorted key list. :class:`NativeBasePaths` answers from
the native core's key table (``moddesk_native.pvf.KeyTable``): no Python object per entry is held
at open; a key becomes a ``str`` only when a caller asks for it (10^6 names as a dictionary and a
sorted list held ~200 MiB and took seconds to build).
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from moddesk.pvf.archive import Archive, names_are_normal, normalize_path

# '0' follows '/' in code-point order: every path under "a/b/" sorts in ["a/b/", "a/b0").
_AFTER_SLASH = "0"


@dataclass(frozen=True)
class Child:
    """One row of a folder listing: a subfolder (with its file count) or a file."""

    name: str
    path: str
    folder: bool
    count: int = 0

    def to_dict(self) -> dict[str, Any]:
        if self.folder:
            return {"name": self.name, "path": self.path, "folder": True, "count": self.count}
        return {"name": self.name, "path": self.path, "folder": False}


class BasePaths(Protocol):
    """What the workspace asks of the base archive's keys (``normalize_path`` of each name)."""

    #: whether every name is its own key, distinct, with no trailing ``/``
    own_keys: bool

    def __len__(self) -> int: ...
    def __contains__(self, key: object) -> bool: ...
    def name(self, key: str) -> str | None:
        """The stored name of the first entry with ``key``."""
        ...

    def index(self, key: str) -> int | None:
        """The directory index of the first entry with ``key``."""
        ...

    def key_list(self) -> list[str]:
        """Every key in directory order (of each key's first entry)."""
        ...

    def sorted_keys(self, lo: int = 0, hi: int | None = None) -> list[str]:
        """The keys of ranks ``lo..hi`` in sorted (code-point) order."""
        ...

    def prefix_range(self, prefix: str) -> tuple[int, int]:
        """The sorted ranks of the keys under the folder ``prefix`` ("" or ending in ``/``)."""
        ...

    def children(self, prefix: str) -> list[Child]:
        """Direct children of ``prefix``: folders first (by name, with key counts), then files."""
        ...

    def sorted_entries(self) -> npt.NDArray[np.int64] | None:
        """The directory index of each key's first entry, in sorted key order (None: not kept)."""
        ...


def base_paths_of(archive: Archive) -> BasePaths:
    """The table of ``archive``'s keys: native when the archive was opened by the native core."""
    table = archive.key_table()
    if table is not None:
        return NativeBasePaths(archive, table)
    return DictBasePaths(archive.namelist())


def _span(paths: list[str], prefix: str) -> tuple[int, int]:
    """The index range of ``paths`` (sorted) under the folder ``prefix`` ("" = root, else "a/b/")."""
    if not prefix:
        return 0, len(paths)
    return bisect_left(paths, prefix), bisect_left(paths, prefix[:-1] + _AFTER_SLASH)


def list_children(paths: list[str], prefix: str) -> list[Child]:
    """Direct children of ``prefix`` in sorted ``paths``: folders first, then files, each by name."""
    lo, hi = _span(paths, prefix)
    folders: list[Child] = []
    files: list[Child] = []
    cut = len(prefix)
    i = lo
    while i < hi:
        rest = paths[i][cut:]
        slash = rest.find("/")
        if slash < 0:
            files.append(Child(rest, paths[i], False))
            i += 1
            continue
        name = rest[:slash]
        sub = prefix + name + "/"
        end = bisect_left(paths, prefix + name + _AFTER_SLASH, i, hi)
        folders.append(Child(name, sub.rstrip("/"), True, end - i))
        i = end
    # path order puts "a.b/…" before "a/…" ('.' < '/'); the listing is by name
    folders.sort(key=lambda c: c.name)
    return folders + files


def lookup_keys(names: list[str]) -> tuple[dict[str, str], bool]:
    """``normalize_path(name) → name`` (duplicates resolve to the first entry), and whether every
    name is its own key (and its own content-index key: no trailing ``/`` either).

    10^6 names normalised one by one cost seconds of every open; archives store them already
    normal, which ``names_are_normal`` proves in a few C-level passes.
    """
    if names_are_normal(names):
        keys = dict(zip(names, names, strict=True))
        if len(keys) == len(names):
            return keys, True
    out: dict[str, str] = {}
    for name in names:
        out.setdefault(normalize_path(name), name)
    return out, False


class DictBasePaths:
    """The reference table: a dictionary of every key (the Python core's)."""

    def __init__(self, names: list[str]) -> None:
        self._names, self.own_keys = lookup_keys(names)
        self._index: dict[str, int] | None = None
        self._sorted: list[str] | None = None
        self._all = names

    def __len__(self) -> int:
        return len(self._names)

    def __contains__(self, key: object) -> bool:
        return key in self._names

    def name(self, key: str) -> str | None:
        return self._names.get(key)

    def index(self, key: str) -> int | None:
        if key not in self._names:
            return None
        if self._index is None:
            index: dict[str, int] = {}
            for i, name in enumerate(self._all):
                index.setdefault(name if self.own_keys else normalize_path(name), i)
            self._index = index
        return self._index[key]

    def key_list(self) -> list[str]:
        return list(self._names)

    def _sorted_keys(self) -> list[str]:
        if self._sorted is None:
            self._sorted = sorted(self._names)
        return self._sorted

    def sorted_keys(self, lo: int = 0, hi: int | None = None) -> list[str]:
        return self._sorted_keys()[lo:hi]

    def prefix_range(self, prefix: str) -> tuple[int, int]:
        return _span(self._sorted_keys(), prefix)

    def children(self, prefix: str) -> list[Child]:
        return list_children(self._sorted_keys(), prefix)

    def sorted_entries(self) -> npt.NDArray[np.int64] | None:
        return None  # the reference keeps no entry order (its index build sorts the keys itself)


def _texts(blob: bytes, ends_raw: bytes) -> list[str]:
    """The keys of a native answer (UTF-8 buffer + uint64 ends)."""
    ends = array("Q")
    ends.frombytes(ends_raw)
    if blob.isascii():
        text = blob.decode("ascii")
        return [text[ends[k] : ends[k + 1]] for k in range(len(ends) - 1)]
    return [blob[ends[k] : ends[k + 1]].decode("utf-8", "surrogatepass") for k in range(len(ends) - 1)]


def _key_bytes(key: str) -> bytes | None:
    try:
        return key.encode("utf-8", "surrogatepass")
    except UnicodeEncodeError:
        return None


class NativeBasePaths:
    """The native table: keys in the archive's path buffer, sorted as a native permutation."""

    def __init__(self, archive: Archive, table: Any) -> None:
        self._archive = archive
        self._table = table
        self.own_keys: bool = table.own_keys

    def __len__(self) -> int:
        return len(self._table)

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self.index(key) is not None

    def index(self, key: str) -> int | None:
        raw = _key_bytes(key)
        if raw is None:
            return None
        found = self._table.find(raw)
        return None if found is None else int(found)

    def name(self, key: str) -> str | None:
        i = self.index(key)
        return None if i is None else self._archive.name_at(i)

    def key_list(self) -> list[str]:
        return _texts(*self._table.keys(0, len(self), False))

    def iter_keys(self, block: int = 65536) -> Iterator[list[str]]:
        """``key_list()`` a block at a time."""
        for lo in range(0, len(self), block):
            yield _texts(*self._table.keys(lo, lo + block, False))

    def sorted_keys(self, lo: int = 0, hi: int | None = None) -> list[str]:
        lo, hi, _ = slice(lo, hi).indices(len(self))
        return _texts(*self._table.keys(lo, max(lo, hi), True))

    def prefix_range(self, prefix: str) -> tuple[int, int]:
        raw = _key_bytes(prefix)
        if raw is None:
            return 0, 0
        lo, hi = self._table.prefix_range(raw)
        return int(lo), int(hi)

    def sorted_entries(self) -> npt.NDArray[np.int64] | None:
        return np.frombuffer(self._table.entries(0, len(self), True), dtype="<u4").astype(np.int64)

    def sorted_crc32(self) -> int:
        """``searchindex.paths_crc`` of ``sorted_keys()``, made natively over the table (no string
        per key, and no buffer of every key: at 10^6 paths it and its copy were ~90 MiB)."""
        return int(self._table.sorted_crc32())

    def bisect(self, key: str) -> int:
        """The sorted rank of the first key not less than ``key`` (``bisect_left``)."""
        raw = _key_bytes(key)
        if raw is None:  # a lone surrogate: rank it as Python compares, from the keys around it
            return bisect_left(self.sorted_keys(), key)
        return int(self._table.bisect(raw))

    def children(self, prefix: str) -> list[Child]:
        raw = _key_bytes(prefix)
        if raw is None:
            return []
        blob, ends, folders, counts_raw = self._table.children(raw)
        names = _texts(blob, ends)
        counts = array("Q")
        counts.frombytes(counts_raw)
        out: list[Child] = []
        for name, folder, count in zip(names, folders, counts, strict=True):
            if folder:
                out.append(Child(name, (prefix + name + "/").rstrip("/"), True, count))
            else:
                out.append(Child(name, prefix + name, False))
        return out
