"""pvf_annotation_search and pvf_annotation_get over the test rules."""

from __future__ import annotations

import pytest
from annotations_testkit import HUGE_ENUM, base_rules, make_docs

from moddesk.kit.errors import ServiceError
from moddesk.pvf.annotations import AnnotationDocs, parse_document


def _ids(result: dict) -> list[str]:
    return [i["ruleId"] or i["fieldId"] for i in result["items"]]


def _all(docs: AnnotationDocs, **kwargs: object) -> list[dict]:
    items: list[dict] = []
    cursor = None
    while True:
        page = docs.search(cursor=cursor, **kwargs)  # type: ignore[arg-type]
        items.extend(page["items"])
        cursor = page["nextCursor"]
        if cursor is None:
            return items


def test_empty_filters_page_through_everything_stably() -> None:
    docs = make_docs()
    first = docs.search(pvf_version="all", limit=5)
    assert first["schemaVersion"] == 1 and first["rulesRevision"] == docs.rules_revision
    assert len(first["items"]) == 5 and first["nextCursor"]
    everything = _all(docs, pvf_version="all", limit=5)
    assert (
        len(everything) == first["totalMatches"] == len(base_rules()["rules"]) + len(base_rules()["fields"])
    )
    assert len({i["documentId"] for i in everything}) == len(everything)
    # every category, not only path rules
    assert {i["targetKind"] for i in everything} == {"token", "section", "directory", "path"}
    assert {i["kind"] for i in everything} == {"rule", "field"}
    assert all(i["applicability"] == "unknown" for i in everything)
    # no query: stable order by kind then id
    rules = [i["ruleId"] for i in everything if i["kind"] == "rule"]
    assert rules == sorted(rules)
    assert all("values" not in i for i in everything)


def test_keyword_terms_all_required_case_insensitive_and_cjk_substring() -> None:
    docs = make_docs()
    assert _ids(docs.search(query="PRICE", pvf_version="all")) == ["ptn.price", "wpn.price", "shared.price"]
    assert _ids(docs.search(query="price wpn", pvf_version="all")) == ["wpn.price"]
    assert _ids(docs.search(query="名称", pvf_version="all")) == ["wpn.name"]
    assert docs.search(query="price nothing-like-this", pvf_version="all")["items"] == []


def test_exact_id_section_or_title_hits_rank_first() -> None:
    docs = make_docs()
    ids = _ids(docs.search(query="kind", pvf_version="all"))
    assert ids[0] == "wpn.kind"  # exact title/section "kind"
    combo = docs.search(query="jump", pvf_version="all")["items"]
    assert [i["ruleId"] for i in combo] == ["wpn.combo"]
    assert combo[0]["matchedValues"] == [{"key": "(J)", "label": "jump"}]


def test_combined_filters_are_anded_arrays_ored() -> None:
    docs = make_docs()
    out = docs.search(pvf_version="90CN", target_kinds=["section", "directory"], kinds=["rule"])
    assert sorted(_ids(out)) == ["dir.weapon", "dir.weapon.any", "wpn.effect"]
    out = docs.search(pvf_version="90CN", annotation_types=["reference"], relation="weapons")
    assert _ids(out) == ["wpn.set"]
    out = docs.search(pvf_version="90CN", annotation_types=["enum", "image"], section="[icon]")
    assert _ids(out) == ["wpn.icon"]


def test_hypothetical_file_path_uses_the_matching_engine() -> None:
    docs = make_docs()
    out = docs.search(pvf_version="90CN", file_path="weapon/new/not_yet_created.wpn", section="price")
    assert _ids(out) == ["wpn.price", "shared.price"]  # the rule and the shared field it uses
    item = out["items"][0]
    assert item["applicability"] == "matched"
    assert item["matchReasons"] == ["section", "filePath"]
    assert out["context"]["filePath"] == "weapon/new/not_yet_created.wpn"
    # glob-limited rule only matches under weapon/
    assert "wpn.code" not in _ids(docs.search(pvf_version="90CN", file_path="elsewhere/x.wpn", limit=100))
    assert "wpn.code" in _ids(docs.search(pvf_version="90CN", file_path="weapon/x/y.wpn", limit=100))


def test_extensions_filter_with_unknown_applicability_for_globs() -> None:
    docs = make_docs()
    items = {i["ruleId"]: i for i in docs.search(pvf_version="90CN", extensions=[".wpn"], limit=100)["items"]}
    assert items["wpn.price"]["applicability"] == "matched"
    # "weapon/**/*.wpn" needs .wpn but also the weapon folder: a query by extension cannot tell
    assert items["wpn.code"]["applicability"] == "unknown"
    # given the file, it is decided
    coded = docs.search(pvf_version="90CN", file_path="weapon/sword/blade.wpn", limit=100)["items"]
    assert {i["ruleId"]: i for i in coded}["wpn.code"]["applicability"] == "matched"
    assert "ptn.price" not in items
    dirs = {
        i["ruleId"]: i
        for i in docs.search(pvf_version="90CN", extensions=["wpn"], target_kinds=["directory"])["items"]
    }
    assert dirs and all(d["applicability"] == "unknown" for d in dirs.values())


