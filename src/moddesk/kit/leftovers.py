"""Temp names that carry their owner, and the sweep that removes what dead owners left behind.

Every temp file or folder moddesk creates is named ``…{TEMP_MARKER}<pid>-<start>-<random>``, where
``<start>`` is the owning process's start time in centiseconds since the epoch. A SIGKILL can leave
such a name behind; whoever finds it later asks psutil whether that pid still runs *with that start
time* (a reused pid is another process) and removes it only when the owner is gone. A live owner's
temp is never touched. Names without an owner (written by older versions) are "unknown": services
leave them alone, ``moddesk doctor --clean`` removes them once they are old.

Folders that hold temps a service cannot find again by itself (export targets) are remembered in a
small ``temp-places`` list in moddesk's data folder, so a restarted service sweeps them too.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shutil
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import platformdirs
import psutil

TEMP_MARKER = ".moddesk-tmp-"
DATA_DIR_ENV = "MODDESK_DATA_DIR"
PLACES_FILE = "temp-places"
MAX_PLACES = 200  # oldest folders are forgotten first; a folder is only a hint where to look
PLACES_COMPACT_BYTES = 64 * 1024  # past this the list is rewritten with the newest MAX_PLACES
UNKNOWN_OWNER_AGE = 3600.0  # seconds before doctor treats an owner-less temp as abandoned

_OWNER = re.compile(re.escape(TEMP_MARKER) + r"(\d+)-(\d+)-")
_owner_cache: tuple[int, int] | None = None
_places_lock = threading.Lock()
_places_noted: set[str] = set()


def _start_centis(pid: int) -> int:
    """A process's start time in centiseconds (the resolution the OS keeps on Linux)."""
    return round(float(psutil.Process(pid).create_time()) * 100)


def owner_tag() -> str:
    """``<pid>-<start>`` of this process (recomputed after a fork)."""
    global _owner_cache
    pid = os.getpid()
    if _owner_cache is None or _owner_cache[0] != pid:
        _owner_cache = (pid, _start_centis(pid))
    return f"{_owner_cache[0]}-{_owner_cache[1]}"


def temp_prefix(base: str, hidden: bool = True) -> str:
    """A name prefix for ``mkstemp``/``mkdtemp``: ``.<base>.moddesk-tmp-<pid>-<start>-``."""
    # a long base is cut: the temp name must stay a valid file name wherever the target is one
    return f"{'.' if hidden else ''}{base[:100]}{TEMP_MARKER}{owner_tag()}-"


def temp_sibling(target: str | os.PathLike[str]) -> Path:
    """A fresh owner-tagged temp path next to ``target`` (not created)."""
    path = Path(target)
    return path.with_name(temp_prefix(path.name) + secrets.token_hex(4))


def make_temp_dir(parent: str | os.PathLike[str], base: str, hidden: bool = True) -> Path:
    """Create an owner-tagged private folder in ``parent``."""
    return Path(tempfile.mkdtemp(prefix=temp_prefix(base, hidden), dir=parent))


def is_temp_name(name: str) -> bool:
    """True for the names our writers use for temp files and folders."""
    return TEMP_MARKER in name


def owner_of(name: str) -> tuple[int, int] | None:
    """(pid, start centiseconds) recorded in a temp name; None for a name without an owner."""
    found = _OWNER.search(name)
    return (int(found.group(1)), int(found.group(2))) if found else None


# How far a live owner's start time may read from the one in its temp names. psutil derives it from
# the kernel's boot time, which moves when the wall clock is stepped (NTP, a VM resumed), so the
# same process can read a second or more apart later on; a reused pid within this window would need
# the whole pid space to wrap in two seconds.
START_TOLERANCE_CENTIS = 200


def owner_alive(pid: int, start: int) -> bool:
    """True while the process that created a temp still runs (same pid *and* same start time)."""
    if pid == os.getpid():
        # our own temps: compare with the tag we write, never with a fresh (clock-dependent) reading;
        # a sweep that took a running export's staging folder for dead once published an empty tree
        return owner_tag() == f"{pid}-{start}"
    try:
        proc = psutil.Process(pid)
        if proc.status() == psutil.STATUS_ZOMBIE:
            return False
        return abs(round(float(proc.create_time()) * 100) - start) <= START_TOLERANCE_CENTIS
    except (psutil.NoSuchProcess, psutil.ZombieProcess):
        return False
    except psutil.AccessDenied:
        return True  # another user's process with that pid: never guess it is dead


