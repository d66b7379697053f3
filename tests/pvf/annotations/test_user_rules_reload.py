"""User rule files: each loaded on its own, a bad one reported and skipped, a failed reload keeps
the last good version, rulesRevision moves only when what is active changes, a folder watch reloads."""

from __future__ import annotations

import json
import time
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from moddesk.pvf.annotations import AnnotationDocs
from moddesk.pvf.annotations.userrules import UserRules
from moddesk.pvf.service import PvfService

DISABLE_PRICE = json.dumps({"rules": [{"id": "equ.price", "disabled": True}]})
DISABLE_RARITY = json.dumps({"rules": [{"id": "equ.rarity", "disabled": True}]})
BAD_INDEX = json.dumps({"rules": [{"id": "x", "target": {"kind": "token", "section": "a", "index": -1}}]})


def _effective(docs: AnnotationDocs, rule_id: str) -> bool:
    found = docs.search(query=rule_id, status="all", kinds=["rule"], pvf_version="all")
    return any(i["effective"] for i in found["items"] if i.get("ruleId") == rule_id)


def test_a_bad_file_is_skipped_and_reported_the_others_serve(tmp_path: Path) -> None:
    (tmp_path / "a good.json").write_text(DISABLE_PRICE, "utf-8")
    (tmp_path / "b bad.json").write_text(BAD_INDEX, "utf-8")
    (tmp_path / "c syntax.json").write_text("{not json", "utf-8")
    builtin_only = AnnotationDocs().rules_revision
    docs = AnnotationDocs()
    result = UserRules(tmp_path, docs).load()
    assert result["rulesRevision"] != builtin_only  # the good file is active
    assert not _effective(docs, "equ.price")
    problems = {p["file"]: p for p in result["problems"]}
    assert set(problems) == {"b bad.json", "c syntax.json"}
    assert problems["b bad.json"]["serving"] == "skipped"
    assert "$.rules[0].target.index" in [i["path"] for i in problems["b bad.json"]["issues"]]
    assert "line 1 column 2" in problems["c syntax.json"]["issues"][0]["message"]


def test_a_failed_reload_keeps_the_last_good_rules_and_revision(tmp_path: Path) -> None:
    rules = tmp_path / "mine.json"
    rules.write_text(DISABLE_PRICE, "utf-8")
    docs = AnnotationDocs()
    user = UserRules(tmp_path, docs)
    first = user.load()["rulesRevision"]
    rules.write_text(BAD_INDEX, "utf-8")
    failed = user.load()
    assert failed["rulesRevision"] == first and not failed["changed"]
    assert failed["problems"][0]["serving"] == "last good version"
    assert not _effective(docs, "equ.price")  # still the last good version
    assert user.load()["rulesRevision"] == first  # nothing changed: no move
    rules.write_text(DISABLE_RARITY, "utf-8")
    fixed = user.load()
    assert fixed["changed"] and fixed["rulesRevision"] != first and fixed["problems"] == []
    assert _effective(docs, "equ.price") and not _effective(docs, "equ.rarity")


def test_the_folder_watch_reloads_and_the_status_names_problems(tmp_path: Path) -> None:
    folder = tmp_path / "user rules"
    folder.mkdir()
    service = PvfService(rules_dir=folder)
    try:
        start = service.annotations.rules_revision
        assert service.user_rules is not None
        time.sleep(0.3)  # let the watcher arm
        (folder / "mine.json").write_text(DISABLE_PRICE, "utf-8")
        deadline = time.monotonic() + 15
        while service.annotations.rules_revision == start and time.monotonic() < deadline:
            time.sleep(0.05)
        assert service.annotations.rules_revision != start
        moved = service.annotations.rules_revision
        (folder / "broken.json").write_text("{", "utf-8")
        deadline = time.monotonic() + 15
        while "broken.json" not in service.info()["annotationStatus"] and time.monotonic() < deadline:
            time.sleep(0.05)
        assert "broken.json (skipped" in service.info()["annotationStatus"]
        assert service.annotations.rules_revision == moved
    finally:
        service.shutdown()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=300) | st.text(max_size=300).map(str.encode))
def test_any_file_content_is_loaded_or_reported(tmp_path: Path, data: bytes) -> None:
    (tmp_path / "fuzz.json").write_bytes(data)
    (tmp_path / "good.json").write_text(DISABLE_PRICE, "utf-8")
    result = UserRules(tmp_path, AnnotationDocs()).load()
    files = {p["file"] for p in result["problems"]}
    assert files <= {"fuzz.json"}  # the good file always serves
    assert all(p["issues"] for p in result["problems"])
