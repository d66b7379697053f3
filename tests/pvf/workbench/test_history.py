"""History on a real SQLite repository next to a real file (paths with spaces)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from moddesk.kit.errors import ServiceError
from moddesk.kit.files import sha256_file
from moddesk.pvf.samples.demo import write_sample_archive
from moddesk.pvf.workbench.history import History, repo_dir_for


@pytest.fixture
def archive(tmp_path: Path) -> Path:
    folder = tmp_path / "my mods"
    folder.mkdir()
    return write_sample_archive(folder / "Script copy.pvf", files=3)


def test_init_copies_base_and_creates_repo(archive: Path) -> None:
    history = History.init(archive)
    repo = repo_dir_for(archive)
    assert repo.name == "Script copy.pvf.moddesk"
    assert (repo / "base.pvf").read_bytes() == archive.read_bytes()
    assert history.head is None and history.log() == []
    with sqlite3.connect(repo / "repo.db") as db:
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"meta", "commits", "changes"} <= tables
    with pytest.raises(ServiceError) as err:
        History.init(archive)
    assert err.value.code == "HISTORY_EXISTS"


def test_commit_log_state_diff_undo(archive: Path) -> None:
    history = History.init(archive)
    first = history.commit({"a.equ": b"one", "b.equ": b"two"}, "first")
    assert first is not None and first.changed_paths == 2
    second = history.commit({"a.equ": b"uno", "b.equ": None}, "second")
    assert second is not None and second.parent == first.id
    assert history.commit({"a.equ": b"uno"}, "nothing new") is None
    assert [c.id for c in history.log()] == [second.id, first.id]

    state = history.state(second.id)
    assert history.get_object(state["a.equ"] or "") == b"uno"
    assert state["b.equ"] is None

    changes = {c.path: c.kind for c in history.diff(first.id, second.id)}
    assert changes == {"a.equ": "modified", "b.equ": "deleted"}
    assert {c.path: c.kind for c in history.diff(None, first.id)} == {"a.equ": "added", "b.equ": "added"}
    touched = history.commit({"skill/s0.skl": b"changed"}, "touch a base file")
    assert touched is not None
    assert {c.path: c.kind for c in history.diff(second.id, touched.id)} == {"skill/s0.skl": "modified"}

    undo = history.undo(second.id)
    assert undo is not None and history.head == undo.id
    after = history.state(undo.id)
    assert history.get_object(after["a.equ"] or "") == b"one"
    assert history.get_object(after["b.equ"] or "") == b"two"
    # undoing the first commit puts both paths back to the base
    history.undo(first.id)
    assert set(history.state(history.head)) == {"skill/s0.skl"}


def test_objects_are_content_addressed_and_verified(archive: Path) -> None:
    history = History.init(archive)
    sha = history.put_object(b"payload")
    assert history.put_object(b"payload") == sha
    assert history.get_object(sha) == b"payload"
    with sqlite3.connect(history.repo / "repo.db") as db:
        db.execute("UPDATE objects SET data = ? WHERE sha256 = ?", (b"tampered", sha))
    with pytest.raises(ServiceError) as err:
        history.get_object(sha)
    assert err.value.code == "HISTORY_DETACHED"


def test_attach_refuses_when_source_changed_outside(archive: Path) -> None:
    History.init(archive).close()
    attached = History.attach(archive, sha256_file(archive))
    attached.commit({"x": b"1"}, "c")
    attached.close()
    reopened = History.attach(archive, sha256_file(archive))
    assert len(reopened.log()) == 1  # the commit survived a reopen: it is on disk
    reopened.close()
    archive.write_bytes(b"someone else wrote this")
    with pytest.raises(ServiceError) as err:
        History.attach(archive, sha256_file(archive))
    assert err.value.code == "HISTORY_DETACHED"


def test_attach_without_history(archive: Path) -> None:
    assert not History.exists(archive)
    with pytest.raises(ServiceError) as err:
        History.attach(archive, sha256_file(archive))
    assert err.value.code == "HISTORY_NOT_ENABLED"


def test_commit_prefix_lookup_and_unknown(archive: Path) -> None:
    history = History.init(archive)
    commit = history.commit({"a": b"1"}, "m")
    assert commit is not None
    assert history.get(commit.id[:6]).id == commit.id
    with pytest.raises(ServiceError) as err:
        history.get("ffffffff")
    assert err.value.code == "COMMIT_NOT_FOUND"


def test_long_history_state_is_iterative(archive: Path) -> None:
    history = History.init(archive)
    for i in range(1050):
        history.commit({"counter": str(i).encode()}, f"c{i}")
    fresh = History.attach(archive, sha256_file(archive))  # no cached states
    assert fresh.get_object(fresh.state(fresh.head)["counter"] or "") == b"1049"
