"""Browsing the open workspace folder by folder, for trees over 10^6 entries.

The base archive's keys are sorted once per workspace (a native permutation with the native
core, ``pathtable``); a folder's children are then found by bisecting them and skipping whole
subfolders (a folder of 50k entries costs 50k steps, the
root of a 10^6-entry archive only as many steps as it has children). Edits since open (the
overlay) are merged in at listing time: they are few next to the base.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from moddesk.kit.errors import ServiceError
from moddesk.pvf.workbench.core import ServiceCore
from moddesk.pvf.workbench.pathtable import Child, list_children
from moddesk.pvf.workbench.search import normalize_path
from moddesk.pvf.workbench.workspace import Workspace

MAX_CHILDREN_PAGE = 5000
DEFAULT_CHILDREN_PAGE = 500
_CACHED_FOLDERS = 16

__all__ = ["BrowseOps", "Child", "FolderIndex", "list_children"]


class FolderIndex:
    """A small cache of one workspace's folder listings, the overlay merged in (the base's
    children come from the workspace's key table: sorted once, natively with the native core)."""

    def __init__(self, ws: Workspace) -> None:
        self.workspace_id = ws.workspace_id
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
        listing = ws.base_children(prefix)
        if added or deleted:
            listing = _merge(listing, prefix, added, deleted)
        with self._lock:
            self._cache[key] = listing
            while len(self._cache) > _CACHED_FOLDERS:
                self._cache.popitem(last=False)
        return revision, listing


def _merge(listing: list[Child], prefix: str, added: list[str], deleted: list[str]) -> list[Child]:
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
