"""Granted roots: the only folders a service may read from or write to on an agent's behalf.

A person grants roots (the opened archive's folder, the moddesk workspace, ``--root DIR``); an
agent never can. Every local path an agent names goes through one check, ``Roots.place``:

1. the text is validated (absolute, no control characters, no ``..``, bounded length; on
   Windows drive letters and UNC forms are normalised and device namespaces refused);
2. it is resolved once (``realpath``) and must then lie inside a granted root (compared
   case-insensitively on Windows) and outside ``/proc``, ``/sys`` and ``/dev`` whatever the roots;
3. it is opened from the root's directory handle one component at a time with ``O_NOFOLLOW``
   (``openat``), so a component swapped for a link after the check fails with ``PATH_CHANGED``
   instead of being followed: there is no check-then-use window. On Windows, which has no
   ``openat``, the opened handle's final path (``GetFinalPathNameByHandleW``) is checked against
   the roots after opening, which is race-free for the same reason; only reparse points that
   resolve inside the roots are followed there.

An answer for a path outside the roots is the same whether or not it exists.
"""

from __future__ import annotations

import contextlib
import errno
import ntpath
import os
import posixpath
import secrets
import stat
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from moddesk.kit.errors import ServiceError, register_codes
from moddesk.kit.leftovers import temp_prefix

register_codes(
    {
        "OUTSIDE_ROOTS": "The path lies outside the folders this service was granted.",
        "SPECIAL_FILE": "The path is a device, pipe, socket or system folder; it is never read or written.",
        "PATH_CHANGED": "A path component became a link or changed kind after the check; nothing was read.",
        "BAD_PATH": "The path text is unusable: relative, '..', control characters, too long or a device name.",
    }
)

MAX_PATH_CHARS = 4096
MAX_COMPONENT_BYTES = 255
# Kernel-made views of processes and devices: never data, and reading them can leak secrets
# (/proc/self/environ) or block forever (/dev/zero as a pipe-like source).
SYSTEM_FOLDERS = ("/proc", "/sys", "/dev")
_WINDOWS_DEVICE_NAMES = frozenset(
    ["con", "prn", "aux", "nul", "conin$", "conout$"]
    + [f"com{i}" for i in range(10)]
    + [f"lpt{i}" for i in range(10)]
)
_IS_WINDOWS = sys.platform == "win32"
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_BINARY = getattr(os, "O_BINARY", 0)


def _invalid(raw: str, why: str) -> ServiceError:
    shown = raw if len(raw) <= 200 else raw[:200] + "…"
    return ServiceError(
        "BAD_PATH", f"{shown!r} is not a usable path: {why}", hint="Pass a plain absolute local path."
    )


def _special(path: str) -> ServiceError:
    return ServiceError(
        "SPECIAL_FILE",
        f"{path!r} is a system folder, device, pipe or socket; moddesk never reads or writes those",
        hint="Name a regular file or folder.",
    )


