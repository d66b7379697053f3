"""Per-project endpoint files: naming, atomic content, liveness, removal only by the writer."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from moddesk.ra3.agent import endpoints
from moddesk.ra3.agent.endpoints import (
    EndpointPublisher,
    endpoint_path_for_project,
    global_endpoint_path,
    is_process_alive,
    project_base_name,
    read_endpoint,
    read_endpoint_for_project,
    same_project,
)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "ra3 home"
    monkeypatch.setenv(endpoints.HOME_ENV, str(root))
    return root


def test_base_name_is_slug_plus_sha1_prefix(tmp_path: Path) -> None:
    project = tmp_path / "My Cool Mod!"
    project.mkdir()
    name = project_base_name(project)
    slug, digest = name.rsplit("-", 1)
    assert slug == "my-cool-mod"
    assert len(digest) == 12 and int(digest, 16) >= 0
    other = tmp_path / "sub" / "My Cool Mod!"
    other.mkdir(parents=True)
    assert project_base_name(other) != name  # same folder name, different project
    assert project_base_name(str(project) + "/") == name  # spelling does not matter


def test_same_project_follows_symlinks(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "link"
    link.symlink_to(real, target_is_directory=True)
    assert same_project(real, link)
    assert not same_project(real, tmp_path)
    assert not same_project(real, None)


def test_publish_and_withdraw_own_files(home: Path, tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    pub = EndpointPublisher("http://127.0.0.1:1234", "tok-a")
    written = pub.publish([str(a), str(b)])
    assert set(written) == {
        endpoint_path_for_project(a),
        endpoint_path_for_project(b),
        global_endpoint_path(),
    }
    record = read_endpoint_for_project(b)
    assert record is not None
    assert record.url == "http://127.0.0.1:1234" and record.token == "tok-a"
    assert record.processId == os.getpid() and same_project(record.projectDir, b)
    data = json.loads(endpoint_path_for_project(a).read_text())
    assert {"url", "token", "processId", "projectDir", "startedAt"} <= set(data)
    if sys.platform != "win32":
        assert endpoint_path_for_project(a).stat().st_mode & 0o077 == 0  # token stays private
    # no temp leftovers
    assert sorted(p.name for p in (home / "endpoints").iterdir()) == sorted(
        endpoint_path_for_project(p).name for p in (a, b)
    )
    removed = pub.withdraw()
    assert set(removed) == set(written)
    assert read_endpoint_for_project(a) is None and not global_endpoint_path().exists()


def test_withdraw_keeps_files_another_process_overwrote(home: Path, tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    first = EndpointPublisher("http://127.0.0.1:1111", "tok-1")
    first.publish([str(a)])
    second = EndpointPublisher("http://127.0.0.1:2222", "tok-2")
    second.publish([str(b)])  # takes over the global endpoint.json
    first.withdraw()
    assert read_endpoint_for_project(a) is None
    glob = read_endpoint(global_endpoint_path())
    assert glob is not None and glob.token == "tok-2"  # the other window's record survives
    assert read_endpoint_for_project(b) is not None


def test_global_file_is_used_only_when_it_claims_the_project(home: Path, tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    pub = EndpointPublisher("http://127.0.0.1:1111", "tok")
    pub.publish([str(a)])
    endpoint_path_for_project(a).unlink()
    assert read_endpoint_for_project(a) is not None  # global fallback names a
    assert read_endpoint_for_project(b) is None  # never for another project


def test_garbage_endpoint_files_are_ignored(home: Path, tmp_path: Path) -> None:
    a = tmp_path / "a"
    a.mkdir()
    path = endpoint_path_for_project(a)
    path.parent.mkdir(parents=True)
    for content in ("", "{", "[]", '{"url": 1}', '{"url":"u","token":"t","processId":-4,"projectDir":"x"}'):
        path.write_text(content)
        assert read_endpoint_for_project(a) is None


def test_process_liveness_with_real_processes() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"], stdin=subprocess.DEVNULL)
    try:
        created = endpoints.process_create_time(proc.pid)
        assert created is not None
        assert is_process_alive(proc.pid, created)
        assert not is_process_alive(proc.pid, created - 3600)  # a reused pid is not the writer
    finally:
        proc.kill()
        proc.wait()
    assert not is_process_alive(proc.pid, created)


def test_a_second_indexer_of_the_same_project_keeps_it_reachable(home: Path, tmp_path: Path) -> None:
    a = tmp_path / "a"
    a.mkdir()
    first = EndpointPublisher("http://127.0.0.1:1111", "tok-1")
    first.publish([str(a)])
    second = EndpointPublisher("http://127.0.0.1:2222", "tok-2")
    second.publish([str(a)])  # same project: the newer process takes the file over
    assert second.withdraw()  # ...and removes it when it exits
    assert read_endpoint_for_project(a) is None
    restored = first.republish_missing()
    assert endpoint_path_for_project(a) in restored
    record = read_endpoint_for_project(a)
    assert record is not None and record.token == "tok-1"
    assert first.republish_missing() == []  # nothing missing: nothing rewritten
    first.withdraw()
    assert first.republish_missing() == [] and read_endpoint_for_project(a) is None  # closed for good


@settings(max_examples=200, deadline=None)
@given(content=st.one_of(st.binary(max_size=300), st.from_regex(r"\{.*\}", fullmatch=True).map(str.encode)))
def test_fuzz_endpoint_file_parses_or_is_ignored(content: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "e.json"
        path.write_bytes(content)
        record = read_endpoint(path)
        assert record is None or (isinstance(record.url, str) and record.processId > 0)


@settings(max_examples=200, deadline=None)
@given(
    data=st.dictionaries(
        st.sampled_from(
            [
                "url",
                "token",
                "processId",
                "projectDir",
                "startedAt",
                "processCreateTime",
                "projects",
                "schemaVersion",
            ]
        ),
        st.one_of(
            st.none(),
            st.booleans(),
            st.integers(),
            st.floats(),
            st.text(max_size=20),
            st.lists(st.text(max_size=5)),
        ),
    )
)
def test_fuzz_endpoint_records(data: dict[str, object]) -> None:
    from moddesk.ra3.agent.endpoints import Endpoint

    record = Endpoint.from_mapping(data)
    assert record is None or (record.processId > 0 and isinstance(record.projectDir, str))
