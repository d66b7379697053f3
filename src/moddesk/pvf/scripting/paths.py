"""Archive paths and globs for scripts: the same rules as search and annotations use."""

from __future__ import annotations

from functools import lru_cache

from moddesk.kit.linear_regex import LinearRegex
from moddesk.pvf.archive import normalize_path as archive_key
from moddesk.pvf.workbench.search import glob_to_regex


def normalize_path(path: str) -> str:
    """The archive lookup key of ``path``; refuses empty paths and ``..`` segments."""
    key = archive_key(str(path))
    if not key or key.endswith("/"):
        raise ValueError(f"{path!r} is not an archive file path")
    if ".." in key.split("/"):
        raise ValueError(f"archive paths cannot contain '..': {path!r}")
    return key


@lru_cache(maxsize=256)
def glob_regex(pattern: str) -> LinearRegex:
    """``*`` and ``?`` within a folder, ``**`` across folders; case-insensitive, whole path."""
    return glob_to_regex(archive_key(pattern))


@lru_cache(maxsize=256)
def glob_tail(pattern: str) -> str:
    """The literal end of ``pattern`` after its last wildcard when it is ASCII ("" otherwise): an
    ASCII path (paths are lower-case keys) can match only if it ends with it. RE2's case folding
    joins an ASCII letter with non-ASCII ones only (K with the Kelvin sign, s with long s), so the
    test never turns away a path the pattern matches; it spares the regex most of a listing."""
    key = archive_key(pattern)
    last = max(key.rfind("*"), key.rfind("?"))
    if key.startswith("**/", last - 1):
        last += 1  # "**/" is one wildcard (any folders, or none): its "/" is not required
    tail = key[last + 1 :]
    return tail if tail.isascii() else ""
