"""The open archive as the service sees it: an immutable base ``Archive`` plus an overlay of
changes, with an opaque ``workspaceId``, a ``revision`` that moves on every content change, the
source file's identity, and the dirty state (overlay vs what was last written to the source).

Also the draft registry editor windows report to, with the prepare/ack handshake lifecycle
operations use before they commit.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import secrets
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from moddesk.kit.files import FileIdentity
from moddesk.pvf.archive import Archive, PvfFormatError, normalize_path
from moddesk.pvf.errors import pvf_error
from moddesk.pvf.format.encodings import NAME_ENCODING, encode_text
from moddesk.pvf.format.tokens import Family
from moddesk.pvf.workbench.history import History
from moddesk.pvf.workbench.pathtable import BasePaths, Child, NativeBasePaths, base_paths_of
from moddesk.pvf.workbench.searchindex import normalize_path as index_key

# A content value in the overlay: text for text entries, bytes for raw entries, None = deleted.
Content = str | bytes | None
BASE = object()  # "the base archive's content" in a wanted-state mapping (checkout)
HEX_PREVIEW = 64
INDEX_CHUNK = 4096  # entries taken per lock hold while the content index reads the archive


class _DrySink:
    """A string table that accepts every string and keeps none (for ``text_problem``)."""

    def intern(self, text: str) -> int:
        return 0

    def string_at(self, ref: int) -> str | None:
        return None


def describe_binary(data: bytes) -> dict[str, Any]:
    """Size, hash and a short hex preview of a binary entry instead of its bytes."""
    return {
        "size": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
        "hexPreview": data[:HEX_PREVIEW].hex(" "),
    }


def _encode(content: str | bytes) -> bytes:
    return content.encode("utf-8") if isinstance(content, str) else content


def read_source(path: Path, attempts: int = 3) -> tuple[bytes, FileIdentity]:
    """The bytes of an archive file and the identity of exactly those bytes.

    The archive is held in memory rather than memory-mapped: a mapped file that another program
    truncates in place kills the process with SIGBUS, and Windows cannot replace a mapped file.
    """
    for _ in range(attempts):
        before = os.stat(path)
        data = path.read_bytes()
        after = os.stat(path)
        if (before.st_ino, before.st_size, before.st_mtime_ns) == (
            after.st_ino,
            after.st_size,
            after.st_mtime_ns,
        ):
            digest = hashlib.sha256(data).hexdigest()
            return data, FileIdentity(after.st_dev, after.st_ino, after.st_size, after.st_mtime_ns, digest)
    raise pvf_error("SOURCE_CHANGED", f"{path} keeps changing while it is read", path=str(path))


class Workspace:
    """An archive opened from ``source_path`` plus the overlay of edits made since.

    The base ``Archive`` is never modified: it keeps describing the file as it was at open.
    The overlay holds the current content of every changed path; ``_saved`` holds the overlay
    as it was last written to the source, so the source file is always base ⊕ ``_saved``.
    """

    def __init__(
        self, archive: Archive, source_path: Path | None, identity: FileIdentity, base_data: bytes
    ) -> None:
        self.archive = archive
        self._base_data = base_data  # the bytes ``archive`` reads (shared, not copied)
        self.source_path = source_path
        self.source_identity = identity
        self.base_sha256 = identity.sha256 or ""  # the content the base archive was read from
        self.workspace_id = f"ws_{secrets.token_urlsafe(12)}"
        self.revision = 1
        self.lock = threading.RLock()
        self._names: BasePaths = base_paths_of(archive)  # key -> first name; native: no dict
        self._names_are_keys = self._names.own_keys
        self._kinds: dict[str, str] = {}  # filled on demand: ArchiveEntry objects for 10^6 files cost seconds
        self._overlay: dict[str, Content] = {}
        self._saved: dict[str, Content] = {}
        self._touched: set[str] = set()
        self.history_origin: dict[str, str | None] = {}
        self.closed = False

    @classmethod
    def open(
        cls, path: Path, progress: Callable[[int], None] | None = None, *, region: str | None = None
    ) -> Workspace:
        """Parse the archive at ``path`` (``OPEN_FAILED`` with the format's code if it is not one).

        ``region`` overrides the classic text code page detected from ``stringtable.bin``.
        """
        try:
            data, identity = read_source(path)
            archive = Archive.from_bytes(data, region=region)
        except PvfFormatError as exc:
            raise pvf_error(
                "OPEN_FAILED",
                f"{path} is not a readable PVF archive: {exc}",
                path=str(path),
                formatError=exc.code,
            ) from exc
        except OSError as exc:
            raise pvf_error("OPEN_FAILED", f"cannot read {path}: {exc}", path=str(path)) from exc
        try:
            workspace = cls(archive, path, identity, data)
        except PvfFormatError as exc:
            archive.close()
            raise pvf_error(
                "OPEN_FAILED", f"{path} has a damaged directory: {exc}", path=str(path), formatError=exc.code
            ) from exc
        if progress is not None:
            progress(workspace.base_count)
        return workspace

    def close(self) -> None:
        with self.lock:
            self.closed = True
            self.archive.close()

    # ------------------------------------------------------------------ facts

    @property
    def format(self) -> str:
        return self.archive.format

    @property
    def base_count(self) -> int:
        return len(self._names)

    @property
    def file_count(self) -> int:
        with self.lock:
            added = sum(1 for p, c in self._overlay.items() if c is not None and p not in self._names)
            deleted = sum(1 for p, c in self._overlay.items() if c is None and p in self._names)
            return len(self._names) + added - deleted

    @property
    def dirty(self) -> bool:
        """True when the overlay differs from what the source file holds."""
        with self.lock:
            return self._overlay != self._saved

    @property
    def saved_overlay_nonempty(self) -> bool:
        return bool(self._saved)

    def exists(self, path: str) -> bool:
        with self.lock:
            if path in self._overlay:
                return self._overlay[path] is not None
            return path in self._names

    def base_kind(self, path: str) -> str | None:
        """``script``, ``text`` or ``binary`` of a base entry; None when the base has no such path."""
        with self.lock:
            if path not in self._names:
                return None
            kind = self._kinds.get(path)
            if kind is None:
                kind = self._kinds[path] = self.archive.getinfo(self._base_name(path)).kind
            return kind

    def kind(self, path: str) -> str:
        """``script``, ``text`` or ``binary`` for the current content of ``path``."""
        with self.lock:
            base = self.base_kind(path)
            if path in self._overlay:
                if isinstance(self._overlay[path], str):
                    return "text" if base == "binary" else base or "script"
                return "binary"
            return base or "binary"

    def _base_name(self, path: str) -> str:
        """The stored name of the base entry of key ``path`` (KeyError when the base has none)."""
        name = self._names.name(path)
        if name is None:
            raise KeyError(path)
        return name

    def paths(self) -> list[str]:
        """Every current entry path, sorted."""
        with self.lock:
            added, deleted = self.overlay_membership()
            base = self._names.sorted_keys()
            if deleted:
                gone = set(deleted)
                base = [p for p in base if p not in gone]
            if added:
                base = sorted(base + added)  # timsort merges the two sorted runs
            return base

    def listing(self) -> list[tuple[str, str, int]] | None:
        """Every current path (sorted, as ``paths``) with ``kind(path)`` and the stored size of
        its base entry (0 for a path the base does not have), made from the key table and the
        directory's arrays rather than one entry lookup per path; None unless every base name
        is its own key (the caller then asks path by path)."""
        with self.lock:
            if not self._names_are_keys:
                return None
            keys = self._names.sorted_keys()
            entries = self._names.sorted_entries()
            indexes = [self._names.index(k) or 0 for k in keys] if entries is None else entries.tolist()
            kinds, sizes = self.archive.kinds_and_sizes(indexes, keys)
            if not self._overlay:
                return list(zip(keys, kinds, sizes, strict=True))
            rows = {k: (k, kind, size) for k, kind, size in zip(keys, kinds, sizes, strict=True)}
            for path in self._overlay:
                if self.exists(path):
                    row = rows.get(path)
                    rows[path] = (path, self.kind(path), 0 if row is None else row[2])
                else:
                    rows.pop(path, None)
            return [rows[path] for path in self.paths()]

    def base_children(self, prefix: str) -> list[Child]:
        """Direct children of the folder ``prefix`` ("" or ending in ``/``) in the base archive:
        folders first (by name, with key counts), then files."""
        return self._names.children(prefix)

    def base_prefix_range(self, prefix: str) -> tuple[int, int]:
        """The ranks of the base keys under ``prefix`` in ``base_sorted_paths`` order."""
        return self._names.prefix_range(prefix)

    def base_sorted_paths(self, lo: int = 0, hi: int | None = None) -> list[str]:
        """The base archive's keys of ranks ``lo..hi`` in sorted (code-point) order."""
        return self._names.sorted_keys(lo, hi)

    def unedited(self, paths: list[str]) -> set[str]:
        """Those of ``paths`` whose content is the base archive's (not edited, added or deleted)."""
        with self.lock:
            return {p for p in paths if p not in self._overlay and p in self._names}

    @property
    def names_are_index_keys(self) -> bool:
        """Whether every base name is its own lookup and content-index key (``index_paths`` is then
        the directory order of the names, entry index for entry index)."""
        return self._names_are_keys

    def native_index_keys(self) -> NativeBasePaths | None:
        """The native key table when the native core can build and load the content index from it
        (``ContentIndex.build_native`` / ``load_native``: every name its own index key, so the
        table's sorted keys are the index's paths); None otherwise (the reference build runs)."""
        if not self._names_are_keys or not isinstance(self._names, NativeBasePaths):
            return None
        return self._names

    def index_paths(self) -> list[str]:
        """Every base entry's content-index key (``searchindex.normalize_path``), unique, in a
        fixed order for the same archive content (no sort: the index stores its permutation)."""
        if self._names_are_keys:
            return self._names.key_list()
        return list(dict.fromkeys(index_key(key) for key in self._names.key_list()))

    def base_paths(self) -> list[str]:
        """Every normalised path of the base archive (as opened), unsorted."""
        return self._names.key_list()

    def base_index(self, path: str) -> int | None:
        """The directory index of the base entry of key ``path`` (the first one), or None."""
        return self._names.index(path)

    def overlay_membership(self) -> tuple[list[str], list[str]]:
        """(paths the overlay adds to the base, base paths it deletes); call holding ``lock``."""
        added = [p for p, c in self._overlay.items() if c is not None and p not in self._names]
        deleted = [p for p, c in self._overlay.items() if c is None and p in self._names]
        return added, deleted

    # ------------------------------------------------------------------ reading

    def base_text(self, path: str) -> str | None:
        """Text of a base entry, None when it has no text form."""
        with self.lock:
            try:
                return self.archive.read_text(self._base_name(path))
            except PvfFormatError as exc:
                if exc.code == "NOT_TEXT":
                    return None
                raise

    def entry_problems(self, path: str) -> list[str]:
        """Problems of the stored bytes behind ``path`` (classic checksum); none for edited content."""
        with self.lock:
            if path in self._overlay or path not in self._names:
                return []
            return self.archive.entry_problems(self._base_name(path))

    def base_text_at(self, index: int) -> str | None:
        """``base_text`` of the base entry at directory ``index`` (``index_paths()[index]`` when
        ``names_are_index_keys``), found without the path lookup."""
        with self.lock:
            try:
                return self.archive.read_text_at(index)
            except PvfFormatError as exc:
                if exc.code == "NOT_TEXT":
                    return None
                raise

    def base_texts_utf8(self, paths: list[str]) -> tuple[bytes, Any, Any] | None:
        """``base_text`` of many base entries at once as UTF-8 (surrogatepass) in one buffer:
        ``Archive.rendered_at`` of their entries (native core only; None with the reference core).
        A path without a base entry, or whose entry must be read on its own, has no result."""
        if not self.archive.native:
            return None
        with self.lock:  # the archive is not thread-safe (the index reads it too)
            found = [self._names.index(path) for path in paths]
            indexes = [-1 if i is None else i for i in found]
            return self.archive.rendered_at(indexes)

    def base_text_or_none(self, path: str) -> str | None:
        """Base text of ``path``; None when the base has no such entry or it is binary."""
        return self.base_text(path) if path in self._names else None

    def base_bytes(self, path: str) -> bytes:
        with self.lock:
            return self.archive.read(self._base_name(path))

    def base_folded(self, workers: int = 0) -> Iterator[tuple[list[str], list[bytes | None]]]:
        """Chunks of ``(index keys, fold_text(text) of each)`` of every base entry, storage order.

        Scripts are rendered and folded a chunk at a time (``Archive.iter_rendered``, in
        ``workers`` processes when > 0), byte-identical to ``fold_text(base_text(path))``. The
        index key is ``searchindex.normalize_path`` of the lookup key: the entry's own path when
        every name was proven normal at open.
        """
        if self.archive.native:
            yield from self._native_base_folded()
            return
        rendered = self.archive.iter_rendered(fold=True, terminator="\x00", workers=workers)
        while True:
            with self.lock:  # the archive is not thread-safe; readers interleave per chunk
                chunk = list(itertools.islice(rendered, INDEX_CHUNK))
            if not chunk:
                return
            if self._names_are_keys:
                keys = [entry.path for entry, _ in chunk]
            else:
                keys = [index_key(normalize_path(entry.path)) for entry, _ in chunk]
            yield keys, [data for _, data in chunk]

    def _native_base_folded(self) -> Iterator[tuple[list[str], list[bytes | None]]]:
        """``base_folded`` from the native core's batches (no ``ArchiveEntry`` per entry)."""
        batches = self.archive.rendered_batches(fold=True, terminator="\x00")
        while True:
            with self.lock:  # the archive is not thread-safe; readers interleave per batch
                batch = next(batches, None)
            if batch is None:
                return
            names = [self.archive.name_at(i) for i in batch.indexes.tolist()]
            keys = names if self._names_are_keys else [index_key(normalize_path(n)) for n in names]
            yield keys, [data for _, data in batch.items()]

    def current_text_or_none(self, path: str) -> str | None:
        """Current text of an entry (None when binary or absent)."""
        with self.lock:
            if path in self._overlay:
                content = self._overlay[path]
                if content is None or isinstance(content, str):
                    return content
                return None
            if path not in self._names:
                return None
            return self.base_text(path)

    def read_bytes(self, path: str) -> bytes:
        with self.lock:
            if path in self._overlay:
                content = self._overlay[path]
                if content is None:
                    raise pvf_error("INVALID_ARGUMENT", f"{path} was deleted")
                return _encode(content)
            return self.base_bytes(path)

    def changed_since_open(self) -> tuple[dict[str, str | None], frozenset[str]]:
        """Current text of every path edited since open, and which of them are gone."""
        with self.lock:
            changed: dict[str, str | None] = {}
            deleted: set[str] = set()
            for path in self._touched:
                if not self.exists(path):
                    deleted.add(path)
                    changed[path] = None
                else:
                    changed[path] = self.current_text_or_none(path)
            return changed, frozenset(deleted)

    # ------------------------------------------------------------------ editing

    def text_problem(self, path: str, text: str) -> str | None:
        """Why ``text`` could not be stored at ``path`` (it would make the archive unsavable), or None.

        A dry run of what saving does: compile (scripts) or encode (text entries) into a throwaway
        string table, and check a new entry's name is storable; nothing changes.
        """
        name = self._names.name(path) or path
        try:
            with self.lock:
                if path not in self._names and self.archive.family is Family.CLASSIC:
                    encode_text(name.lower(), NAME_ENCODING, path=name)
                self.archive.encode_text(name, text, strings=_DrySink())
        except PvfFormatError as exc:
            return str(exc)
        return None

    def check_text(self, path: str, text: str) -> None:
        """``TEXT_INVALID`` when ``text`` at ``path`` would make the archive unsavable."""
        problem = self.text_problem(path, text)
        if problem is not None:
            raise pvf_error("TEXT_INVALID", f"{path}: {problem}", path=path)

    def apply(self, changes: Mapping[str, Content]) -> int:
        """Put path → content (None deletes) into the overlay; one revision step.

        Text that would not compile is refused (``TEXT_INVALID``) before anything changes: nothing
        the workspace accepts can make the archive unsavable.
        """
        with self.lock:
            for raw_path, content in changes.items():
                path = normalize_path(raw_path)
                if not path or path.endswith("/"):
                    raise pvf_error("INVALID_ARGUMENT", f"{raw_path!r} is not an archive file path")
                if content is None and not self.exists(path):
                    raise pvf_error("INVALID_ARGUMENT", f"cannot delete {path}: no such entry")
                if isinstance(content, str) and self.base_kind(path) == "binary":
                    raise pvf_error("INVALID_ARGUMENT", f"{path} is a binary entry; write bytes, not text")
                if isinstance(content, str):
                    self.check_text(path, content)
            for raw_path, content in changes.items():
                self._set(normalize_path(raw_path), content)
            self.revision += 1
            return self.revision

    def _set(self, path: str, content: Content | object) -> None:
        """Overlay one path; ``BASE`` drops its overlay entry (the base content shows again)."""
        self._touched.add(path)
        if content is BASE:
            self._overlay.pop(path, None)
            return
        assert content is None or isinstance(content, str | bytes)
        self._overlay[path] = content

    def discard(self) -> int:
        """Drop the unsaved changes: the overlay goes back to what the source holds."""
        with self.lock:
            self._touched.update(self._overlay)
            self._touched.update(self._saved)
            self._overlay = dict(self._saved)
            self.revision += 1
            return self.revision

    # ------------------------------------------------------------------ history

    def attach_history(self, history: History) -> None:
        """Remember the history state of the file at open: base = history base ⊕ that state."""
        with self.lock:
            self.history_origin = history.state(history.head)

    def history_changes(self, history: History) -> tuple[dict[str, bytes | None], frozenset[str]]:
        """The working content as a change-set over the history head: new bytes, base restores."""
        head = history.state(history.head)
        origin = self.history_origin
        with self.lock:
            changes: dict[str, bytes | None] = {}
            restores: set[str] = set()
            for path in set(head) | set(origin) | set(self._overlay):
                if path in self._overlay:
                    content = self._overlay[path]
                    changes[path] = None if content is None else _encode(content)
                elif path in origin:
                    sha = origin[path]
                    changes[path] = None if sha is None else history.get_object(sha)
                else:
                    restores.add(path)
            return changes, frozenset(restores)

    def checkout(self, history: History, state: Mapping[str, str | None]) -> int:
        """Make the content equal the history state ``state`` (in memory; save writes it)."""
        origin = self.history_origin
        with self.lock:
            history_base = _HistoryBase(history)
            try:
                for path in sorted(set(state) | set(origin) | set(self._overlay)):
                    if path in state:
                        sha = state[path]
                        wanted: Content = (
                            None if sha is None else self._from_object(path, history.get_object(sha))
                        )
                    else:
                        wanted = history_base.content(path)
                    self._set(path, BASE if self._matches_open_base(path, wanted, origin) else wanted)
            finally:
                history_base.close()
            self.revision += 1
            return self.revision

    def _matches_open_base(self, path: str, wanted: Content, origin: Mapping[str, str | None]) -> bool:
        """True when ``wanted`` is what this workspace's base (the file at open) holds at ``path``."""
        if path in origin:
            sha = origin[path]
            return (wanted is None) if sha is None else (wanted is not None and _hash(wanted) == sha)
        if path not in self._names:
            return wanted is None
        if wanted is None:
            return False
        current = self.base_text(path) if isinstance(wanted, str) else self.base_bytes(path)
        return current is not None and _hash(current) == _hash(wanted)

    def _from_object(self, path: str, data: bytes) -> Content:
        """History objects hold script text for text entries and raw payload otherwise."""
        if self.base_kind(path) != "binary":
            try:
                return data.decode("utf-8")
            except UnicodeDecodeError:
                return data
        return data

    # ------------------------------------------------------------------ saving

    def write_to(self, handle: IO[bytes], progress: Callable[[int, int], None] | None = None) -> None:
        """Serialise base ⊕ overlay into ``handle``.

        The writer is a second ``Archive`` over the base bytes held in memory (never the file on
        disk, which may have changed: the caller checks that before replacing it). Only overlay
        paths are written, so every other entry keeps its stored bytes.
        """
        with self.lock:
            overlay = dict(self._overlay)
        # the same code page as the base (a --region override, or what detection chose)
        writer = Archive.from_bytes(self._base_data, region=self.archive.region)
        try:
            for path, content in overlay.items():
                if content is None:
                    if path in writer:
                        writer.delete(path)
                elif isinstance(content, str):
                    writer.write_text(self._names.name(path) or path, content)
                else:
                    writer.write_bytes(self._names.name(path) or path, content)
            total = 0
            for part in writer.iter_archive_bytes():
                handle.write(part)
                total += len(part)
                if progress is not None:
                    progress(total, 0)
        except PvfFormatError as exc:
            raise pvf_error("SAVE_FAILED", f"cannot build the archive: {exc}", formatError=exc.code) from exc
        finally:
            writer.close()

    def mark_saved(self, identity: FileIdentity, revision: int) -> None:
        """The source now holds the content of ``revision``."""
        with self.lock:
            self.source_identity = identity
            if revision == self.revision:
                self._saved = dict(self._overlay)


def _hash(content: str | bytes) -> str:
    return hashlib.sha256(_encode(content)).hexdigest()


class _HistoryBase:
    """Reads the history's immutable base archive lazily (only when a checkout needs it)."""

    def __init__(self, history: History) -> None:
        self.history = history
        self._archive: Archive | None = None

    def content(self, path: str) -> Content:
        if self._archive is None:
            self._archive = Archive.open(self.history.base_path)
        if path not in self._archive:
            return None
        try:
            return self._archive.read_text(path)
        except PvfFormatError as exc:
            if exc.code != "NOT_TEXT":
                raise
        return self._archive.read(path)

    def close(self) -> None:
        if self._archive is not None:
            self._archive.close()


# ---------------------------------------------------------------------- drafts


@dataclass
class _Window:
    window_id: str
    kind: str
    dirty: bool = False
    generation: int = 0
    last_seen: float = field(default_factory=time.monotonic)


@dataclass
class _Prepare:
    operation_id: str
    waiting: set[str]
    dirty: set[str] = field(default_factory=set)


class DraftRegistry:
    """Editor windows report their drafts here; lifecycle operations prepare/ack through it.

    ``prepare`` asks every registered window to freeze editing and answer with its draft state;
    it returns once all answered clean, raises ``UI_DRAFT_PENDING`` when one holds a draft and
    ``UI_NOT_READY`` when one did not answer within the timeout. A late report of a dirty flag
    is not enough, as the seed says: only an ack for this operation counts.
    """

    def __init__(self, ack_timeout: float = 2.0) -> None:
        self.ack_timeout = ack_timeout
        self._windows: dict[str, _Window] = {}
        self._ops: dict[str, _Prepare] = {}
        self._cond = threading.Condition()
        self._counter = 0

    def register(self, window_id: str, kind: str = "editor") -> None:
        with self._cond:
            self._windows[window_id] = _Window(window_id, kind)

    def unregister(self, window_id: str) -> None:
        with self._cond:
            self._windows.pop(window_id, None)
            for op in self._ops.values():
                op.waiting.discard(window_id)
            self._cond.notify_all()

    def report(self, window_id: str, dirty: bool, generation: int) -> None:
        """A window's latest draft state (shown in workspace info)."""
        with self._cond:
            window = self._windows.get(window_id)
            if window is None:
                raise pvf_error("INVALID_ARGUMENT", f"window {window_id!r} is not registered")
            if generation >= window.generation:
                window.dirty, window.generation = dirty, generation
            window.last_seen = time.monotonic()

    def pending(self, window_id: str) -> list[str]:
        """Operations waiting for this window's ack (windows poll this, or get it pushed)."""
        with self._cond:
            return [op.operation_id for op in self._ops.values() if window_id in op.waiting]

    @property
    def frozen(self) -> bool:
        """True while a lifecycle operation holds the editors frozen."""
        with self._cond:
            return bool(self._ops)

    def ack(self, operation_id: str, window_id: str, dirty: bool) -> None:
        with self._cond:
            op = self._ops.get(operation_id)
            if op is None or window_id not in op.waiting:
                return  # a late ack for a finished operation changes nothing
            op.waiting.discard(window_id)
            if dirty:
                op.dirty.add(window_id)
            window = self._windows.get(window_id)
            if window is not None:
                window.dirty, window.last_seen = dirty, time.monotonic()
            self._cond.notify_all()

    def prepare(self, name: str) -> str:
        """Freeze the editors for ``name``; the returned id must be ``release``d afterwards."""
        with self._cond:
            self._counter += 1
            operation_id = f"{name}-{self._counter}"
            op = _Prepare(operation_id, set(self._windows))
            self._ops[operation_id] = op
            self._cond.notify_all()
            deadline = time.monotonic() + self.ack_timeout
            while op.waiting and not op.dirty:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._cond.wait(left)
            if op.dirty:
                del self._ops[operation_id]
                raise pvf_error("UI_DRAFT_PENDING", "an editor holds a draft", windows=sorted(op.dirty))
            if op.waiting:
                del self._ops[operation_id]
                raise pvf_error(
                    "UI_NOT_READY", "an editor did not answer in time", windows=sorted(op.waiting)
                )
            return operation_id

    def release(self, operation_id: str) -> None:
        with self._cond:
            self._ops.pop(operation_id, None)
            self._cond.notify_all()

    def snapshot(self) -> list[dict[str, Any]]:
        with self._cond:
            return [
                {"windowId": w.window_id, "kind": w.kind, "dirty": w.dirty, "generation": w.generation}
                for w in self._windows.values()
            ]
