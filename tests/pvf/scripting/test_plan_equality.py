"""A script over every ``.equ`` gives the plan it gave before the script path was made fast.

The digests were captured from the previous implementation (commit aa354b3: text rendered per
file on request, parsed with the ``lex``-based parser) running ``EVERY_EQU_SCRIPT`` through the
service over ``generate_archive(files=3000, seed=0)``; they cover every change's key, path, kind,
new and old text, dependencies and warnings. The 100k-file version is ``benchmarks/pvf_scale.py
--check``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from moddesk.pvf.samples.equality import EVERY_EQU_SCRIPT, plan_digest
from moddesk.pvf.samples.generate import generate_archive
from moddesk.pvf.scripting.service import ScriptPlan, ScriptService, WorkspaceSnapshot
from moddesk.pvf.service import PvfService

EXPECTED = {
    "classic": ("cb0f7f05c248092938288247a687df5db6e46524ba5ee34909f2d72ff92f76f3", 19),
    "90US": ("c02df7c7f9f00e1d6686afb5c08a752ddadde26e50d9fa73fe890e6b9e7fefde", 19),
}


@pytest.mark.parametrize("fmt", sorted(EXPECTED))
def test_every_equ_script_plans_as_before(fmt: str, tmp_path: Path) -> None:
    path = tmp_path / f"{fmt}.pvf"
    generate_archive(path, fmt=fmt, files=3000, seed=0)
    service = PvfService()
    scripts = ScriptService(service)
    try:
        opened = service.tasks.wait(service.open(str(path), service.epoch)["taskId"], 120)["result"]
        started = scripts.run(opened["workspaceId"], opened["revision"], EVERY_EQU_SCRIPT)
        status = service.tasks.wait(started["taskId"], 300)
        assert status["state"] == "succeeded", status.get("error")
        assert status["result"]["changes"]["modify"] == EXPECTED[fmt][1]
        plan = service.plans.get("script", scripts.status(started["taskId"])["planId"]).payload
        assert isinstance(plan, ScriptPlan)
        assert plan_digest(plan.changes) == EXPECTED[fmt]
    finally:
        scripts.close()
        service.shutdown()


@pytest.mark.parametrize("fmt", sorted(EXPECTED))
def test_batch_reads_give_what_single_reads_give(fmt: str, tmp_path: Path) -> None:
    """The worker's read-ahead batches are rendered in bulk: each text equals ``read_text``'s."""
    path = tmp_path / f"{fmt}.pvf"
    generate_archive(path, fmt=fmt, files=1500, seed=3)
    service = PvfService()
    try:
        service.tasks.wait(service.open(str(path), service.epoch)["taskId"], 120)
        ws = service.workspace
        assert ws is not None
        edited = next(p for p in ws.paths() if p.endswith(".equ"))
        ws.apply({edited: "#PVF_File\n[price]\n\t1\n"})
        snapshot = WorkspaceSnapshot(ws)
        paths = [p for p, kind, _ in snapshot.list_files() if kind in (1, 3)]
        texts = snapshot.read_texts(paths)
        bulk = [(p, t) for p, t in zip(paths, texts, strict=True) if t is not None]
        assert len(bulk) > 1000 and edited not in dict(bulk)
        assert all(snapshot.read_text(p) == t for p, t in bulk)
    finally:
        service.shutdown()
