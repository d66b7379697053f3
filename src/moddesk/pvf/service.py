"""The pvf workbench facade: one instance per process, shared by MCP, CLI and the web page.

``PvfService`` puts together the parts that live in their own modules:

- ``core``: the workspace slot, identity checks, occupancy (``begin_write``), edits, events;
- ``indexing``: the background content index and its on-disk cache;
- ``lifecycle``: open / close / save / save_as as tasks under one lock, and the file-identity helpers;
- ``reading``: search and read_file;
- ``records``: the archive's history and the annotation docs;
- ``browse``: folder-by-folder listings for the web page's tree.

Every mutating call goes through the request ledger; reads check the workspace identity and
revision; later features (scripts, import, export) plug into the same occupancy checks through
``begin_write`` and the shared ``plans`` registry.
"""

from __future__ import annotations

import contextlib
import time
from pathlib import Path
from typing import Any

from moddesk import __version__
from moddesk.kit.errors import ServiceError
from moddesk.kit.ledger import RequestLedger
from moddesk.kit.plans import PlanRegistry
from moddesk.kit.roots import Roots
from moddesk.kit.tasks import TaskManager
from moddesk.pvf.workbench.browse import BrowseOps
from moddesk.pvf.workbench.core import BLOCKING_PLAN_KINDS
from moddesk.pvf.workbench.indexing import INDEX_CACHE_KEEP, INDEX_WAIT_SECONDS
from moddesk.pvf.workbench.lifecycle import DirtyPolicy, LifecycleOps
from moddesk.pvf.workbench.reading import MAX_READ_LINES, READ_BYTE_CAP, ReadOps
from moddesk.pvf.workbench.records import RecordsOps
from moddesk.pvf.workbench.workspace import BASE, DraftRegistry

CAPABILITY_VERSION = "pvf-1"
#: How long ``shutdown`` waits for cancelled background tasks (index build, exports) to stop.
TASK_STOP_WAIT = 10.0


class PvfService(LifecycleOps, ReadOps, RecordsOps, BrowseOps):
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
        roots: Roots | None = None,
        index_workers: int | None = None,
    ) -> None:
        self._init_core(tasks, ledger, plans, drafts)
        self.roots = roots
        self._init_index(index_wait, index_cache, index_workers)
        self._init_records(rules_dir)
        self._init_browse()

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
                "roots": self.access_roots().describe(),
                "addRootHint": self.roots.how_to_add if self.roots is not None else None,
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

    # ------------------------------------------------------------------ shutdown

    def shutdown(self, timeout: float = 60.0) -> None:
        """Wait for a lifecycle commit to finish (it cannot be cancelled), then drop everything."""
        if self._lifecycle.acquire(timeout=timeout):
            self._lifecycle.release()
        self._stop_records()
        running = self.tasks.active()
        for task_id in running:
            with contextlib.suppress(ServiceError):
                self.tasks.cancel(task_id)
        # a task thread still inside native or C++ code when the interpreter exits is killed mid-call
        # (seen as "terminate called without an active exception", exit -6): let them stop first
        deadline = time.monotonic() + min(timeout, TASK_STOP_WAIT)
        for task_id in running:
            with contextlib.suppress(ServiceError):
                self.tasks.wait(task_id, max(0.0, deadline - time.monotonic()))
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


__all__ = [
    "BASE",
    "BLOCKING_PLAN_KINDS",
    "CAPABILITY_VERSION",
    "INDEX_CACHE_KEEP",
    "MAX_READ_LINES",
    "READ_BYTE_CAP",
    "DirtyPolicy",
    "PvfService",
]
