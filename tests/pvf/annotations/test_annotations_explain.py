"""pvf_annotation_explain behaviour over the test rules: ranges, records, relations, runtime notes."""

from __future__ import annotations

import pytest
from annotations_testkit import BLADE, WEAPON_TEXT, explain, make_docs

from moddesk.kit.errors import ServiceError


def _js_slice(text: str, start: int, end: int) -> str:
    """What JavaScript's text.slice(start, end) returns: UTF-16 code unit offsets."""
    units = text.encode("utf-16-le")
    return units[2 * start : 2 * end].decode("utf-16-le")


def _by_rule(result: dict, rule_id: str) -> list[dict]:
    return [a for a in result["annotations"] if rule_id in a["ruleIds"]]


def test_explain_returns_revisions_and_workspace_source() -> None:
    docs = make_docs()
    out = explain(docs)
    assert out["rulesRevision"] == docs.rules_revision
    assert out["workspaceId"] == "ws-1" and out["revision"] == 7
    assert out["contentSource"] == "workspace"
    assert out["textRevision"].startswith("text-")
    assert out["filePath"] == BLADE


def test_ranges_are_utf16_and_lines_are_one_based_with_crlf() -> None:
    docs = make_docs()
    crlf = WEAPON_TEXT.replace("\n", "\r\n")
    out = explain(docs, crlf)
    editor_text = crlf  # ranges are offsets in the text read_file returns: CRLF kept
    name = _by_rule(out, "wpn.name")[0]
    assert _js_slice(editor_text, name["range"]["start"], name["range"]["end"]) == "`Blade 🗡 of 火`"
    assert (name["startLine"], name["startColumn"]) == (4, 2)
    # 🗡 is two UTF-16 units: the closing backtick's column counts them both.
    assert name["endColumn"] == 2 + len("`Blade 🗡 of 火`".encode("utf-16-le")) // 2
    price = _by_rule(out, "wpn.price")[0]
    assert _js_slice(editor_text, price["range"]["start"], price["range"]["end"]) == "1200"
    # Every annotation's range slices exactly its raw value out of the editor text.
    for ann in out["annotations"]:
        if ann.get("rawValue") and ann["type"] not in ("image", "placeholder"):
            assert _js_slice(editor_text, ann["range"]["start"], ann["range"]["end"]) == ann["rawValue"]
    # the LF text is another text: other offsets, another text revision, the same lines
    lf = explain(docs)
    assert out["textRevision"] != lf["textRevision"]
    lf_name = _by_rule(lf, "wpn.name")[0]
    assert _js_slice(WEAPON_TEXT, lf_name["range"]["start"], lf_name["range"]["end"]) == "`Blade 🗡 of 火`"
    assert lf_name["range"]["start"] == name["range"]["start"] - 3  # three CRLFs before it
    assert (lf_name["startLine"], lf_name["startColumn"]) == (name["startLine"], name["startColumn"])


def test_enum_labels_keep_string_keys() -> None:
    out = explain(make_docs())
    kind = _by_rule(out, "wpn.kind")[0]
    assert kind["valueLabel"] == "Sword" and kind["valueFound"] is True
    code = _by_rule(out, "wpn.code")[0]
    assert code["rawValue"] == "001" and code["valueLabel"] == "label 1"


def test_unknown_enum_value_is_kept_with_a_warning() -> None:
    out = explain(make_docs())
    combo = _by_rule(out, "wpn.combo")
    assert [c["value"] for c in combo] == ["(A)", "(J)", "(X)"]
    assert [c["recordIndex"] for c in combo] == [0, 1, 2]
    assert combo[2]["valueFound"] is False and combo[2]["valueLabel"] is None
    assert any(w["code"] == "ENUM_VALUE_UNKNOWN" and "(X)" in w["message"] for w in out["warnings"])


def test_dynamic_records_use_the_size_token() -> None:
    out = explain(make_docs())
    levels = _by_rule(out, "wpn.levels")
    assert [(a["rawValue"], a["recordIndex"], a["tokenIndex"]) for a in levels] == [
        ("11", 0, 2),
        ("21", 1, 4),
        ("31", 2, 6),
    ]
    assert all(a["section"] == "stats/levels" for a in levels)


def test_references_resolved_missing_and_unsupported() -> None:
    out = explain(make_docs())
    sets = {a["value"]: a["reference"] for a in _by_rule(out, "wpn.set")}
    assert sets["1"]["resolutionStatus"] == "resolved"
    assert (
        sets["1"]["path"] == "weapon/sword/blade.wpn"
    )  # mixed case in the list, resolved case-insensitively
    assert sets["1"]["name"] == "Blade 🗡 of 火"
    assert sets["2"]["name"] == "Second blade"
    assert sets["99"]["resolutionStatus"] == "missing" and sets["99"]["path"] == "weapon/sword/gone.wpn"
    broken = _by_rule(out, "wpn.broken")[0]["reference"]
    assert broken["resolutionStatus"] == "unsupported"
    cycle = _by_rule(out, "wpn.cycle")[0]["reference"]
    assert cycle["resolutionStatus"] == "missing" and "cycle" in cycle["reason"]


