"""The ``mods`` toolset: apply a MOD (``pvf_mod_*``), diff against another archive, item tables."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from pydantic import Field

from moddesk.kit.mcp import add_tool, caller_scope
from moddesk.pvf.transfer.mods import ModService
from moddesk.pvf.workflows.service import WorkflowService

RequestId = Annotated[str | None, Field(max_length=128)]
Limit = Annotated[int, Field(ge=1, le=200)]


def register_mod_tools(server: MCPServer, mods: ModService, workflows: WorkflowService) -> None:
    """Add the MOD, diff and item-table tools to ``server``."""

    def pvf_mod_prepare(
        ctx: Context[Any],
        workspaceId: str,
        modPath: Annotated[str, Field(description="a 110USextend folder or 115CN-mod zip inside the roots")],
        requestId: RequestId = None,
    ) -> dict[str, Any]:
        """Read and check someone's MOD and compare it with the workspace (nothing is written).
        Returns planId, counts (add/overwrite/merge/unchanged) and the number of conflicts. Next:
        pvf_mod_preview for conflicts and diffs, then pvf_mod_apply."""
        return mods.prepare(workspaceId, modPath, requestId, caller_scope(ctx))

    def pvf_mod_preview(planId: str, cursor: str | None = None, limit: Limit = 50) -> dict[str, Any]:
        """One page of a MOD plan: conflicts first (conflictId, kind, path, entry, mine, theirs), then
        changed paths with diffs (lists show only their entries)."""
        return mods.preview(planId, cursor, limit)

    def pvf_mod_apply(
        ctx: Context[Any],
        planId: str,
        expectedRevision: Annotated[int, Field(ge=0)],
        resolutions: Annotated[
            dict[str, Literal["mine", "theirs"]],
            Field(description="every conflictId of the preview → mine (keep) or theirs (the MOD's)"),
        ] = {},  # noqa: B006
        requestId: RequestId = None,
    ) -> dict[str, Any]:
        """Apply the MOD in one step, or nothing: every conflict needs a resolution. The archive file
        changes only when saved."""
        return mods.apply(planId, expectedRevision, dict(resolutions), requestId, caller_scope(ctx))

    def pvf_mod_discard(planId: str) -> dict[str, Any]:
        """Drop a MOD plan (nothing was written)."""
        return mods.discard(planId)

    def pvf_diff(
        workspaceId: str,
        otherPath: Annotated[str, Field(description="another .pvf archive inside the roots")],
        path: Annotated[str | None, Field(description="give one changed path's text diff")] = None,
        cursor: str | None = None,
        limit: Limit = 100,
    ) -> dict[str, Any]:
        """What differs from the workspace (as it is now) to another archive: paths added, removed or
        changed, with .lst/.str entries; pass path for one file's text diff. Paged."""
        return workflows.diff(workspaceId, otherPath, path, cursor, limit)

    def pvf_item_table(
        workspaceId: str,
        kind: Annotated[str, Field(description="equipment, stackable or skill")] = "equipment",
        fields: Annotated[list[str], Field(max_length=20, description="sections to add as columns")] = [],  # noqa: B006
        cursor: str | None = None,
        limit: Limit = 100,
    ) -> dict[str, Any]:
        """Item rows of the workspace: list, id, path, name (string links resolved) and fields
        (default grade, rarity, minimum level, price). Paged; problem says why a row is empty."""
        return workflows.item_table(workspaceId, kind, fields, cursor, limit)

    add_tool(server, pvf_mod_prepare, title="Prepare a MOD", read_only=False, output_schema=False)
    add_tool(server, pvf_mod_preview, title="Preview a MOD", read_only=True, output_schema=False)
    add_tool(
        server, pvf_mod_apply, title="Apply a MOD", read_only=False, destructive=True, output_schema=False
    )
    add_tool(
        server, pvf_mod_discard, title="Discard a MOD", read_only=False, idempotent=True, output_schema=False
    )
    add_tool(server, pvf_diff, title="Diff with an archive", read_only=True, output_schema=False)
    add_tool(server, pvf_item_table, title="Item table", read_only=True, output_schema=False)
