"""Script runs, plans and applies for the workbench (the ``pvf_script_*`` operations).

A run reads a frozen snapshot of the workspace taken at its start revision, in a worker process;
its change set becomes one pending ``script`` plan (kit plans: one per kind, TTL). Apply checks
that the workspace is still the one and at the revision the run saw (``STALE_PLAN``), the
caller's ``expectedRevision`` (``STALE_WORKSPACE``), the chosen keys and their dependencies, and
then writes every chosen change in one revision step — or nothing.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import numpy.typing as npt

from moddesk.kit.errors import ServiceError, register_codes
from moddesk.kit.ledger import LOCAL_SCOPE
from moddesk.kit.memory import return_freed_memory
from moddesk.kit.plans import plan_outcome
from moddesk.kit.tasks import TaskContext
from moddesk.pvf.errors import pvf_error
from moddesk.pvf.format.bulk import BulkRenderer
from moddesk.pvf.format.tokens import Family, is_classic_script
from moddesk.pvf.scripting.help import topic
from moddesk.pvf.scripting.helpzh import topic_zh
from moddesk.pvf.scripting.plan import PlannedChange, build_plan, select
from moddesk.pvf.scripting.runtime import (
    ScriptLimits,
    ScriptOutcome,
    WorkerPool,
    check_source,
    run_script,
    validate_source,
)
from moddesk.pvf.workbench.occupancy import editors_prepared, ensure_free_for_write_plan

if TYPE_CHECKING:
    from moddesk.pvf.service import PvfService
    from moddesk.pvf.workbench.workspace import Workspace

register_codes(
    {
        "SCRIPT_FAILED": "The script stopped with an error; nothing was changed.",
        "SCRIPT_TOO_LARGE": "The script source is over 1 MiB.",
        "DEPENDENCY_MISSING": "A chosen change needs another change of the plan that was not chosen.",
        "TASK_NOT_OWNED": "The task was started by another caller.",
        "PLAN_TOO_LARGE": "One run's change set is over the plan limits (files changed, new bytes).",
    }
)

PREVIEW_BYTE_CAP = 48 * 1024
MAX_DIFF_LINES = 400
_TYPE_CODE = {"script": 1, "text": 3, "binary": 0}
_LINK = re.compile(r"^<?(\d+)::([^`>]+)>?$")

Caller = Literal["mcp", "cli", "ui"]


class WorkspaceSnapshot:
    """What a run reads: the workspace as it was at one revision (later edits are not seen)."""

    def __init__(self, ws: Workspace) -> None:
        with ws.lock:
            self.workspace_id = ws.workspace_id
            self.revision = ws.revision
            self._ws = ws
            #: the token family decides what escape numbers mean in parsed documents
            self.family = ws.archive.family.value
            changed, deleted = ws.changed_since_open()
            self._changed_text = {p: t for p, t in changed.items() if t is not None}
            self._changed_bytes = {
                p: ws.read_bytes(p) for p, t in changed.items() if t is None and p not in deleted
            }
            self._deleted = set(deleted)
            self._renderer: BulkRenderer | None = None  # for read_texts, made on first use
            self._rows: list[tuple[str, int, int]] = []
            listing = ws.listing()
            if listing is None:  # names that are not their own keys: path by path
                sizes = {e.path.lower(): e.size for e in ws.archive.entries}
                listing = [(path, ws.kind(path), sizes.get(path, 0)) for path in ws.paths()]
            for path, kind, size in listing:
                if path in self._changed_text:
                    size = len(self._changed_text[path].encode("utf-8"))
                elif path in self._changed_bytes:
                    size = len(self._changed_bytes[path])
                self._rows.append((path, _TYPE_CODE.get(kind, 0), size))

    def list_files(self) -> list[tuple[str, int, int]]:
        return self._rows

    def read_text(self, path: str) -> str:
        if path in self._changed_text:
            return self._changed_text[path]
        if path in self._deleted or path in self._changed_bytes:
            raise ServiceError("NOT_FOUND", f"{path} has no text (deleted or binary)")
        text = self._ws.base_text(path)
        if text is None:
            raise ServiceError("NOT_FOUND", f"{path} is a binary file; it has no text form")
        return text

    def read_texts(self, paths: list[str]) -> list[str | None]:
        """``read_text`` of many files at once, None where a file must be read on its own."""
        blob, spans, present = self.read_texts_utf8(paths)
        return [
            blob[int(a) : int(b)].decode("utf-8", "surrogatepass") if there else None
            for (a, b), there in zip(spans.tolist(), present.tolist(), strict=True)
        ]

    def read_texts_utf8(
        self, paths: list[str]
    ) -> tuple[bytes, npt.NDArray[np.uint64], npt.NDArray[np.bool_]]:
        """``read_text`` of many files at once as UTF-8 (surrogatepass) in one buffer: the buffer,
        each file's (start, end) in it, and whether it has a result there — not where a file must
        be read on its own (edited, deleted, binary, or what only the reference renders). The
        native core reads and renders the snapshot's unchanged entries natively
        (``Archive.rendered_at``, no Python object per file); the reference renders its unchanged
        scripts together (``format.bulk``); both byte-identical to ``read_text``."""
        keep = [
            k
            for k, path in enumerate(paths)
            if path not in self._changed_text
            and path not in self._deleted
            and path not in self._changed_bytes
        ]
        spans = np.zeros((len(paths), 2), dtype=np.uint64)
        present = np.zeros(len(paths), dtype=np.bool_)
        if not keep:
            return b"", spans, present
        native = self._ws.base_texts_utf8([paths[k] for k in keep])
        if native is not None:
            blob, got, there = native
            spans[keep] = got
            present[keep] = there
            return blob, spans, present
        rows: list[int] = []
        names: list[str] = []
        datas: list[bytes] = []
        classic = self._ws.archive.family is Family.CLASSIC
        with self._ws.lock:  # the archive is not thread-safe (the index reads it too)
            for row in keep:
                path = paths[row]
                try:
                    data = self._ws.base_bytes(path)
                except KeyError:
                    continue
                # what Archive.render calls a script: the B0 D0 magic (classic), the data type (NKPI)
                if is_classic_script(data) if classic else self._ws.base_kind(path) == "script":
                    rows.append(row)
                    names.append(path)
                    datas.append(data)
            if not rows:
                return b"", spans, present
            if self._renderer is None:
                archive = self._ws.archive
                self._renderer = BulkRenderer(archive.family, archive.strings, links=archive.resolve_link)
            rendered = self._renderer.render_chunk(names, datas)
        at = 0
        for row, text in zip(rows, rendered, strict=True):
            if text is not None:
                spans[row] = (at, at + len(text))
                present[row] = True
                at += len(text)
        return b"".join(t for t in rendered if t is not None), spans, present

    def done_reading(self) -> None:
        """The run is over: what the bulk reads kept for the next batch can go."""
        with self._ws.lock:
            self._ws.archive.drop_cached_chunks()

    def original_text(self, path: str) -> str | None:
        """Text as of the snapshot, None for binary or absent (for diffs)."""
        try:
            return self.read_text(path)
        except (ServiceError, KeyError):
            return None

    def read_bytes(self, path: str) -> bytes:
        if path in self._changed_bytes:
            return self._changed_bytes[path]
        return self._ws.read_bytes(path)

    def ori_str(self, link: str) -> str | None:
        match = _LINK.match(link.strip())
        if match is None:
            return None
        with self._ws.lock:
            # the archive resolves string links through n_string.lst and its .str files
            return self._ws.archive.resolve_link(int(match.group(1)), match.group(2))

    def fileset(self, name: str) -> list[str] | None:
        return None  # filesets live in the desktop app's configuration; moddesk keeps none yet


@dataclass
class ScriptPlan:
    """The payload of a pending script plan."""

    workspace_id: str
    base_revision: int
    changes: list[PlannedChange]
    filesets: dict[str, list[str]]
    snapshot: WorkspaceSnapshot
    label: str
    task_id: str

    def counts(self) -> dict[str, int]:
        out = {"add": 0, "modify": 0, "delete": 0}
        for change in self.changes:
            out[change.kind] += 1
        return out


@dataclass
class _Run:
    scope: str
    label: str
    plan_id: str | None = None
    diagnostics: list[dict[str, Any]] = field(default_factory=list)
    outcome: str | None = None


class ScriptService:
    """The ``pvf_script_*`` operations over a ``PvfService`` (shares its tasks, plans and ledger)."""

    def __init__(self, service: PvfService, limits: ScriptLimits | None = None) -> None:
        self.service = service
        self.limits = limits or ScriptLimits()
        self.pool = WorkerPool()
        self._runs: dict[str, _Run] = {}
        self._lock = threading.Lock()

    def close(self) -> None:
        """Stop the idle worker (runs in progress are ended by their tasks)."""
        self.pool.close()

    # ------------------------------------------------------------------ docs and syntax
    def help(self, name: str | None = None, lang: str = "en") -> dict[str, Any]:
        """A help topic (the list without ``name``); ``lang="zh"`` for the person's page."""
        return {"ok": True, **(topic_zh(name) if lang == "zh" else topic(name))}

    def validate(self, source: str) -> dict[str, Any]:
        diagnostics = validate_source(source)
        return {"ok": True, "valid": not diagnostics, "diagnostics": diagnostics}

    # ------------------------------------------------------------------ run
    def run(
        self,
        workspace_id: str,
        expected_revision: int,
        source: str,
        label: str = "",
        request_id: str | None = None,
        scope: str = LOCAL_SCOPE,
    ) -> dict[str, Any]:
        """Start a run on the current revision; returns its taskId at once."""
        check_source(source)
        params = {"op": "script_run", "workspaceId": workspace_id, "rev": expected_revision, "source": source}
        return self.service.ledger.run(
            scope,
            request_id,
            params,
            lambda: self._start(workspace_id, expected_revision, source, label, scope),
        )

    def _start(
        self, workspace_id: str, expected_revision: int, source: str, label: str, scope: str
    ) -> dict[str, Any]:
        service = self.service
        with service._state:
            ws = service._require_workspace(workspace_id)
            service._check_revision(ws, expected_revision)
            ensure_free_for_write_plan(service)
            snapshot = WorkspaceSnapshot(ws)
            run = _Run(scope=scope, label=label)
            task_id = service.tasks.start("script", lambda ctx: self._execute(ctx, source, snapshot, run))
            with self._lock:
                self._runs[task_id] = run
        return {"ok": True, "taskId": task_id, "workspaceId": workspace_id, "revision": snapshot.revision}

    def _execute(
        self, ctx: TaskContext, source: str, snapshot: WorkspaceSnapshot, run: _Run
    ) -> dict[str, Any]:
        ctx.phase("running")
        try:
            outcome = run_script(
                source,
                snapshot,
                self.limits,
                on_log=ctx.log,
                on_progress=lambda done, total, message: ctx.progress(int(done), int(total), message),
                cancelled=lambda: ctx.cancelled,
                pool=self.pool,
            )
        finally:
            snapshot.done_reading()
        run.outcome = outcome.state
        if outcome.logs_dropped:
            # the worker dropped them: count each one, so logsDropped is exact
            ctx.count_dropped(outcome.logs_dropped)
            ctx.log(f"[{outcome.logs_dropped} log lines dropped: the log limit was reached]")
        if outcome.state == "cancelled":
            ctx.check_cancelled()
        if outcome.state != "succeeded":
            run.diagnostics = [outcome.error] if outcome.error else []
            raise self._failure(outcome)
        ctx.phase("planning")
        return self._make_plan(ctx, outcome, snapshot, run)

    @staticmethod
    def _failure(outcome: ScriptOutcome) -> ServiceError:
        error = outcome.error or {}
        where = f" at line {error['line']}" if error.get("line") else ""
        if str(error.get("message", "")).find("PLAN_TOO_LARGE:") >= 0:
            return ServiceError(
                "PLAN_TOO_LARGE",
                f"{error['message'].split('PLAN_TOO_LARGE: ', 1)[1]}{where}; no changes were kept",
                hint="Change fewer files (or smaller ones) per run, applying each plan before the next.",
                state=outcome.state,
                diagnostics=[error],
            )
        return ServiceError(
            "SCRIPT_FAILED",
            f"{error.get('message', outcome.state)}{where}; no changes were kept",
            hint="Fix the script (see diagnostics) and run it again.",
            state=outcome.state,
            diagnostics=[error] if error else [],
        )

    def _make_plan(
        self, ctx: TaskContext, outcome: ScriptOutcome, snapshot: WorkspaceSnapshot, run: _Run
    ) -> dict[str, Any]:
        result: dict[str, Any] = {
            "ok": True,
            "state": "succeeded",
            "seconds": round(outcome.seconds, 3),
            "scanned": outcome.scanned,
            "planId": None,
            "changes": {"add": 0, "modify": 0, "delete": 0},
            "filesetChanges": sorted(outcome.filesets),
        }
        if not outcome.changes and not outcome.filesets:
            return result  # a read-only query leaves no plan behind
        changes = build_plan(outcome.changes, snapshot.original_text)
        payload = ScriptPlan(
            workspace_id=snapshot.workspace_id,
            base_revision=snapshot.revision,
            changes=changes,
            filesets=outcome.filesets,
            snapshot=snapshot,
            label=run.label,
            task_id=ctx.task_id,
        )
        plan = self.service.plans.create("script", payload, owner=run.scope, source=run.label or ctx.task_id)
        run.plan_id = plan.plan_id
        result.update(
            planId=plan.plan_id,
            changes=payload.counts(),
            expiresInSeconds=plan.describe()["expiresInSeconds"],
        )
        return result

    # ------------------------------------------------------------------ status / cancel
    def status(self, task_id: str, log_cursor: str | None = None, log_limit: int = 100) -> dict[str, Any]:
        status = self.service.tasks.status(task_id, log_cursor=log_cursor, log_limit=log_limit)
        if status["kind"] != "script":
            raise ServiceError(
                "TASK_NOT_FOUND", f"{task_id} is not a script task", hint="Use pvf_task_status."
            )
        with self._lock:
            run = self._runs.get(task_id)
        status["planId"] = run.plan_id if run else None
        status["diagnostics"] = run.diagnostics if run else []
        if run is not None and run.plan_id:
            status.update(plan_outcome(self.service.plans.outcome(run.plan_id)))
        return {"ok": True, **status}

    def cancel(self, task_id: str, scope: str = LOCAL_SCOPE) -> dict[str, Any]:
        with self._lock:
            run = self._runs.get(task_id)
        if run is None:
            raise ServiceError(
                "TASK_NOT_FOUND", f"no script task {task_id}", hint="Check the taskId from pvf_script_run."
            )
        if run.scope != scope:
            raise ServiceError(
                "TASK_NOT_OWNED",
                f"task {task_id} was started by another caller",
                hint="You can only cancel the script runs you started.",
            )
        return {"ok": True, **self.service.tasks.cancel(task_id)}

    # ------------------------------------------------------------------ plans
    def _plan(self, plan_id: str) -> ScriptPlan:
        payload = self.service.plans.get("script", plan_id).payload
        assert isinstance(payload, ScriptPlan)
        return payload

    def preview(
        self,
        plan_id: str,
        path_filter: str = "",
        kind: str | None = None,
        cursor: str | None = None,
        limit: int = 20,
        byte_cap: int = PREVIEW_BYTE_CAP,
    ) -> dict[str, Any]:
        """One page of the plan's changes with their diffs, keys, dependencies and warnings."""
        plan = self._plan(plan_id)
        chosen = [
            c for c in plan.changes if path_filter.lower() in c.path and (kind is None or c.kind == kind)
        ]
        query = {"plan": plan_id, "filter": path_filter, "kind": kind, "limit": limit}
        start = 0 if cursor is None else int(self.service.cursors.decode(cursor, query, plan.base_revision))
        limit = max(1, min(limit, 100))
        items: list[dict[str, Any]] = []
        used = 0
        truncated = False
        index = start
        for change in chosen[start : start + limit]:
            diff = change.diff()
            cut = len(diff) > MAX_DIFF_LINES
            item = {**change.summary(), "diff": "\n".join(diff[:MAX_DIFF_LINES]), "diffTruncated": cut}
            size = len(item["diff"].encode("utf-8")) + 200
            if items and used + size > byte_cap:
                truncated = True
                break
            items.append(item)
            used += size
            index += 1
        more = index < len(chosen)
        return {
            "ok": True,
            "planId": plan_id,
            "baseRevision": plan.base_revision,
            "total": len(chosen),
            "counts": plan.counts(),
            "filesetChanges": sorted(plan.filesets),
            "items": items,
            "nextCursor": self.service.cursors.encode(query, index, plan.base_revision) if more else None,
            "truncated": truncated,
        }

    def discard(self, plan_id: str, by: str = "agent") -> dict[str, Any]:
        ws = self.service.workspace
        self.service.plans.discard("script", plan_id, by, ws.revision if ws is not None else None)
        return_freed_memory()  # a big plan's texts go back to the OS, not only to Python's heap
        return {"ok": True, "planId": plan_id, "discarded": True}

    def apply(
        self,
        plan_id: str,
        expected_revision: int,
        change_keys: list[str],
        request_id: str | None = None,
        scope: str = LOCAL_SCOPE,
        caller: Caller = "mcp",
    ) -> dict[str, Any]:
        """Apply the chosen changes all together (or none), in one revision step."""
        params = {
            "op": "script_apply",
            "plan": plan_id,
            "rev": expected_revision,
            "keys": sorted(change_keys),
        }
        return self.service.ledger.run(
            scope, request_id, params, lambda: self._apply(plan_id, expected_revision, change_keys, caller)
        )

    def _apply(
        self, plan_id: str, expected_revision: int, change_keys: list[str], caller: Caller
    ) -> dict[str, Any]:
        plan = self._plan(plan_id)
        if plan.filesets and caller == "mcp":
            raise pvf_error(
                "UNSUPPORTED_CHANGE",
                f"the plan changes filesets ({', '.join(sorted(plan.filesets))}), which live in the user's "
                "configuration, not in the archive; MCP cannot apply them",
                planId=plan_id,
            )
        if not change_keys:
            raise ServiceError(
                "INVALID_ARGUMENT", "no changeKeys were chosen", hint="Pass the keys from the preview."
            )
        chosen = select(plan.changes, change_keys)
        service = self.service
        with (
            editors_prepared(service, "script-apply"),
            service.begin_write("script-apply", plan.workspace_id, expected_revision) as ws,
        ):
            if ws.revision != plan.base_revision:
                raise pvf_error(
                    "STALE_PLAN",
                    f"the workspace moved from revision {plan.base_revision} to {ws.revision} since the run",
                    planId=plan_id,
                    revision=ws.revision,
                )
            writes: dict[str, str | bytes | None] = {}
            for change in chosen:
                if change.kind == "delete":
                    writes[change.path] = None
                elif change.text is not None:
                    writes[change.path] = change.text
                else:
                    assert change.copy_from is not None
                    writes[change.path] = plan.snapshot.read_bytes(change.copy_from)
            revision = ws.apply(writes)
        service.plans.complete("script", plan_id, "person" if caller in ("ui", "cli") else "agent", revision)
        service._emit(
            "archive:changed", {"workspaceId": plan.workspace_id, "revision": revision, "source": "script"}
        )
        counts = {"add": 0, "modify": 0, "delete": 0}
        for change in chosen:
            counts[change.kind] += 1
        return {
            "ok": True,
            "planId": plan_id,
            "workspaceId": plan.workspace_id,
            "revision": revision,
            "applied": counts,
            "skipped": len(plan.changes) - len(chosen),
        }