def test_directory_notes_with_path_kind_directory() -> None:
    docs = make_docs()
    out = docs.search(pvf_version="90CN", file_path="weapon", path_kind="directory")
    assert _ids(out) == ["dir.weapon"]
    out = docs.search(pvf_version="90CN", file_path="weapon/sword/", path_kind="directory")
    assert _ids(out) == ["dir.weapon.any"]
    # a file search includes the notes of its ancestor folders
    ids = _ids(
        docs.search(pvf_version="90CN", file_path="weapon/sword/a.wpn", target_kinds=["directory", "path"])
    )
    assert sorted(ids) == ["dir.weapon", "dir.weapon.any", "path.wpn"]


def test_generic_and_version_specific_rules() -> None:
    docs = make_docs()
    cn = _ids(docs.search(pvf_version="90CN", section="name"))
    us = _ids(docs.search(pvf_version="110US", section="name"))
    assert cn == ["wpn.name"] and us == ["wpn.name.110us"]
    both = {i["ruleId"]: i for i in docs.search(pvf_version="all", section="name")["items"]}
    assert set(both) == {"wpn.name", "wpn.name.110us"}
    assert both["wpn.name"]["pvfVersions"] == ["90CN"] and both["wpn.name"]["applicability"] == "unknown"
    shown = {i["ruleId"]: i for i in docs.search(pvf_version="90CN", section="name", status="all")["items"]}
    assert shown["wpn.name.110us"]["effective"] is False
    assert "110US" in shown["wpn.name.110us"]["reasons"][0]


def test_current_version_needs_workspace_and_archive() -> None:
    docs = make_docs()
    with pytest.raises(ServiceError) as info:
        docs.search()
    assert info.value.code == "INVALID_ARGUMENT"
    with pytest.raises(ServiceError) as info:
        docs.search(workspace_id="ws-1", current_version=None)
    assert info.value.code == "NO_ARCHIVE"
    assert "supportedVersions" in info.value.details
    out = docs.search(workspace_id="ws-1", current_version="110US", section="name")
    assert _ids(out) == ["wpn.name.110us"] and out["context"]["pvfVersion"] == "110US"
    with pytest.raises(ServiceError) as info:
        docs.search(pvf_version="95XX")
    assert info.value.code == "INVALID_VERSION"
    assert "110US" in info.value.details["supportedVersions"]


def test_search_cursor_binding() -> None:
    docs = make_docs()
    page = docs.search(pvf_version="all", limit=2)
    token = page["nextCursor"]
    assert docs.search(pvf_version="all", limit=2, cursor=token)["items"] != page["items"]
    with pytest.raises(ServiceError) as info:
        docs.search(pvf_version="all", limit=2, cursor=token, query="price")
    assert info.value.code == "INVALID_CURSOR"
    with pytest.raises(ServiceError) as info:
        docs.search(pvf_version="90CN", limit=2, cursor=token)
    assert info.value.code == "INVALID_CURSOR"
    cur = docs.search(workspace_id="ws-1", current_version="90CN", limit=2)
    with pytest.raises(ServiceError) as info:
        docs.search(workspace_id="ws-2", current_version="90CN", limit=2, cursor=cur["nextCursor"])
    assert info.value.code == "INVALID_CURSOR"
    docs.reload([parse_document({"rules": [{"id": "wpn.kind", "disabled": True}]}, "u.json")])
    with pytest.raises(ServiceError) as info:
        docs.search(pvf_version="all", limit=2, cursor=token)
    assert info.value.code == "STALE_RULES"


def test_summaries_are_capped_and_flagged() -> None:
    doc = base_rules()
    doc["rules"][0] = dict(doc["rules"][0], description="长" * 600 + "😀")
    docs = AnnotationDocs(builtin=[parse_document(doc, "b.json")])
    item = docs.search(pvf_version="all", query="wpn.price")["items"][0]
    assert item["summaryTruncated"] is True and len(item["summary"]) == 512
    short = docs.search(pvf_version="all", query="ptn.price")["items"][0]
    assert short["summaryTruncated"] is False


def test_get_resolves_shared_fields_and_omits_values() -> None:
    docs = make_docs()
    item = docs.search(pvf_version="all", query="wpn.price")["items"][0]
    got = docs.get(item["documentId"], docs.rules_revision)
    assert got["definitionsOmitValues"] is True
    assert got["rawDefinition"] == {
        "id": "wpn.price",
        "field": "shared.price",
        "match": {"extensions": [".wpn"]},
    }
    resolved = got["resolvedDefinition"]
    assert resolved["fieldId"] == "shared.price"
    assert resolved["inheritedFromField"] == ["target", "annotation", "preview"]
    assert resolved["target"] == {"kind": "token", "section": "price", "index": 0}
    assert got["preview"]["label"] == "价格"
    assert got["source"] == {"category": "builtin", "id": "wpn.price"}
    assert "/" not in str(got["source"])


