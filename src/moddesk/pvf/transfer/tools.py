"""The ``pvf_import_*`` and ``pvf_export_*`` MCP tools: a thin layer over the transfer services."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from pydantic import BaseModel, ConfigDict, Field

from moddesk.kit.errors import ServiceError
from moddesk.kit.mcp import ProgressRelay, add_tool, caller_scope, compact_json
from moddesk.kit.tasks import TaskContext, TaskManager
from moddesk.pvf.transfer.exports import ExportService
from moddesk.pvf.transfer.imports import ImportService

RequestId = Annotated[str | None, Field(max_length=128)]


class Result(BaseModel):
    """A JSON object result (fields as documented by the tool)."""

    model_config = ConfigDict(extra="allow")
    ok: bool = True


def _summary(result: Result) -> str:
    """The complete result (plan ids, entry keys, warningIds, cursors, counts) as compact JSON."""
    return compact_json(result.model_dump())


TASK_WAIT = 0.8  # a call answers within a second; longer work is polled with pvf_task_status


async def _as_task(
    ctx: Context[Any],
    tasks: TaskManager,
    kind: str,
    work: Callable[[], dict[str, Any]],
    cancellable: bool = False,
) -> Result:
    """Run ``work`` as a task: its answer when done within ``TASK_WAIT``, else the task to poll.

    Clients time requests out (the TypeScript SDK after 60 s) and a 200,000-file export takes
    longer; a task keeps going after the call returns, and its ``result`` is this call's answer.
    """

    def run(task: TaskContext) -> dict[str, Any]:
        task.progress(0, None, kind)
        value = work()  # reports per-file progress through kit.tasks.report_progress
        task.complete_progress(f"{kind} done")
        return value

    async with ProgressRelay(ctx) as report:
        task_id = tasks.start(kind, run, cancellable=cancellable, on_progress=report)
        status = await tasks.wait_async(task_id, TASK_WAIT)
    if status["state"] == "succeeded":
        return Result(**{**status["result"], "taskId": task_id})
    error = status.get("error")
    if status["state"] in ("failed", "cancelled") and error:
        # a refusal may name another task (the one holding the workspace): keep it under its own key
        details = {k: v for k, v in error.items() if k not in ("ok", "error", "message", "hint", "taskId")}
        if error.get("taskId") not in (None, task_id):
            details["blockingTaskId"] = error["taskId"]
        raise ServiceError(error["error"], error["message"], error.get("hint"), taskId=task_id, **details)
    running = {
        "taskId": task_id,
        "kind": kind,
        "state": status["state"],
        "progress": status["progress"],
        "next": f"still running: poll pvf_task_status with taskId {task_id}; its result is this call's answer"
        + ("; pvf_export_cancel stops it" if cancellable else ""),
    }
    return Result(**running)


def register_transfer_tools(server: MCPServer, imports: ImportService, exports: ExportService) -> None:
    """Add the import and export tools to ``server``."""

    async def pvf_import_prepare(
        ctx: Context[Any],
        workspaceId: str,
        expectedRevision: Annotated[int, Field(ge=0)],
        sourcePaths: Annotated[
            list[str], Field(min_length=1, max_length=100, description="absolute local paths")
        ],
        targetDir: Annotated[str, Field(description='archive folder to import into; "" = the root')] = "",
        mode: Annotated[
            Literal["text", "raw"],
            Field(description="text: UTF-8 script/text files (compiled on save); raw: bytes as they are"),
        ] = "text",
        requestId: RequestId = None,
    ) -> Result:
        """Read local files/folders once and freeze them into an import plan (nothing is written).
        A folder keeps its own name under targetDir; links and special files in it are skipped and
        listed (skipped), one named directly is refused. Private keys, .env files, .npmrc/.pypirc and
        cloud credentials are SECRET_REFUSED (by name or content). Limits 10,000 files, 8 MiB each,
        64 MiB in all. Then preview and apply."""
        scope = caller_scope(ctx)
        return await _as_task(
            ctx,
            imports.service.tasks,
            "import.prepare",
            lambda: imports.prepare(
                workspaceId, sourcePaths, targetDir, mode, requestId, scope, expectedRevision
            ),
        )

    def pvf_import_preview(
        planId: str,
        cursor: str | None = None,
        limit: Annotated[int, Field(ge=1, le=200)] = 50,
    ) -> Result:
        """One page of an import plan: key, source, target, type, size, add/overwrite, text diff."""
        return Result(**imports.preview(planId, cursor, limit))

    async def pvf_import_apply(
        ctx: Context[Any],
        planId: str,
        expectedRevision: Annotated[int, Field(ge=0)],
        selectedKeys: Annotated[list[str], Field(min_length=1)],
        overwriteKeys: Annotated[
            list[str], Field(description="keys allowed to replace existing entries")
        ] = [],  # noqa: B006
        requestId: RequestId = None,
    ) -> Result:
        """Write the selected items (the frozen bytes) in one step, or nothing. Replacing an existing
        entry needs its key in overwriteKeys. The archive file changes only when saved."""
        scope = caller_scope(ctx)
        return await _as_task(
            ctx,
            imports.service.tasks,
            "import.apply",
            lambda: imports.apply(planId, expectedRevision, selectedKeys, overwriteKeys, requestId, scope),
        )

    def pvf_import_discard(planId: str) -> Result:
        """Drop an import plan and its frozen copies."""
        return Result(**imports.discard(planId))

    def pvf_export_formats() -> Result:
        """Export formats (direct, MOD 110USextend and 115CN-mod) and their layouts."""
        return Result(**exports.formats())

    async def pvf_export_prepare(
        ctx: Context[Any],
        workspaceId: str,
        expectedRevision: Annotated[int, Field(ge=0)],
        includeDependencies: Annotated[
            bool, Field(description="also export the files that new .lst entries name (say so explicitly)")
        ],
        source: Annotated[
            Literal["selection", "memory", "working", "commit"],
            Field(description="selection: paths; memory: edits since open; working: vs history HEAD; commit"),
        ] = "selection",
        paths: Annotated[
            list[str], Field(description='files/folders for selection; "" = whole archive')
        ] = [],  # noqa: B006
        commitId: str | None = None,
        mode: Literal["direct", "mod"] = "direct",
        format: Annotated[str | None, Field(description="MOD format id from pvf_export_formats")] = None,
        name: Annotated[str, Field(description="MOD package name")] = "",
        version: Annotated[str | None, Field(description="MOD version (default 1.0)")] = None,
        modId: Annotated[str | None, Field(description="stable MOD id, required for 115CN-mod")] = None,
        requestId: RequestId = None,
    ) -> Result:
        """Freeze what to export and lay out the output tree (nothing written). One export plan at a
        time; a later edit makes it stale."""
        scope = caller_scope(ctx)
        return await _as_task(
            ctx,
            exports.service.tasks,
            "export.prepare",
            lambda: exports.prepare(
                workspaceId,
                expectedRevision,
                source,
                paths,
                commitId,
                mode,
                format,
                name,
                version,
                modId,
                includeDependencies,
                requestId,
                scope,
            ),
            cancellable=True,
        )

    def pvf_export_preview(
        planId: str,
        cursor: str | None = None,
        limit: Annotated[int, Field(ge=1, le=500)] = 100,
    ) -> Result:
        """One page of the output tree (entryKeys with dependsOn), plus warnings (warningId),
        skippedDeletes and missing dependencies."""
        return Result(**exports.preview(planId, cursor, limit))

    async def pvf_export_execute(
        ctx: Context[Any],
        planId: str,
        outputParent: Annotated[str, Field(description="an existing absolute local folder")],
        outputName: Annotated[str | None, Field(description="new folder name (direct exports)")] = None,
        selectedEntryKeys: Annotated[list[str] | None, Field(description="omit for every entry")] = None,
        acknowledgedWarningIds: Annotated[list[str], Field(description="every warningId you have read")] = [],  # noqa: B006
        requestId: RequestId = None,
    ) -> Result:
        """Write the export into a new folder (or zip) under outputParent; never overwrites
        (TARGET_EXISTS). Every warningId must be acknowledged. Returns outputPath and counts, or
        after a second a taskId for pvf_task_status (prepare and import apply answer the same way)."""
        scope = caller_scope(ctx)
        return await _as_task(
            ctx,
            exports.service.tasks,
            "export.execute",
            lambda: exports.execute(
                planId, outputParent, outputName, selectedEntryKeys, acknowledgedWarningIds, requestId, scope
            ),
            cancellable=True,
        )

    def pvf_export_cancel(
        taskId: Annotated[str, Field(description="of a running export prepare or execute")],
    ) -> Result:
        """Stop a running export task at its next batch of files. A cancelled execute publishes
        nothing and the plan stays pending (execute again or discard)."""
        return Result(**exports.cancel_task(taskId))

    def pvf_export_discard(planId: str) -> Result:
        """Drop the pending export plan (frees open/close)."""
        return Result(**exports.discard(planId))

    add_tool(server, pvf_import_prepare, title="Prepare an import", read_only=False, text=_summary)
    add_tool(server, pvf_import_preview, title="Preview an import", read_only=True, text=_summary)
    add_tool(
        server, pvf_import_apply, title="Apply an import", read_only=False, destructive=True, text=_summary
    )
    add_tool(
        server, pvf_import_discard, title="Discard an import", read_only=False, idempotent=True, text=_summary
    )
    add_tool(server, pvf_export_formats, title="Export formats", read_only=True, text=_summary)
    add_tool(server, pvf_export_prepare, title="Prepare an export", read_only=False, text=_summary)
    add_tool(server, pvf_export_preview, title="Preview an export", read_only=True, text=_summary)
    add_tool(server, pvf_export_execute, title="Write an export", read_only=False, text=_summary)
    add_tool(
        server, pvf_export_cancel, title="Cancel an export", read_only=False, idempotent=True, text=_summary
    )
    add_tool(
        server, pvf_export_discard, title="Discard an export", read_only=False, idempotent=True, text=_summary
    )
