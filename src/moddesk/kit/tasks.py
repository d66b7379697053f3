"""Long work as tasks: a task id at once, then phase, progress, paged logs and a result or error."""

from __future__ import annotations

import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import anyio.to_thread

from moddesk.kit.cursor import CursorCodec
from moddesk.kit.errors import ServiceError
from moddesk.kit.ledger import is_transient

MAX_LINE_BYTES = 2000
MAX_LOG_BYTES = 1 << 20
MAX_LOG_LINES = 5000
DEFAULT_HISTORY = 64
DEFAULT_TTL_SECONDS = 3600.0

ACTIVE_STATES = ("queued", "running", "cancelling")
FINAL_STATES = ("succeeded", "failed", "cancelled")


class TaskCancelled(ServiceError):
    """Raised inside a task by ``check_cancelled`` once cancellation was asked."""

    def __init__(self) -> None:
        super().__init__("CANCELLED", "the task was cancelled")


@dataclass
class _Task:
    task_id: str
    kind: str
    cancellable: bool
    state: str = "queued"
    phase: str = "queued"
    done: int = 0
    total: int | None = None
    message: str | None = None
    logs: list[str] = field(default_factory=list)
    log_bytes: int = 0
    dropped_lines: int = 0
    result: Any = None
    error: ServiceError | None = None
    created_at: float = field(default_factory=time.time)
    finished_at: float | None = None
    cancel_requested: threading.Event = field(default_factory=threading.Event)
    finished: threading.Event = field(default_factory=threading.Event)
    listeners: list[Callable[[int, int | None, str | None], None]] = field(default_factory=list)


_current = threading.local()


def report_progress(done: int, total: int | None = None, message: str | None = None) -> None:
    """Progress of the task running on this thread, from code that does not know it is a task.

    A no-op outside a task; deep loops (writing an export, freezing an import) call it so that a
    long call run as a task reports per-file progress without every layer passing a callback.
    """
    context: TaskContext | None = getattr(_current, "context", None)
    if context is not None:
        context.progress(done, total, message)


def check_cancelled() -> None:
    """Raise ``TaskCancelled`` when the task running on this thread was asked to stop.

    A no-op outside a task, like ``report_progress``: a deep loop (writing a 200,000-file
    export) stops between units of work without every layer passing the context down.
    """
    context: TaskContext | None = getattr(_current, "context", None)
    if context is not None:
        context.check_cancelled()


class TaskContext:
    """What a running task sees: report phase, progress and log lines; notice cancellation."""

    def __init__(self, task: _Task, lock: threading.Lock) -> None:
        self._task = task
        self._lock = lock

    @property
    def task_id(self) -> str:
        return self._task.task_id

    @property
    def cancelled(self) -> bool:
        return self._task.cancel_requested.is_set()

    def check_cancelled(self) -> None:
        """Raise ``TaskCancelled`` if someone asked to cancel (call it between units of work)."""
        if self._task.cancel_requested.is_set():
            raise TaskCancelled()

    def phase(self, name: str) -> None:
        with self._lock:
            self._task.phase = name

    def complete_progress(self, message: str | None = None) -> None:
        """Report the work as all done: ``total/total`` (``1/1`` when no total was ever given)."""
        with self._lock:
            total = self._task.total or max(self._task.done, 1)
        self.progress(total, total, message)

    def progress(self, done: int, total: int | None = None, message: str | None = None) -> None:
        with self._lock:
            self._task.done, self._task.total = done, total
            if message is not None:
                self._task.message = message
            listeners = list(self._task.listeners)
        for listener in listeners:
            listener(done, total, message)

    def count_dropped(self, lines: int) -> None:
        """Count log lines dropped before they reached this task (e.g. by a worker's own cap)."""
        with self._lock:
            self._task.dropped_lines += max(0, lines)

    def log(self, line: str) -> None:
        """Append a log line; lines and the total are capped, and what is dropped is counted."""
        encoded = line.encode("utf-8", "replace")
        if len(encoded) > MAX_LINE_BYTES:
            line = encoded[:MAX_LINE_BYTES].decode("utf-8", "ignore") + " …[line truncated]"
            encoded = line.encode("utf-8")
        with self._lock:
            task = self._task
            if len(task.logs) >= MAX_LOG_LINES or task.log_bytes + len(encoded) > MAX_LOG_BYTES:
                task.dropped_lines += line.count("\n") + 1  # every line of it, not one per call
                return
            task.logs.append(line)
            task.log_bytes += len(encoded)


