"""The pvf workbench facade: one instance per process, shared by MCP, CLI and the web page.

Lifecycle (open / close / save / save_as) runs as tasks under one mutual-exclusion lock; every
mutating call goes through the request ledger; reads check the workspace identity and revision;
later features (scripts, import, export) plug into the same occupancy checks through
``begin_write`` and the shared ``plans`` registry.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar

from moddesk import __version__
from moddesk.kit.cursor import CursorCodec
from moddesk.kit.errors import ServiceError
from moddesk.kit.files import FileIdentity, atomic_write_bytes, atomic_writer, publish_no_overwrite
from moddesk.kit.ledger import LOCAL_SCOPE, RequestLedger
from moddesk.kit.plans import PlanRegistry
from moddesk.kit.tasks import TaskContext, TaskManager
from moddesk.pvf.annotations import AnnotationDocs, parse_user_texts, user_rule_sources
from moddesk.pvf.archive import PvfFormatError
from moddesk.pvf.errors import pvf_error
from moddesk.pvf.history import History
from moddesk.pvf.search import (
    DEFAULT_BYTE_CAP,
    DEFAULT_LIMIT,
    ContentIndex,
    Searcher,
    SearchMode,
    SearchQuery,
    normalize_path,
)
from moddesk.pvf.workspace import BASE, DraftRegistry, Workspace, describe_binary

DirtyPolicy = Literal["reject", "save", "discard"]
T = TypeVar("T")
CAPABILITY_VERSION = "pvf-1"
# Plan kinds that occupy the workspace, with the code that names them (scripts and imports
# share PLAN_PENDING, exports have their own, as the seed says).
BLOCKING_PLAN_KINDS: dict[str, str] = {
    "script": "PLAN_PENDING",
    "import": "PLAN_PENDING",
    "export": "EXPORT_PLAN_PENDING",
}
READ_BYTE_CAP = 64 * 1024
MAX_READ_LINES = 2000
INDEX_WAIT_SECONDS = 2.0
INDEX_CACHE_KEEP = 4


@dataclass
class _IndexState:
    """The content index of one workspace, or the task building it."""

    workspace_id: str
    task_id: str
    index: ContentIndex | None = None
    error: ServiceError | None = None


class PvfService:
    """Everything the workbench can do; thread-safe; the only implementation of each operation."""

    def __init__(
        self,
        *,
        tasks: TaskManager | None = None,
        ledger: RequestLedger | None = None,
        plans: PlanRegistry | None = None,
        drafts: DraftRegistry | None = None,
        index_wait: float = INDEX_WAIT_SECONDS,
        rules_dir: Path | None = None,
        index_cache: Path | None = None,
    ) -> None:
        self.tasks = tasks or TaskManager()
        self.ledger = ledger or RequestLedger()
        self.plans = plans or PlanRegistry()
        self.drafts = drafts or DraftRegistry()
        self.cursors = CursorCodec()
        self.index_wait = index_wait
        self.index_cache = index_cache
        self.epoch = 1
        self.workspace: Workspace | None = None
        self.history: History | None = None
        self.version_status = "none"
        self._state = threading.RLock()
        self._lifecycle = threading.Lock()
        self._lifecycle_task: str | None = None
        self._writers: dict[str, str] = {}
        self._index: _IndexState | None = None
        self.listeners: list[Callable[[str, dict[str, Any]], None]] = []
        self.annotations, self.annotation_status = _load_annotations(rules_dir)
        self._shared: dict[str, Any] = {}

    # ------------------------------------------------------------------ info and events

    def info(self) -> dict[str, Any]:
        """The workspace as a caller must know it before anything else."""
        with self._state:
            ws = self.workspace
            base: dict[str, Any] = {
                "open": ws is not None,
                "workspaceEpoch": self.epoch,
                "workspaceId": None,
                "sourcePath": None,
                "format": None,
                "revision": None,
                "fileCount": None,
                "sourceDirty": False,
                "indexStatus": "none",
                "indexTaskId": None,
                "versionStatus": self.version_status,
                "annotationStatus": self.annotation_status,
                "drafts": self.drafts.snapshot(),
                "runningTasks": self._running_tasks(),
                "lifecycleTask": self._lifecycle_task,
                "capabilityVersion": CAPABILITY_VERSION,
                "serverVersion": __version__,
            }
            if ws is None:
                return base
            base.update(
                workspaceId=ws.workspace_id,
                sourcePath=str(ws.source_path) if ws.source_path else None,
                format=ws.format,
                revision=ws.revision,
                fileCount=ws.file_count,
                sourceDirty=ws.dirty,
                indexStatus=self._index_status(),
                indexTaskId=self._index.task_id if self._index is not None else None,
            )
            return base

    def shared(self, name: str, factory: Callable[[], T]) -> T:
        """The one instance of a feature facade (scripts, imports, exports) every entry point uses."""
        with self._state:
            if name not in self._shared:
                self._shared[name] = factory()
            value: T = self._shared[name]
            return value

    def _emit(self, event: str, payload: dict[str, Any]) -> None:
        for listener in list(self.listeners):
            listener(event, payload)

    def _running_tasks(self) -> list[dict[str, Any]]:
        out = []
        for task_id in self.tasks.active():
            status = self.tasks.status(task_id, log_limit=1)
            out.append({"taskId": task_id, "kind": status["kind"], "phase": status["phase"]})
        return out

    def task_status(self, task_id: str, log_cursor: str | None = None, log_limit: int = 50) -> dict[str, Any]:
        """Phase, progress, logs and the final result or error of any task."""
        return self.tasks.status(task_id, log_cursor=log_cursor, log_limit=log_limit)

    # ------------------------------------------------------------------ identity checks

    def _require_workspace(self, workspace_id: str | None) -> Workspace:
        ws = self.workspace
        if ws is None:
            raise pvf_error("NO_WORKSPACE", "no archive is open", workspaceEpoch=self.epoch)
        if workspace_id != ws.workspace_id:
            raise pvf_error(
                "STALE_WORKSPACE",
                f"workspace {workspace_id!r} is not the open one",
                field="workspaceId",
                workspaceId=ws.workspace_id,
                revision=ws.revision,
                workspaceEpoch=self.epoch,
            )
        return ws

    def _check_revision(self, ws: Workspace, expected: int | None) -> None:
        if expected is not None and expected != ws.revision:
            raise pvf_error(
                "STALE_WORKSPACE",
                f"the workspace is at revision {ws.revision}, not {expected}",
                field="revision",
                workspaceId=ws.workspace_id,
                revision=ws.revision,
            )

    def _check_identity(
        self, workspace_id: str | None, expected_revision: int | None, expected_epoch: int | None = None
    ) -> Workspace | None:
        """Epoch (if given), then id and revision of the open workspace (None when empty)."""
        if expected_epoch is not None and expected_epoch != self.epoch:
            raise pvf_error(
                "STALE_WORKSPACE",
                f"the workspace epoch is {self.epoch}, not {expected_epoch}",
                field="workspaceEpoch",
                workspaceEpoch=self.epoch,
            )
        if self.workspace is None:
            if workspace_id is not None:
                raise pvf_error(
                    "STALE_WORKSPACE",
                    f"workspace {workspace_id!r} is closed",
                    field="workspaceId",
                    workspaceEpoch=self.epoch,
                )
            return None
        ws = self._require_workspace(workspace_id)
        if expected_revision is None:
            raise pvf_error(
                "STALE_WORKSPACE",
                "expectedRevision is required while an archive is open",
                field="revision",
                workspaceId=ws.workspace_id,
                revision=ws.revision,
            )
        self._check_revision(ws, expected_revision)
        return ws

    # ------------------------------------------------------------------ occupancy

    @contextlib.contextmanager
    def begin_write(self, kind: str, workspace_id: str, expected_revision: int | None) -> Iterator[Workspace]:
        """Hold the workspace for a write (script apply, import apply, an edit).

        Refused while a lifecycle operation runs; lifecycle operations refuse while it is held.
        """
        token = f"{kind}-{time.monotonic_ns()}"
        with self._state:
            if self._lifecycle_task is not None:
                raise pvf_error(
                    "LIFECYCLE_BUSY", "an open/close/save is running", taskId=self._lifecycle_task
                )
            ws = self._require_workspace(workspace_id)
            self._check_revision(ws, expected_revision)
            self._writers[token] = kind
        try:
            yield ws
        finally:
            with self._state:
                self._writers.pop(token, None)

    def _check_occupancy(self) -> None:
        if self._writers:
            raise pvf_error(
                "TASK_BUSY", f"a {next(iter(self._writers.values()))} is writing to the workspace"
            )
        busy = [t for t in self.tasks.active() if self.tasks.status(t, log_limit=1)["kind"] in ("script",)]
        if busy:
            raise pvf_error("TASK_BUSY", "a script task is running", taskId=busy[0])
        for kind, code in BLOCKING_PLAN_KINDS.items():
            plan = self.plans.pending(kind)
            if plan is not None:
                raise pvf_error(code, f"a {kind} plan is pending", pendingPlan=plan.describe())

    # ------------------------------------------------------------------ edits (for scripts / import / UI)

    def apply_changes(
        self,
        workspace_id: str,
        expected_revision: int,
        changes: Mapping[str, str | bytes | None],
        request_id: str | None = None,
        source: str = "api",
        scope: str = LOCAL_SCOPE,
    ) -> dict[str, Any]:
        """Apply path → text/bytes/None (delete) changes to the overlay in one revision step."""

        def work() -> dict[str, Any]:
            with self.begin_write("edit", workspace_id, expected_revision) as ws:
                revision = ws.apply(changes)
            self._emit(
                "archive:changed", {"workspaceId": workspace_id, "revision": revision, "source": source}
            )
            return {"ok": True, "workspaceId": workspace_id, "revision": revision, "changed": len(changes)}

        params = {
            "op": "apply",
            "workspaceId": workspace_id,
            "expectedRevision": expected_revision,
            "changes": {p: _digest(v) for p, v in changes.items()},
        }
        return self.ledger.run(scope, request_id, params, work)

    # ------------------------------------------------------------------ lifecycle

    def _start_lifecycle(self, kind: str, work: Callable[[TaskContext], dict[str, Any]]) -> dict[str, Any]:
        """Take the lifecycle lock and run ``work`` as a task that releases it when done."""
        if not self._lifecycle.acquire(blocking=False):
            raise pvf_error(
                "LIFECYCLE_BUSY", "another lifecycle operation is running", taskId=self._lifecycle_task
            )

        def run(ctx: TaskContext) -> dict[str, Any]:
            try:
                return work(ctx)
            finally:
                with self._state:
                    self._lifecycle_task = None
                self._lifecycle.release()

        with self._state:
            try:
                task_id = self.tasks.start(kind, run, cancellable=False)
            except BaseException:
                self._lifecycle.release()
                raise
            self._lifecycle_task = task_id
        return {"ok": True, "taskId": task_id, "kind": kind}

    def _prepare_ui(self, operation: str) -> str:
        """Ask every editor window to freeze and report drafts (UI_NOT_READY / UI_DRAFT_PENDING)."""
        return self.drafts.prepare(operation)

    def _resolve_dirty(self, ctx: TaskContext, ws: Workspace, policy: DirtyPolicy) -> dict[str, Any] | None:
        """Apply the dirty policy to the open workspace; returns the save result if it saved."""
        if not ws.dirty:
            return None
        if policy == "reject":
            raise pvf_error(
                "UNSAVED_CHANGES",
                "the open archive has unsaved changes",
                workspaceId=ws.workspace_id,
                revision=ws.revision,
            )
        if policy == "save":
            ctx.phase("saving previous")
            return self._save_now(ctx, ws)
        return None

    def open(
        self,
        path: str,
        expected_epoch: int,
        workspace_id: str | None = None,
        expected_revision: int | None = None,
        dirty_policy: DirtyPolicy = "reject",
        request_id: str | None = None,
        scope: str = LOCAL_SCOPE,
    ) -> dict[str, Any]:
        """Open (or switch to) the archive at ``path``; returns a task handle."""
        params = {
            "op": "open",
            "path": path,
            "expectedWorkspaceEpoch": expected_epoch,
            "workspaceId": workspace_id,
            "expectedRevision": expected_revision,
            "dirtyPolicy": dirty_policy,
        }

        def start() -> dict[str, Any]:
            target = _local_file(path)
            with self._state:
                self._check_identity(workspace_id, expected_revision, expected_epoch)
                self._check_occupancy()

            def work(ctx: TaskContext) -> dict[str, Any]:
                with self._state:
                    previous = self._check_identity(workspace_id, expected_revision, expected_epoch)
                    self._check_occupancy()
                prepared = None
                if previous is not None:
                    ctx.phase("prepare editors")
                    prepared = self._prepare_ui("open")
                try:
                    saved = None
                    if previous is not None:
                        saved = self._resolve_dirty(ctx, previous, dirty_policy)
                    ctx.phase("parse")
                    candidate = Workspace.open(
                        target, progress=lambda done: ctx.progress(done, None, "reading")
                    )
                    history, version_status = _attach_history(target, candidate)
                    ctx.phase("commit")
                    with self._state:
                        if self.workspace is not previous or (
                            previous is not None and previous.revision != expected_revision
                        ):
                            candidate.close()
                            if history is not None:
                                history.close()
                            raise pvf_error(
                                "STALE_WORKSPACE", "the workspace changed while opening", field="revision"
                            )
                        self._swap(candidate, history, version_status)
                        epoch = self.epoch
                finally:
                    if prepared is not None:
                        self.drafts.release(prepared)
                result = {
                    "ok": True,
                    "workspaceId": candidate.workspace_id,
                    "workspaceEpoch": epoch,
                    "revision": candidate.revision,
                    "sourcePath": str(candidate.source_path),
                    "format": candidate.format,
                    "fileCount": candidate.file_count,
                    "indexStatus": self._index_status(),
                    "versionStatus": version_status,
                    "previousSaved": saved,
                }
                self._emit("archive:opened", result)
                return result

            return self._start_lifecycle("open", work)

        return self.ledger.run(scope, request_id, params, start)

    def _swap(self, candidate: Workspace | None, history: History | None, version_status: str) -> None:
        """Replace the workspace (lock held); the old one, its index and its history go away."""
        old = self.workspace
        if old is not None:
            old.close()
        if self.history is not None:
            self.history.close()
        self.workspace, self.history, self.version_status = candidate, history, version_status
        self.epoch += 1
        self._index = None
        if candidate is not None:
            self._start_index(candidate)

    def close(
        self,
        workspace_id: str,
        expected_revision: int,
        dirty_policy: DirtyPolicy = "reject",
        request_id: str | None = None,
        scope: str = LOCAL_SCOPE,
    ) -> dict[str, Any]:
        """Close the open archive; returns a task handle."""
        params = {
            "op": "close",
            "workspaceId": workspace_id,
            "expectedRevision": expected_revision,
            "dirtyPolicy": dirty_policy,
        }

        def start() -> dict[str, Any]:
            with self._state:
                self._check_identity(workspace_id, expected_revision)
                self._check_occupancy()

            def work(ctx: TaskContext) -> dict[str, Any]:
                with self._state:
                    ws = self._check_identity(workspace_id, expected_revision)
                    self._check_occupancy()
                assert ws is not None
                ctx.phase("prepare editors")
                prepared = self._prepare_ui("close")
                try:
                    saved = self._resolve_dirty(ctx, ws, dirty_policy)
                    with self._state:
                        if self.workspace is not ws:
                            raise pvf_error("STALE_WORKSPACE", "the workspace changed while closing")
                        self._swap(None, None, "none")
                        epoch = self.epoch
                finally:
                    self.drafts.release(prepared)
                result = {
                    "ok": True,
                    "open": False,
                    "workspaceEpoch": epoch,
                    "closedWorkspaceId": workspace_id,
                    "previousSaved": saved,
                }
                self._emit("archive:closed", result)
                return result

            return self._start_lifecycle("close", work)

        return self.ledger.run(scope, request_id, params, start)

    def save(
        self,
        workspace_id: str,
        expected_revision: int,
        request_id: str | None = None,
        scope: str = LOCAL_SCOPE,
    ) -> dict[str, Any]:
        """Write the current revision to the source file; returns a task handle."""
        params = {"op": "save", "workspaceId": workspace_id, "expectedRevision": expected_revision}

        def start() -> dict[str, Any]:
            with self._state:
                self._check_identity(workspace_id, expected_revision)
                self._check_occupancy()

            def work(ctx: TaskContext) -> dict[str, Any]:
                with self._state:
                    ws = self._check_identity(workspace_id, expected_revision)
                    self._check_occupancy()
                assert ws is not None
                ctx.phase("prepare editors")
                prepared = self._prepare_ui("save")
                try:
                    return self._save_now(ctx, ws)
                finally:
                    self.drafts.release(prepared)

            return self._start_lifecycle("save", work)

        return self.ledger.run(scope, request_id, params, start)

    def _save_now(self, ctx: TaskContext, ws: Workspace) -> dict[str, Any]:
        """Atomic replace of the source with a backup of the old file; upkeep errors are warnings."""
        if ws.source_path is None:
            raise pvf_error("SAVE_AS_REQUIRED", "the workspace has no source file")
        source = ws.source_path
        ctx.phase("check source")
        current = _identity_or_none(source)
        if current is None or not _same_source(ws.source_identity, current):
            raise pvf_error(
                "SOURCE_CHANGED",
                f"{source} changed on disk since it was opened or last saved",
                expectedIdentity=ws.source_identity.to_dict(),
                currentIdentity=current.to_dict() if current else None,
            )
        revision = ws.revision
        backup = source.with_name(source.name + ".bak")
        ctx.phase("write")
        try:
            with atomic_writer(source) as handle:
                ws.write_to(handle, progress=lambda done, total: ctx.progress(done, total, "writing"))
                ctx.phase("replace")
                # re-check right before the rename: an outside write during serialisation wins
                now = FileIdentity.of(source, with_hash=False)
                if not _same_stat(current, now):
                    raise pvf_error(
                        "SOURCE_CHANGED",
                        f"{source} changed on disk while saving",
                        expectedIdentity=ws.source_identity.to_dict(),
                        currentIdentity=now.to_dict(),
                    )
                _backup(source, backup)
        except ServiceError:
            raise
        except OSError as exc:
            raise pvf_error("SAVE_FAILED", f"could not write {source}: {exc}", path=str(source)) from exc
        # the new file is on disk from here on: never report "not saved" after this line
        warnings: list[str] = []
        ctx.phase("upkeep")
        identity = ws.source_identity
        try:
            identity = FileIdentity.of(source)
            ws.mark_saved(identity, revision)
        except OSError as exc:
            warnings.append(f"the file was written but its new identity could not be read: {exc}")
        history = self.history
        if history is not None:
            try:
                changes, restores = ws.history_changes(history)
                commit = history.commit(changes, f"save revision {revision}", base_restores=restores)
                if identity.sha256:
                    history.mark_source(identity.sha256)
                if commit is not None:
                    ctx.log(f"history commit {commit.id}")
            except (ServiceError, OSError, sqlite3.Error) as exc:
                warnings.append(f"the file was written but the history was not updated: {exc}")
        result = {
            "ok": True,
            "writtenPath": str(source),
            "sourcePath": str(source),
            "savedRevision": revision,
            "revision": ws.revision,
            "sourceDirty": ws.dirty,
            "identity": identity.to_dict(),
            "backupPath": str(backup) if backup.exists() else None,
            "diskCommitted": True,
            "warnings": warnings,
        }
        self._emit("archive:saved", {"workspaceId": ws.workspace_id, **result})
        return result

    def save_as(
        self,
        workspace_id: str,
        expected_revision: int,
        path: str,
        overwrite: bool = False,
        target_identity: Mapping[str, Any] | None = None,
        request_id: str | None = None,
        scope: str = LOCAL_SCOPE,
    ) -> dict[str, Any]:
        """Write a copy of the current revision to ``path``; the source path and dirty state stay."""
        params = {
            "op": "save_as",
            "workspaceId": workspace_id,
            "expectedRevision": expected_revision,
            "path": path,
            "overwrite": overwrite,
            "targetIdentity": dict(target_identity) if target_identity else None,
        }

        def start() -> dict[str, Any]:
            target = _local_target(path)
            with self._state:
                ws0 = self._check_identity(workspace_id, expected_revision)
                self._check_occupancy()
            assert ws0 is not None
            _check_not_source(ws0, target)
            if overwrite and target_identity is None:
                raise ServiceError(
                    "INVALID_ARGUMENT",
                    "overwrite=true needs the targetIdentity you observed",
                    hint="Pass the targetIdentity from the TARGET_EXISTS error (currentIdentity here).",
                    currentIdentity=_identity_dict(target),
                )

            def work(ctx: TaskContext) -> dict[str, Any]:
                with self._state:
                    ws = self._check_identity(workspace_id, expected_revision)
                    self._check_occupancy()
                assert ws is not None
                ctx.phase("prepare editors")
                prepared = self._prepare_ui("save_as")
                try:
                    return self._save_copy(ctx, ws, target, overwrite, target_identity)
                finally:
                    self.drafts.release(prepared)

            return self._start_lifecycle("save_as", work)

        return self.ledger.run(scope, request_id, params, start)

    def _save_copy(
        self,
        ctx: TaskContext,
        ws: Workspace,
        target: Path,
        overwrite: bool,
        target_identity: Mapping[str, Any] | None,
    ) -> dict[str, Any]:
        _check_not_source(ws, target)
        revision = ws.revision
        ctx.phase("write")
        progress: Callable[[int, int], None] = lambda done, total: ctx.progress(done, total, "writing")  # noqa: E731
        try:
            if not overwrite:
                with _temp_sibling(target) as temp:
                    with open(temp, "wb") as handle:
                        ws.write_to(handle, progress=progress)
                        handle.flush()
                        os.fsync(handle.fileno())
                    ctx.phase("publish")
                    try:
                        publish_no_overwrite(temp, target)
                    except ServiceError as exc:
                        if exc.code == "TARGET_EXISTS":
                            raise pvf_error(
                                "TARGET_EXISTS",
                                f"{target} already exists; nothing was overwritten",
                                path=str(target),
                                targetIdentity=_identity_dict(target),
                            ) from exc
                        raise
            else:
                with atomic_writer(target) as handle:
                    ws.write_to(handle, progress=progress)
                    ctx.phase("publish")
                    current = _identity_dict(target)
                    if current is None or not _identity_matches(target_identity or {}, current):
                        raise pvf_error(
                            "TARGET_CHANGED",
                            f"{target} is not the file you observed",
                            path=str(target),
                            currentIdentity=current,
                        )
        except ServiceError:
            raise
        except OSError as exc:
            raise pvf_error("SAVE_FAILED", f"could not write {target}: {exc}", path=str(target)) from exc
        identity = FileIdentity.of(target)
        result = {
            "ok": True,
            "writtenPath": str(target),
            "sourcePath": str(ws.source_path) if ws.source_path else None,
            "snapshotRevision": revision,
            "revision": ws.revision,
            "sourceDirty": ws.dirty,
            "identity": identity.to_dict(),
        }
        self._emit("archive:copy-saved", {"workspaceId": ws.workspace_id, **result})
        return result

    # ------------------------------------------------------------------ index

    def _start_index(self, ws: Workspace) -> None:
        """Build the content index of ``ws`` in the background (lock held)."""

        def build(ctx: TaskContext) -> dict[str, Any]:
            started = time.perf_counter()
            ctx.phase("load cached index")
            index = self._load_cached_index(ws)
            cached = index is not None
            if index is None:
                ctx.phase("decode and index")
                total = ws.base_count
                index = ContentIndex.build(
                    ws.base_texts(),
                    progress=lambda done: ctx.progress(done, total, "indexing"),
                    check_cancelled=ctx.check_cancelled,
                )
            with self._state:
                state = self._index
                if state is not None and state.workspace_id == ws.workspace_id:
                    state.index = index  # an index of an older workspace is dropped here
            if not cached:
                ctx.phase("save index cache")
                self._save_cached_index(ws, index, ctx)
            return {
                "workspaceId": ws.workspace_id,
                "textFiles": len(index),
                "bytes": index.nbytes,
                "cached": cached,
                "seconds": round(time.perf_counter() - started, 3),
            }

        task_id = self.tasks.start("index", build)
        self._index = _IndexState(ws.workspace_id, task_id)

    def _cache_file(self, ws: Workspace) -> Path | None:
        if self.index_cache is None or not ws.base_sha256:
            return None
        return self.index_cache / f"{ws.base_sha256}.idx"

    def _load_cached_index(self, ws: Workspace) -> ContentIndex | None:
        """The index saved for exactly this archive content, if there is a sound one."""
        path = self._cache_file(ws)
        if path is None or not path.is_file():
            return None
        try:
            data = path.read_bytes()
        except OSError:
            return None
        return ContentIndex.from_cache(data, ws.base_sha256)

    def _save_cached_index(self, ws: Workspace, index: ContentIndex, ctx: TaskContext) -> None:
        """Keep the index for the next open of the same content; the newest few are kept."""
        path = self._cache_file(ws)
        if path is None:
            return
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_bytes(path, index.to_chunks(ws.base_sha256))
            cached = sorted(path.parent.glob("*.idx"), key=lambda p: p.stat().st_mtime, reverse=True)
            for old in cached[INDEX_CACHE_KEEP:]:
                old.unlink(missing_ok=True)
        except OSError as exc:
            ctx.log(f"the index cache was not written: {exc}")  # a cache, not data: searching works

    def _index_status(self) -> str:
        state = self._index
        if state is None:
            return "none"
        if state.index is not None:
            return "ready"
        status = self.tasks.status(state.task_id, log_limit=1)
        return "failed" if status["state"] in ("failed", "cancelled") else "building"

    def _ready_index(self, ws: Workspace) -> ContentIndex:
        with self._state:
            state = self._index
            if state is None or state.workspace_id != ws.workspace_id:
                self._start_index(ws)
                state = self._index
        assert state is not None
        if state.index is None:
            status = self.tasks.wait(state.task_id, self.index_wait)
            if state.index is None:
                if status["state"] in ("failed", "cancelled"):
                    with self._state:
                        self._start_index(ws)  # try again on the next call
                    raise pvf_error(
                        "NOT_READY",
                        "building the search index failed; it was restarted",
                        indexTaskId=state.task_id,
                        cause=status.get("error"),
                    )
                raise pvf_error(
                    "NOT_READY",
                    "the search index is still being built",
                    indexTaskId=state.task_id,
                    progress=status["progress"],
                )
        return state.index

    # ------------------------------------------------------------------ search and read

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
        index = self._ready_index(ws)
        with ws.lock:  # a consistent snapshot: the edited entries' texts at this revision
            revision = ws.revision
            changed, deleted = ws.changed_since_open()
        # every other entry still holds its (immutable) base text, so the scan runs unlocked
        # and edits made meanwhile do not wait for it nor leak into this page
        searcher = Searcher(index, changed, deleted, ws.base_text_or_none)
        try:
            page = searcher.page(spec, after, limit=limit, byte_cap=byte_cap)
        except PvfFormatError as exc:
            if exc.code == "CLOSED":  # the archive was closed or switched while this page ran
                raise pvf_error("STALE_WORKSPACE", "the workspace was closed during the search") from exc
            raise
        next_cursor = (
            self.cursors.encode(identity, list(page.next_position), revision) if page.next_position else None
        )
        return {
            "ok": True,
            "workspaceId": workspace_id,
            "revision": revision,
            "mode": mode,
            "hits": [h.to_dict() for h in page.hits],
            "nextCursor": next_cursor,
            "truncated": page.truncated,
            "truncatedReason": page.reason,
        }

    def read_file(
        self,
        workspace_id: str,
        path: str,
        start_line: int = 1,
        line_count: int | None = None,
        expected_revision: int | None = None,
        byte_cap: int = READ_BYTE_CAP,
    ) -> dict[str, Any]:
        """Text of one entry by line range (or a description of a binary entry)."""
        with self._state:
            ws = self._require_workspace(workspace_id)
        with ws.lock:
            _check_open(ws)
            self._check_revision(ws, expected_revision)
            revision = ws.revision
            name = normalize_path(path)
            if not ws.exists(name):
                raise ServiceError(
                    "NOT_FOUND",
                    f"no entry {path!r} in the archive",
                    hint="Search by path to find the exact archive path.",
                    path=path,
                    revision=revision,
                )
            text = ws.current_text_or_none(name)
            if text is None:
                data = ws.read_bytes(name)
                return {
                    "ok": True,
                    "path": name,
                    "revision": revision,
                    "binary": True,
                    **describe_binary(data),
                }
        lines = text.split("\n")
        start = max(1, start_line)
        count = min(line_count or MAX_READ_LINES, MAX_READ_LINES)
        chosen = lines[start - 1 : start - 1 + count]
        out: list[str] = []
        used = 0
        truncated = start - 1 + len(chosen) < len(lines)
        for line in chosen:
            size = len(line.encode("utf-8")) + 1
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
        }

    # ------------------------------------------------------------------ history

    def _require_history(self) -> History:
        if self.history is None:
            raise pvf_error(
                "HISTORY_NOT_ENABLED",
                "this archive has no history attached",
                versionStatus=self.version_status,
            )
        return self.history

    def history_init(self, workspace_id: str) -> dict[str, Any]:
        """Enable history for the open archive (its source file must be unchanged and saved)."""
        with self._state:
            ws = self._require_workspace(workspace_id)
            if ws.source_path is None:
                raise pvf_error("SAVE_AS_REQUIRED", "the workspace has no source file")
            if self.history is not None:
                raise pvf_error("HISTORY_EXISTS", "history is already enabled")
            current = _identity_or_none(ws.source_path)
            if current is None or not _same_source(ws.source_identity, current) or ws.saved_overlay_nonempty:
                raise pvf_error(
                    "SOURCE_CHANGED", "history starts from the file on disk: save or reopen first"
                )
            self.history = History.init(ws.source_path)
            ws.attach_history(self.history)
            self.version_status = "attached"
            return {"ok": True, "repo": str(self.history.repo), "versionStatus": self.version_status}

    def history_commit(self, workspace_id: str, message: str) -> dict[str, Any]:
        """Record the working changes (vs the last commit) as a commit."""
        with self._state:
            ws = self._require_workspace(workspace_id)
            history = self._require_history()
            changes, restores = ws.history_changes(history)
            commit = history.commit(changes, message, base_restores=restores)
        return {"ok": True, "commit": commit.to_dict() if commit else None}

    def history_log(self, limit: int = 50, offset: int = 0) -> dict[str, Any]:
        history = self._require_history()
        return {
            "ok": True,
            "head": history.head,
            "commits": [c.to_dict() for c in history.log(limit, offset)],
        }

    def history_diff(self, old: str | None, new: str | None) -> dict[str, Any]:
        history = self._require_history()
        a = history.get(old).id if old else None
        b = history.get(new).id if new else history.head
        return {"ok": True, "from": a, "to": b, "changes": [c.to_dict() for c in history.diff(a, b)]}

    def history_checkout(self, workspace_id: str, expected_revision: int, commit_id: str) -> dict[str, Any]:
        """Make the workspace hold the content of ``commit_id`` (in memory; save writes it)."""
        history = self._require_history()
        target = history.get(commit_id)
        with self.begin_write("checkout", workspace_id, expected_revision) as ws:
            revision = ws.checkout(history, history.state(target.id))
        return {"ok": True, "commit": target.id, "revision": revision, "sourceDirty": ws.dirty}

    def history_undo(self, workspace_id: str, expected_revision: int, commit_id: str) -> dict[str, Any]:
        """Commit the reverse of one change-set and make the workspace hold the result."""
        history = self._require_history()
        with self.begin_write("undo", workspace_id, expected_revision) as ws:
            if history.differs(*ws.history_changes(history)):
                raise pvf_error("UNSAVED_CHANGES", "commit or discard the working changes before undo")
            commit = history.undo(commit_id)
            revision = ws.checkout(history, history.state(history.head))
        return {"ok": True, "commit": commit.to_dict() if commit else None, "revision": revision}

    # ------------------------------------------------------------------ annotation docs (seed 000)

    def _annotation_context(self, workspace_id: str | None) -> tuple[str | None, str | None]:
        """(workspaceId, pvf version) of the open workspace; STALE_WORKSPACE for another id."""
        with self._state:
            ws = self.workspace
            if ws is None:
                return workspace_id, None
            if workspace_id is not None and workspace_id != ws.workspace_id:
                self._require_workspace(workspace_id)
            return ws.workspace_id, ws.format

    def annotation_search(self, workspace_id: str | None = None, **filters: Any) -> dict[str, Any]:
        """pvf_annotation_search: rule and field summaries with documentIds (no archive read)."""
        ws_id, version = self._annotation_context(workspace_id)
        return self.annotations.search(
            workspace_id=ws_id if workspace_id else None, current_version=version, **filters
        )

    def annotation_get(self, document_id: str, rules_revision: str, **options: Any) -> dict[str, Any]:
        """pvf_annotation_get: one definition with paged enum values and relations."""
        return self.annotations.get(document_id, rules_revision, **options)

    def annotation_explain(
        self, workspace_id: str, path: str, expected_revision: int | None = None, **options: Any
    ) -> dict[str, Any]:
        """pvf_annotation_explain: what the rules say about a real file of the open archive."""
        with self._state:
            ws = self._require_workspace(workspace_id)
        name = normalize_path(path)
        with ws.lock:  # the committed text and its revision, read together
            _check_open(ws)
            self._check_revision(ws, expected_revision)
            revision = ws.revision
            if not ws.exists(name):
                raise ServiceError(
                    "NOT_FOUND",
                    f"no entry {path!r} in the archive",
                    hint="Search by path to find the exact archive path.",
                    path=path,
                    revision=revision,
                )
            text = ws.current_text_or_none(name)
        if text is None:
            raise ServiceError(
                "INVALID_ARGUMENT",
                f"{name} is a binary entry",
                hint="Explain works on script and text files.",
            )
        return self.annotations.explain(
            name,
            text,
            workspace_id=workspace_id,
            revision=revision,
            pvf_version=ws.format,
            lookup=_WorkspaceLookup(ws),
            **options,
        )

    # ------------------------------------------------------------------ shutdown

    def shutdown(self, timeout: float = 60.0) -> None:
        """Wait for a lifecycle commit to finish (it cannot be cancelled), then drop everything."""
        if self._lifecycle.acquire(timeout=timeout):
            self._lifecycle.release()
        for task_id in self.tasks.active():
            with contextlib.suppress(ServiceError):
                self.tasks.cancel(task_id)
        with self._state:
            # facades first: they free what their pending plans hold (spilled import bytes, workers)
            for facade in self._shared.values():
                close = getattr(facade, "close", None)
                if callable(close):
                    close()
        self.plans.clear()
        with self._state:
            if self.workspace is not None:
                self.workspace.close()
            if self.history is not None:
                self.history.close()


# ---------------------------------------------------------------------- helpers


def _digest(value: str | bytes | None) -> str | None:
    import hashlib

    if value is None:
        return None
    data = value.encode("utf-8") if isinstance(value, str) else value
    return ("t:" if isinstance(value, str) else "b:") + hashlib.sha256(data).hexdigest()


def _check_open(ws: Workspace) -> None:
    """STALE_WORKSPACE when ``ws`` was closed or switched after the caller looked it up."""
    if ws.closed:
        raise pvf_error("STALE_WORKSPACE", "the workspace was closed", field="workspaceId")


def _local_file(path: str) -> Path:
    """An existing absolute local file path."""
    candidate = Path(path)
    if not candidate.is_absolute():
        raise pvf_error("INVALID_PATH", f"{path!r} is not an absolute path", path=path)
    if not candidate.is_file():
        raise pvf_error("OPEN_FAILED", f"{path} does not exist or is not a file", path=path)
    return candidate


def _local_target(path: str) -> Path:
    """An absolute path whose parent exists and which is not a directory."""
    candidate = Path(path)
    if not candidate.is_absolute():
        raise pvf_error("INVALID_PATH", f"{path!r} is not an absolute path", path=path)
    if not candidate.parent.is_dir():
        raise pvf_error("INVALID_PATH", f"the folder of {path} does not exist", path=path)
    if candidate.is_dir():
        raise pvf_error("INVALID_PATH", f"{path} is a directory", path=path)
    return candidate


def _check_not_source(ws: Workspace, target: Path) -> None:
    """SAME_AS_SOURCE for the same path, a symlink to it, or a hard link of it."""
    source = ws.source_path
    if source is None:
        return
    same = os.path.normcase(os.path.realpath(target)) == os.path.normcase(os.path.realpath(source))
    if not same and target.exists():
        with contextlib.suppress(OSError):
            same = os.path.samefile(target, source)
    if same:
        raise pvf_error("SAME_AS_SOURCE", f"{target} is the source archive", path=str(target))


def _identity_or_none(path: Path) -> FileIdentity | None:
    try:
        return FileIdentity.of(path)
    except FileNotFoundError:
        return None


def _identity_dict(path: Path) -> dict[str, Any] | None:
    identity = _identity_or_none(path)
    return identity.to_dict() if identity else None


def _same_source(known: FileIdentity, current: FileIdentity) -> bool:
    """Same file on disk with the same content (a touch alone is not a change)."""
    return known.same_file(current) and known.same_content(current)


def _same_stat(known: FileIdentity, current: FileIdentity) -> bool:
    return (known.device, known.inode, known.size, known.mtime_ns) == (
        current.device,
        current.inode,
        current.size,
        current.mtime_ns,
    )


def _identity_matches(expected: Mapping[str, Any], current: Mapping[str, Any]) -> bool:
    """The observed identity still describes the file (every field the caller sent agrees)."""
    keys = [k for k in ("device", "inode", "size", "mtimeNs", "sha256") if expected.get(k) is not None]
    return bool(keys) and all(expected[k] == current.get(k) for k in keys)


def _backup(source: Path, backup: Path) -> None:
    """Keep the file about to be replaced as ``<name>.bak`` (a hard link when possible: no copy)."""
    temp = backup.with_name(f".{backup.name}.moddesk-tmp-{os.getpid()}")
    with contextlib.suppress(FileNotFoundError):
        temp.unlink()
    try:
        os.link(source, temp)
    except OSError:
        import shutil

        shutil.copy2(source, temp)
    os.replace(temp, backup)


@contextlib.contextmanager
def _temp_sibling(target: Path) -> Iterator[Path]:
    temp = target.with_name(f".{target.name}.moddesk-tmp-{os.getpid()}-{time.monotonic_ns()}")
    try:
        yield temp
    finally:
        with contextlib.suppress(FileNotFoundError):
            temp.unlink()


class _WorkspaceLookup:
    """The annotation engine's ``ArchiveLookup`` over the workspace's current content."""

    def __init__(self, ws: Workspace) -> None:
        self._ws = ws

    def read_text(self, path: str) -> str | None:
        return self._ws.current_text_or_none(normalize_path(path))

    def exists(self, path: str) -> bool:
        return self._ws.exists(normalize_path(path))


def _load_annotations(rules_dir: Path | None) -> tuple[AnnotationDocs, str]:
    """The annotation docs with the user's rule files; invalid user rules fall back to the builtin."""
    if rules_dir is None:
        return AnnotationDocs(), "builtin"
    try:
        return AnnotationDocs(parse_user_texts(user_rule_sources(rules_dir))), f"builtin + user ({rules_dir})"
    except ServiceError as exc:
        return AnnotationDocs(), f"builtin only: user rules rejected ({exc.code}: {exc.message})"


def _attach_history(target: Path, candidate: Workspace) -> tuple[History | None, str]:
    """Attach the archive's history if it has one; a refusal leaves the archive usable."""
    if not History.exists(target):
        return None, "none"
    sha = candidate.source_identity.sha256 or ""
    try:
        history = History.attach(target, sha)
    except ServiceError as exc:
        return None, f"detached: {exc.code}"
    candidate.attach_history(history)
    return history, "attached"


__all__ = ["BASE", "PvfService"]
