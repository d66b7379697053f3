"""A draft in an editor window blocks script apply, import apply and export prepare."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from moddesk.kit.errors import ServiceError
from moddesk.pvf.scripting.help import EXAMPLES
from moddesk.pvf.scripting.service import ScriptService

from .conftest import Bench


def answering_window(bench: Bench, dirty: bool, stop: threading.Event) -> threading.Thread:
    """A window that acks every prepare with its draft state, as the web page would."""
    drafts = bench.service.drafts
    drafts.register("editor-1")

    def loop() -> None:
        while not stop.is_set():
            for operation in drafts.pending("editor-1"):
                drafts.ack(operation, "editor-1", dirty)
            stop.wait(0.01)

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    return thread


def test_dirty_editor_blocks_writes_and_exports(bench: Bench, tmp_path: Path) -> None:
    scripts = ScriptService(bench.service)
    started = scripts.run(bench.ws, bench.revision, EXAMPLES["raise-price"][1])
    bench.service.tasks.wait(started["taskId"], 60)
    plan_id = scripts.status(started["taskId"])["planId"]
    keys = [i["changeKey"] for i in scripts.preview(plan_id)["items"]]
    stop = threading.Event()
    answering_window(bench, dirty=True, stop=stop)
    try:
        with pytest.raises(ServiceError) as caught:
            scripts.apply(plan_id, bench.revision, keys)
        assert caught.value.code == "UI_DRAFT_PENDING"
        with pytest.raises(ServiceError) as caught:
            bench.exports.prepare(bench.ws, bench.revision, "selection", ["etc"])
        assert caught.value.code == "UI_DRAFT_PENDING"
    finally:
        stop.set()
    # the user commits the draft: the same apply goes through
    stop2 = threading.Event()
    bench.service.drafts.unregister("editor-1")
    answering_window(bench, dirty=False, stop=stop2)
    try:
        assert scripts.apply(plan_id, bench.revision, keys)["applied"]["modify"] == len(keys)
    finally:
        stop2.set()
    scripts.close()