class TaskManager:
    """Runs tasks on threads; callable from threads and from asyncio (``wait_async``)."""

    def __init__(self, history: int = DEFAULT_HISTORY, ttl_seconds: float = DEFAULT_TTL_SECONDS) -> None:
        self._tasks: OrderedDict[str, _Task] = OrderedDict()
        self._lock = threading.Lock()
        self._history = history
        self._ttl = ttl_seconds
        self._cursors = CursorCodec()

    def start(
        self,
        kind: str,
        fn: Callable[[TaskContext], Any],
        *,
        cancellable: bool = True,
        on_progress: Callable[[int, int | None, str | None], None] | None = None,
    ) -> str:
        """Start ``fn`` on a thread and return its task id at once."""
        task = _Task(task_id=f"task_{secrets.token_urlsafe(9)}", kind=kind, cancellable=cancellable)
        if on_progress is not None:
            task.listeners.append(on_progress)
        with self._lock:
            self._prune()
            self._tasks[task.task_id] = task
        thread = threading.Thread(
            target=self._run, args=(task, fn), name=f"moddesk-{kind}-{task.task_id}", daemon=True
        )
        thread.start()
        return task.task_id

    def _run(self, task: _Task, fn: Callable[[TaskContext], Any]) -> None:
        context = TaskContext(task, self._lock)
        _current.context = context  # each task has its own thread: report_progress finds it
        with self._lock:
            task.state, task.phase = "running", "running"
        result: Any = None
        error: ServiceError | None = None
        try:
            result = fn(context)
        except ServiceError as exc:
            error = exc
        except Exception as exc:
            error = ServiceError("INTERNAL_ERROR", f"the task failed: {type(exc).__name__}: {exc}")
        with self._lock:
            if isinstance(error, TaskCancelled) or (error is not None and task.cancel_requested.is_set()):
                task.state = "cancelled"
            else:
                task.state = "failed" if error is not None else "succeeded"
            task.result, task.error = result, error
            task.phase = task.state
            task.finished_at = time.time()
        task.finished.set()

    def _prune(self) -> None:
        now = time.time()
        for task_id, task in list(self._tasks.items()):
            too_old = task.finished_at is not None and now - task.finished_at > self._ttl
            if too_old:
                del self._tasks[task_id]
        finished = [t for t in self._tasks.values() if t.finished_at is not None]
        for task in finished[: max(0, len(self._tasks) - self._history)]:
            del self._tasks[task.task_id]

    def _get(self, task_id: str) -> _Task:
        with self._lock:
            task = self._tasks.get(task_id)
        if task is None:
            raise ServiceError(
                "TASK_NOT_FOUND",
                f"no task {task_id!r}",
                hint="Task ids are kept for a while after they finish; start the work again.",
            )
        return task

    def active(self, kind: str | None = None) -> list[str]:
        """Ids of tasks still queued or running (of one kind, if given)."""
        with self._lock:
            return [
                t.task_id
                for t in self._tasks.values()
                if t.state in ACTIVE_STATES and (kind is None or t.kind == kind)
            ]

    def recent(self, limit: int = 20) -> list[str]:
        """Ids of the newest tasks, running or finished, newest first (for activity views)."""
        with self._lock:
            return [t.task_id for t in reversed(self._tasks.values())][:limit]

    def status(self, task_id: str, log_cursor: str | None = None, log_limit: int = 200) -> dict[str, Any]:
        """State, phase, progress, one page of logs, and the result or error once finished."""
        task = self._get(task_id)
        query = {"task": task_id}
        start = 0 if log_cursor is None else int(self._cursors.decode(log_cursor, query))
        log_limit = max(1, min(log_limit, 1000))
        with self._lock:
            lines = task.logs[start : start + log_limit]
            end = start + len(lines)
            more = end < len(task.logs)
            info: dict[str, Any] = {
                "taskId": task.task_id,
                "kind": task.kind,
                "state": task.state,
                "phase": task.phase,
                "progress": {"done": task.done, "total": task.total, "message": task.message},
                "cancellable": task.cancellable and task.state in ACTIVE_STATES,
                "logs": lines,
                "logsTotal": len(task.logs),
                "logsDropped": task.dropped_lines,
                "createdAt": task.created_at,
                "finishedAt": task.finished_at,
            }
            finished = task.finished_at is not None
        # A finished task's log is complete, so a cursor at its end means "no more".
        info["nextLogCursor"] = self._cursors.encode(query, end) if (more or not finished) else None
        if task.state == "succeeded":
            info["result"] = task.result
        elif task.error is not None:
            info["error"] = task.error.to_payload()
        return info

    def result(self, task_id: str) -> Any:
        """The result of a finished task, or its error raised again."""
        task = self._get(task_id)
        if not task.finished.is_set():
            raise ServiceError("TASK_RUNNING", f"task {task_id} has not finished", hint="Poll its status.")
        if task.error is not None:
            raise task.error
        return task.result

    def failed_transiently(self, handle: Any) -> bool:
        """True when ``handle`` (a task handle ``{"taskId": …}``) names a task that failed with a
        transient refusal (``kit.ledger.is_transient``): such a handle is no final outcome."""
        task_id = handle.get("taskId") if isinstance(handle, dict) else None
        if not isinstance(task_id, str):
            return False
        with self._lock:
            task = self._tasks.get(task_id)
            error = task.error if task is not None and task.state == "failed" else None
        return error is not None and is_transient(error.code)

    def cancel(self, task_id: str) -> dict[str, Any]:
        """Ask a running task to stop; it stops at its next ``check_cancelled``."""
        task = self._get(task_id)
        if not task.cancellable:
            raise ServiceError(
                "TASK_NOT_CANCELLABLE",
                f"task {task_id} ({task.kind}) cannot be cancelled",
                hint="Wait for it.",
            )
        with self._lock:
            if task.state in ACTIVE_STATES:
                task.cancel_requested.set()
                task.state = "cancelling"
        return self.status(task_id)

    def wait(self, task_id: str, timeout: float | None = None) -> dict[str, Any]:
        """Block until the task finished (or ``timeout``) and return its status."""
        self._get(task_id).finished.wait(timeout)
        return self.status(task_id)

    async def wait_async(self, task_id: str, timeout: float | None = None) -> dict[str, Any]:
        """``wait`` without blocking the event loop."""
        task = self._get(task_id)
        await anyio.to_thread.run_sync(task.finished.wait, timeout)
        return self.status(task_id)
