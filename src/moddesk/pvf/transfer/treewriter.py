"""Write many files into a fresh private folder fast, without following links, and make them durable.

An export is atomic as a whole tree: every file goes into one private staging folder (a temp name
that nothing reads and that a restarted service sweeps, ``kit.leftovers``), which is published
with ONE no-overwrite rename. A kill at any moment leaves either no target or the whole target,
so per-file atomic writes (temp + fsync + rename for each file) would buy nothing here and would
cost three extra system calls and a journal commit per file.

What the per-file fsync would have bought, a tree that survives a power loss, one ``sync_tree``
before the rename buys for all files at once: ``syncfs`` flushes the staging folder's file system
(on ext4 a renamed folder's new files may otherwise come back empty after a power loss, since the
rename does not wait for their delayed data).

Links: each folder is made with ``mkdirat`` and entered with ``openat(O_NOFOLLOW)`` from the
staging folder's descriptor, and each file is created ``O_EXCL | O_NOFOLLOW`` in its folder's
descriptor, so a link swapped into the staging tree is never followed and nothing is overwritten.

Speed: a folder is made once (not a ``mkdir`` per file), files are written in batches of one
folder by a small thread pool (the system calls release the GIL; creating files is most of the
time), and progress and cancellation are handled on the calling thread between batches.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import sys
import threading
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from pathlib import Path

from moddesk.kit.errors import ServiceError
from moddesk.kit.tasks import TaskCancelled, check_cancelled, report_progress

Folder = tuple[str, ...]
#: (folder parts, file name, bytes) — parts already checked to be plain names
FileItem = tuple[Folder, str, bytes]

WRITE_THREADS = 2  # file creation is kernel work (GIL released); 1, 2 and 4 measured alike on this 2-core box
BATCH_FILES = 256  # files per batch: the unit of progress and of cancellation
_DIR_FD = os.open in os.supports_dir_fd and os.mkdir in os.supports_dir_fd
_FOLDER_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0)
_CREATE_FLAGS = (
    os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
)
_FOLDER_FLAGS |= getattr(os, "O_CLOEXEC", 0)
_CREATE_FLAGS |= getattr(os, "O_CLOEXEC", 0)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


class _Tree:
    """The staging folder, entered by descriptor (or by path where ``dir_fd`` does not exist)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.fd = os.open(root, _FOLDER_FLAGS) if _DIR_FD else -1

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)

    def make_folders(self, folders: list[Folder]) -> None:
        """Create every folder (and the folders between) once; ``folders`` sorted."""
        if not _DIR_FD:
            for folder in folders:
                self.root.joinpath(*folder).mkdir(parents=True, exist_ok=True)
            return
        stack: list[tuple[Folder, int]] = [((), self.fd)]
        try:
            for folder in folders:  # sorted: a folder's subtree comes right after it
                while folder[: len(stack[-1][0])] != stack[-1][0]:
                    os.close(stack.pop()[1])
                path, fd = stack[-1]
                for part in folder[len(path) :]:
                    # an existing folder is entered too (O_NOFOLLOW refuses a link in its place)
                    with contextlib.suppress(FileExistsError):
                        os.mkdir(part, 0o777, dir_fd=fd)
                    path, fd = (*path, part), os.open(part, _FOLDER_FLAGS, dir_fd=fd)
                    stack.append((path, fd))
        finally:
            for _path, fd in stack[1:]:
                os.close(fd)

    @contextlib.contextmanager
    def folder(self, folder: Folder) -> Iterator[int]:
        """A descriptor of ``folder``, reached one component at a time without following links."""
        fd = self.fd
        try:
            for part in folder:
                parent, fd = fd, os.open(part, _FOLDER_FLAGS, dir_fd=fd)
                if parent != self.fd:
                    os.close(parent)
            yield fd
        finally:
            if fd != self.fd:
                os.close(fd)

    def write_batch(self, folder: Folder, files: list[tuple[str, bytes]], stop: threading.Event) -> int:
        if stop.is_set():
            return 0
        if not _DIR_FD:
            base = self.root.joinpath(*folder)
            for name, data in files:
                fd = os.open(base / name, _CREATE_FLAGS, 0o666)
                try:
                    _write_all(fd, data)
                finally:
                    os.close(fd)
            return len(files)
        with self.folder(folder) as dir_fd:
            for name, data in files:
                fd = os.open(name, _CREATE_FLAGS, 0o666, dir_fd=dir_fd)
                try:
                    _write_all(fd, data)
                finally:
                    os.close(fd)
        return len(files)


def _batches(files: list[FileItem]) -> tuple[list[Folder], list[tuple[Folder, list[tuple[str, bytes]]]]]:
    by_folder: dict[Folder, list[tuple[str, bytes]]] = {}
    for folder, name, data in files:
        by_folder.setdefault(folder, []).append((name, data))
    folders = sorted(by_folder)
    batches = [
        (folder, chunk[i : i + BATCH_FILES])
        for folder in folders
        for chunk in (by_folder[folder],)
        for i in range(0, len(chunk), BATCH_FILES)
    ]
    return folders, batches


def write_files(root: Path, files: list[FileItem], message: str = "writing files") -> int:
    """Write ``files`` below ``root`` (a fresh, empty private folder); returns the file count.

    Reports progress (``kit.tasks.report_progress``) and stops between batches when the task
    running on this thread is cancelled (``TaskCancelled``); the caller removes ``root`` then."""
    folders, batches = _batches(files)
    total = len(files)
    tree = _Tree(root)
    stop = threading.Event()
    try:
        report_progress(0, total, message)
        tree.make_folders(folders)
        done = 0
        with ThreadPoolExecutor(WRITE_THREADS, thread_name_prefix="moddesk-export-write") as pool:
            pending: set[Future[int]] = {
                pool.submit(tree.write_batch, folder, chunk, stop) for folder, chunk in batches
            }
            try:
                while pending:
                    finished, pending = wait(pending, return_when=FIRST_COMPLETED)
                    for future in finished:
                        done += future.result()  # an OSError in a worker is raised here
                    report_progress(done, total, message)
                    try:
                        check_cancelled()
                    except TaskCancelled:
                        raise ServiceError(
                            "CANCELLED",
                            f"cancelled after writing {done} of {total} files; nothing was published",
                            hint="The partly written staging folder is removed; the plan stays pending: "
                            "execute it again or discard it.",
                            written=done,
                            total=total,
                        ) from None
            except BaseException:
                stop.set()  # batches not started yet return at once; running ones finish
                for future in pending:
                    future.cancel()
                raise
    finally:
        tree.close()
    return total


def _libc_syncfs() -> ctypes._CFuncPtr | None:  # type: ignore[name-defined]
    if not sys.platform.startswith("linux"):
        return None
    name = ctypes.util.find_library("c")
    func = getattr(ctypes.CDLL(name, use_errno=True), "syncfs", None) if name else None
    if func is not None:
        func.argtypes, func.restype = [ctypes.c_int], ctypes.c_int
    return func


_SYNCFS = _libc_syncfs()


def sync_tree(path: Path) -> None:
    """Make everything written below ``path`` (a folder, or one file) durable before publishing."""
    if path.is_file():
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        return
    if sys.platform == "win32":
        return  # no whole-tree flush on Windows; NTFS journals the metadata of the rename
    if _SYNCFS is not None:
        fd = os.open(path, _FOLDER_FLAGS)
        try:
            if _SYNCFS(fd) == 0:
                return
        finally:
            os.close(fd)
    os.sync()  # no syncfs here (or it failed): flush every file system
