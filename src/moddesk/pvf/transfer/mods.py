"""Applying someone's MOD to the open archive: prepare (read + check + conflicts) → preview → apply.

A MOD plan is a write plan like an import: it waits for the person or agent to apply it, blocks
other write plans while pending (``PLAN_PENDING``), goes stale when the workspace moves, and its
apply writes every chosen change in one revision step or nothing. Conflicts (a file changed
locally since the MOD's base, a list id or string key the archive already uses otherwise) must
each be resolved ``mine`` or ``theirs``.
"""

from __future__ import annotations

import difflib
from typing import TYPE_CHECKING, Any

from moddesk.kit.errors import ServiceError
from moddesk.kit.ledger import LOCAL_SCOPE
from moddesk.pvf.transfer.modmerge import Change, Conflict, check_resolutions, plan, writes
from moddesk.pvf.transfer.modread import ModPackage, read_mod
from moddesk.pvf.workbench.occupancy import editors_prepared, ensure_free_for_write_plan

if TYPE_CHECKING:
    from moddesk.pvf.service import PvfService
    from moddesk.pvf.workbench.workspace import Workspace

PREVIEW_BYTE_CAP = 48 * 1024
DIFF_LINES = 200


class ModPlan:
    def __init__(
        self,
        workspace_id: str,
        base_revision: int,
        package: ModPackage,
        changes: list[Change],
        conflicts: list[Conflict],
    ) -> None:
        self.workspace_id = workspace_id
        self.base_revision = base_revision
        self.package = package
        self.changes = changes
        self.conflicts = conflicts


def reader(ws: Workspace) -> Any:
    """``current(path)``: the workspace's text, its bytes for binary entries, None when absent."""

    def current(path: str) -> str | bytes | None:
        if not ws.exists(path):
            return None
        text = ws.current_text_or_none(path)
        return text if text is not None else ws.read_bytes(path)

    return current


def counts(changes: list[Change]) -> dict[str, int]:
    out: dict[str, int] = {"add": 0, "overwrite": 0, "merge": 0, "unchanged": 0}
    for change in changes:
        out[change.action] += 1
    return out


