"""What a MOD changes in an archive, where it collides with local changes, and the final writes.

Pure functions over a package and a ``current(path)`` reader, so the service, the CLI and the
MOD-to-MOD merge share one rule:

* a whole file is *added*, *unchanged* or *overwritten*; it is a ``file-changed-locally`` conflict
  when the package records the content it replaced (``baseSha256``) and the archive's file is
  neither that base nor the MOD's version;
* a table entry is *added* or *unchanged*; the same id (or ``.str`` key) with another value is an
  ``entry-collision`` conflict;
* every conflict is resolved ``mine`` (keep the archive's) or ``theirs`` (take the MOD's);
  tables are edited in place (``edit_list`` / ``edit_str``), so the diff shows only the entries.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from moddesk.kit.errors import ServiceError, register_codes
from moddesk.pvf.listtext import edit_list, edit_str, list_entries, render_list, string_entries
from moddesk.pvf.transfer.modread import ModPackage, ModTable

register_codes(
    {
        "MOD_CONFLICTS_UNRESOLVED": "The MOD collides with local content and not every conflict was resolved.",
    }
)

Content = str | bytes
Reader = Callable[[str], Content | None]
Resolution = Literal["mine", "theirs"]


@dataclass(frozen=True)
class Conflict:
    conflict_id: str
    path: str
    kind: Literal["file-changed-locally", "entry-collision"]
    entry: str | None  # the list id / string key of an entry collision
    mine: str | None  # the archive's value (entries), or its sha256 (files)
    theirs: str | None

    def describe(self) -> dict[str, Any]:
        return {
            "conflictId": self.conflict_id,
            "path": self.path,
            "kind": self.kind,
            "entry": self.entry,
            "mine": self.mine,
            "theirs": self.theirs,
        }


@dataclass(frozen=True)
class Change:
    key: str
    path: str
    action: Literal["add", "overwrite", "merge", "unchanged"]
    entries: int = 0  # table entries added or changed (merge)

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {"key": self.key, "path": self.path, "action": self.action}
        if self.action == "merge":
            out["entries"] = self.entries
        return out


def _sha(content: Content) -> str:
    return hashlib.sha256(content.encode("utf-8") if isinstance(content, str) else content).hexdigest()


def _key(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]


def _table_now(table: ModTable, current: Reader) -> dict[Any, str]:
    text = current(table.path)
    if not isinstance(text, str):
        return {}
    return dict(list_entries(text)) if table.path.endswith(".lst") else dict(string_entries(text))


def _table_theirs(table: ModTable) -> dict[Any, str]:
    return dict(table.lst) if table.path.endswith(".lst") else dict(table.strings)


def plan(package: ModPackage, current: Reader) -> tuple[list[Change], list[Conflict]]:
    """Every change the package makes against ``current``, and every conflict."""
    changes: list[Change] = []
    conflicts: list[Conflict] = []
    for mod_file in package.files:
        now = current(mod_file.path)
        key = "m_" + _key("file", mod_file.path)
        theirs = mod_file.data.decode("utf-8") if mod_file.text else mod_file.data
        if now is None:
            changes.append(Change(key, mod_file.path, "add"))
            continue
        if _sha(now) == _sha(theirs):
            changes.append(Change(key, mod_file.path, "unchanged"))
            continue
        changes.append(Change(key, mod_file.path, "overwrite"))
        if mod_file.base_sha256 and _sha(now) != mod_file.base_sha256:
            conflicts.append(
                Conflict(
                    "c_" + _key("file", mod_file.path),
                    mod_file.path,
                    "file-changed-locally",
                    None,
                    _sha(now),
                    _sha(theirs),
                )
            )
    for table in package.tables:
        mine = _table_now(table, current)
        touched = 0
        for entry, value in _table_theirs(table).items():
            if mine.get(entry) == value:
                continue
            touched += 1
            if entry in mine:
                conflicts.append(
                    Conflict(
                        "c_" + _key("entry", table.path, str(entry)),
                        table.path,
                        "entry-collision",
                        str(entry),
                        mine[entry],
                        value,
                    )
                )
        key = "m_" + _key("table", table.path)
        changes.append(Change(key, table.path, "merge" if touched else "unchanged", touched))
    return changes, conflicts


def check_resolutions(conflicts: list[Conflict], resolutions: dict[str, str]) -> dict[str, Resolution]:
    """Every conflict resolved with ``mine`` or ``theirs``, and nothing else named."""
    known = {c.conflict_id for c in conflicts}
    unknown = sorted(set(resolutions) - known)
    bad = sorted(k for k, v in resolutions.items() if v not in ("mine", "theirs"))
    if unknown or bad:
        raise ServiceError(
            "INVALID_ARGUMENT",
            f"unknown conflict ids {unknown[:5]} or resolutions other than mine/theirs {bad[:5]}",
            hint="Resolve each conflictId from the preview with 'mine' or 'theirs'.",
        )
    open_ids = [c for c in conflicts if c.conflict_id not in resolutions]
    if open_ids:
        raise ServiceError(
            "MOD_CONFLICTS_UNRESOLVED",
            f"{len(open_ids)} of {len(conflicts)} conflicts have no resolution",
            hint="Pass resolutions {conflictId: 'mine' | 'theirs'} for every conflict in the preview.",
            conflicts=[c.describe() for c in open_ids[:20]],
        )
    return {k: "mine" if v == "mine" else "theirs" for k, v in resolutions.items()}


def _merged_table(table: ModTable, text: str | None, keep_mine: set[str]) -> str:
    is_lst = table.path.endswith(".lst")
    mine: dict[Any, str] = dict(list_entries(text)) if is_lst else dict(string_entries(text))
    merged = dict(mine)
    for entry, value in _table_theirs(table).items():
        if entry in mine and str(entry) in keep_mine:
            continue
        merged[entry] = value
    if is_lst:
        return edit_list(text, merged) if text else render_list(merged)
    return edit_str(text or "", merged)


def writes(
    package: ModPackage, current: Reader, conflicts: list[Conflict], resolutions: dict[str, Resolution]
) -> dict[str, Content]:
    """The content each changed path gets, with every conflict resolved as chosen."""
    kept_files = {
        c.path for c in conflicts if c.kind == "file-changed-locally" and resolutions[c.conflict_id] == "mine"
    }
    kept_entries: dict[str, set[str]] = {}
    for c in conflicts:
        if c.kind == "entry-collision" and resolutions[c.conflict_id] == "mine" and c.entry is not None:
            kept_entries.setdefault(c.path, set()).add(c.entry)
    out: dict[str, Content] = {}
    for mod_file in package.files:
        if mod_file.path in kept_files:
            continue
        theirs: Content = mod_file.data.decode("utf-8") if mod_file.text else mod_file.data
        now = current(mod_file.path)
        if now is not None and _sha(now) == _sha(theirs):
            continue
        if isinstance(now, bytes) and isinstance(theirs, str):
            theirs = mod_file.data  # a binary entry stays binary
        out[mod_file.path] = theirs
    for table in package.tables:
        now = current(table.path)
        text = now if isinstance(now, str) else None
        merged = _merged_table(table, text, kept_entries.get(table.path, set()))
        if merged != text:
            out[table.path] = merged
    return out


def merge_packages(
    first: ModPackage, second: ModPackage, prefer: Literal["first", "second"] | None
) -> tuple[ModPackage, list[Conflict]]:
    """One package holding both; where they disagree, ``prefer`` picks (None: conflicts are returned)."""
    conflicts: list[Conflict] = []
    files = {f.path: f for f in first.files}
    for mod_file in second.files:
        mine = files.get(mod_file.path)
        if mine is not None and mine.data != mod_file.data:
            conflicts.append(
                Conflict(
                    "c_" + _key("file", mod_file.path),
                    mod_file.path,
                    "file-changed-locally",
                    None,
                    _sha(mine.data),
                    _sha(mod_file.data),
                )
            )
            if prefer != "second":
                continue
        files[mod_file.path] = mod_file
    tables: dict[str, ModTable] = {t.path: t for t in first.tables}
    for table in second.tables:
        base = tables.get(table.path)
        if base is None:
            tables[table.path] = table
            continue
        merged: dict[Any, str] = _table_theirs(base)
        for entry, value in _table_theirs(table).items():
            if entry in merged and merged[entry] != value:
                conflicts.append(
                    Conflict(
                        "c_" + _key("entry", table.path, str(entry)),
                        table.path,
                        "entry-collision",
                        str(entry),
                        merged[entry],
                        value,
                    )
                )
                if prefer != "second":
                    continue
            merged[entry] = value
        is_lst = table.path.endswith(".lst")
        tables[table.path] = ModTable(
            table.path, lst=merged if is_lst else {}, strings={} if is_lst else merged
        )
    package = ModPackage(
        second.format,
        f"{first.name}+{second.name}",
        second.version,
        second.mod_id,
        f"{first.source} + {second.source}",
        sorted(files.values(), key=lambda f: f.path),
        sorted(tables.values(), key=lambda t: t.path),
    )
    return package, conflicts