def test_get_pages_a_huge_enum_with_exact_string_keys() -> None:
    docs = make_docs()
    doc_id = docs.search(pvf_version="all", query="wpn.code")["items"][0]["documentId"]
    first = docs.get(doc_id, docs.rules_revision)
    assert first["valueCount"] == len(HUGE_ENUM) and len(first["values"]) == 50
    assert "values" not in first["rawDefinition"]["annotation"]
    keys: list[str] = []
    cursor = None
    while True:
        page = docs.get(doc_id, docs.rules_revision, values_cursor=cursor, values_limit=100)
        keys.extend(v["key"] for v in page["values"])
        cursor = page["valuesNextCursor"]
        if cursor is None:
            break
    assert keys == list(HUGE_ENUM)
    assert docs.get(doc_id, docs.rules_revision, value="001")["value"] == {
        "key": "001",
        "found": True,
        "label": "label 1",
    }
    assert docs.get(doc_id, docs.rules_revision, value="1")["value"]["label"] == "one without zero padding"
    missing = docs.get(doc_id, docs.rules_revision, value="1000")["value"]
    assert missing == {"key": "1000", "found": False, "label": None}
    with pytest.raises(ServiceError) as info:
        docs.get(doc_id, docs.rules_revision, values_limit=101)
    assert info.value.code == "INVALID_ARGUMENT"
    other = docs.search(pvf_version="all", query="wpn.kind")["items"][0]["documentId"]
    with pytest.raises(ServiceError) as info:
        docs.get(other, docs.rules_revision, values_cursor=first["valuesNextCursor"])
    assert info.value.code == "INVALID_CURSOR"


def test_get_expands_relations_and_reports_cycles_and_missing() -> None:
    docs = make_docs()

    def get(rule: str) -> dict:
        doc_id = docs.search(pvf_version="all", query=rule)["items"][0]["documentId"]
        return docs.get(doc_id, docs.rules_revision)

    loot = get("wpn.loot")
    assert [r["name"] for r in loot["relations"]] == ["anything", "weapons", "potions"]
    assert loot["relations"][1]["listPaths"] == ["weapon/weapon.lst"] and loot["relationIssues"] == []
    bonus = get("wpn.bonus.skill")
    assert bonus["relations"][0]["contextRequired"] is True
    assert bonus["relations"][0]["listPaths"] == ["skill/knight.lst", "skill/witch.lst"]
    cycle = get("wpn.cycle")
    assert [i["issue"] for i in cycle["relationIssues"]] == ["cycle"]
    broken = get("wpn.broken")
    assert broken["relations"] == [] and broken["relationIssues"][0]["issue"] == "missing"


def test_get_errors() -> None:
    docs = make_docs()
    doc_id = docs.search(pvf_version="all")["items"][0]["documentId"]
    with pytest.raises(ServiceError) as info:
        docs.get(doc_id, "rules-other")
    assert info.value.code == "STALE_RULES"
    with pytest.raises(ServiceError) as info:
        docs.get("rnope", docs.rules_revision)
    assert info.value.code == "DOCUMENT_NOT_FOUND"


def test_get_refuses_oversized_definitions() -> None:
    doc = base_rules()
    doc["rules"][2]["annotation"]["content"] = "x" * 200_000
    docs = AnnotationDocs(builtin=[parse_document(doc, "b.json")])
    doc_id = docs.search(pvf_version="all", query="wpn.kind")["items"][0]["documentId"]
    with pytest.raises(ServiceError) as info:
        docs.get(doc_id, docs.rules_revision)
    assert info.value.code == "DEFINITION_TOO_LARGE"


def test_summary_cut_keeps_combining_marks_with_their_base() -> None:
    doc = base_rules()
    doc["rules"][0] = dict(doc["rules"][0], description="a" * 510 + "e\u0301" + "b" * 20)
    docs = AnnotationDocs(builtin=[parse_document(doc, "b.json")])
    item = docs.search(pvf_version="all", query="wpn.price")["items"][0]
    assert item["summary"] == "a" * 510 + "…" and item["summaryTruncated"] is True


def test_values_cursor_is_bound_to_the_rules_snapshot() -> None:
    docs = make_docs()
    doc_id = docs.search(pvf_version="all", query="wpn.code")["items"][0]["documentId"]
    first = docs.get(doc_id, docs.rules_revision, values_limit=10)
    docs.reload([parse_document({"rules": [{"id": "wpn.kind", "disabled": True}]}, "u.json")])
    with pytest.raises(ServiceError) as info:
        docs.get(doc_id, docs.rules_revision, values_cursor=first["valuesNextCursor"])
    assert info.value.code == "STALE_RULES"
    # documentIds are stable for an unchanged definition, so a fresh page works on the new snapshot
    assert docs.get(doc_id, docs.rules_revision)["values"][0]["key"] == "000"
