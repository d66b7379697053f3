"""Search answers equal the recorded reference (the index before #18), built and from the cache.

The recorded digests (``fixtures/search_equality.json``) cover content, regex and path queries
with paging across cursors, case folding, CJK, scopes, extensions and byte caps; the 100k-file
version with the real corpus texts runs from ``benchmarks/pvf_scale.py --check``.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from moddesk.kit.errors import ServiceError
from moddesk.pvf.samples.generate import generate_archive
from moddesk.pvf.service import PvfService

sys.path.insert(0, str(Path(__file__).resolve().parent))
import search_equality

SMALL_FILES = 2000


def open_service(
    path: Path, cache: Path, index_wait: float = 120.0, workers: int = 0
) -> tuple[PvfService, str]:
    service = PvfService(index_wait=index_wait, index_cache=cache, index_workers=workers)
    status = service.tasks.wait(service.open(str(path), service.epoch)["taskId"], 120.0)
    assert status["state"] == "succeeded", status
    return service, str(status["result"]["workspaceId"])


@pytest.mark.parametrize("family", ["90US", "classic"])
def test_search_answers_match_the_reference_built_and_cached(tmp_path: Path, family: str) -> None:
    path = tmp_path / "Script.pvf"
    generate_archive(path, fmt=family, files=SMALL_FILES, seed=1)
    cache = tmp_path / "index-cache"
    key = f"{family}-{SMALL_FILES}"
    for expect_cached in (False, True):
        service, ws = open_service(path, cache)
        try:
            result = search_equality.collect(service, ws)
            index = service.tasks.wait(service.info()["indexTaskId"], 60.0)["result"]
        finally:
            service.shutdown()
        assert index["cached"] is expect_cached
        assert search_equality.differences(key, result) == []


def test_answers_from_an_index_rendered_by_a_worker_process_match_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # render worker processes serve the reference build (the native one renders on every core itself)
    monkeypatch.setenv("MODDESK_CORE", "python")
    path = tmp_path / "Script.pvf"
    generate_archive(path, fmt="classic", files=SMALL_FILES, seed=1)
    service, ws = open_service(path, tmp_path / "cache", workers=1)
    try:
        result = search_equality.collect(service, ws)
        assert service.tasks.wait(service.info()["indexTaskId"], 60.0)["result"]["workers"] == 1
    finally:
        service.shutdown()
    assert search_equality.differences(f"classic-{SMALL_FILES}", result) == []


def test_a_search_during_the_build_is_not_ready_with_the_task_id(tmp_path: Path) -> None:
    """A regex is answered only by the whole index (literal queries may come from the token map
    earlier, tests/pvf/workbench/test_tokenscan.py): NOT_READY with the task id until then, never a partial page."""
    path = tmp_path / "Script.pvf"
    generate_archive(path, fmt="90US", files=SMALL_FILES, seed=1)
    service, ws = open_service(path, tmp_path / "cache", index_wait=0.0)
    try:
        task_id = service.info()["indexTaskId"]
        not_ready = 0
        answer: dict[str, Any] | None = None
        while answer is None:  # never an empty or partial page while building: NOT_READY instead
            try:
                answer = service.search(ws, "项.", mode="regex", limit=5)
            except ServiceError as exc:
                assert exc.code == "NOT_READY"
                assert exc.details["indexTaskId"] == task_id
                not_ready += 1
        assert not_ready > 0  # 2,000 scripts take far longer to index than one call to return
        assert answer["answeredFrom"] == "index"
        service.tasks.wait(task_id, 60.0)
        assert answer == service.search(ws, "项.", mode="regex", limit=5)
    finally:
        service.shutdown()


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX process exit")
def test_a_killed_builds_half_written_index_file_is_swept(tmp_path: Path) -> None:
    """A build that died leaves an owner-tagged temp in the cache folder; the next build removes it."""
    cache = tmp_path / "cache"
    cache.mkdir()
    code = (
        "import os, sys; from pathlib import Path; from moddesk.pvf.workbench.searchindex import _index_file;"
        "handle, path = _index_file(Path(sys.argv[1])); handle.write(b'half'); handle.flush(); os._exit(0)"
    )
    subprocess.run([sys.executable, "-c", code, str(cache)], check=True)
    (left,) = list(cache.iterdir())
    assert "moddesk-tmp" in left.name
    path = tmp_path / "Script.pvf"
    generate_archive(path, fmt="90US", files=200, seed=1)
    service, _ = open_service(path, cache)
    try:
        service.tasks.wait(service.info()["indexTaskId"], 60.0)
    finally:
        service.shutdown()
    assert [p.suffix for p in cache.iterdir()] == [".idx"]  # the leftover is gone, the new cache is there
