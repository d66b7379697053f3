"""Export archive content as files or MOD packages: prepare → preview → execute → discard.

Prepare freezes the content (workspace, revision and history HEAD recorded); any edit afterwards
makes execute answer ``STALE_EXPORT``. Execute writes into a private temp folder (or zip) beside
the target and publishes it with no-overwrite semantics, so an existing target is never touched
(``TARGET_EXISTS``) and a crash leaves nothing half-published under the target's name.
"""

from __future__ import annotations

import re
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from moddesk.kit.errors import ServiceError, register_codes
from moddesk.kit.ledger import LOCAL_SCOPE
from moddesk.kit.tasks import TaskContext
from moddesk.pvf.errors import pvf_error
from moddesk.pvf.transfer import sources
from moddesk.pvf.transfer.writers import (
    FORMATS,
    FormatId,
    Output,
    OutputEntry,
    build_output,
    check_name,
    check_version,
    publish_package,
    rebuild_meta,
    warning_id,
)
from moddesk.pvf.workbench.localfiles import place
from moddesk.pvf.workbench.occupancy import editors_prepared

if TYPE_CHECKING:
    from moddesk.pvf.service import PvfService


def damage_warnings(problems_of: Callable[[str], list[str]], output: Output) -> list[dict[str, Any]]:
    """A warning per exported entry whose stored bytes fail their checksum (classic archives).

    Execute needs each one acknowledged, so no damaged file is written without the caller having
    been told (#35); an edited entry is new content and has no stored checksum to fail.
    """
    warnings: list[dict[str, Any]] = []
    for path in sorted({entry.source for entry in output.entries if entry.source and not entry.meta}):
        problems = problems_of(path)
        if problems:
            warnings.append(
                {
                    "warningId": warning_id("damaged", path),
                    "code": "damaged",
                    "path": path,
                    "message": "its stored data checksum does not match: the exported bytes may be wrong",
                }
            )
    return warnings


register_codes(
    {
        "NOTHING_TO_EXPORT": "Nothing in the selection can be written in this format.",
        "WARNINGS_NOT_ACKNOWLEDGED": "The export has warnings that acknowledgedWarningIds does not cover.",
        "UNSUPPORTED_CONTENT": "Some content cannot be written in the chosen format or as a local file.",
    }
)

_TARGET_EXISTS_HINT = "Choose another outputName or outputParent; the existing one was not touched."


PREVIEW_BYTE_CAP = 48 * 1024
_MOD_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{2,63}$")
ExportMode = Literal["direct", "mod"]
TaskKind = Literal["export.prepare", "export.execute"]
ProgressListener = Callable[[int, int | None, str | None], None]


@dataclass
class ExportPlan:
    workspace_id: str
    revision: int
    head: str | None
    source: dict[str, Any]
    fmt: FormatId
    name: str
    version: str
    mod_id: str | None
    output: Output
    dependencies_added: list[str]

    def target_name(self, output_name: str | None) -> str:
        if self.fmt == "direct":
            if not output_name:
                raise ServiceError(
                    "INVALID_ARGUMENT", "direct exports need outputName", hint="Name the new output folder."
                )
            return check_name(output_name, "outputName")
        suffix = ".zip" if self.fmt == "115CN-mod" else ""
        return f"{self.name}-{self.version}{suffix}"


