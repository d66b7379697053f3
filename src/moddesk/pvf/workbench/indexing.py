"""The content index of the open workspace: built in the background, cached per archive content.

One index per workspace, built by an ``index`` task from the base texts into a file under
``index_cache`` (``searchindex.py``), published there under the archive's sha256 so the next
open of the same content loads it instead. The index is handed to searches only whole.

Before building, the task makes a ``TokenMap`` (``tokenscan.py``: one read + token decode pass,
a fraction of the build): from then on a path query, or a literal content query whose needle
cannot cross a piece of rendered script text, is answered from the token streams — the same
answer the index will give. Other queries (regex, needles with separators, syntax characters or
only digits) wait up to ``index_wait`` seconds for the index, then answer NOT_READY with the
task id, as every query does while the token map is being made.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from moddesk.kit.errors import ServiceError
from moddesk.kit.leftovers import sweep_stale
from moddesk.kit.tasks import TaskCancelled, TaskContext
from moddesk.pvf.errors import pvf_error
from moddesk.pvf.format.errors import PvfFormatError
from moddesk.pvf.workbench.core import ServiceCore
from moddesk.pvf.workbench.search import DEFAULT_TIME_BUDGET, SearchQuery, SearchSource
from moddesk.pvf.workbench.searchindex import ContentIndex, SortedKeys, bound_retained_heap
from moddesk.pvf.workbench.tokenscan import TokenMap, TokenSource, answerable
from moddesk.pvf.workbench.workspace import Workspace

INDEX_WAIT_SECONDS = 2.0
INDEX_CACHE_KEEP = 4


@dataclass
class _IndexState:
    """The content index of one workspace, or the task building it."""

    workspace_id: str
    task_id: str = ""
    index: ContentIndex | None = None
    tokens: TokenMap | None = None  # answers safe queries until the index is whole
    finished: bool = False  # the task ended (built, failed or cancelled)
    error: ServiceError | None = None
    changed: threading.Condition = field(default_factory=threading.Condition)

    waiting: int = 0  # searches the token map can answer, waiting for it
    searching: int = 0  # searches reading the token map now (the build pauses for them)

    def publish(self, **values: object) -> None:
        """Set fields and wake the searches waiting for them."""
        with self.changed:
            for name, value in values.items():
                setattr(self, name, value)
            self.changed.notify_all()

    def end_search(self) -> None:
        """A search that read the token map is done."""
        with self.changed:
            self.searching -= 1
            self.changed.notify_all()

    def yield_to_searches(self) -> None:
        """Called by the build before and between chunks: let searches on the token map run first
        (the build would take half the CPU and hold the archive lock a chunk at a time), for at
        most one search time budget each time, so a stream of searches cannot stall it for ever."""
        with self.changed:
            self.changed.wait_for(lambda: self.searching == 0 and self.waiting == 0, DEFAULT_TIME_BUDGET)


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
        # from the start, so the opens' big transient buffers are not kept by glibc's heap either
        # (10^6 90US open + index, loaded box: +406 -> +393..403 MiB; see bound_retained_heap)
        bound_retained_heap()

    def _start_index(self, ws: Workspace) -> None:
        """Build the content index of ``ws`` in the background (lock held)."""

        state = _IndexState(ws.workspace_id)

        def build(ctx: TaskContext) -> dict[str, Any]:
            try:
                return self._build_index(ws, state, ctx)
            finally:
                state.publish(finished=True, tokens=None)  # the token map's memory goes with the build

        state.task_id = self.tasks.start("index", build)
        self._index = state

    def _build_index(self, ws: Workspace, state: _IndexState, ctx: TaskContext) -> dict[str, Any]:
        started = time.perf_counter()
        ctx.phase("load cached index")
        if self.index_cache is not None and self.index_cache.is_dir():
            sweep_stale([self.index_cache])  # half-written index files of killed builds (~5× the archive)
        native_keys = ws.native_index_keys()  # the native build and load read the key table itself
        base = ws.index_paths() if native_keys is None else []
        index = self._load_cached_index(ws, base, native_keys)
        cached = index is not None
        workers = 0
        tokens_ready: float | None = None
        tokens_bytes = 0
        total = ws.base_count
        if index is None and native_keys is not None:
            # one native call renders every entry on both cores and writes the file: the index is
            # whole in about the time the token map alone took, so no token map is made
            ctx.phase("decode and index")
            index = ContentIndex.build_native(
                ws.archive,
                native_keys,
                folder=self.index_cache if self._cache_file(ws) is not None else None,
                progress=lambda done: ctx.progress(done, total, "indexing"),
                check_cancelled=ctx.check_cancelled,
                lock=ws.lock,
            )
        if index is None:
            ctx.phase("decode tokens")
            tokens = self._token_map(ws, ctx)
            if tokens is not None:
                state.publish(tokens=tokens)
                tokens_ready = time.perf_counter() - started
                tokens_bytes = tokens.memory_bytes
                state.yield_to_searches()  # the searches that waited for the map go first
            del tokens
            ctx.phase("decode and index")
            workers = max(0, self.index_workers or 0)

            def between_chunks() -> None:
                ctx.check_cancelled()
                state.yield_to_searches()

            index = ContentIndex.build_folded(
                ws.base_folded(workers),
                folder=self.index_cache if self._cache_file(ws) is not None else None,
                base_paths=base,
                progress=lambda done: ctx.progress(done, total, "indexing"),
                check_cancelled=between_chunks,
            )
        state.publish(index=index, tokens=None)  # a state of an older workspace is no one's any more
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
            "tokensReadySeconds": None if tokens_ready is None else round(tokens_ready, 3),
            "tokenMapBytes": tokens_bytes,
            "readySeconds": round(ready, 3),
            "seconds": round(time.perf_counter() - started, 3),
        }

    @staticmethod
    def _token_map(ws: Workspace, ctx: TaskContext) -> TokenMap | None:
        """The token map that answers early searches; None when the archive is not fit for one.

        It is a shortcut: anything it cannot read (a damaged entry) leaves the searches to the
        index, whose build then meets the same entry and reports it as it always did."""
        total = ws.base_count
        try:
            return TokenMap.build(
                ws,
                progress=lambda done: ctx.progress(done, total, "decoding tokens"),
                check_cancelled=ctx.check_cancelled,
            )
        except TaskCancelled:
            raise
        except (PvfFormatError, ValueError, IndexError, MemoryError) as exc:
            ctx.log(f"no early answers from the token streams: {exc}")
            return None

    def _cache_file(self, ws: Workspace) -> Path | None:
        if self.index_cache is None or not ws.base_sha256:
            return None
        return self.index_cache / f"{ws.base_sha256}.idx"

    def _load_cached_index(
        self, ws: Workspace, base: list[str], native_keys: SortedKeys | None
    ) -> ContentIndex | None:
        """The index saved for exactly this archive content and paths, if there is a sound one."""
        path = self._cache_file(ws)
        if path is None or not path.is_file():
            return None
        if native_keys is not None:
            return ContentIndex.load_native(path, ws.base_sha256, native_keys)
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

    def _search_source(self, ws: Workspace, query: SearchQuery) -> SearchSource:
        """The index, or before it is whole the token map when it answers ``query`` exactly."""
        with self._state:
            state = self._index
            if state is None or state.workspace_id != ws.workspace_id:
                self._start_index(ws)
                state = self._index
        assert state is not None
        early = query.mode == "path" or (query.mode == "content" and answerable(query.query.casefold()))

        def usable() -> bool:
            return state.index is not None or (early and state.tokens is not None) or state.finished

        with state.changed:
            state.waiting += early
            try:
                state.changed.wait_for(usable, self.index_wait)
            finally:
                state.waiting -= early
            index, tokens = state.index, state.tokens
            if index is None and early and tokens is not None:
                state.searching += 1  # before the build can take its next chunk (``end_search``)
            state.changed.notify_all()
        if index is not None:
            return index
        if early and tokens is not None:
            return TokenSource(tokens, ws.lock, ws.base_text_or_none, ws.base_text_at, state.end_search)
        status = self.tasks.wait(state.task_id, 1.0 if state.finished else 0.0)  # let the task record its end
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
