"""Crash-safe file writes, no-overwrite publishing, and file identity.

Every write to a user's file goes through ``atomic_write_bytes`` / ``atomic_writer``: the data is
written to a temp file in the target directory, fsynced, and renamed over the target, then the
directory is fsynced. A kill at any moment leaves either the old file or the new one, never a mix.
Temp files carry ``TEMP_MARKER`` and their owner (pid + start time) in their name, so nothing
mistakes a leftover for data and a restarted service can remove what a dead owner left
(``moddesk.kit.leftovers``).
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import hashlib
import os
import shutil
import stat
import sys
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from moddesk.kit.errors import ServiceError
from moddesk.kit.leftovers import TEMP_MARKER as TEMP_MARKER  # re-exported: callers import it here
from moddesk.kit.leftovers import is_temp_name as is_temp_name
from moddesk.kit.leftovers import temp_prefix as temp_prefix

_RENAME_NOREPLACE = 1
_AT_FDCWD = -100
_HASH_CHUNK = 1 << 20


def _process_umask() -> int:
    """The umask, read without changing it (os.umask would race with other threads)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except OSError:
        pass
    return 0o022


def _fsync_dir(directory: Path) -> None:
    if sys.platform == "win32":
        return  # directories cannot be opened for fsync on Windows; NTFS journals the rename
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextlib.contextmanager
def atomic_writer(path: str | os.PathLike[str]) -> Iterator[IO[bytes]]:
    """Yield a binary file; on a clean exit it atomically replaces ``path``, else it vanishes."""
    target = Path(path)
    directory = target.parent
    fd, temp_name = tempfile.mkstemp(prefix=temp_prefix(target.name), dir=directory)
    temp = Path(temp_name)
    try:
        with os.fdopen(fd, "wb") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        try:
            # keep the permissions of the file we replace; a new file gets the usual umask mode
            mode = stat.S_IMODE(os.stat(target).st_mode)
        except FileNotFoundError:
            mode = 0o666 & ~_process_umask()
        if sys.platform != "win32":
            os.chmod(temp, mode)
        os.replace(temp, target)
        _fsync_dir(directory)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            temp.unlink()
        raise


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes | Iterable[bytes]) -> None:
    """Atomically replace ``path`` with ``data`` (bytes or an iterable of chunks)."""
    with atomic_writer(path) as handle:
        if isinstance(data, bytes | bytearray | memoryview):
            handle.write(data)
        else:
            for chunk in data:
                handle.write(chunk)


def atomic_write_text(path: str | os.PathLike[str], text: str, encoding: str = "utf-8") -> None:
    """Atomically replace ``path`` with ``text`` (newlines written as given)."""
    atomic_write_bytes(path, text.encode(encoding))


def _renameat2_noreplace(src: Path, dst: Path) -> bool:
    """Try Linux renameat2(RENAME_NOREPLACE); False when the call is not available here."""
    if not sys.platform.startswith("linux"):
        return False
    libc_name = ctypes.util.find_library("c")
    if libc_name is None:
        return False
    libc = ctypes.CDLL(libc_name, use_errno=True)
    func = getattr(libc, "renameat2", None)
    if func is None:
        return False
    func.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    func.restype = ctypes.c_int
    if func(_AT_FDCWD, os.fsencode(src), _AT_FDCWD, os.fsencode(dst), _RENAME_NOREPLACE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP):
        return False  # kernel or filesystem without the flag: use the fallback
    if err == errno.EEXIST:
        raise FileExistsError(err, os.strerror(err), str(dst))
    raise OSError(err, os.strerror(err), str(src))


_RENAME_EXCL = 0x00000004  # macOS renamex_np flag


def _renamex_excl(src: Path, dst: Path) -> bool:
    """Try macOS renamex_np(RENAME_EXCL); False when the call is not available here."""
    if sys.platform != "darwin":
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    func = getattr(libc, "renamex_np", None)
    if func is None:
        return False
    func.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_uint]
    func.restype = ctypes.c_int
    if func(os.fsencode(src), os.fsencode(dst), _RENAME_EXCL) == 0:
        return True
    err = ctypes.get_errno()
    if err == errno.EEXIST:
        raise FileExistsError(err, os.strerror(err), str(dst))
    if err in (errno.ENOTSUP, errno.EINVAL, errno.ENOSYS):
        return False
    raise OSError(err, os.strerror(err), str(src))


