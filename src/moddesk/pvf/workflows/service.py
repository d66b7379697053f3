"""Diff against another archive and item tables, for the open workspace (MCP and the page).

Both are computed once per (workspace revision, question) and paged from memory: the next page of
the same question costs nothing, and a page of an older revision is ``STALE_WORKSPACE``.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from moddesk.kit.errors import ServiceError
from moddesk.pvf.archive import Archive
from moddesk.pvf.format.errors import PvfFormatError
from moddesk.pvf.workbench.localfiles import place_archive
from moddesk.pvf.workflows.archivediff import ArchiveDiff, ArchiveSide, WorkspaceSide, diff
from moddesk.pvf.workflows.itemtables import KINDS, TableSource, list_paths_for, rows

if TYPE_CHECKING:
    from moddesk.pvf.service import PvfService
    from moddesk.pvf.workbench.workspace import Workspace

PAGE_BYTE_CAP = 24 * 1024


@dataclass
class _Cached:
    key: tuple[Any, ...]
    value: Any


def workspace_table_source(ws: Workspace) -> TableSource:
    def text(path: str) -> str | None:
        if not ws.exists(path):
            return None
        return ws.current_text_or_none(path)

    return TableSource(ws.paths, text, ws.archive.resolve_link)


class WorkflowService:
    def __init__(self, service: PvfService) -> None:
        self.service = service
        self._lock = threading.Lock()
        self._diff: _Cached | None = None
        self._table: _Cached | None = None

    def close_diff(self) -> None:
        """Close the other archive of the cached diff (call holding ``_lock``)."""
        if self._diff is not None and isinstance(self._diff.value.b, ArchiveSide):
            self._diff.value.b.archive.close()
        self._diff = None

    def _page(
        self,
        items: list[dict[str, Any]],
        query: dict[str, Any],
        revision: int,
        cursor: str | None,
        limit: int,
    ) -> tuple[list[dict[str, Any]], str | None]:
        start = 0 if cursor is None else int(self.service.cursors.decode(cursor, query, revision))
        out: list[dict[str, Any]] = []
        used = 0
        index = start
        for item in items[start : start + limit]:
            size = len(str(item).encode()) + 8
            if out and used + size > PAGE_BYTE_CAP:
                break
            out.append(item)
            used += size
            index += 1
        more = index < len(items)
        return out, self.service.cursors.encode(query, index, revision) if more else None

    def _open_other(self, other_path: str) -> Archive:
        """The other archive, inside the roots, opened without following a link."""
        roots = self.service.access_roots()
        placed, _ = place_archive(roots, other_path)
        handle = roots.open_read(placed)
        try:
            return Archive.open_handle(handle)
        except PvfFormatError as exc:
            raise ServiceError(exc.code, f"{other_path}: {exc.message}", hint="Name a .pvf archive.") from exc

    def diff(
        self, workspace_id: str, other_path: str, path: str | None, cursor: str | None, limit: int
    ) -> dict[str, Any]:
        """A page of what differs from the workspace to ``other_path`` (or one path's text diff)."""
        ws = self.service._require_workspace(workspace_id)
        key = (workspace_id, ws.revision, other_path)
        with self._lock:
            if self._diff is None or self._diff.key != key:
                other = self._open_other(other_path)
                try:
                    fresh = diff(WorkspaceSide(ws), ArchiveSide(other, "other"))
                except BaseException:
                    other.close()
                    raise
                self.close_diff()
                self._diff = _Cached(key, fresh)
            result: ArchiveDiff = self._diff.value
        base = {"ok": True, "workspaceId": workspace_id, "revision": ws.revision, "otherPath": other_path}
        if path is not None:
            text = result.text_diff(path.lower())
            return {**base, "path": path, "diff": text, "binary": text is None}
        query = {"op": "diff", "other": other_path, "limit": limit}
        changes = [c.describe() for c in result.changes]
        page, next_cursor = self._page(changes, query, ws.revision, cursor, limit)
        return {
            **base,
            "counts": result.counts(),
            "compared": result.compared,
            "changes": page,
            "nextCursor": next_cursor,
        }

    def item_table(
        self, workspace_id: str, kind: str, fields: list[str], cursor: str | None, limit: int
    ) -> dict[str, Any]:
        """A page of the item table of the workspace as it is now."""
        ws = self.service._require_workspace(workspace_id)
        chosen = list(fields) or KINDS.get(kind, ([], []))[1]
        key = (workspace_id, ws.revision, kind, tuple(chosen))
        with self._lock:
            if self._table is None or self._table.key != key:
                source = workspace_table_source(ws)
                table = list(rows(source, list_paths_for(kind, source.paths()), chosen))
                self._table = _Cached(key, table)
            table_rows: list[dict[str, Any]] = self._table.value
        query = {"op": "table", "kind": kind, "fields": chosen, "limit": limit}
        page, next_cursor = self._page(table_rows, query, ws.revision, cursor, limit)
        return {
            "ok": True,
            "workspaceId": workspace_id,
            "revision": ws.revision,
            "kind": kind,
            "fields": chosen,
            "total": len(table_rows),
            "rows": page,
            "nextCursor": next_cursor,
        }