def test_union_relation_tries_members_in_order() -> None:
    out = explain(make_docs())
    loot = {a["value"]: a["reference"] for a in _by_rule(out, "wpn.loot")}
    assert loot["2"]["resolutionStatus"] == "resolved" and loot["2"]["via"] == "weapons"
    assert loot["50"]["resolutionStatus"] == "resolved" and loot["50"]["via"] == "potions"
    assert loot["50"]["name"] == "Red potion"


def test_contextual_relation_never_guesses_across_contexts() -> None:
    out = explain(make_docs())
    bonus = {a["reference"]["context"]: a["reference"] for a in _by_rule(out, "wpn.bonus.skill")}
    assert bonus["[knight]"]["resolutionStatus"] == "resolved" and bonus["[knight]"]["name"] == "Slash"
    # witch list exists but has no id 8: missing, not borrowed from the knight list
    assert bonus["[witch]"]["resolutionStatus"] == "missing"
    assert bonus["[orc]"]["resolutionStatus"] == "context_required"
    assert "path" not in bonus["[orc]"]


def test_without_archive_references_are_unsupported() -> None:
    out = explain(make_docs(), lookup=None)
    assert {a["reference"]["resolutionStatus"] for a in _by_rule(out, "wpn.set")} == {"unsupported"}


def test_image_and_runtime_annotations_have_provenance() -> None:
    out = explain(make_docs())
    icon = _by_rule(out, "wpn.icon")[0]
    assert icon["image"] == {"path": "Item/weapon.img", "index": 4}
    runtime = [a for a in out["annotations"] if a["origin"] == "runtime"]
    assert runtime and all(a["ruleIds"] == [] and a["documentIds"] == [] for a in runtime)
    placeholders = {a["rawValue"]: a for a in runtime if a["type"] == "placeholder"}
    assert placeholders["<3::name_10>"]["placeholder"] == {"table": "3", "key": "name_10"}
    assert _js_slice(WEAPON_TEXT, **_r(placeholders["<3::name_10>"])) == "<3::name_10>"
    assert placeholders["<int>"]["placeholder"] == {"format": "int"}
    # The configured image rule covers [icon]; the runtime image detector does not repeat it.
    assert not [a for a in runtime if a["type"] == "image"]


def _r(ann: dict) -> dict:
    return {"start": ann["range"]["start"], "end": ann["range"]["end"]}


def test_duplicate_sections_are_all_explained_with_occurrences() -> None:
    out = explain(make_docs())
    effects = _by_rule(out, "wpn.effect")
    assert [(e["section"], e["occurrence"]) for e in effects] == [("effect", 0), ("effect", 1)]
    only_second = explain(make_docs(), section="[effect]", occurrence=1)
    assert {a["occurrence"] for a in only_second["annotations"]} == {1}
    assert only_second["annotations"]


def test_path_context_is_separate_from_annotations() -> None:
    out = explain(make_docs(), section="price")
    scopes = [(p["scopePath"], p["ruleIds"][0]) for p in out["pathContext"]]
    assert scopes == [("weapon", "dir.weapon"), ("weapon/sword", "dir.weapon.any"), (BLADE, "path.wpn")]
    assert all(p["documentIds"] for p in out["pathContext"])
    assert [a["ruleIds"] for a in out["annotations"]] == [["wpn.price"]]


def test_token_and_line_filters() -> None:
    docs = make_docs()
    one = explain(docs, section="set", occurrence=0, token_index=2)
    assert [a["value"] for a in one["annotations"]] == ["99"]
    lines = explain(docs, start_line=10, end_line=13)
    assert {a["startLine"] for a in lines["annotations"]} <= set(range(10, 14))
    assert [a["ruleIds"] for a in lines["annotations"]] == [["wpn.price"], ["wpn.code"]]


def test_nested_section_filter_includes_children() -> None:
    out = explain(make_docs(), section="stats")
    assert {a["section"] for a in out["annotations"]} == {"stats/levels"}


@pytest.mark.parametrize(
    ("kwargs", "code"),
    [
        ({"occurrence": 0}, "INVALID_ARGUMENT"),
        ({"section": "set", "token_index": 1}, "INVALID_ARGUMENT"),
        ({"start_line": 0}, "INVALID_ARGUMENT"),
        ({"start_line": 5, "end_line": 4}, "INVALID_ARGUMENT"),
        ({"limit": 101}, "INVALID_ARGUMENT"),
        ({"section": "nope"}, "SECTION_NOT_FOUND"),
        ({"section": "effect", "occurrence": 2}, "SECTION_NOT_FOUND"),
        ({"pvf_version": "95XX"}, "INVALID_VERSION"),
        ({"rules_revision": "rules-old"}, "STALE_RULES"),
    ],
)
def test_explain_argument_errors(kwargs: dict, code: str) -> None:
    with pytest.raises(ServiceError) as info:
        explain(make_docs(), **kwargs)
    assert info.value.code == code


