"""The state every pvf workbench operation shares: the open workspace, its checks and who holds it.

``ServiceCore`` owns the locks, the request ledger, the task manager and the plan registry; the
identity checks (``_require_workspace``, ``_check_revision``, ``_check_identity``), the occupancy
rules (``begin_write``, ``_check_occupancy``) and the edits that go through them. The lifecycle,
reading and records mixins build on it, and ``PvfService`` puts them together.
"""

from __future__ import annotations

import contextlib
import hashlib
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar

from moddesk.kit.cursor import CursorCodec
from moddesk.kit.errors import ServiceError
from moddesk.kit.ledger import LOCAL_SCOPE, RequestLedger
from moddesk.kit.plans import PlanRegistry, plan_outcome
from moddesk.kit.roots import GrantedRoot, Roots, grant
from moddesk.kit.tasks import TaskManager
from moddesk.pvf.errors import pvf_error
from moddesk.pvf.workbench.history import History
from moddesk.pvf.workbench.search import normalize_path
from moddesk.pvf.workbench.workspace import DraftRegistry, Workspace

T = TypeVar("T")
# Plan kinds that occupy the workspace, with the code that names them (scripts and imports
# share PLAN_PENDING, exports have their own, as the seed says).
BLOCKING_PLAN_KINDS: dict[str, str] = {
    "script": "PLAN_PENDING",
    "import": "PLAN_PENDING",
    "mod": "PLAN_PENDING",
    "export": "EXPORT_PLAN_PENDING",
}


class ServiceCore:
    """The shared state and checks; thread-safe (``_state`` guards the workspace slot)."""

    def _init_core(
        self,
        tasks: TaskManager | None,
        ledger: RequestLedger | None,
        plans: PlanRegistry | None,
        drafts: DraftRegistry | None,
    ) -> None:
        self.tasks = tasks or TaskManager()
        self.ledger = ledger or RequestLedger()
        if self.ledger.forget_result is None:
            # a save/open handle whose task then met SOURCE_CHANGED/… is answered afresh on retry
            self.ledger.forget_result = self.tasks.failed_transiently
        self.plans = plans or PlanRegistry()
        self.drafts = drafts or DraftRegistry()
        self.cursors = CursorCodec()
        self.epoch = 1
        self.workspace: Workspace | None = None
        self.history: History | None = None
        self.version_status = "none"
        self._state = threading.RLock()
        self._lifecycle = threading.Lock()
        self._lifecycle_task: str | None = None
        self._writers: dict[str, str] = {}
        self.listeners: list[Callable[[str, dict[str, Any]], None]] = []
        self._shared: dict[str, Any] = {}
        # None: the person's own process (CLI, library) with no boundary; a served workbench
        # always has roots (moddesk.pvf.workbench.roots): agents reach nothing else
        self.roots: Roots | None = None
        self._archive_roots: dict[str, GrantedRoot] = {}

    # ------------------------------------------------------------------ granted roots

    def access_roots(self) -> Roots:
        """What agent-named local paths may reach: the granted roots plus the open archive's folder."""
        if self.roots is None:
            return Roots.unbounded()
        ws = self.workspace
        if ws is None or ws.source_path is None:
            return self.roots
        folder = str(ws.source_path.parent)
        root = self._archive_roots.get(folder)
        if root is None:
            try:
                root = grant(folder, "folder of the open archive")
            except ServiceError:
                return self.roots  # the folder vanished: only the granted roots remain
            self._archive_roots = {folder: root}
        return self.roots.with_roots([root])

    # ------------------------------------------------------------------ events and tasks

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
        """Phase, progress, logs and the final result or error of any task.

        A task that made a plan (import/export/MOD prepare) also says what became of that plan:
        ``planState``, ``appliedByPerson`` / ``discardedByPerson`` and ``resultingRevision``.
        """
        status = self.tasks.status(task_id, log_cursor=log_cursor, log_limit=log_limit)
        result = status.get("result")
        if isinstance(result, dict) and isinstance(result.get("planId"), str):
            status.update(plan_outcome(self.plans.outcome(result["planId"])))
        return status

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

    def _require_entry(self, ws: Workspace, path: str, expected_revision: int | None) -> tuple[str, int]:
        """(normalised path, revision) of an existing entry of ``ws``; call it holding ``ws.lock``."""
        check_open(ws)
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
        return name, revision

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


def _digest(value: str | bytes | None) -> str | None:
    if value is None:
        return None
    data = value.encode("utf-8") if isinstance(value, str) else value
    return ("t:" if isinstance(value, str) else "b:") + hashlib.sha256(data).hexdigest()


def check_open(ws: Workspace) -> None:
    """STALE_WORKSPACE when ``ws`` was closed or switched after the caller looked it up."""
    if ws.closed:
        raise pvf_error("STALE_WORKSPACE", "the workspace was closed", field="workspaceId")
