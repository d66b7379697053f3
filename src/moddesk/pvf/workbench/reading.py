"""Reading the open workspace: one page of search hits, or one entry by line range."""

from __future__ import annotations

from typing import Any

from moddesk.pvf.archive import PvfFormatError
from moddesk.pvf.errors import pvf_error
from moddesk.pvf.workbench.indexing import IndexOps
from moddesk.pvf.workbench.search import (
    DEFAULT_BYTE_CAP,
    DEFAULT_LIMIT,
    Searcher,
    SearchMode,
    SearchPage,
    SearchQuery,
)
from moddesk.pvf.workbench.searchadvice import ALTERNATIVE_TIME_BUDGET, advice
from moddesk.pvf.workbench.tokenscan import TokenSource
from moddesk.pvf.workbench.workspace import describe_binary

READ_BYTE_CAP = 64 * 1024
MAX_READ_LINES = 2000


class ReadOps(IndexOps):
    """Search and read; both check the workspace id and (when given) the revision."""

    def search(
        self,
        workspace_id: str,
        query: str,
        mode: SearchMode = "content",
        scope: str = "",
        extensions: tuple[str, ...] = (),
        case_sensitive: bool = False,
        cursor: str | None = None,
        limit: int = DEFAULT_LIMIT,
        byte_cap: int = DEFAULT_BYTE_CAP,
    ) -> dict[str, Any]:
        """One page of hits with path, line and snippet; a cursor for the next page."""
        with self._state:
            ws = self._require_workspace(workspace_id)
        spec = SearchQuery(mode, query, scope, tuple(extensions), case_sensitive)
        identity = {"workspaceId": workspace_id, **spec.identity(), "limit": limit}
        after = None
        if cursor is not None:
            position = self.cursors.decode(cursor, identity, ws.revision, stale_code="STALE_WORKSPACE")
            after = (str(position[0]), int(position[1]))
        source = self._search_source(ws, spec)
        tokens = source if isinstance(source, TokenSource) else None  # answering before the index
        try:
            with ws.lock:  # a consistent snapshot: the edited entries' texts at this revision
                revision = ws.revision
                changed, deleted = ws.changed_since_open()
            # every other entry still holds its (immutable) base text, so the scan runs unlocked
            # and edits made meanwhile do not wait for it nor leak into this page
            base_text = tokens.text if tokens is not None else ws.base_text_or_none
            searcher = Searcher(source, changed, deleted, base_text)
            page = searcher.page(spec, after, limit=limit, byte_cap=byte_cap)
            no_hits = None
            if not page.hits and after is None and not page.truncated:
                no_hits = self._no_hits(spec, searcher, content_ready=tokens is None)
        except PvfFormatError as exc:
            if exc.code == "CLOSED":  # the archive was closed or switched while this page ran
                raise pvf_error("STALE_WORKSPACE", "the workspace was closed during the search") from exc
            raise
        finally:
            if tokens is not None:
                tokens.done()
        next_cursor = (
            self.cursors.encode(identity, list(page.next_position), revision) if page.next_position else None
        )
        return {
            "ok": True,
            "workspaceId": workspace_id,
            "revision": revision,
            "mode": mode,
            # "tokens": answered before the index was whole, from the token streams (same answer)
            "answeredFrom": "tokens" if tokens is not None else "index",
            "hits": [h.to_dict() for h in page.hits],
            "nextCursor": next_cursor,
            "truncated": page.truncated,
            "truncatedReason": page.reason,
            **({"noHits": no_hits} if no_hits is not None else {}),
        }

    @staticmethod
    def _no_hits(spec: SearchQuery, searcher: Searcher, content_ready: bool) -> dict[str, Any]:
        """Why the query matched nothing and which nearby queries match (see ``searchadvice``)."""

        def try_query(alternative: SearchQuery) -> SearchPage:
            return searcher.page(alternative, None, limit=1, time_budget=ALTERNATIVE_TIME_BUDGET)

        return advice(spec, try_query, content_ready)

    def read_file(
        self,
        workspace_id: str,
        path: str,
        start_line: int = 1,
        line_count: int | None = None,
        expected_revision: int | None = None,
        byte_cap: int = READ_BYTE_CAP,
        start_column: int | None = None,
    ) -> dict[str, Any]:
        """Text of one entry by line range (or a description of a binary entry).

        With ``start_column`` (0 = from the line's start) a line longer than ``byte_cap`` is split:
        the page holds one piece of it from that column and ``nextColumn`` says where the rest
        starts. Without it, the first line is returned whole, however long (the old contract).
        """
        with self._state:
            ws = self._require_workspace(workspace_id)
        with ws.lock:
            name, revision = self._require_entry(ws, path, expected_revision)
            text = ws.current_text_or_none(name)
            # a classic entry whose stored checksum does not match is still shown, with a warning
            problems = ws.entry_problems(name)
            warned: dict[str, Any] = {"warnings": problems} if problems else {}
            if text is None:
                data = ws.read_bytes(name)
                return {
                    "ok": True,
                    "path": name,
                    "revision": revision,
                    "binary": True,
                    **describe_binary(data),
                    **warned,
                }
        lines = text.split("\n")
        start = max(1, start_line)
        if start_column is not None and start <= len(lines):
            piece = _long_line_piece(lines[start - 1], start_column, byte_cap)
            if piece is not None:
                return {
                    "ok": True,
                    "path": name,
                    "revision": revision,
                    "binary": False,
                    "startLine": start,
                    "endLine": start,
                    "totalLines": len(lines),
                    **piece,
                    "truncated": True,
                    **warned,
                }
        count = min(line_count or MAX_READ_LINES, MAX_READ_LINES)
        chosen = lines[start - 1 : start - 1 + count]
        out: list[str] = []
        used = 0
        truncated = start - 1 + len(chosen) < len(lines)
        for line in chosen:
            size = len(line.encode("utf-8", errors="surrogateescape")) + 1  # undecodable bytes count as 1
            if out and used + size > byte_cap:
                truncated = True
                break
            out.append(line)
            used += size
        return {
            "ok": True,
            "path": name,
            "revision": revision,
            "binary": False,
            "startLine": start,
            "endLine": start + len(out) - 1,
            "totalLines": len(lines),
            "text": "\n".join(out),
            "truncated": truncated,
            **warned,
        }


def _long_line_piece(line: str, column: int, byte_cap: int) -> dict[str, Any] | None:
    """One piece of a line that does not fit ``byte_cap`` (or starts mid-line), else None."""
    if column <= 0 and len(line.encode("utf-8")) + 1 <= byte_cap:
        return None
    column = min(max(column, 0), len(line))
    head = line[column:].encode("utf-8")[:byte_cap].decode("utf-8", errors="ignore")
    end = column + len(head)
    return {
        "startColumn": column,
        "text": head,
        "nextColumn": end if end < len(line) else None,
        "lineLength": len(line),
    }