def normalise(raw: str, *, windows: bool = _IS_WINDOWS) -> str:
    """Validate and lexically normalise an absolute path (``..`` refused, never collapsed)."""
    if not isinstance(raw, str) or not raw:
        raise _invalid(str(raw), "empty")
    if len(raw) > MAX_PATH_CHARS:
        raise _invalid(raw, f"longer than {MAX_PATH_CHARS} characters")
    if any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in raw):
        raise _invalid(raw, "it contains control characters")
    flavour = ntpath if windows else posixpath
    text = raw
    if windows:
        text = text.replace("/", "\\")
        if text.startswith(("\\\\.\\", "\\\\?\\GLOBALROOT", "\\??\\")):
            raise _special(raw)
        if text.upper().startswith("\\\\?\\UNC\\"):
            text = "\\\\" + text[8:]
        elif text.startswith("\\\\?\\"):
            text = text[4:]
        drive, _rest = ntpath.splitdrive(text)
        if not drive or not ntpath.isabs(text):
            raise _invalid(raw, "not absolute (a drive letter or \\\\server\\share is needed)")
        if drive.startswith("\\\\") and len([p for p in drive.split("\\") if p]) < 2:
            raise _invalid(raw, "a UNC path needs \\\\server\\share")
        if drive.startswith("\\\\") and any(p in (".", "..") for p in drive.split("\\")):
            # \\..\..\ splits as server '..' share '..': no such share, and a '..' by any other name
            raise _invalid(raw, "a UNC server or share cannot be '.' or '..'")
    elif not text.startswith("/"):
        raise _invalid(raw, "not absolute")
    drive, rest = (str(piece) for piece in flavour.splitdrive(text))
    separators = "\\/" if windows else "/"
    parts = [p for p in _split(rest, separators) if p not in ("", ".")]
    for part in parts:
        if part == "..":
            raise _invalid(raw, "it contains '..'")
        if len(part.encode("utf-8", "surrogateescape")) > MAX_COMPONENT_BYTES:
            raise _invalid(raw, f"a component is longer than {MAX_COMPONENT_BYTES} bytes")
        if windows:
            if ":" in part or any(ch in part for ch in '<>"|?*'):
                raise _invalid(raw, f"{part!r} is not a Windows file name")
            if part.split(".")[0].rstrip(" ").lower() in _WINDOWS_DEVICE_NAMES:
                raise _special(raw)
            if part != part.rstrip(". "):
                raise _invalid(raw, f"{part!r} ends in a dot or space (Windows drops them)")
    sep = "\\" if windows else "/"
    if windows:
        drive = drive[0].upper() + drive[1:] if len(drive) == 2 else drive
    return drive + sep + sep.join(parts)


def _split(text: str, separators: str) -> list[str]:
    for sep in separators[1:]:
        text = text.replace(sep, separators[0])
    return text.split(separators[0])


def _fold(path: str, windows: bool) -> str:
    return str(ntpath.normcase(path)) if windows else path


def is_within(path: str, root: str, *, windows: bool = _IS_WINDOWS) -> bool:
    """True when normalised ``path`` is ``root`` or below it (case-insensitive on Windows)."""
    sep = "\\" if windows else "/"
    folded, base = _fold(path, windows), _fold(root, windows).rstrip(sep)
    return folded == base or folded.startswith(base + sep) or (base == "" and folded.startswith(sep))


def is_system_path(path: str, *, windows: bool = _IS_WINDOWS) -> bool:
    """True for ``/proc``, ``/sys``, ``/dev`` and what lies below them (POSIX only)."""
    return not windows and any(is_within(path, folder, windows=False) for folder in SYSTEM_FOLDERS)


@dataclass(frozen=True)
class GrantedRoot:
    """One folder granted by the person, resolved once when it was granted."""

    path: str
    label: str

    def to_dict(self) -> dict[str, str]:
        return {"path": self.path, "label": self.label}


@dataclass(frozen=True)
class Placed:
    """A checked path: the root it lies in and its components below that root."""

    root: GrantedRoot
    parts: tuple[str, ...]

    @property
    def path(self) -> Path:
        return Path(self.root.path, *self.parts)

    def __str__(self) -> str:
        return str(self.path)


def grant(path: str | os.PathLike[str], label: str) -> GrantedRoot:
    """Resolve a folder the person chose into a root (it must exist and not be a system folder)."""
    text = os.path.realpath(os.path.expanduser(os.fspath(path)))
    normalised = normalise(text)
    if is_system_path(normalised):
        raise _special(normalised)
    if not os.path.isdir(normalised):
        raise ServiceError(
            "NOT_FOUND", f"{normalised} is not an existing folder", hint="Create it first, then add it."
        )
    return GrantedRoot(normalised, label)