def _target_exists(dst: Path) -> ServiceError:
    return ServiceError(
        "TARGET_EXISTS",
        f"{dst} already exists; nothing was overwritten",
        hint="Choose another target, or allow overwriting explicitly.",
        path=str(dst),
    )


def publish_no_overwrite(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
    """Move ``src`` (file or directory) to ``dst`` only if ``dst`` does not exist, atomically.

    Linux: ``renameat2(RENAME_NOREPLACE)``; macOS: ``renamex_np(RENAME_EXCL)``. Files elsewhere:
    ``link`` + ``unlink`` (``link`` fails on an existing target). Windows: ``os.rename`` already
    refuses an existing target. A directory on a system with none of these is checked, then renamed
    (not atomic against a racing writer).
    """
    source, target = Path(src), Path(dst)
    try:
        if _renameat2_noreplace(source, target) or _renamex_excl(source, target):
            _fsync_dir(target.parent)
            return
        if sys.platform == "win32":
            os.rename(source, target)
            return
        if source.is_dir() and not source.is_symlink():
            # last resort on other systems: no atomic no-replace rename for a directory exists, and
            # rename() may replace an empty directory; refuse a visible target and say it is racy
            if os.path.lexists(target):
                raise FileExistsError(errno.EEXIST, "target exists", str(target))
            os.rename(source, target)
        else:
            os.link(source, target)
            os.unlink(source)
        _fsync_dir(target.parent)
    except FileExistsError as exc:
        raise _target_exists(target) from exc
    except OSError as exc:
        if exc.errno in (errno.EEXIST, errno.ENOTEMPTY):
            raise _target_exists(target) from exc
        raise


def publish_bytes_no_overwrite(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to a new file at ``path``; ``TARGET_EXISTS`` if something is there."""
    target = Path(path)
    fd, temp_name = tempfile.mkstemp(prefix=temp_prefix(target.name), dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        publish_no_overwrite(temp_name, target)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp_name)


def remove_tree_quietly(path: str | os.PathLike[str]) -> None:
    """Remove a private temp directory we created (never a user's file)."""
    shutil.rmtree(path, ignore_errors=True)


def sha256_file(path: str | os.PathLike[str]) -> str:
    """Hex SHA-256 of a file's content, read in chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(_HASH_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


@dataclass(frozen=True)
class FileIdentity:
    """Who a file is (device + inode) and what it holds (size, mtime, optional content hash)."""

    device: int
    inode: int
    size: int
    mtime_ns: int
    sha256: str | None = None

    @classmethod
    def of(cls, path: str | os.PathLike[str], with_hash: bool = True) -> FileIdentity:
        """Read the identity of ``path`` (follows symlinks, like opening it would)."""
        info = os.stat(path)
        digest = sha256_file(path) if with_hash else None
        return cls(info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, digest)

    def same_file(self, other: FileIdentity) -> bool:
        """True when both name the same file on disk (hard links and symlinks included)."""
        return (self.device, self.inode) == (other.device, other.inode)

    def same_content(self, other: FileIdentity) -> bool:
        """True when size and hash agree (mtime ignored); without hashes, size and mtime decide."""
        if self.sha256 is not None and other.sha256 is not None:
            return self.size == other.size and self.sha256 == other.sha256
        return (self.size, self.mtime_ns) == (other.size, other.mtime_ns)

    def unchanged(self, other: FileIdentity) -> bool:
        """True when ``other`` is the same file with the same stat data and content."""
        return self.same_file(other) and self.same_content(other) and self.mtime_ns == other.mtime_ns

    def to_dict(self) -> dict[str, Any]:
        return {
            "device": self.device,
            "inode": self.inode,
            "size": self.size,
            "mtimeNs": self.mtime_ns,
            "sha256": self.sha256,
        }
