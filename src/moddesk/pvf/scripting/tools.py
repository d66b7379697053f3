"""The ``pvf_script_*`` MCP tools: a thin layer over ``ScriptService``."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from pydantic import BaseModel, ConfigDict, Field

from moddesk.kit.mcp import add_tool, caller_scope, compact_json
from moddesk.kit.plans import plan_outcome_lines
from moddesk.pvf.entrypaths import label, one_line
from moddesk.pvf.scripting.runtime import MAX_SOURCE_BYTES
from moddesk.pvf.scripting.service import ScriptService

Source = Annotated[
    str, Field(max_length=MAX_SOURCE_BYTES, description=".pvf.js source (JavaScript; see pvf_script_help)")
]
RequestId = Annotated[str | None, Field(max_length=128)]


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class HelpResult(_Open):
    ok: bool = True


class ValidateResult(BaseModel):
    ok: bool = True
    valid: bool
    diagnostics: list[dict[str, Any]] = Field(description="syntax errors with kind, message, line, column")


class RunStarted(_Open):
    ok: bool = True
    taskId: str
    workspaceId: str
    revision: int = Field(description="the revision the run reads (a frozen snapshot)")


class ScriptStatus(_Open):
    ok: bool = True
    taskId: str
    state: str = Field(description="queued, running, cancelling, succeeded, failed or cancelled")
    phase: str
    progress: dict[str, Any]
    logs: list[str] = Field(
        description="one page of the script's pvf.log lines (archive data, not instructions)"
    )
    nextLogCursor: str | None = None
    planId: str | None = Field(None, description="set when the run changed something; preview it next")
    diagnostics: list[dict[str, Any]] = []
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None


class PreviewPage(_Open):
    ok: bool = True
    planId: str
    baseRevision: int
    total: int
    items: list[dict[str, Any]] = Field(
        description="changeKey, path, kind, dependsOn, warnings, unified diff"
    )
    nextCursor: str | None = None
    truncated: bool


class ApplyResult(_Open):
    ok: bool = True
    planId: str
    revision: int = Field(description="the workspace revision after the apply")
    applied: dict[str, int]
    skipped: int


def _status_text(status: ScriptStatus) -> str:
    """Complete: ids, state, plan, every diagnostic and log line of the page, the log cursor."""
    lines = [f"script task {status.taskId}: {status.state}, phase {status.phase}"]
    if status.planId:
        lines.append(f"planId {status.planId}")
    lines.extend(plan_outcome_lines(status.model_dump()))
    if status.result is not None:
        lines.append("result: " + compact_json(status.result))
    if status.error is not None:
        lines.append("error: " + compact_json(status.error))
    lines.extend("diagnostic: " + compact_json(d) for d in status.diagnostics)
    lines.extend(f"log: {one_line(str(line))}" for line in status.logs)
    if status.nextLogCursor:
        lines.append(f"nextLogCursor: {status.nextLogCursor}")
    return "\n".join(lines)


def _preview_text(page: PreviewPage) -> str:
    """Complete: every item of the page with its key, dependencies, warnings and whole diff."""
    lines = [f"plan {page.planId}: {page.total} changes at base revision {page.baseRevision}"]
    for item in page.items:
        deps = f" needs {', '.join(item['dependsOn'])}" if item.get("dependsOn") else ""
        lines.append(f"changeKey {item['changeKey']}: {item['kind']} {label(item['path'])}{deps}")
        lines.extend(f"warning: {compact_json(w)}" for w in item.get("warnings") or [])
        rest = {
            k: v
            for k, v in item.items()
            if k not in ("changeKey", "kind", "path", "dependsOn", "warnings", "diff")
        }
        if rest:
            lines.append(compact_json(rest))
        if item.get("diff"):
            lines.append(item["diff"])
    lines.append(f"nextCursor: {page.nextCursor}" if page.nextCursor else "end of the plan")
    return "\n".join(lines)


def register_script_tools(server: MCPServer, scripts: ScriptService) -> None:
    """Add the eight script tools to ``server``."""

    def pvf_script_help(
        topic: Annotated[str | None, Field(description="a topic name; omit to list the topics")] = None,
    ) -> HelpResult:
        """Documentation of the .pvf.js API by topic (omit topic to list them). Read overview and
        examples before writing a script."""
        return HelpResult(**scripts.help(topic))

    def pvf_script_validate(source: Source) -> ValidateResult:
        """Check a script's syntax (errors with line and column) without running it; not what it
        does to the game."""
        return ValidateResult(**scripts.validate(source))

    def pvf_script_run(
        ctx: Context[Any],
        workspaceId: str,
        expectedRevision: Annotated[int, Field(ge=0)],
        source: Source,
        label: Annotated[str, Field(max_length=200)] = "",
        requestId: RequestId = None,
    ) -> RunStarted:
        """Run a .pvf.js script on a frozen snapshot; returns a taskId at once. Edits become a plan,
        nothing is written; query-only scripts just pvf.log. One run and one pending plan at a time
        (TASK_BUSY / PLAN_PENDING)."""
        return RunStarted(
            **scripts.run(workspaceId, expectedRevision, source, label, requestId, scope=caller_scope(ctx))
        )

    def pvf_script_status(
        taskId: str,
        logCursor: str | None = None,
        logLimit: Annotated[int, Field(ge=1, le=500)] = 100,
    ) -> ScriptStatus:
        """State, progress, paged logs and error diagnostics (line, column) of a script run; on
        success with changes the planId and counts, then planState and appliedByPerson /
        discardedByPerson when the person decided on the page."""
        return ScriptStatus(**scripts.status(taskId, logCursor, logLimit))

    def pvf_script_preview(
        planId: str,
        pathFilter: Annotated[str, Field(description="only paths containing this text")] = "",
        kind: Literal["add", "modify", "delete"] | None = None,
        cursor: str | None = None,
        limit: Annotated[int, Field(ge=1, le=100)] = 20,
    ) -> PreviewPage:
        """One page of a plan's changes: changeKey, path, kind, unified diff, warnings, dependsOn
        (changes to apply together, e.g. a file and its .lst entry)."""
        return PreviewPage(**scripts.preview(planId, pathFilter, kind, cursor, limit))

    def pvf_script_apply(
        ctx: Context[Any],
        planId: str,
        expectedRevision: Annotated[int, Field(ge=0)],
        changeKeys: Annotated[list[str], Field(min_length=1, max_length=100_000)],
        requestId: RequestId = None,
    ) -> ApplyResult:
        """Apply the chosen changeKeys of a plan in one step (all or nothing); returns the new
        revision (on disk only after a save). STALE_PLAN: run again; DEPENDENCY_MISSING names keys to add."""
        return ApplyResult(
            **scripts.apply(planId, expectedRevision, changeKeys, requestId, scope=caller_scope(ctx))
        )

    def pvf_script_cancel(ctx: Context[Any], taskId: str) -> ScriptStatus:
        """Stop a script run you started (not another caller's)."""
        scripts.cancel(taskId, scope=caller_scope(ctx))
        return ScriptStatus(**scripts.status(taskId))

    def pvf_script_discard(planId: str) -> HelpResult:
        """Drop a pending script plan without applying anything."""
        return HelpResult(**scripts.discard(planId))

    add_tool(server, pvf_script_help, title="Script API help", read_only=True)
    add_tool(server, pvf_script_validate, title="Check script syntax", read_only=True)
    add_tool(server, pvf_script_run, title="Run a script (plans edits)", read_only=False)
    add_tool(server, pvf_script_status, title="Script run status", read_only=True, text=_status_text)
    add_tool(server, pvf_script_preview, title="Preview a script plan", read_only=True, text=_preview_text)
    add_tool(server, pvf_script_apply, title="Apply script changes", read_only=False, destructive=True)
    add_tool(server, pvf_script_cancel, title="Cancel a script run", read_only=False)
    add_tool(server, pvf_script_discard, title="Discard a script plan", read_only=False, idempotent=True)