class Roots:
    """An immutable set of granted roots plus the sentence that tells a person how to add one."""

    def __init__(self, roots: Iterable[GrantedRoot], how_to_add: str, *, anywhere: bool = False) -> None:
        unique: dict[str, GrantedRoot] = {}
        for root in roots:
            unique.setdefault(_fold(root.path, _IS_WINDOWS), root)
        self.roots: tuple[GrantedRoot, ...] = tuple(unique.values())
        self.how_to_add = how_to_add
        self.anywhere = anywhere

    @classmethod
    def unbounded(cls) -> Roots:
        """No boundary (the person's own process: CLI, library use); system folders stay refused
        and opening still never follows a link swapped in after the check."""
        return cls([], "", anywhere=True)

    def with_roots(self, extra: Iterable[GrantedRoot]) -> Roots:
        """A new set with ``extra`` added (the caller swaps its reference; no shared mutation)."""
        return Roots([*self.roots, *extra], self.how_to_add, anywhere=self.anywhere)

    def describe(self) -> list[dict[str, str]]:
        """The roots as ``{path, label}``; an unbounded set shows one ``*`` entry."""
        if self.anywhere:
            return [{"path": "*", "label": "anywhere (no boundary: the person's own process)"}]
        return [root.to_dict() for root in self.roots]

    def outside(self, raw: str) -> ServiceError:
        shown = raw if len(raw) <= 200 else raw[:200] + "…"
        listed = "; ".join(r.path for r in self.roots) or "(none)"
        return ServiceError(
            "OUTSIDE_ROOTS",
            f"{shown!r} is outside the folders this service may use: {listed}",
            hint=f"Copy the file into one of them, or ask the person to add a root: {self.how_to_add}",
            roots=self.describe(),
        )

    def place(self, raw: str) -> Placed:
        """The one check: validate, resolve once, contain. Raises INVALID_PATH / SPECIAL_FILE / OUTSIDE_ROOTS."""
        normalised = normalise(raw)
        resolved = normalise(_realpath(normalised))
        if is_system_path(normalised) or is_system_path(resolved):
            raise _special(raw)
        sep = "\\" if _IS_WINDOWS else "/"
        best: GrantedRoot | None = None
        for root in self.roots:
            # the resolved path decides: a link inside a root pointing out is outside; a name
            # outside that resolves in (macOS /tmp -> /private/tmp) names a file inside
            if is_within(resolved, root.path) and (best is None or len(root.path) > len(best.path)):
                best = root
        if best is None and self.anywhere:
            drive = ntpath.splitdrive(resolved)[0] if _IS_WINDOWS else ""
            best = GrantedRoot(drive + sep, "anywhere")
        if best is None:
            raise self.outside(raw)
        rest = resolved[len(best.path) :].strip(sep)
        return Placed(best, tuple(p for p in rest.split(sep) if p))

    # ------------------------------------------------------------------ opening without links

    @contextlib.contextmanager
    def open_dir(self, where: Placed | str) -> Iterator[int]:
        """A directory fd for a checked folder, reached with O_NOFOLLOW on every component (POSIX)."""
        placed = where if isinstance(where, Placed) else self.place(where)
        fd = _walk(placed.root, placed.parts)
        try:
            yield fd
        finally:
            os.close(fd)

    def open_read(self, where: Placed | str) -> IO[bytes]:
        """Open a checked regular file for reading; no link is followed, nothing special is opened."""
        placed = where if isinstance(where, Placed) else self.place(where)
        if not placed.parts:
            raise _not_regular(placed)
        if _IS_WINDOWS:
            return self._open_read_windows(placed)
        try:
            parent = _walk(placed.root, placed.parts[:-1])
            try:
                fd = _open_leaf(parent, placed.parts[-1], os.O_RDONLY | _NONBLOCK, placed)
            finally:
                os.close(parent)
        except OSError as exc:
            raise os_error(placed, exc) from exc
        return _regular_file(fd, placed, "rb")

    def _open_read_windows(self, placed: Placed) -> IO[bytes]:
        fd = os.open(str(placed.path), os.O_RDONLY | _BINARY)
        try:
            final = _final_path(fd)
            if final is None or not any(is_within(normalise(final), r.path) for r in self.roots):
                raise ServiceError(
                    "PATH_CHANGED",
                    f"{placed} resolved outside the roots when opened; nothing was read",
                    hint="Name the real file inside a root.",
                )
        except BaseException:
            os.close(fd)
            raise
        return _regular_file(fd, placed, "rb")

    def read_bytes(self, where: Placed | str, limit: int) -> bytes:
        """Up to ``limit + 1`` bytes of a checked file (the caller compares with its limit)."""
        with self.open_read(where) as handle:
            return handle.read(limit + 1)

    def stat(self, where: Placed | str) -> os.stat_result:
        """lstat of a checked path, relative to its no-follow parent fd (links are not followed)."""
        placed = where if isinstance(where, Placed) else self.place(where)
        if not placed.parts or _IS_WINDOWS:
            return os.lstat(placed.path)
        parent = _walk(placed.root, placed.parts[:-1])
        try:
            return os.stat(placed.parts[-1], dir_fd=parent, follow_symlinks=False)
        finally:
            os.close(parent)

    def publish_file(
        self,
        where: Placed | str,
        write: Callable[[IO[bytes]], None],
        replace_check: Callable[[IO[bytes]], None] | None = None,
    ) -> Placed:
        """Write a file at a checked path: a temp file in its folder (reached without links), then
        linked in without replacing anything (``TARGET_EXISTS``), or, with ``replace_check``, the
        current target opened without following links, shown to the check (which raises to refuse),
        and replaced by rename (a link at the name is replaced itself; its target is never written).
        """
        placed = where if isinstance(where, Placed) else self.place(where)
        if not placed.parts:
            raise _not_regular(placed)
        if _IS_WINDOWS:
            _publish_by_path(placed, write, replace_check)
            return placed
        name = placed.parts[-1]
        try:
            parent = _walk(placed.root, placed.parts[:-1])
        except OSError as exc:
            raise os_error(Placed(placed.root, placed.parts[:-1]), exc) from exc
        temp = temp_prefix(name) + secrets.token_hex(4)  # owner-tagged: a killed run's temp is swept
        try:
            fd = os.open(
                temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, 0o666, dir_fd=parent
            )
            with os.fdopen(fd, "wb") as handle:
                write(handle)
                handle.flush()
                os.fsync(handle.fileno())
            if replace_check is None:
                try:
                    os.link(temp, name, src_dir_fd=parent, dst_dir_fd=parent, follow_symlinks=False)
                except FileExistsError as exc:
                    raise _exists(placed) from exc
            else:
                with _regular_file(
                    _open_leaf(parent, name, os.O_RDONLY | _NONBLOCK, placed), placed, "rb"
                ) as old:
                    replace_check(old)
                os.replace(temp, name, src_dir_fd=parent, dst_dir_fd=parent)
            os.fsync(parent)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temp, dir_fd=parent)
            os.close(parent)
        return placed

    def walk_files(
        self, where: Placed | str, max_files: int, skipped: list[tuple[Placed, str]] | None = None
    ) -> list[Placed]:
        """Regular files below a checked folder (links and special files skipped, never followed).

        ``skipped`` (when given) receives each link and special file passed over, with why, so a
        caller can say what it left out instead of dropping it without a word.
        """
        placed = where if isinstance(where, Placed) else self.place(where)
        found: list[Placed] = []

        def skip(below: tuple[str, ...], name: str, why: str) -> None:
            if skipped is not None:
                skipped.append((Placed(placed.root, (*placed.parts, *below, name)), why))

        if _IS_WINDOWS:
            for folder, dirs, files in os.walk(placed.path, followlinks=False):
                below = Path(folder).relative_to(placed.path).parts
                for d in dirs:
                    if os.path.islink(os.path.join(folder, d)):
                        skip(below, d, "symbolic link")
                dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(folder, d))]
                for name in sorted(files):
                    full = os.path.join(folder, name)
                    if os.path.islink(full):
                        skip(below, name, "symbolic link")
                    elif not os.path.isfile(full):
                        skip(below, name, "special file")
                    else:
                        found.append(Placed(placed.root, (*placed.parts, *below, name)))
                        if len(found) > max_files:
                            return found
            return found
        with self.open_dir(placed) as top:
            for folder, dirs, files, dir_fd in os.fwalk(".", dir_fd=top, follow_symlinks=False):
                below = tuple(p for p in folder.split("/") if p not in ("", "."))
                for name in sorted(dirs):  # fwalk lists a link to a folder among dirs, never enters it
                    if stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode):
                        skip(below, name, "symbolic link")
                for name in sorted(files):
                    info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
                    if stat.S_ISREG(info.st_mode):
                        found.append(Placed(placed.root, (*placed.parts, *below, name)))
                        if len(found) > max_files:
                            return found
                    else:
                        skip(below, name, "symbolic link" if stat.S_ISLNK(info.st_mode) else "special file")
        return found


