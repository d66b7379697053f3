"""A small real MCP server built only from kit parts, used by ``moddesk demo`` and the kit tests.

It keeps a list of notes: paged listing (cursors bound to the revision), an idempotent add
(request ledger), a slow count with progress (tasks + progress relay) and clear errors.

    python -m moddesk.kit.selftest stdio
    python -m moddesk.kit.selftest http [PORT]
"""

from __future__ import annotations

import sys
import threading
from typing import Annotated, Any

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from pydantic import BaseModel, Field

from moddesk.kit.cursor import CursorCodec
from moddesk.kit.errors import ServiceError
from moddesk.kit.ledger import LOCAL_SCOPE, RequestLedger
from moddesk.kit.mcp import ProgressRelay, add_tool, new_server, serve_http, serve_stdio
from moddesk.kit.tasks import TaskContext, TaskManager


class NotesPage(BaseModel):
    """One page of notes."""

    ok: bool = True
    revision: int
    notes: list[str]
    nextCursor: str | None = Field(None, description="Pass back to get the next page; null at the end.")


class NoteAdded(BaseModel):
    ok: bool = True
    revision: int
    index: int


class CountResult(BaseModel):
    ok: bool = True
    counted: int
    taskId: str


class NotesService:
    """The service behind the self-test tools (thread-safe)."""

    def __init__(self) -> None:
        self.notes: list[str] = []
        self.revision = 0
        self.cursors = CursorCodec()
        self.ledger = RequestLedger()
        self.tasks = TaskManager()
        self._lock = threading.Lock()

    def list(self, cursor: str | None, limit: int) -> NotesPage:
        query = {"limit": limit}
        start = 0 if cursor is None else int(self.cursors.decode(cursor, query, self.revision, "STALE_NOTES"))
        with self._lock:
            page = self.notes[start : start + limit]
            end = start + len(page)
            more = end < len(self.notes)
            return NotesPage(
                revision=self.revision,
                notes=page,
                nextCursor=self.cursors.encode(query, end, self.revision) if more else None,
            )

    def add(self, text: str, expected_revision: int, request_id: str | None) -> NoteAdded:
        def work() -> NoteAdded:
            with self._lock:
                if expected_revision != self.revision:
                    raise ServiceError(
                        "STALE_NOTES",
                        f"the notes are at revision {self.revision}, not {expected_revision}",
                        hint="List the notes again and retry with the current revision.",
                        revision=self.revision,
                    )
                self.notes.append(text)
                self.revision += 1
                return NoteAdded(revision=self.revision, index=len(self.notes) - 1)

        params = {"text": text, "expectedRevision": expected_revision}
        return self.ledger.run(LOCAL_SCOPE, request_id, params, work)


def build_server(service: NotesService | None = None) -> MCPServer:
    """The self-test MCP server over a (new or given) ``NotesService``."""
    notes = service or NotesService()
    server = new_server("moddesk-selftest", "Self-test of the moddesk kit: a list of notes.")

    def notes_list(
        cursor: Annotated[str | None, Field(description="nextCursor of the previous page")] = None,
        limit: Annotated[int, Field(ge=1, le=100)] = 20,
    ) -> NotesPage:
        """List the notes, one page at a time."""
        return notes.list(cursor, limit)

    def notes_add(
        text: Annotated[str, Field(min_length=1, max_length=1000)],
        expectedRevision: Annotated[int, Field(ge=0, description="revision from notes_list")],
        requestId: Annotated[str | None, Field(max_length=128)] = None,
    ) -> NoteAdded:
        """Append a note; retry with the same requestId is safe."""
        return notes.add(text, expectedRevision, requestId)

    async def notes_count(
        ctx: Context[Any],
        steps: Annotated[int, Field(ge=1, le=1000)] = 10,
    ) -> CountResult:
        """Count the notes slowly in a background task, reporting progress."""

        def work(task: TaskContext) -> int:
            for i in range(1, steps + 1):
                task.check_cancelled()
                task.progress(i, steps, f"step {i}/{steps}")
                threading.Event().wait(0.005)
            return len(notes.notes)

        async with ProgressRelay(ctx) as report:
            task_id = notes.tasks.start("count", work, on_progress=report)
            status = await notes.tasks.wait_async(task_id)
        if status["state"] != "succeeded":
            raise ServiceError(status["error"]["error"], status["error"]["message"])
        return CountResult(counted=status["result"], taskId=task_id)

    add_tool(server, notes_list, title="List notes", read_only=True, text=lambda p: f"{len(p.notes)} notes")
    add_tool(server, notes_add, title="Add a note", read_only=False, idempotent=True)
    add_tool(server, notes_count, title="Count notes", read_only=True)
    return server


def main(argv: list[str]) -> None:
    if argv[:1] == ["stdio"]:
        serve_stdio(build_server())
        return
    if argv[:1] == ["http"]:
        port = int(argv[1]) if len(argv) > 1 else 0
        running = serve_http(build_server(), port)
        print(f"{running.url}/mcp", flush=True)
        running.serve_forever()
        return
    raise SystemExit("usage: python -m moddesk.kit.selftest stdio|http [PORT]")


if __name__ == "__main__":
    main(sys.argv[1:])
