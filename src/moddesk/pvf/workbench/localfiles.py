"""Local files an agent names (archives to open, save_as targets), checked against the roots.

Everything here goes through ``moddesk.kit.roots``: a path is placed once and then opened without
following links, and the identity of a file is read from the opened handle (``fstat`` + hash of
the same handle), never from a second lookup of the name.
"""

from __future__ import annotations

import hashlib
import mmap
import os
from collections.abc import Callable, Mapping
from typing import IO, Any

from moddesk.kit.errors import ServiceError, register_codes
from moddesk.kit.files import FileIdentity
from moddesk.kit.roots import Placed, Roots
from moddesk.pvf.errors import pvf_error
from moddesk.pvf.format.detect import detect
from moddesk.pvf.format.errors import PvfFormatError
from moddesk.pvf.format.source import ByteSource

register_codes({"NOT_AN_ARCHIVE": "The file to overwrite is not a PVF archive; save_as never replaces it."})

IDENTITY_FIELDS = ("device", "inode", "size", "mtimeNs", "sha256")
_CHUNK = 1 << 20


def place(roots: Roots, raw: str) -> Placed:
    """``roots.place`` with the pvf contract's code for unusable path text (INVALID_PATH)."""
    try:
        return roots.place(raw)
    except ServiceError as exc:
        if exc.code == "BAD_PATH":
            raise pvf_error("INVALID_PATH", exc.message, path=raw[:300]) from exc
        raise


def place_archive(roots: Roots, raw: str) -> tuple[Placed, tuple[int, int]]:
    """An existing archive file inside the roots and its (device, inode) as opened without links."""
    placed = place(roots, raw)
    try:
        with roots.open_read(placed) as handle:
            info = os.fstat(handle.fileno())
    except ServiceError as exc:
        if exc.code in ("NOT_FOUND", "SPECIAL_FILE"):
            raise pvf_error("OPEN_FAILED", f"{raw} does not exist or is not a file", path=raw) from exc
        raise
    return placed, (info.st_dev, info.st_ino)


def check_opened(placed: Placed, expected: tuple[int, int], identity: FileIdentity) -> None:
    """PATH_CHANGED when the file read by name is not the one opened without links."""
    if (identity.device, identity.inode) != expected:
        raise ServiceError(
            "PATH_CHANGED",
            f"{placed} was replaced while it was opened; nothing was kept",
            hint="Open it again once it stops changing.",
            path=str(placed),
        )


def place_target(roots: Roots, raw: str) -> Placed:
    """A save_as target inside the roots whose folder exists and which is not a folder itself."""
    placed = place(roots, raw)
    if not placed.parts:
        raise pvf_error("INVALID_PATH", f"{raw} is a directory", path=raw)
    parent = Placed(placed.root, placed.parts[:-1])
    try:
        if not os.path.isdir(parent.path) or os.path.islink(parent.path):
            raise pvf_error("INVALID_PATH", f"the folder of {raw} does not exist", path=raw)
        if os.path.isdir(placed.path):
            raise pvf_error("INVALID_PATH", f"{raw} is a directory", path=raw)
    except OSError as exc:
        raise pvf_error("INVALID_PATH", f"{raw} cannot be used: {exc}", path=raw) from exc
    return placed


def handle_identity(handle: IO[bytes]) -> tuple[FileIdentity, bool]:
    """The identity of an opened file (stat and hash of the same handle) and whether it is a PVF."""
    info = os.fstat(handle.fileno())
    if info.st_size == 0:
        empty = hashlib.sha256(b"").hexdigest()
        return FileIdentity(info.st_dev, info.st_ino, 0, info.st_mtime_ns, empty), False
    with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as view:
        digest = hashlib.sha256()
        for start in range(0, len(view), _CHUNK):
            digest.update(view[start : start + _CHUNK])
        try:
            detect(ByteSource(view))
            is_archive = True
        except PvfFormatError:
            is_archive = False
    identity = FileIdentity(info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, digest.hexdigest())
    return identity, is_archive


def target_identity(roots: Roots, placed: Placed) -> dict[str, Any] | None:
    """The full identity of an existing target as TARGET_EXISTS reports it (None when absent)."""
    try:
        with roots.open_read(placed) as handle:
            return handle_identity(handle)[0].to_dict()
    except ServiceError as exc:
        if exc.code == "NOT_FOUND":
            return None
        raise


def overwrite_check(expected: Mapping[str, Any], raw: str) -> Callable[[IO[bytes]], None]:
    """The check ``Roots.publish_file`` runs on the opened target before replacing it."""

    def check(old: IO[bytes]) -> None:
        identity, is_archive = handle_identity(old)
        current = identity.to_dict()
        if not full_identity_matches(expected, current):
            raise pvf_error(
                "TARGET_CHANGED",
                f"{raw} is not the file you observed (every identity field is needed: "
                f"{', '.join(IDENTITY_FIELDS)})",
                path=raw,
                currentIdentity=current,
            )
        if not is_archive:
            raise ServiceError(
                "NOT_AN_ARCHIVE",
                f"{raw} is not a PVF archive; save_as only ever replaces an archive",
                hint="Choose a new file name instead.",
                path=raw,
            )

    return check


def full_identity_matches(expected: Mapping[str, Any], current: Mapping[str, Any]) -> bool:
    """Every identity field was sent and agrees (a partial identity never matches)."""
    return all(expected.get(key) is not None and expected[key] == current.get(key) for key in IDENTITY_FIELDS)