def os_error(placed: Placed | str, exc: OSError) -> ServiceError:
    """A file-system failure on a checked path as a ServiceError (NOT_FOUND for a missing file)."""
    if isinstance(exc, FileNotFoundError):
        return ServiceError("NOT_FOUND", f"{placed} does not exist", hint="Check the path.", path=str(placed))
    return ServiceError(
        "BAD_PATH",
        f"{placed} cannot be used: {exc.strerror or exc}",
        hint="Check the path and its permissions.",
        path=str(placed),
    )


def _realpath(path: str) -> str:
    """``realpath``; a link changing under it (readlink on a no-longer-link) is PATH_CHANGED."""
    try:
        return os.path.realpath(path)
    except OSError as exc:
        raise ServiceError(
            "PATH_CHANGED",
            f"{path!r} changed while it was being resolved; nothing was opened",
            hint="Try again once the file stops changing.",
        ) from exc


def _exists(placed: Placed) -> ServiceError:
    return ServiceError(
        "TARGET_EXISTS",
        f"{placed} already exists; nothing was overwritten",
        hint="Choose another target, or allow overwriting explicitly.",
        path=str(placed),
    )


def _publish_by_path(
    placed: Placed, write: Callable[[IO[bytes]], None], replace_check: Callable[[IO[bytes]], None] | None
) -> None:
    """Windows: no dir fds; os.rename refuses an existing target, the replace check reads the
    target (opening a reparse point is refused by the final-path check in ``open_read``)."""
    target = placed.path
    temp = target.with_name(temp_prefix(target.name) + secrets.token_hex(4))
    try:
        with open(temp, "xb") as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        if replace_check is None:
            try:
                os.rename(temp, target)
            except FileExistsError as exc:
                raise _exists(placed) from exc
        else:
            if os.path.islink(target) or not os.path.isfile(target):
                raise _not_regular(placed)
            with open(target, "rb") as old:
                replace_check(old)
            os.replace(temp, target)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)


