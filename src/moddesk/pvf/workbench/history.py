"""Version history next to an archive: ``<archive>.moddesk/`` with SQLite ``repo.db``, an immutable
base copy and SHA-256 content-addressed objects (stored in ``repo.db``, so a commit and its objects
are written in one transaction).

A commit records, per changed path, the object that path holds after the commit (or that the
path was deleted, or restored to the base). The state of a commit is the fold of its ancestors'
change-sets over the base; ``main`` is the only branch and history is linear. The history
never writes the archive: checkout returns the wanted contents and the workspace applies them
to its overlay, so nothing reaches the disk until the user saves.
"""

from __future__ import annotations

import contextlib
import difflib
import hashlib
import os
import shutil
import sqlite3
import stat
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from moddesk.kit.files import sha256_file
from moddesk.kit.leftovers import temp_sibling
from moddesk.pvf.errors import pvf_error

REPO_SUFFIX = ".moddesk"
BASE_NAME = "base.pvf"
SCHEMA_VERSION = "1"
RESTORE_BASE = ""  # change-set marker: the path holds its base content again

# What one change-set entry says about a path: object sha, None (deleted) or RESTORE_BASE.
ChangeValue = str | None
ChangeKind = Literal["added", "modified", "deleted"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS commits (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    parent TEXT,
    message TEXT NOT NULL,
    author TEXT NOT NULL,
    created_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS objects (sha256 TEXT PRIMARY KEY, data BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS changes (
    commit_id TEXT NOT NULL REFERENCES commits(id),
    path TEXT NOT NULL,
    object TEXT,
    PRIMARY KEY (commit_id, path)
);
"""


def repo_dir_for(archive_path: str | os.PathLike[str]) -> Path:
    """The history folder that belongs to an archive."""
    path = Path(archive_path)
    return path.with_name(path.name + REPO_SUFFIX)


def sha256_bytes(data: bytes) -> str:
    """Hex SHA-256 of ``data``."""
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class Commit:
    """One entry of the history log."""

    id: str
    parent: str | None
    message: str
    author: str
    created_at: float
    changed_paths: int

    def to_dict(self) -> dict[str, object]:
        return {
            "id": self.id,
            "parent": self.parent,
            "message": self.message,
            "author": self.author,
            "createdAt": self.created_at,
            "changedPaths": self.changed_paths,
        }


@dataclass(frozen=True)
class PathChange:
    """How one path differs between two states (``None`` sha = base content or absent)."""

    path: str
    kind: ChangeKind
    old: str | None
    new: str | None

    def to_dict(self) -> dict[str, object]:
        return {"path": self.path, "kind": self.kind, "old": self.old, "new": self.new}


# A state maps every path that differs from the base to an object sha, or None when deleted.
State = dict[str, str | None]


class History:
    """An open history repository; thread-safe, one SQLite connection guarded by a lock."""

    def __init__(self, repo: Path) -> None:
        self.repo = repo
        self._db = sqlite3.connect(repo / "repo.db", check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._lock = threading.RLock()
        self._states: dict[str | None, State] = {None: {}}
        self._base_paths: frozenset[str] | None = None

    # ------------------------------------------------------------------ create / attach

    @classmethod
    def init(cls, archive_path: str | os.PathLike[str]) -> History:
        """Create the history for an archive: an immutable copy of it becomes the base."""
        archive = Path(archive_path)
        if not archive.is_file():
            raise pvf_error("INVALID_PATH", f"{archive} is not a file", path=str(archive))
        repo = repo_dir_for(archive)
        if (repo / "repo.db").exists():
            raise pvf_error("HISTORY_EXISTS", f"{repo} already holds a history", repo=str(repo))
        repo.mkdir(exist_ok=True)
        base = repo / BASE_NAME
        temp = temp_sibling(base)
        shutil.copyfile(archive, temp)
        digest = sha256_file(temp)
        os.chmod(temp, stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
        os.replace(temp, base)
        history = cls(repo)
        history._db.executescript(_SCHEMA)  # executescript commits on its own
        with history._transaction() as db:
            db.executemany(
                "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)",
                [
                    ("schema", SCHEMA_VERSION),
                    ("base_sha256", digest),
                    ("source_sha256", digest),
                    ("head", ""),
                    ("created_at", str(time.time())),
                ],
            )
        return history

    @classmethod
    def exists(cls, archive_path: str | os.PathLike[str]) -> bool:
        """True when the archive has a history folder with a database."""
        return (repo_dir_for(archive_path) / "repo.db").is_file()

    @classmethod
    def attach(cls, archive_path: str | os.PathLike[str], source_sha256: str) -> History:
        """Open the history of an archive whose current content hash is ``source_sha256``.

        Refuses (``HISTORY_DETACHED``) when the file is not the one the history last saw,
        because replaying commits over an unknown file would silently lose the outside change.
        """
        repo = repo_dir_for(archive_path)
        if not (repo / "repo.db").is_file():
            raise pvf_error("HISTORY_NOT_ENABLED", f"{archive_path} has no history", path=str(archive_path))
        history = cls(repo)
        recorded = history._meta("source_sha256")
        if recorded != source_sha256:
            history.close()
            raise pvf_error(
                "HISTORY_DETACHED",
                f"{archive_path} changed outside moddesk since the history last saw it",
                recordedSha256=recorded,
                currentSha256=source_sha256,
            )
        return history

    def close(self) -> None:
        with self._lock:
            self._db.close()

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def _meta(self, key: str) -> str | None:
        with self._lock:
            row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    # ------------------------------------------------------------------ objects

    @property
    def base_path(self) -> Path:
        """The immutable copy of the archive the history starts from."""
        return self.repo / BASE_NAME

    @property
    def head(self) -> str | None:
        """Id of the newest commit on ``main`` (None before the first commit)."""
        return self._meta("head") or None

    @property
    def source_sha256(self) -> str | None:
        """Content hash of the archive file as the history last saw it."""
        return self._meta("source_sha256")

    def put_object(self, data: bytes) -> str:
        """Store ``data`` once under its SHA-256 and return the hash."""
        sha = sha256_bytes(data)
        with self._transaction() as db:
            db.execute("INSERT OR IGNORE INTO objects(sha256, data) VALUES (?, ?)", (sha, data))
        return sha

    def get_object(self, sha: str) -> bytes:
        """The bytes stored under ``sha`` (verified against the hash)."""
        with self._lock:
            row = self._db.execute("SELECT data FROM objects WHERE sha256 = ?", (sha,)).fetchone()
        if row is None:
            raise pvf_error("HISTORY_DETACHED", f"object {sha} is missing from {self.repo}")
        data = bytes(row[0])
        if sha256_bytes(data) != sha:
            raise pvf_error("HISTORY_DETACHED", f"object {sha} in {self.repo} is corrupt")
        return data

    # ------------------------------------------------------------------ commits

    def commit(
        self,
        changes: Mapping[str, bytes | None],
        message: str,
        author: str = "moddesk",
        base_restores: frozenset[str] = frozenset(),
    ) -> Commit | None:
        """Record a change-set on top of ``head``; None when it changes nothing.

        ``changes`` maps a path to its new bytes or None (deleted); paths in ``base_restores``
        hold their base content again.
        """
        entries: dict[str, ChangeValue] = {p: RESTORE_BASE for p in base_restores}
        blobs: dict[str, bytes] = {}
        for path, data in changes.items():
            if data is None:
                entries[path] = None
            else:
                entries[path] = sha = sha256_bytes(data)
                blobs[sha] = data
        return self._commit_entries(entries, message, author, blobs)

    def differs(
        self, changes: Mapping[str, bytes | None], base_restores: frozenset[str] = frozenset()
    ) -> bool:
        """True when committing this change-set would record anything."""
        current = self.state(self.head)
        if any(_state_value(current, p) != RESTORE_BASE for p in base_restores):
            return True
        return any(
            _state_value(current, p) != (None if d is None else sha256_bytes(d)) for p, d in changes.items()
        )

    def _commit_entries(
        self,
        entries: Mapping[str, ChangeValue],
        message: str,
        author: str,
        blobs: Mapping[str, bytes] | None = None,
    ) -> Commit | None:
        with self._lock:
            parent = self.head
            current = self.state(parent)
            effective = {
                path: value
                for path, value in entries.items()
                if _state_value(current, path) != _as_state_value(value)
            }
            if not effective:
                return None
            now = time.time()
            body = repr((parent, message, author, now, sorted(effective.items(), key=lambda kv: kv[0])))
            commit_id = sha256_bytes(body.encode("utf-8"))[:16]
            used = {value for value in effective.values() if value}
            with self._transaction() as db:  # objects and the commit land together or not at all
                db.executemany(
                    "INSERT OR IGNORE INTO objects(sha256, data) VALUES (?, ?)",
                    [(sha, data) for sha, data in (blobs or {}).items() if sha in used],
                )
                db.execute(
                    "INSERT INTO commits(id, parent, message, author, created_at) VALUES (?, ?, ?, ?, ?)",
                    (commit_id, parent, message, author, now),
                )
                db.executemany(
                    "INSERT INTO changes(commit_id, path, object) VALUES (?, ?, ?)",
                    [(commit_id, path, value) for path, value in effective.items()],
                )
                db.execute("UPDATE meta SET value = ? WHERE key = 'head'", (commit_id,))
            return Commit(commit_id, parent, message, author, now, len(effective))

    def get(self, commit_id: str) -> Commit:
        """One commit by id (a unique prefix of at least 4 characters is accepted)."""
        with self._lock:
            rows = self._db.execute(
                "SELECT id, parent, message, author, created_at FROM commits WHERE id LIKE ? LIMIT 2",
                (commit_id + "%",),
            ).fetchall()
            if len(commit_id) < 4 or len(rows) != 1:
                raise pvf_error(
                    "COMMIT_NOT_FOUND", f"no single commit matches {commit_id!r}", commit=commit_id
                )
            row = rows[0]
            count = self._db.execute("SELECT COUNT(*) FROM changes WHERE commit_id = ?", (row[0],)).fetchone()
        return Commit(row[0], row[1], row[2], row[3], row[4], int(count[0]))

    def log(self, limit: int = 50, offset: int = 0) -> list[Commit]:
        """Commits on ``main``, newest first."""
        with self._lock:
            rows = self._db.execute(
                "SELECT c.id, c.parent, c.message, c.author, c.created_at,"
                " (SELECT COUNT(*) FROM changes WHERE commit_id = c.id)"
                " FROM commits c ORDER BY c.seq DESC LIMIT ? OFFSET ?",
                (limit, offset),
            ).fetchall()
        return [Commit(r[0], r[1], r[2], r[3], r[4], int(r[5])) for r in rows]

    def changes_of(self, commit_id: str) -> dict[str, ChangeValue]:
        """The raw change-set of one commit."""
        commit = self.get(commit_id)
        with self._lock:
            rows = self._db.execute(
                "SELECT path, object FROM changes WHERE commit_id = ?", (commit.id,)
            ).fetchall()
        return {str(path): obj for path, obj in rows}

    def state(self, commit_id: str | None) -> State:
        """Every path that differs from the base at ``commit_id`` (None = the base itself)."""
        with self._lock:
            chain: list[Commit] = []
            cursor = commit_id
            while cursor not in self._states:
                assert cursor is not None  # the base (None) is always cached
                commit = self.get(cursor)
                chain.append(commit)
                cursor = commit.parent
            state = dict(self._states[cursor])
            for commit in reversed(chain):
                for path, value in self.changes_of(commit.id).items():
                    if value == RESTORE_BASE:
                        state.pop(path, None)
                    else:
                        state[path] = value
                self._states[commit.id] = dict(state)
            return state

    def base_paths(self) -> frozenset[str]:
        """Normalised paths of the base archive (read once, from its directory only)."""
        if self._base_paths is None:
            from moddesk.pvf.archive import Archive, normalize_path

            with Archive.open(self.base_path) as base:
                self._base_paths = frozenset(normalize_path(p) for p in base.namelist())
        return self._base_paths

    def diff(self, old: str | None, new: str | None) -> list[PathChange]:
        """Paths that differ between two commits (None = the base), sorted by path."""
        before, after = self.state(old), self.state(new)
        changes: list[PathChange] = []
        for path in sorted(set(before) | set(after)):
            a, b = before.get(path, RESTORE_BASE), after.get(path, RESTORE_BASE)
            if a == b:
                continue
            in_base = path in self.base_paths() if RESTORE_BASE in (a, b) else False
            had = a is not None and (a != RESTORE_BASE or in_base)
            has = b is not None and (b != RESTORE_BASE or in_base)
            kind: ChangeKind = "added" if has and not had else "deleted" if had and not has else "modified"
            changes.append(PathChange(path, kind, a or None, b or None))
        return changes

    def undo(self, commit_id: str, author: str = "moddesk") -> Commit | None:
        """A new commit that puts every path of ``commit_id`` back to its state before it."""
        commit = self.get(commit_id)
        before = self.state(commit.parent)
        entries: dict[str, ChangeValue] = {
            path: before.get(path, RESTORE_BASE) for path in self.changes_of(commit.id)
        }
        return self._commit_entries(entries, f"undo {commit.id}: {commit.message}", author)

    def mark_source(self, sha256: str) -> None:
        """Record the content hash of the archive file after a save through moddesk."""
        with self._transaction() as db:
            db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('source_sha256', ?)", (sha256,))

    def text_diff(self, path: str, old: bytes | None, new: bytes | None, context: int = 3) -> str:
        """A unified diff of one path's two contents (UTF-8 text; binary described)."""
        try:
            a = (old or b"").decode("utf-8").splitlines(keepends=True)
            b = (new or b"").decode("utf-8").splitlines(keepends=True)
        except UnicodeDecodeError:
            return f"Binary content differs: {path} ({len(old or b'')} -> {len(new or b'')} bytes)\n"
        return "".join(difflib.unified_diff(a, b, f"a/{path}", f"b/{path}", n=context))


def _as_state_value(value: ChangeValue) -> str | None:
    """What a change-set value leaves in a state (RESTORE_BASE leaves nothing)."""
    return RESTORE_BASE if value == RESTORE_BASE else value


def _state_value(state: State, path: str) -> str | None:
    return state.get(path, RESTORE_BASE)
