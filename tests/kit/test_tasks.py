"""Task manager: ids at once, progress, paged capped logs, cancel, errors, async wait."""

from __future__ import annotations

import threading

import anyio
import pytest

from moddesk.kit.errors import ServiceError
from moddesk.kit.tasks import MAX_LINE_BYTES, TaskContext, TaskManager


def test_task_runs_reports_and_returns() -> None:
    tasks = TaskManager()

    def work(ctx: TaskContext) -> dict[str, int]:
        ctx.phase("indexing")
        for i in range(5):
            ctx.progress(i + 1, 5)
            ctx.log(f"line {i}")
        return {"files": 5}

    task_id = tasks.start("index", work)
    status = tasks.wait(task_id, 10)
    assert status["state"] == "succeeded"
    assert status["result"] == {"files": 5}
    assert status["progress"]["done"] == 5 and status["progress"]["total"] == 5
    assert status["logs"] == [f"line {i}" for i in range(5)]


def test_logs_are_paged_with_a_cursor_and_capped() -> None:
    tasks = TaskManager()

    def work(ctx: TaskContext) -> None:
        for i in range(25):
            ctx.log(f"l{i}")
        ctx.log("x" * (MAX_LINE_BYTES * 2))

    task_id = tasks.start("logs", work)
    tasks.wait(task_id, 10)
    page = tasks.status(task_id, log_limit=10)
    seen = list(page["logs"])
    while page["nextLogCursor"]:
        page = tasks.status(task_id, log_cursor=page["nextLogCursor"], log_limit=10)
        seen.extend(page["logs"])
    assert seen[:25] == [f"l{i}" for i in range(25)]
    assert len(seen) == 26 and seen[25].endswith("[line truncated]")
    with pytest.raises(ServiceError) as caught:
        tasks.status(task_id, log_cursor="forged.cursor")
    assert caught.value.code == "INVALID_CURSOR"


def test_cancel_and_failure() -> None:
    tasks = TaskManager()
    go = threading.Event()

    def endless(ctx: TaskContext) -> None:
        go.set()
        while True:
            ctx.check_cancelled()
            threading.Event().wait(0.01)

    task_id = tasks.start("loop", endless)
    go.wait(5)
    tasks.cancel(task_id)
    assert tasks.wait(task_id, 10)["state"] == "cancelled"

    def broken(ctx: TaskContext) -> None:
        raise ServiceError("SOURCE_CHANGED", "the archive changed on disk", hint="reopen it")

    failed = tasks.wait(tasks.start("save", broken, cancellable=False), 10)
    assert failed["state"] == "failed"
    assert failed["error"]["error"] == "SOURCE_CHANGED"
    with pytest.raises(ServiceError) as caught:
        tasks.cancel(failed["taskId"])
    assert caught.value.code == "TASK_NOT_CANCELLABLE"
    with pytest.raises(ServiceError) as caught:
        tasks.status("task_nope")
    assert caught.value.code == "TASK_NOT_FOUND"


def test_wait_from_asyncio() -> None:
    tasks = TaskManager()

    async def main() -> str:
        task_id = tasks.start("quick", lambda ctx: "done")
        status = await tasks.wait_async(task_id, 10)
        return str(status["result"])

    assert anyio.run(main) == "done"


def test_history_is_bounded() -> None:
    tasks = TaskManager(history=5)
    ids = []
    for _ in range(12):
        ids.append(tasks.start("n", lambda ctx: None))
        tasks.wait(ids[-1], 10)
    with pytest.raises(ServiceError):
        tasks.status(ids[0])
    assert tasks.status(ids[-1])["state"] == "succeeded"