class ModService:
    """The ``pvf_mod_*`` operations over a ``PvfService``."""

    def __init__(self, service: PvfService) -> None:
        self.service = service

    def inspect(self, mod_path: str) -> dict[str, Any]:
        """The package's metadata and contents, checked (no archive needed)."""
        package = read_mod(mod_path, self.service.access_roots())
        return {
            "ok": True,
            **package.summary(),
            "paths": [f.path for f in package.files][:200],
            "tablePaths": [t.path for t in package.tables],
        }

    def prepare(
        self, workspace_id: str, mod_path: str, request_id: str | None = None, scope: str = LOCAL_SCOPE
    ) -> dict[str, Any]:
        """Read and check the MOD, compare it with the workspace; nothing is written."""
        params = {"op": "mod_prepare", "ws": workspace_id, "mod": mod_path}
        return self.service.ledger.run(
            scope, request_id, params, lambda: self._prepare(workspace_id, mod_path, scope)
        )

    def _prepare(self, workspace_id: str, mod_path: str, scope: str) -> dict[str, Any]:
        service = self.service
        with service._state:
            ws = service._require_workspace(workspace_id)
            ensure_free_for_write_plan(service)
        package = read_mod(mod_path, self.service.access_roots())
        changes, conflicts = plan(package, reader(ws))
        payload = ModPlan(ws.workspace_id, ws.revision, package, changes, conflicts)
        created = service.plans.create("mod", payload, owner=scope, source="mod")
        return {
            "ok": True,
            "planId": created.plan_id,
            "workspaceId": ws.workspace_id,
            "revision": ws.revision,
            "mod": package.summary(),
            "counts": counts(changes),
            "conflicts": len(conflicts),
            "expiresInSeconds": created.describe()["expiresInSeconds"],
        }

    def _plan(self, plan_id: str) -> ModPlan:
        payload = self.service.plans.get("mod", plan_id).payload
        assert isinstance(payload, ModPlan)
        return payload

    def _diff(self, ws: Workspace, path: str, new: str | bytes) -> str | None:
        if not isinstance(new, str):
            return None
        old = ws.current_text_or_none(path) if ws.exists(path) else ""
        if old is None:
            return None
        lines = difflib.unified_diff(
            old.splitlines(), new.splitlines(), f"a/{path}", f"b/{path}", lineterm=""
        )
        out = []
        for i, line in enumerate(lines):
            if i == DIFF_LINES:
                out.append("… (diff cut; apply writes the whole change)")
                break
            out.append(line)
        return "\n".join(out)

    def preview(self, plan_id: str, cursor: str | None = None, limit: int = 50) -> dict[str, Any]:
        """One page: conflicts first, then changed paths with their diffs (tables: entry lines only)."""
        mod_plan = self._plan(plan_id)
        limit = max(1, min(limit, 200))
        query = {"plan": plan_id, "limit": limit}
        service = self.service
        start = 0 if cursor is None else int(service.cursors.decode(cursor, query, mod_plan.base_revision))
        ws = service._require_workspace(mod_plan.workspace_id)
        # the diff shows what apply writes if every conflict is taken from the MOD
        theirs = {c.conflict_id: "theirs" for c in mod_plan.conflicts}
        final = writes(mod_plan.package, reader(ws), mod_plan.conflicts, theirs)  # type: ignore[arg-type]
        rows: list[dict[str, Any]] = [{"conflict": c.describe()} for c in mod_plan.conflicts]
        rows += [{"change": c.describe()} for c in mod_plan.changes if c.action != "unchanged"]
        out: list[dict[str, Any]] = []
        used = 0
        index = start
        for row in rows[start : start + limit]:
            change = row.get("change")
            if change is not None and change["path"] in final:
                diff = self._diff(ws, change["path"], final[change["path"]])
                if diff is not None:
                    change["diff"] = diff
            size = len(str(row).encode()) + 64
            if out and used + size > PREVIEW_BYTE_CAP:
                break
            out.append(row)
            used += size
            index += 1
        more = index < len(rows)
        return {
            "ok": True,
            "planId": plan_id,
            "mod": mod_plan.package.summary(),
            "counts": counts(mod_plan.changes),
            "conflicts": len(mod_plan.conflicts),
            "total": len(rows),
            "rows": out,
            "nextCursor": service.cursors.encode(query, index, mod_plan.base_revision) if more else None,
        }

    def apply(
        self,
        plan_id: str,
        expected_revision: int,
        resolutions: dict[str, str] | None = None,
        request_id: str | None = None,
        scope: str = LOCAL_SCOPE,
        by: str = "agent",
    ) -> dict[str, Any]:
        """Write the MOD with every conflict resolved, in one revision step."""
        params = {
            "op": "mod_apply",
            "plan": plan_id,
            "rev": expected_revision,
            "res": dict(sorted((resolutions or {}).items())),
        }
        return self.service.ledger.run(
            scope, request_id, params, lambda: self._apply(plan_id, expected_revision, resolutions or {}, by)
        )

    def _apply(
        self, plan_id: str, expected_revision: int, resolutions: dict[str, str], by: str = "agent"
    ) -> dict[str, Any]:
        mod_plan = self._plan(plan_id)
        chosen = check_resolutions(mod_plan.conflicts, resolutions)
        service = self.service
        if expected_revision != mod_plan.base_revision:
            raise ServiceError(
                "STALE_PLAN",
                f"the plan was made at revision {mod_plan.base_revision}, not {expected_revision}",
                hint="Prepare the MOD again against the current revision.",
            )
        with (
            editors_prepared(service, "mod-apply"),
            service.begin_write("mod-apply", mod_plan.workspace_id, expected_revision) as ws,
        ):
            final = writes(mod_plan.package, reader(ws), mod_plan.conflicts, chosen)
            revision = ws.apply(dict(final)) if final else ws.revision
        service.plans.complete("mod", plan_id, by, revision)
        service._emit(
            "archive:changed", {"workspaceId": mod_plan.workspace_id, "revision": revision, "source": "mod"}
        )
        return {
            "ok": True,
            "planId": plan_id,
            "revision": revision,
            "written": len(final),
            "keptMine": sum(v == "mine" for v in chosen.values()),
            "tookTheirs": sum(v == "theirs" for v in chosen.values()),
            "workspaceCommitted": True,
        }

    def discard(self, plan_id: str, by: str = "agent") -> dict[str, Any]:
        ws = self.service.workspace
        self.service.plans.discard("mod", plan_id, by, ws.revision if ws is not None else None)
        return {"ok": True, "planId": plan_id, "discarded": True}