def pid_alive(pid: int) -> bool:
    """True while some process runs with this pid (no start time to compare: weaker)."""
    try:
        return bool(psutil.Process(pid).status() != psutil.STATUS_ZOMBIE)
    except (psutil.NoSuchProcess, psutil.ZombieProcess):
        return False
    except psutil.AccessDenied:
        return True


@dataclass(frozen=True)
class Leftover:
    """One temp file or folder found on disk and what is known about its owner."""

    path: Path
    owner: str  # "alive", "dead" or "unknown" (a name without an owner)
    pid: int | None
    age: float  # seconds since its last modification

    @property
    def removable(self) -> bool:
        """Safe for a service to remove at start: its owner is gone."""
        return self.owner == "dead"


def _describe(path: Path, now: float) -> Leftover | None:
    try:
        age = now - path.lstat().st_mtime
    except OSError:
        return None  # vanished meanwhile (its owner finished)
    found = owner_of(path.name)
    if found is None:
        return Leftover(path, "unknown", None, age)
    pid, start = found
    return Leftover(path, "alive" if owner_alive(pid, start) else "dead", pid, age)


def _walk(folder: Path, depth: int) -> Iterator[Path]:
    try:
        children = list(os.scandir(folder))
    except OSError:
        return
    for child in children:
        path = Path(child.path)
        if is_temp_name(child.name):
            yield path  # never descend into a temp folder: it goes as a whole
        elif depth > 0 and child.is_dir(follow_symlinks=False):
            yield from _walk(path, depth - 1)


def find_leftovers(folders: Iterable[str | os.PathLike[str]], depth: int = 0) -> list[Leftover]:
    """Every moddesk temp name in ``folders`` (and ``depth`` levels of subfolders)."""
    now = time.time()
    found: list[Leftover] = []
    seen: set[Path] = set()
    for folder in folders:
        for path in _walk(Path(folder), depth):
            if path in seen:
                continue
            seen.add(path)
            item = _describe(path, now)
            if item is not None:
                found.append(item)
    return found


def remove_leftover(path: Path) -> bool:
    """Remove a temp file or folder; False when it could not be removed."""
    try:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return True


def sweep_stale(folders: Iterable[str | os.PathLike[str]], depth: int = 0) -> list[Path]:
    """Remove the temps whose owner is dead; returns what was removed (live owners untouched)."""
    return [
        item.path for item in find_leftovers(folders, depth) if item.removable and remove_leftover(item.path)
    ]


# ------------------------------------------------------------------ remembered places


def data_dir() -> Path:
    """moddesk's per-user data folder (``MODDESK_DATA_DIR`` overrides it)."""
    override = os.environ.get(DATA_DIR_ENV)
    return Path(override) if override else Path(platformdirs.user_data_dir("moddesk", appauthor=False))


def places_file() -> Path:
    return data_dir() / PLACES_FILE


def remember_place(folder: str | os.PathLike[str]) -> None:
    """Note a folder that may get a temp only this process knows about (once per process)."""
    key = os.path.abspath(folder)
    with _places_lock:
        if key in _places_noted:
            return
        _places_noted.add(key)
    target = places_file()
    with contextlib.suppress(OSError):  # a hint only: never fail the real work over it
        target.parent.mkdir(parents=True, exist_ok=True)
        # one short O_APPEND write per line: concurrent processes never interleave inside a line
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            os.write(fd, (key + "\n").encode("utf-8", "surrogateescape"))
            size = os.fstat(fd).st_size
        finally:
            os.close(fd)
        if size > PLACES_COMPACT_BYTES:
            _compact_places(target)


def _compact_places(target: Path) -> None:
    """Rewrite the list with its newest existing folders (a lost concurrent line is only a hint)."""
    kept = "".join(f"{place}\n" for place in remembered_places())
    temp = temp_sibling(target)
    try:
        temp.write_bytes(kept.encode("utf-8", "surrogateescape"))
        os.replace(temp, target)
    finally:
        with contextlib.suppress(FileNotFoundError):
            temp.unlink()


def remembered_places() -> list[Path]:
    """The remembered folders that still exist, newest last, without duplicates."""
    try:
        lines = places_file().read_bytes().decode("utf-8", "surrogateescape").splitlines()
    except OSError:
        return []
    unique = list(dict.fromkeys(line for line in lines if line.strip()))[-MAX_PLACES:]
    return [Path(line) for line in unique if os.path.isdir(line)]


def sweep_remembered() -> list[Path]:
    """Sweep every remembered folder (services call this at start)."""
    return sweep_stale(remembered_places())


def system_temp_dir() -> Path:
    """Where spills that do not belong next to a user's file go."""
    return Path(tempfile.gettempdir())