def _not_regular(placed: Placed) -> ServiceError:
    return ServiceError(
        "SPECIAL_FILE",
        f"{placed} is not a regular file",
        hint="Name a regular file (not a folder, device, pipe or socket).",
        path=str(placed),
    )


def _changed(placed: Placed, part: str) -> ServiceError:
    return ServiceError(
        "PATH_CHANGED",
        f"{placed}: {part!r} is a link or changed after the check; nothing was opened",
        hint="Name the real file inside a root (links are not followed).",
        path=str(placed),
    )


def _walk(root: GrantedRoot, parts: Iterable[str]) -> int:
    """Open ``root/parts…`` as a directory fd, refusing a link at every component."""
    if _IS_WINDOWS:
        raise ServiceError("INTERNAL_ERROR", "directory handles are not used on Windows")
    flags = os.O_RDONLY | _DIRECTORY | _CLOEXEC
    fd = os.open(root.path, flags | _NOFOLLOW)
    placed = Placed(root, tuple(parts))
    try:
        for part in placed.parts:
            try:
                child = os.open(part, flags | _NOFOLLOW, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
                    raise _changed(placed, part) from exc
                raise
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


def _open_leaf(parent: int, name: str, flags: int, placed: Placed, mode: int = 0o666) -> int:
    try:
        return os.open(name, flags | _NOFOLLOW | _CLOEXEC, mode, dir_fd=parent)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.EMLINK):
            raise _changed(placed, name) from exc
        raise


def _regular_file(fd: int, placed: Placed, mode: str) -> IO[bytes]:
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise _not_regular(placed)
        if _NONBLOCK and not _IS_WINDOWS:
            os.set_blocking(fd, True)
        handle: IO[bytes] = os.fdopen(fd, mode)
    except BaseException:
        os.close(fd)
        raise
    return handle


def _final_path(fd: int) -> str | None:
    """Windows: the path the kernel opened for ``fd`` (links resolved), None when unknown."""
    if not _IS_WINDOWS:
        return None
    import ctypes
    import msvcrt

    handle = getattr(msvcrt, "get_osfhandle")(fd)  # noqa: B009 - absent from typeshed off Windows
    buffer = ctypes.create_unicode_buffer(32768)
    windll: Any = getattr(ctypes, "windll")  # noqa: B009 - absent from typeshed off Windows
    length = windll.kernel32.GetFinalPathNameByHandleW(handle, buffer, 32768, 0)
    if length == 0 or length >= 32768:
        return None
    return str(buffer.value)
