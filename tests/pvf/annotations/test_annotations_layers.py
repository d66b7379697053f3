"""Layering (override / disable / shared-field override), validation errors and hot reload."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from annotations_testkit import explain, make_docs, user_text

from moddesk.kit.errors import ServiceError
from moddesk.pvf.annotations import (
    AnnotationDocs,
    RuleValidationError,
    parse_document,
    parse_document_text,
    user_rule_sources,
)


def _status(docs: AnnotationDocs, rule_id: str) -> dict[str, dict]:
    items = docs.search(pvf_version="all", status="all", query=rule_id, limit=100)["items"]
    return {i["source"]: i for i in items if (i["ruleId"] or i["fieldId"]) == rule_id}


def test_user_rule_overrides_the_whole_block() -> None:
    override = {
        "rules": [
            {
                "id": "wpn.kind",
                "match": {"extensions": [".wpn"]},
                "target": {"kind": "token", "section": "kind", "index": 0},
                "annotation": {"title": "User kind", "type": "enum", "values": {"[sword]": "User sword"}},
            }
        ]
    }
    docs = make_docs([override])
    both = _status(docs, "wpn.kind")
    assert both["builtin"]["effective"] is False and both["builtin"]["status"] == "overridden"
    assert "user" in both["builtin"]["reasons"][0]
    assert both["user"]["effective"] is True
    assert both["builtin"]["documentId"] != both["user"]["documentId"]
    effective = docs.search(pvf_version="all", query="wpn.kind")["items"]
    assert [i["source"] for i in effective] == ["user"]
    # whole block: the builtin's other enum values are gone, not deep-merged
    got = docs.get(both["user"]["documentId"], docs.rules_revision)
    assert [v["key"] for v in got["values"]] == ["[sword]"]
    ann = next(a for a in explain(docs)["annotations"] if a["ruleIds"] == ["wpn.kind"])
    assert ann["title"] == "User kind" and ann["valueLabel"] == "User sword"
    assert ann["documentIds"] == [both["user"]["documentId"]]
    # the overridden builtin stays gettable with its status
    old = docs.get(both["builtin"]["documentId"], docs.rules_revision)
    assert old["status"] == "overridden" and old["effective"] is False
    assert old["otherLayers"][0]["source"] == "user"


def test_disable_by_id() -> None:
    docs = make_docs([{"rules": [{"id": "wpn.price", "disabled": True}]}])
    assert not [a for a in explain(docs)["annotations"] if a["ruleIds"] == ["wpn.price"]]
    shown = _status(docs, "wpn.price")
    assert set(shown) == {"builtin"}
    assert (
        shown["builtin"]["status"] == "disabled"
        and "disabled by the user layer" in shown["builtin"]["reasons"]
    )
    assert docs.search(pvf_version="all", query="wpn.price", kinds=["rule"])["items"] == []


def test_shared_field_override_changes_every_rule_using_it() -> None:
    field = {
        "fields": [
            {
                "id": "shared.price",
                "match": {"extensions": [".wpn", ".ptn"]},
                "target": {"kind": "token", "section": "price", "index": 0},
                "annotation": {"title": "Cost (user)", "type": "text", "content": "overridden"},
            }
        ]
    }
    docs = make_docs([field])
    titles = {a["title"] for a in explain(docs)["annotations"] if a["ruleIds"] == ["wpn.price"]}
    assert titles == {"Cost (user)"}
    potion = explain(docs, "#PVF_File\n[price]\n\t3\n", path="potion/x.ptn")
    assert [a["title"] for a in potion["annotations"] if a["ruleIds"] == ["ptn.price"]] == ["Cost (user)"]
    got = docs.get(
        docs.search(pvf_version="all", query="wpn.price")["items"][0]["documentId"], docs.rules_revision
    )
    # whole-block: the user field has no preview, so the rule no longer inherits one
    assert got["preview"] is None and got["resolvedDefinition"]["annotation"]["title"] == "Cost (user)"


def test_disabling_a_shared_field_disables_its_rules_with_a_reason() -> None:
    docs = make_docs([{"fields": [{"id": "shared.price", "disabled": True}]}])
    shown = _status(docs, "wpn.price")
    assert shown["builtin"]["effective"] is False
    assert "shared field 'shared.price' is disabled" in shown["builtin"]["reasons"][0]


def test_new_user_rules_are_added() -> None:
    new = {
        "rules": [
            {
                "id": "user.note",
                "match": {"glob": "weapon/**"},
                "target": {"kind": "section", "section": "icon"},
                "annotation": {"title": "My note", "type": "text"},
            }
        ]
    }
    docs = make_docs([new])
    assert [i["source"] for i in docs.search(pvf_version="all", query="user.note")["items"]] == ["user"]
    assert any(a["ruleIds"] == ["user.note"] for a in explain(docs)["annotations"])


def test_failed_reload_keeps_old_snapshot_and_revision() -> None:
    docs = make_docs()
    before = docs.rules_revision
    page = docs.search(pvf_version="all", limit=2)
    bad = '{"rules": [{"id": "x", "match": {}, "target": {"kind": "token", "section": "a", "index": -1}}]}'
    with pytest.raises(ServiceError) as info:
        docs.reload_texts([("user.json", bad)])
    assert info.value.code == "RULES_INVALID"
    paths = [i["path"] for i in info.value.details["issues"]]
    assert "user.json:$.rules[0].target.index" in paths
    assert "user.json:$.rules[0].annotation" in paths
    assert docs.rules_revision == before
    # old cursors keep working against the old snapshot
    assert docs.search(pvf_version="all", limit=2, cursor=page["nextCursor"])["rulesRevision"] == before
    with pytest.raises(ServiceError):
        docs.reload_texts([("user.json", "{not json")])
    assert docs.rules_revision == before
    with pytest.raises(ServiceError) as info:
        docs.reload_texts([("user.json", user_text({"rules": [{"id": "r", "field": "no.such.field"}]}))])
    assert "no.such.field" in info.value.details["issues"][0]["message"]
    assert docs.rules_revision == before
    ok = docs.reload_texts([("user.json", user_text({"rules": [{"id": "wpn.kind", "disabled": True}]}))])
    assert ok["changed"] is True and docs.rules_revision == ok["rulesRevision"] != before


def test_check_reports_json_paths_without_activating() -> None:
    docs = make_docs()
    before = docs.rules_revision
    issues = docs.check_texts(
        [("mine.json", json.dumps({"rules": [{"id": "a", "match": {"extensions": ["equ"]}}]}))]
    )
    assert {
        "path": "mine.json:$.rules[0].match.extensions[0]",
        "message": "must look like '.equ', got 'equ'",
    } in issues
    assert (
        docs.check_texts([("mine.json", user_text({"rules": [{"id": "wpn.kind", "disabled": True}]}))]) == []
    )
    assert docs.rules_revision == before


@pytest.mark.parametrize(
    ("doc", "path", "fragment"),
    [
        ([], "$", "must be an object"),
        ({"rules": {}}, "$.rules", "must be an array"),
        ({"version": 2}, "$.version", "unsupported document version"),
        ({"bogus": 1}, "$.bogus", "unknown key"),
        ({"rules": [{"id": ""}]}, "$.rules[0].id", "must not be empty"),
        ({"rules": [{"id": "a", "pvfVersions": ["95XX"]}]}, "$.rules[0].pvfVersions[0]", "unknown version"),
        (
            {
                "rules": [
                    {
                        "id": "a",
                        "field": "f",
                        "target": {"kind": "token", "section": "s", "index": 1, "range": {"start": 0}},
                    }
                ]
            },
            "$.rules[0].target.range",
            "not both",
        ),
        (
            {
                "rules": [
                    {
                        "id": "a",
                        "field": "f",
                        "target": {"kind": "token", "section": "s", "range": {"start": 3, "endExclusive": 3}},
                    }
                ]
            },
            "$.rules[0].target.range.endExclusive",
            "greater than start",
        ),
        (
            {"rules": [{"id": "a", "field": "f", "target": {"kind": "path", "section": "s"}}]},
            "$.rules[0].target.section",
            "does not apply",
        ),
        (
            {"rules": [{"id": "a", "field": "f", "target": {"kind": "token"}}]},
            "$.rules[0].target.section",
            "is required",
        ),
        (
            {"rules": [{"id": "a", "field": "f", "target": {"kind": "row"}}]},
            "$.rules[0].target.kind",
            "must be one of",
        ),
        (
            {
                "rules": [
                    {
                        "id": "a",
                        "field": "f",
                        "target": {"kind": "token", "section": "s", "recordTokens": 2, "separator": ","},
                    }
                ]
            },
            "$.rules[0].target.separator",
            "conflicts",
        ),
        (
            {"rules": [{"id": "a", "field": "f", "annotation": {"title": "t", "type": "enum"}}]},
            "$.rules[0].annotation.values",
            "required",
        ),
        (
            {"rules": [{"id": "a", "field": "f", "annotation": {"title": "t", "type": "reference"}}]},
            "$.rules[0].annotation.relation",
            "required",
        ),
        (
            {
                "rules": [
                    {
                        "id": "a",
                        "field": "f",
                        "annotation": {"title": "t", "type": "enum", "values": {"1": 1}},
                    }
                ]
            },
            '$.rules[0].annotation.values["1"]',
            "must be a string",
        ),
        (
            {"rules": [{"id": "a", "field": "f", "match": {"glob": "x" * 600}}]},
            "$.rules[0].match.glob",
            "longer",
        ),
        ({"rules": [{"id": "a", "field": "f"}, {"id": "a", "field": "f"}]}, "$.rules[1].id", "duplicate"),
        ({"relations": {"r": {"kind": "contextual"}}}, '$.relations["r"].contextPaths', "required"),
        ({"relations": {"r": {"kind": "union"}}}, '$.relations["r"].relations', "required"),
        ({"relations": {"r": {}}}, '$.relations["r"].listPath', "required"),
        (
            {"relations": {"r": {"listPath": "a.lst", "idToken": 2}}},
            '$.relations["r"].recordTokens',
            "larger",
        ),
    ],
)
def test_validation_errors_name_the_json_path(doc: object, path: str, fragment: str) -> None:
    with pytest.raises(RuleValidationError) as info:
        parse_document(doc, "t.json")
    matching = [i for i in info.value.issues if i.path == path]
    assert matching, [i.to_dict() for i in info.value.issues]
    assert fragment in matching[0].message


def test_zero_is_not_absent() -> None:
    doc = parse_document(
        {
            "rules": [
                {
                    "id": "a",
                    "field": "f",
                    "target": {
                        "kind": "token",
                        "section": "s",
                        "index": 0,
                        "offset": 0,
                        "tokensPerLineIndex": 0,
                    },
                }
            ]
        },
        "t.json",
    )
    target = doc.rules[0].target
    assert target is not None
    assert target.to_json() == {
        "kind": "token",
        "section": "s",
        "index": 0,
        "offset": 0,
        "tokensPerLineIndex": 0,
    }


def test_json_syntax_error_has_line_and_column() -> None:
    with pytest.raises(RuleValidationError) as info:
        parse_document_text('{\n  "rules": [,]\n}', "u.json")
    assert "line 2" in info.value.issues[0].message


def test_user_rule_folder_sources_and_hot_reload(tmp_path: Path) -> None:
    folder = tmp_path / "my rules"
    assert user_rule_sources(folder) == []
    folder.mkdir()
    (folder / "b.json").write_text(user_text({"rules": [{"id": "wpn.price", "disabled": True}]}), "utf-8")
    (folder / "a.json").write_text(user_text({"rules": [{"id": "wpn.kind", "disabled": True}]}), "utf-8")
    (folder / "notes.txt").write_text("ignored", "utf-8")
    sources = user_rule_sources(folder)
    assert [label for label, _ in sources] == ["user:a.json", "user:b.json"]
    docs = make_docs()
    docs.reload_texts(sources)
    assert {a["ruleIds"][0] for a in explain(docs)["annotations"] if a["ruleIds"]} & {
        "wpn.price",
        "wpn.kind",
    } == set()
    good = docs.rules_revision
    (folder / "a.json").write_text("{broken", "utf-8")
    with pytest.raises(ServiceError) as info:
        docs.reload_texts(user_rule_sources(folder))
    assert info.value.details["issues"][0]["path"].startswith("user:a.json:$")
    assert str(tmp_path) not in str(info.value.to_payload())
    assert docs.rules_revision == good
