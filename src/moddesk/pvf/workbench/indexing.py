"""The content index of the open workspace: built in the background, cached per archive content.

One index per workspace, built by an ``index`` task from the base texts into a file under
``index_cache`` (``searchindex.py``), published there under the archive's sha256 so the next
open of the same content loads it instead. Searches wait up to ``index_wait`` seconds for a
build, then answer NOT_READY with the task id: the index is handed to searches only whole.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from moddesk.kit.errors import ServiceError
from moddesk.kit.leftovers import sweep_stale
from moddesk.kit.tasks import TaskContext
from moddesk.pvf.errors import pvf_error
from moddesk.pvf.workbench.core import ServiceCore
from moddesk.pvf.workbench.searchindex import ContentIndex
from moddesk.pvf.workbench.workspace import Workspace

INDEX_WAIT_SECONDS = 2.0
INDEX_CACHE_KEEP = 4


@dataclass
class _IndexState:
    """The content index of one workspace, or the task building it."""

    workspace_id: str
    task_id: str
    index: ContentIndex | None = None
    error: ServiceError | None = None


class IndexOps(ServiceCore):
    """Starts, caches and waits for the content index (state guarded by ``_state``)."""

    index_wait: float
    index_cache: Path | None
    index_workers: int | None
    _index: _IndexState | None

    def _init_index(
        self, index_wait: float, index_cache: Path | None, index_workers: int | None = None
    ) -> None:
        self.index_wait = index_wait
        self.index_cache = index_cache
        # render worker processes for a build: opt-in. On the shared 2-core box one worker gave no
        # consistent speed-up and cost +400 MiB at classic 10^6 (benchmarks/RESULTS.md, #18)
        self.index_workers = index_workers
        self._index = None

    def _start_index(self, ws: Workspace) -> None:
        """Build the content index of ``ws`` in the background (lock held)."""

        def build(ctx: TaskContext) -> dict[str, Any]:
            started = time.perf_counter()
            ctx.phase("load cached index")
            if self.index_cache is not None and self.index_cache.is_dir():
                sweep_stale([self.index_cache])  # half-written index files of killed builds (~5× the archive)
            base = ws.index_paths()
            index = self._load_cached_index(ws, base)
            cached = index is not None
            workers = 0
            if index is None:
                ctx.phase("decode and index")
                total = ws.base_count
                workers = max(0, self.index_workers or 0)
                index = ContentIndex.build_folded(
                    ws.base_folded(workers),
                    folder=self.index_cache if self._cache_file(ws) is not None else None,
                    base_paths=base,
                    progress=lambda done: ctx.progress(done, total, "indexing"),
                    check_cancelled=ctx.check_cancelled,
                )
            with self._state:
                state = self._index
                if state is not None and state.workspace_id == ws.workspace_id:
                    state.index = index  # an index of an older workspace is dropped here
            ready = time.perf_counter() - started
            if not cached:
                ctx.phase("save index cache")
                self._save_cached_index(ws, index, ctx)
            return {
                "workspaceId": ws.workspace_id,
                "textFiles": len(index),
                "bytes": index.nbytes,
                "memoryBytes": index.memory_bytes,
                "cached": cached,
                "workers": 0 if cached else workers,
                "readySeconds": round(ready, 3),
                "seconds": round(time.perf_counter() - started, 3),
            }

        task_id = self.tasks.start("index", build)
        self._index = _IndexState(ws.workspace_id, task_id)

    def _cache_file(self, ws: Workspace) -> Path | None:
        if self.index_cache is None or not ws.base_sha256:
            return None
        return self.index_cache / f"{ws.base_sha256}.idx"

    def _load_cached_index(self, ws: Workspace, base: list[str]) -> ContentIndex | None:
        """The index saved for exactly this archive content and paths, if there is a sound one."""
        path = self._cache_file(ws)
        if path is None or not path.is_file():
            return None
        return ContentIndex.load(path, ws.base_sha256, base)

    def _save_cached_index(self, ws: Workspace, index: ContentIndex, ctx: TaskContext) -> None:
        """Keep the index for the next open of the same content; the newest few are kept."""
        path = self._cache_file(ws)
        if path is None:
            return
        try:
            index.publish(path, ws.base_sha256)
            cached = sorted(path.parent.glob("*.idx"), key=lambda p: p.stat().st_mtime, reverse=True)
            for old in cached[INDEX_CACHE_KEEP:]:
                old.unlink(missing_ok=True)  # an open index keeps reading its file (POSIX)
        except OSError as exc:
            index.discard()
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
