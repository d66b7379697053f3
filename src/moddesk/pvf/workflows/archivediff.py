"""What differs between two archives (or the open workspace and an archive): files, list entries, strings.

One pass over each side fingerprints the stored bytes of every entry; only entries whose bytes
differ are rendered and compared as text (two archives can store the same script differently —
classic string tables number strings in their own order), so a diff of two 10^5-file archives
costs about one read of each. ``.lst`` and ``.str`` changes are also given entry by entry.
A classic ``stringtable.bin`` is left out: it is the container's own string store, rebuilt on every
save, and what it holds is compared through the scripts that use it.
"""

from __future__ import annotations

import difflib
import hashlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

from moddesk.pvf.archive import Archive, normalize_path
from moddesk.pvf.format.errors import PvfFormatError
from moddesk.pvf.format.strings import STRINGTABLE_PATH
from moddesk.pvf.format.text import lex
from moddesk.pvf.listtext import list_entries, string_entries

if TYPE_CHECKING:
    from moddesk.pvf.workbench.workspace import Workspace

Status = Literal["added", "removed", "changed"]
Content = str | bytes
Progress = Callable[[str, int], None]


class DiffSide(Protocol):
    """One side of a comparison."""

    label: str

    def fingerprints(self) -> Iterator[tuple[str, bytes]]:
        """(normalised path, digest of the stored bytes) of every entry."""
        ...

    def content(self, path: str) -> Content:
        """The entry's text (scripts, text files) or bytes (binary entries)."""
        ...


def _digest(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=16).digest()


class ArchiveSide:
    def __init__(self, archive: Archive, label: str) -> None:
        self.archive = archive
        self.label = label
        self._names: dict[str, str] = {}

    def fingerprints(self) -> Iterator[tuple[str, bytes]]:
        for entry, data in self.archive.iter_bytes():
            path = normalize_path(entry.path)
            if path != STRINGTABLE_PATH:
                self._names[path] = entry.path
                yield path, _digest(data)

    def content(self, path: str) -> Content:
        name = self._names.get(path, path)
        if self.archive.getinfo(name).kind == "binary":
            return self.archive.read(name)
        return self.archive.read_text(name)


class WorkspaceSide:
    """The open workspace as it is now (its archive plus unsaved and applied changes)."""

    def __init__(self, ws: Workspace, label: str = "workspace") -> None:
        self.ws = ws
        self.label = label

    def fingerprints(self) -> Iterator[tuple[str, bytes]]:
        with self.ws.lock:
            added, deleted = self.ws.overlay_membership()
        changed, _ = self.ws.changed_since_open()
        skip = set(deleted) | set(changed)
        for entry, data in self.ws.archive.iter_bytes():
            path = normalize_path(entry.path)
            if path not in skip and path != STRINGTABLE_PATH:
                yield path, _digest(data)
        for path in sorted(set(changed) | set(added)):
            if self.ws.exists(path):
                yield path, _digest(b"overlay\0" + self._bytes(path))

    def _bytes(self, path: str) -> bytes:
        text = self.ws.current_text_or_none(path)
        return text.encode("utf-8") if text is not None else self.ws.read_bytes(path)

    def content(self, path: str) -> Content:
        text = self.ws.current_text_or_none(path)
        return text if text is not None else self.ws.read_bytes(path)


@dataclass
class FileChange:
    path: str
    status: Status
    binary: bool = False
    entries: dict[str, list[str]] = field(default_factory=dict)  # added/removed/changed list ids or keys

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {"path": self.path, "status": self.status}
        if self.binary:
            out["binary"] = True
        if self.entries:
            out["entries"] = {k: v for k, v in self.entries.items() if v}
        return out


def _lexemes(text: str) -> list[tuple[str, object]]:
    return [(lx.kind, lx.value) for lx in lex(text)]


def same_content(old: Content, new: Content) -> bool:
    """Equal bytes or text; two script texts are the same when their values are (layout aside),
    as the compiled archive stores no whitespace."""
    if old == new:
        return True
    if not (isinstance(old, str) and isinstance(new, str)):
        return False
    if not (old.lstrip("\ufeff").startswith("#PVF_File") and new.lstrip("\ufeff").startswith("#PVF_File")):
        return False
    try:
        return _lexemes(old) == _lexemes(new)
    except PvfFormatError:
        return False


def _table_changes(path: str, old: Content | None, new: Content | None) -> dict[str, list[str]]:
    if not path.endswith((".lst", ".str")):
        return {}
    read = list_entries if path.endswith(".lst") else string_entries
    before: dict[Any, str] = dict(read(old if isinstance(old, str) else None))
    after: dict[Any, str] = dict(read(new if isinstance(new, str) else None))
    return {
        "added": [str(k) for k in after if k not in before],
        "removed": [str(k) for k in before if k not in after],
        "changed": [str(k) for k in after if k in before and before[k] != after[k]],
    }


@dataclass
class ArchiveDiff:
    a: DiffSide
    b: DiffSide
    changes: list[FileChange]
    compared: int

    def counts(self) -> dict[str, int]:
        out = {"added": 0, "removed": 0, "changed": 0}
        for change in self.changes:
            out[change.status] += 1
        return out

    def text_diff(self, path: str, max_lines: int = 400) -> str | None:
        """A unified diff of one changed text entry (None for binary entries)."""
        old = (
            self.a.content(path) if any(c.path == path and c.status != "added" for c in self.changes) else ""
        )
        new = (
            self.b.content(path)
            if any(c.path == path and c.status != "removed" for c in self.changes)
            else ""
        )
        if isinstance(old, bytes) or isinstance(new, bytes):
            return None
        lines = difflib.unified_diff(
            old.splitlines(),
            new.splitlines(),
            f"{self.a.label}/{path}",
            f"{self.b.label}/{path}",
            lineterm="",
        )
        out: list[str] = []
        for line in lines:
            if len(out) == max_lines:
                out.append(f"… (cut at {max_lines} lines)")
                break
            out.append(line)
        return "\n".join(out)


def diff(a: DiffSide, b: DiffSide, progress: Progress | None = None) -> ArchiveDiff:
    """Every added, removed and changed entry from ``a`` to ``b``, in path order."""
    left: dict[str, bytes] = {}
    for n, (path, digest) in enumerate(a.fingerprints()):
        left[path] = digest
        if progress is not None and n % 10_000 == 0:
            progress("read " + a.label, n)
    changes: list[FileChange] = []
    seen: set[str] = set()
    for n, (path, digest) in enumerate(b.fingerprints()):
        seen.add(path)
        if progress is not None and n % 10_000 == 0:
            progress("compare " + b.label, n)
        if path not in left:
            new = b.content(path)
            changes.append(FileChange(path, "added", isinstance(new, bytes), _table_changes(path, None, new)))
            continue
        if left[path] == digest:
            continue
        old, new = a.content(path), b.content(path)
        if same_content(old, new):
            continue  # the same content stored differently
        changes.append(FileChange(path, "changed", isinstance(new, bytes), _table_changes(path, old, new)))
    for path in left.keys() - seen:
        old = a.content(path)
        changes.append(FileChange(path, "removed", isinstance(old, bytes), _table_changes(path, old, None)))
    changes.sort(key=lambda c: c.path)
    return ArchiveDiff(a, b, changes, len(left.keys() | seen))
