"""Request ledger: replay, conflict, concurrent duplicates, failures recorded, bounded."""

from __future__ import annotations

import threading
import time

import anyio
import pytest

from moddesk.kit.errors import ServiceError
from moddesk.kit.ledger import RequestLedger


def test_same_id_same_params_replays_the_result() -> None:
    ledger = RequestLedger()
    calls: list[int] = []

    def work() -> dict[str, int]:
        calls.append(1)
        return {"revision": len(calls)}

    first = ledger.run("client-a", "r1", {"x": 1}, work)
    again = ledger.run("client-a", "r1", {"x": 1}, work)
    assert first == again == {"revision": 1}
    assert len(calls) == 1
    # another caller scope has its own ids
    assert ledger.run("client-b", "r1", {"x": 1}, work) == {"revision": 2}


def test_same_id_other_params_is_a_conflict() -> None:
    ledger = RequestLedger()
    ledger.run("s", "r1", {"x": 1}, lambda: 1)
    with pytest.raises(ServiceError) as caught:
        ledger.run("s", "r1", {"x": 2}, lambda: 2)
    assert caught.value.code == "REQUEST_CONFLICT"


def test_a_failure_is_recorded_and_replayed() -> None:
    ledger = RequestLedger()
    calls: list[int] = []

    def failing() -> None:
        calls.append(1)
        raise ServiceError("STALE_WORKSPACE", "moved")

    for _ in range(2):
        with pytest.raises(ServiceError) as caught:
            ledger.run("s", "r1", {}, failing)
        assert caught.value.code == "STALE_WORKSPACE"
    assert len(calls) == 1


def test_concurrent_duplicate_waits_for_the_first() -> None:
    ledger = RequestLedger()
    started = threading.Event()
    calls: list[int] = []
    results: list[int] = []

    def slow() -> int:
        calls.append(1)
        started.set()
        time.sleep(0.3)
        return 42

    first = threading.Thread(target=lambda: results.append(ledger.run("s", "r", {}, slow)))
    first.start()
    started.wait(5)
    results.append(ledger.run("s", "r", {}, slow))
    first.join()
    assert results == [42, 42]
    assert len(calls) == 1


def test_async_duplicate_waits_without_running_twice() -> None:
    ledger = RequestLedger()
    calls: list[int] = []

    async def work() -> int:
        calls.append(1)
        await anyio.sleep(0.2)
        return 7

    async def main() -> list[int]:
        results: list[int] = []

        async def one() -> None:
            results.append(await ledger.arun("s", "r", {"a": 1}, work))

        async with anyio.create_task_group() as group:
            group.start_soon(one)
            group.start_soon(one)
        return results

    assert anyio.run(main) == [7, 7]
    assert len(calls) == 1


def test_bounded_to_capacity() -> None:
    ledger = RequestLedger(capacity=256)
    for i in range(300):
        ledger.run("s", f"r{i}", {}, lambda: None)
    assert len(ledger) == 256
    calls: list[int] = []
    ledger.run("s", "r0", {}, lambda: calls.append(1))  # evicted: runs again
    assert calls == [1]


def test_no_request_id_always_runs() -> None:
    ledger = RequestLedger()
    calls: list[int] = []
    ledger.run("s", None, {}, lambda: calls.append(1))
    ledger.run("s", None, {}, lambda: calls.append(1))
    assert calls == [1, 1]


@pytest.mark.parametrize(
    "code",
    ["TASK_BUSY", "PLAN_PENDING", "EXPORT_PLAN_PENDING", "SOURCE_CHANGED", "LIFECYCLE_BUSY", "UI_NOT_READY"],
)
def test_a_transient_refusal_is_answered_afresh_on_retry(code: str) -> None:
    ledger = RequestLedger()
    busy = [True]
    calls: list[int] = []

    def fn() -> str:
        calls.append(1)
        if busy[0]:
            raise ServiceError(code, "not now", hint="…then retry")
        return "done"

    with pytest.raises(ServiceError) as first:
        ledger.run("s", "r1", {"a": 1}, fn)
    assert first.value.code == code
    busy[0] = False  # the cause is gone
    assert ledger.run("s", "r1", {"a": 1}, fn) == "done"
    assert ledger.run("s", "r1", {"a": 1}, fn) == "done"  # the final outcome is recorded
    assert len(calls) == 2


def test_a_handle_whose_task_failed_transiently_runs_again() -> None:
    from moddesk.kit.tasks import TaskManager

    tasks = TaskManager()
    ledger = RequestLedger(forget_result=tasks.failed_transiently)
    outcomes = iter([ServiceError("SOURCE_CHANGED", "changed on disk"), ServiceError("SAVE_FAILED", "disk")])

    def body(ctx: object) -> None:
        raise next(outcomes)

    def start() -> dict[str, str]:
        return {"taskId": tasks.start("save", body)}

    first = ledger.run("s", "save", {}, start)
    tasks.wait(first["taskId"], 5)
    second = ledger.run("s", "save", {}, start)  # SOURCE_CHANGED was transient: a new task
    assert second != first
    tasks.wait(second["taskId"], 5)
    assert ledger.run("s", "save", {}, start) == second  # SAVE_FAILED is final: replayed
