"""Browsing the open workspace folder by folder, for trees over 10^6 entries.

The base archive's paths are sorted once per workspace; a folder's children are then found by
bisecting that list and skipping whole subfolders (a folder of 50k entries costs 50k steps, the
root of a 10^6-entry archive only as many steps as it has children). Edits since open (the
overlay) are merged in at listing time: they are few next to the base.
"""

from __future__ import annotations

import threading
from bisect import bisect_left
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from moddesk.kit.errors import ServiceError
from moddesk.pvf.workbench.core import ServiceCore
from moddesk.pvf.workbench.search import normalize_path
from moddesk.pvf.workbench.workspace import Workspace

MAX_CHILDREN_PAGE = 5000
DEFAULT_CHILDREN_PAGE = 500
_CACHED_FOLDERS = 16
# '0' follows '/' in code-point order: every path under "a/b/" sorts in ["a/b/", "a/b0").
_AFTER_SLASH = "0"


@dataclass(frozen=True)
class Child:
    """One row of a folder listing: a subfolder (with its file count) or a file."""

    name: str
    path: str
    folder: bool
    count: int = 0

    def to_dict(self) -> dict[str, Any]:
        if self.folder:
            return {"name": self.name, "path": self.path, "folder": True, "count": self.count}
        return {"name": self.name, "path": self.path, "folder": False}


def _span(paths: list[str], prefix: str) -> tuple[int, int]:
    """The index range of ``paths`` (sorted) under the folder ``prefix`` ("" = root, else "a/b/")."""
    if not prefix:
        return 0, len(paths)
    return bisect_left(paths, prefix), bisect_left(paths, prefix[:-1] + _AFTER_SLASH)


def list_children(paths: list[str], prefix: str) -> list[Child]:
    """Direct children of ``prefix`` in sorted ``paths``: folders first, then files, each by name."""
    lo, hi = _span(paths, prefix)
    folders: list[Child] = []
    files: list[Child] = []
    cut = len(prefix)
    i = lo
    while i < hi:
        rest = paths[i][cut:]
        slash = rest.find("/")
        if slash < 0:
            files.append(Child(rest, paths[i], False))
            i += 1
            continue
        name = rest[:slash]
        sub = prefix + name + "/"
        end = bisect_left(paths, prefix + name + _AFTER_SLASH, i, hi)
        folders.append(Child(name, sub.rstrip("/"), True, end - i))
        i = end
    # path order puts "a.b/…" before "a/…" ('.' < '/'); the listing is by name
    folders.sort(key=lambda c: c.name)
    return folders + files


class FolderIndex:
    """The sorted base paths of one workspace plus a small cache of merged folder listings."""

    def __init__(self, ws: Workspace) -> None:
        self.workspace_id = ws.workspace_id
        self.base = sorted(ws.base_paths())
        self._cache: OrderedDict[tuple[int, str], list[Child]] = OrderedDict()
        self._lock = threading.Lock()

    def children(self, ws: Workspace, prefix: str) -> tuple[int, list[Child]]:
        """(revision, children of ``prefix``) with the overlay merged in; cached per revision."""
        with ws.lock:
            revision = ws.revision
            added, deleted = ws.overlay_membership()
        key = (revision, prefix)
        with self._lock:
            cached = self._cache.get(key)
            if cached is not None:
                self._cache.move_to_end(key)
                return revision, cached
        listing = list_children(self.base, prefix)
        if added or deleted:
            listing = _merge(listing, prefix, self.base, added, deleted)
        with self._lock:
            self._cache[key] = listing
            while len(self._cache) > _CACHED_FOLDERS:
                self._cache.popitem(last=False)
        return revision, listing