class ExportService:
    """The ``pvf_export_*`` operations over a ``PvfService``."""

    def __init__(self, service: PvfService) -> None:
        self.service = service

    # ------------------------------------------------------------------ as tasks
    def start_task(
        self, kind: TaskKind, work: Callable[[], dict[str, Any]], on_progress: ProgressListener | None = None
    ) -> str:
        """Run ``work`` (a prepare or execute call) as a cancellable task; returns its taskId.

        A 200,000-file export takes longer than any request should wait: every entry point (MCP,
        CLI, page) runs it as a task, polls ``tasks.status`` for per-file progress and may cancel it
        (``cancel_task``). A cancelled execute publishes nothing and leaves the plan pending."""

        def run(task: TaskContext) -> dict[str, Any]:
            task.progress(0, None, kind)
            value = work()  # reports per-file progress through kit.tasks.report_progress
            task.complete_progress(f"{kind} done")
            return value

        return self.service.tasks.start(kind, run, cancellable=True, on_progress=on_progress)

    def cancel_task(self, task_id: str) -> dict[str, Any]:
        """Ask an export task to stop at its next batch of files; its status says how it ended."""
        status = self.service.tasks.status(task_id, log_limit=1)
        if not str(status["kind"]).startswith("export."):
            raise ServiceError(
                "TASK_NOT_FOUND",
                f"{task_id} is not an export task",
                hint="Cancel exports with this call; other tasks have their own.",
            )
        return self.service.tasks.cancel(task_id)

    @staticmethod
    def formats() -> dict[str, Any]:
        return {"ok": True, "formats": FORMATS}

    # ------------------------------------------------------------------ prepare
    def prepare(
        self,
        workspace_id: str,
        expected_revision: int,
        source: str = "selection",
        paths: list[str] | None = None,
        commit_id: str | None = None,
        mode: ExportMode = "direct",
        fmt: str | None = None,
        name: str = "",
        version: str | None = None,
        mod_id: str | None = None,
        include_dependencies: bool = False,
        request_id: str | None = None,
        scope: str = LOCAL_SCOPE,
        limits: sources.ExportLimits = sources.AGENT_EXPORT_LIMITS,
    ) -> dict[str, Any]:
        """Freeze what to export and lay out the output; returns the plan id and a summary.

        ``limits`` are seed 001's for agents; the person's CLI and page pass the larger ones."""
        params = {
            "op": "export_prepare",
            "ws": workspace_id,
            "rev": expected_revision,
            "source": source,
            "paths": paths,
            "commit": commit_id,
            "mode": mode,
            "fmt": fmt,
            "name": name,
            "version": version,
            "modId": mod_id,
            "deps": include_dependencies,
            "limits": [limits.files, limits.bytes],
        }
        return self.service.ledger.run(
            scope,
            request_id,
            params,
            lambda: self._prepare(
                workspace_id,
                expected_revision,
                source,
                paths or [],
                commit_id,
                mode,
                fmt,
                name,
                version,
                mod_id,
                include_dependencies,
                scope,
                limits,
            ),
        )

    def _format(
        self, mode: ExportMode, fmt: str | None, name: str, version: str | None, mod_id: str | None
    ) -> tuple[FormatId, str, str]:
        if mode == "direct":
            if fmt not in (None, "", "direct"):
                raise ServiceError(
                    "INVALID_ARGUMENT", "mode direct takes no format", hint="Omit format, or use mode mod."
                )
            return "direct", "", "1.0"
        if fmt not in ("110USextend", "115CN-mod"):
            raise ServiceError(
                "INVALID_ARGUMENT",
                f"unknown MOD format {fmt!r}",
                hint="Use a format id from pvf_export_formats: 110USextend or 115CN-mod.",
            )
        checked_name = check_name(name, "name")
        checked_version = check_version(version)
        if fmt == "115CN-mod" and (mod_id is None or not _MOD_ID.match(mod_id)):
            raise ServiceError(
                "INVALID_ARGUMENT",
                "115CN-mod needs a stable modId (3-64 letters, digits, '.', '_' or '-')",
                hint="Reuse the same modId for every update of the same package; it is not the display name.",
            )
        return fmt, checked_name, checked_version  # type: ignore[return-value]

    def _items(
        self, source: str, paths: list[str], commit_id: str | None, limits: sources.ExportLimits
    ) -> list[sources.ExportItem]:
        service = self.service
        ws = service.workspace
        assert ws is not None
        if source == "selection":
            return sources.from_selection(ws, paths, limits)
        if source == "memory":
            return sources.from_memory(ws, limits)
        if source == "working":
            return sources.from_working(ws, service.history, limits)
        if source == "commit":
            if not commit_id:
                raise ServiceError(
                    "INVALID_ARGUMENT", "source commit needs commitId", hint="Take one from history log."
                )
            return sources.from_commit(ws, service.history, commit_id, limits)
        raise ServiceError(
            "INVALID_ARGUMENT", f"unknown source {source!r}", hint="Use selection, memory, working or commit."
        )

    def _prepare(
        self,
        workspace_id: str,
        expected_revision: int,
        source: str,
        paths: list[str],
        commit_id: str | None,
        mode: ExportMode,
        fmt_arg: str | None,
        name_arg: str,
        version_arg: str | None,
        mod_id: str | None,
        include_dependencies: bool,
        scope: str,
        limits: sources.ExportLimits,
    ) -> dict[str, Any]:
        fmt, name, version = self._format(mode, fmt_arg, name_arg, version_arg, mod_id)
        service = self.service
        # an export reads committed content: a draft still in an editor would be silently left out
        with editors_prepared(service, "export-prepare"), service._state:
            ws = service._require_workspace(workspace_id)
            service._check_revision(ws, expected_revision)
            if service._lifecycle_task is not None:
                raise pvf_error(
                    "LIFECYCLE_BUSY", "an open/close/save is running", taskId=service._lifecycle_task
                )
            pending = service.plans.pending("export")
            if pending is not None:
                raise pvf_error(
                    "EXPORT_PLAN_PENDING",
                    f"export plan {pending.plan_id} is pending",
                    pendingPlan=pending.describe(),
                )
            with ws.lock:  # one consistent view: no edit lands between reading items and the revision
                revision = ws.revision
                head = service.history.head if service.history is not None else None
                items = self._items(source, paths, commit_id, limits)
                every = ws.paths  # called only when an exported list needs them
                output = build_output(
                    items, fmt, name=name, version=version, mod_id=mod_id, workspace_paths=every
                )
                added: list[str] = []
                if include_dependencies and output.missing_dependencies:
                    added = list(output.missing_dependencies)
                    items = items + sources.from_selection(ws, added, limits)
                    sources.check_total(items, limits)
                    output = build_output(
                        items, fmt, name=name, version=version, mod_id=mod_id, workspace_paths=every
                    )
                if source != "commit":  # a commit's content comes from history, not the stored bytes
                    output.warnings.extend(damage_warnings(ws.entry_problems, output))
        if not output.selectable():
            raise ServiceError(
                "NOTHING_TO_EXPORT",
                "nothing in this source can be written as " + fmt,
                hint="Choose another source or format; see skippedDeletes and warnings.",
                skippedDeletes=output.skipped_deletes[:100],
                warnings=output.warnings[:100],
            )
        plan_payload = ExportPlan(
            workspace_id,
            revision,
            head,
            {"kind": source, "paths": paths, "commitId": commit_id},
            fmt,
            name,
            version,
            mod_id,
            output,
            added,
        )
        plan = service.plans.create(
            "export", plan_payload, owner=scope, source=source, pending_code="EXPORT_PLAN_PENDING"
        )
        return {
            "ok": True,
            "planId": plan.plan_id,
            "format": fmt,
            "workspaceId": workspace_id,
            "revision": revision,
            "entries": len(output.selectable()),
            "dependencies": sum(len(e.depends_on) for e in output.entries),
            "dependenciesAdded": added,
            "missingDependencies": len(output.missing_dependencies) if not include_dependencies else 0,
            "warnings": len(output.warnings),
            "skippedDeletes": len(output.skipped_deletes),
            "expiresInSeconds": plan.describe()["expiresInSeconds"],
        }

    # ------------------------------------------------------------------ preview / discard
    def _plan(self, plan_id: str) -> ExportPlan:
        payload = self.service.plans.get("export", plan_id).payload
        assert isinstance(payload, ExportPlan)
        return payload

    def preview(self, plan_id: str, cursor: str | None = None, limit: int = 100) -> dict[str, Any]:
        """One page of the output tree (entryKeys), with warnings, skipped deletes and dependency hints."""
        plan = self._plan(plan_id)
        limit = max(1, min(limit, 500))
        entries = plan.output.selectable()
        query = {"plan": plan_id, "limit": limit}
        start = 0 if cursor is None else int(self.service.cursors.decode(cursor, query, plan.revision))
        page = [
            {"entryKey": e.key, "source": e.source, "size": len(e.data), "dependsOn": e.depends_on}
            for e in entries[start : start + limit]
        ]
        end = start + len(page)
        return {
            "ok": True,
            "planId": plan_id,
            "format": plan.fmt,
            "revision": plan.revision,
            "total": len(entries),
            "metadata": [e.key for e in plan.output.entries if e.meta],
            "entries": page,
            "nextCursor": self.service.cursors.encode(query, end, plan.revision)
            if end < len(entries)
            else None,
            "warnings": plan.output.warnings[:200],
            "skippedDeletes": plan.output.skipped_deletes[:200],
            "skippedDeletesTotal": len(plan.output.skipped_deletes),
            "missingDependencies": plan.output.missing_dependencies[:200],
            "dependenciesAdded": plan.dependencies_added,
        }

    def discard(self, plan_id: str, by: str = "agent") -> dict[str, Any]:
        ws = self.service.workspace
        self.service.plans.discard("export", plan_id, by, ws.revision if ws is not None else None)
        return {"ok": True, "planId": plan_id, "discarded": True}

    # ------------------------------------------------------------------ execute
    def execute(
        self,
        plan_id: str,
        output_parent: str,
        output_name: str | None = None,
        selected_entry_keys: list[str] | None = None,
        acknowledged_warning_ids: list[str] | None = None,
        request_id: str | None = None,
        scope: str = LOCAL_SCOPE,
        by: str = "agent",
    ) -> dict[str, Any]:
        """Write the chosen entries and publish them under a new name; never overwrites."""
        params = {
            "op": "export_execute",
            "plan": plan_id,
            "parent": output_parent,
            "name": output_name,
            "keys": sorted(selected_entry_keys) if selected_entry_keys is not None else None,
            "ack": sorted(acknowledged_warning_ids or []),
        }
        return self.service.ledger.run(
            scope,
            request_id,
            params,
            lambda: self._execute(
                plan_id,
                output_parent,
                output_name,
                selected_entry_keys,
                set(acknowledged_warning_ids or []),
                by,
            ),
        )

    def _check_fresh(self, plan: ExportPlan) -> None:
        service = self.service
        ws = service.workspace
        head = service.history.head if service.history is not None else None
        if (
            ws is None
            or ws.workspace_id != plan.workspace_id
            or ws.revision != plan.revision
            or head != plan.head
        ):
            raise pvf_error(
                "STALE_EXPORT",
                "the workspace changed since the export was prepared",
                preparedRevision=plan.revision,
                revision=ws.revision if ws is not None else None,
            )

    @staticmethod
    def _chosen(plan: ExportPlan, keys: list[str] | None) -> tuple[list[OutputEntry], list[dict[str, Any]]]:
        selectable = plan.output.selectable()
        if keys is None:
            return selectable, []
        by_key = {e.key: e for e in selectable}
        meta = {e.key for e in plan.output.entries if e.meta}
        unknown = [k for k in keys if k not in by_key and k not in meta]
        if unknown:
            raise ServiceError(
                "INVALID_ARGUMENT",
                f"unknown entryKeys: {', '.join(unknown[:10])}",
                hint="Use entryKeys from pvf_export_preview (package metadata is rebuilt by the service).",
            )
        chosen = [by_key[k] for k in dict.fromkeys(keys) if k in by_key]
        picked = {e.key for e in chosen}
        extra = []
        for entry in chosen:
            for needed in entry.depends_on:
                if needed not in picked:
                    extra.append(
                        {
                            "warningId": warning_id("dependency-removed", entry.key, needed),
                            "code": "dependency-removed",
                            "path": entry.key,
                            "message": f"{entry.key} points at {needed}, which is not selected",
                        }
                    )
        return chosen, extra

    def _execute(
        self,
        plan_id: str,
        output_parent: str,
        output_name: str | None,
        keys: list[str] | None,
        acknowledged: set[str],
        by: str = "agent",
    ) -> dict[str, Any]:
        plan = self._plan(plan_id)
        # the folder must lie inside the granted roots (OUTSIDE_ROOTS names them); the writers
        # then work below the resolved, link-free folder
        placed = place(self.service.access_roots(), output_parent)
        try:
            is_folder = stat.S_ISDIR(self.service.access_roots().stat(placed).st_mode)
        except OSError:
            is_folder = False
        if not is_folder:
            raise pvf_error(
                "INVALID_PATH", f"outputParent {output_parent!r} must be an existing absolute folder"
            )
        final = placed.path / plan.target_name(output_name)
        chosen, extra_warnings = self._chosen(plan, keys)
        if not chosen:
            raise ServiceError(
                "NOTHING_TO_EXPORT", "no entry was selected", hint="Select entries from the preview."
            )
        warnings = plan.output.warnings + extra_warnings
        missing = [w for w in warnings if w["warningId"] not in acknowledged]
        if missing:
            raise ServiceError(
                "WARNINGS_NOT_ACKNOWLEDGED",
                f"{len(missing)} warnings were not acknowledged",
                hint="Read them, then pass their warningIds in acknowledgedWarningIds.",
                warnings=missing[:100],
            )
        service = self.service
        with service._state:
            self._check_fresh(plan)
        written = rebuild_meta(plan.output, chosen, plan.fmt)
        with service.begin_write("export", plan.workspace_id, plan.revision):
            files = self._publish(plan, final, written)
        service.plans.complete("export", plan_id, by, plan.revision)
        return {
            "ok": True,
            "planId": plan_id,
            "format": plan.fmt,
            "outputPath": str(final),
            "files": files,
            "bytes": sum(len(e.data) for e in written),
            "dependencies": sum(len(e.depends_on) for e in chosen),
            "sourceRevision": plan.revision,
            "warnings": [w["warningId"] for w in warnings],
            "skippedDeletes": len(plan.output.skipped_deletes),
            "published": True,
        }

    @staticmethod
    def _publish(plan: ExportPlan, final: Path, entries: list[OutputEntry]) -> int:
        return publish_package(plan.fmt, final, entries, target_exists_hint=_TARGET_EXISTS_HINT)