def test_version_specific_rules_in_explain() -> None:
    docs = make_docs()
    cn = {a["ruleIds"][0] for a in explain(docs, pvf_version="90CN")["annotations"] if a["ruleIds"]}
    us = {a["ruleIds"][0] for a in explain(docs, pvf_version="110US")["annotations"] if a["ruleIds"]}
    assert "wpn.name" in cn and "wpn.name.110us" not in cn
    assert "wpn.name.110us" in us and "wpn.name" not in us


def test_explain_paging_is_complete_and_cursors_are_bound() -> None:
    docs = make_docs()
    full = explain(docs)["annotations"]
    pages: list[dict] = []
    cursor = None
    while True:
        page = explain(docs, limit=3, cursor=cursor)
        pages.extend(page["annotations"])
        cursor = page["nextCursor"]
        if cursor is None:
            break
    assert pages == full
    first = explain(docs, limit=3)
    token = first["nextCursor"]
    # workspace revision moved
    with pytest.raises(ServiceError) as info:
        explain(docs, limit=3, cursor=token, revision=8)
    assert info.value.code == "STALE_WORKSPACE"
    # same revision but a different text (render reload / newline change)
    with pytest.raises(ServiceError) as info:
        explain(docs, WEAPON_TEXT + "\n[extra]\n", limit=3, cursor=token)
    assert info.value.code == "STALE_WORKSPACE"
    # different filters
    with pytest.raises(ServiceError) as info:
        explain(docs, limit=3, cursor=token, section="set")
    assert info.value.code == "INVALID_CURSOR"
    with pytest.raises(ServiceError) as info:
        explain(docs, limit=3, cursor=token + "x")
    assert info.value.code == "INVALID_CURSOR"
    # rules moved
    docs.reload([])  # same rules: same revision, the cursor still works
    assert explain(docs, limit=3, cursor=token)["annotations"] == full[3:6]
    from annotations_testkit import parse_document

    docs.reload([parse_document({"rules": [{"id": "wpn.kind", "disabled": True}]}, "u.json")])
    with pytest.raises(ServiceError) as info:
        explain(docs, limit=3, cursor=token)
    assert info.value.code == "STALE_RULES"


def test_list_files_get_automatic_links() -> None:
    docs = make_docs()
    from annotations_testkit import ARCHIVE

    out = explain(docs, ARCHIVE["weapon/weapon.lst"], path="weapon/weapon.lst")
    links = [a for a in out["annotations"] if a["origin"] == "runtime"]
    assert [
        (a["reference"]["id"], a["reference"]["path"], a["reference"]["resolutionStatus"]) for a in links
    ] == [
        ("1", "weapon/sword/blade.wpn", "resolved"),
        ("2", "weapon/sword/second.wpn", "resolved"),
        ("99", "weapon/sword/gone.wpn", "missing"),
    ]
    configured = [a for a in out["annotations"] if a["origin"] == "rule"]
    assert [a["rawValue"] for a in configured] == [
        "`Sword/Blade.wpn`",
        "`sword/second.wpn`",
        "`sword/gone.wpn`",
    ]


def test_parse_warnings_are_reported_with_lines() -> None:
    out = explain(make_docs(), "#PVF_File\n[set]\n\t1\n[/other]\n[price]\n\t5\n")
    codes = {w["code"] for w in out["warnings"]}
    assert "ORPHAN_CLOSE" in codes
    assert all("line" in w for w in out["warnings"] if w["code"] == "ORPHAN_CLOSE")


def test_byte_cap_truncates_pages_honestly() -> None:
    docs = make_docs()
    text = "#PVF_File\n" + "".join(f"[name]\n\t`{i:04d}{'长' * 3000}`\n" for i in range(60))
    first = explain(docs, text, limit=100)
    assert first["truncated"] is True and first["nextCursor"]
    assert 0 < len(first["annotations"]) < 60 and first["totalMatches"] == 60
    seen = list(first["annotations"])
    cursor = first["nextCursor"]
    while cursor:
        page = explain(docs, text, limit=100, cursor=cursor)
        seen.extend(page["annotations"])
        cursor = page["nextCursor"]
    assert [a["occurrence"] for a in seen] == list(range(60))


def test_each_list_is_read_once_per_explain() -> None:
    from annotations_testkit import ARCHIVE

    from moddesk.pvf.annotations import MappingLookup

    class CountingLookup(MappingLookup):
        def __init__(self) -> None:
            super().__init__(ARCHIVE)
            self.reads: list[str] = []

        def read_text(self, path: str) -> str | None:
            self.reads.append(path)
            return super().read_text(path)

    counting = CountingLookup()
    out = explain(make_docs(), lookup=counting)
    assert len([a for a in out["annotations"] if a["ruleIds"] == ["wpn.set"]]) == 3
    assert counting.reads.count("weapon/weapon.lst") == 1