def _merge(
    listing: list[Child], prefix: str, base: list[str], added: list[str], deleted: list[str]
) -> list[Child]:
    """Adjust a base listing for overlay additions and deletions under ``prefix``."""
    counts = {c.name: c.count for c in listing if c.folder}
    files = {c.name for c in listing if not c.folder}
    cut = len(prefix)
    for path, delta in [(p, 1) for p in added] + [(p, -1) for p in deleted]:
        if not path.startswith(prefix):
            continue
        rest = path[cut:]
        slash = rest.find("/")
        if slash < 0:
            if delta > 0:
                files.add(rest)
            else:
                files.discard(rest)
            continue
        name = rest[:slash]
        counts[name] = counts.get(name, 0) + delta
    folders = [Child(n, prefix + n, True, c) for n, c in sorted(counts.items()) if c > 0]
    return folders + [Child(n, prefix + n, False) for n in sorted(files)]


class BrowseOps(ServiceCore):
    """``list_folder``: one page of a folder's children, the tree view's only read."""

    def _init_browse(self) -> None:
        self._folders: FolderIndex | None = None
        self._folders_lock = threading.Lock()

    def _folder_index(self, ws: Workspace) -> FolderIndex:
        with self._folders_lock:
            index = self._folders
            if index is None or index.workspace_id != ws.workspace_id:
                index = self._folders = FolderIndex(ws)
            return index

    def list_folder(
        self,
        workspace_id: str,
        folder: str = "",
        offset: int = 0,
        limit: int = DEFAULT_CHILDREN_PAGE,
        name_filter: str = "",
    ) -> dict[str, Any]:
        """Children of ``folder`` (folders first, with recursive file counts), paged by offset."""
        with self._state:
            ws = self._require_workspace(workspace_id)
        if offset < 0 or not 1 <= limit <= MAX_CHILDREN_PAGE:
            raise ServiceError(
                "INVALID_ARGUMENT",
                f"offset must be >= 0 and limit 1..{MAX_CHILDREN_PAGE}",
                hint="Page through big folders with offset and limit.",
            )
        name = normalize_path(folder)
        prefix = name + "/" if name else ""
        revision, children = self._folder_index(ws).children(ws, prefix)
        if name and not children and not ws.exists(name):
            raise ServiceError(
                "NOT_FOUND",
                f"no folder {folder!r} in the archive",
                hint="List the parent folder to see what it holds.",
                path=folder,
                revision=revision,
            )
        needle = name_filter.casefold()
        if needle:
            children = [c for c in children if c.folder or needle in c.name.casefold()]
        page = children[offset : offset + limit]
        return {
            "ok": True,
            "workspaceId": workspace_id,
            "revision": revision,
            "folder": name,
            "total": len(children),
            "folders": sum(1 for c in children if c.folder),
            "offset": offset,
            "items": [c.to_dict() for c in page],
            "nextOffset": offset + len(page) if offset + len(page) < len(children) else None,
        }

    def locate(self, workspace_id: str, path: str, name_filter: str = "") -> dict[str, Any]:
        """Where ``path`` sits in the tree: for each folder down to it, the offset of the next step.

        The page expands exactly those folders and loads only the pages that hold the steps, so
        revealing a file deep in a 140k-entry folder costs one listing page per level.
        """
        with self._state:
            ws = self._require_workspace(workspace_id)
        name = normalize_path(path)
        parts = name.split("/")
        index = self._folder_index(ws)
        needle = name_filter.casefold()
        steps = []
        revision = ws.revision
        for depth in range(len(parts)):
            folder = "/".join(parts[:depth])
            revision, children = index.children(ws, folder + "/" if folder else "")
            if needle:
                children = [c for c in children if c.folder or needle in c.name.casefold()]
            step = "/".join(parts[: depth + 1])
            offset = next((i for i, c in enumerate(children) if c.path == step), None)
            if offset is None:
                raise ServiceError(
                    "NOT_FOUND",
                    f"no entry {path!r} in the tree" + (" (hidden by the filter)" if needle else ""),
                    hint="Clear the filter, or search by path.",
                    path=path,
                    revision=revision,
                )
            steps.append({"folder": folder, "offset": offset, "path": step})
        return {"ok": True, "workspaceId": workspace_id, "revision": revision, "steps": steps}
