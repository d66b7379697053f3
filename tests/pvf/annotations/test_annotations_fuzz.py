"""Fuzz: the rule loader and the script view/engine accept anything or fail with the documented error."""

from __future__ import annotations

import contextlib
import json

from annotations_testkit import base_rules, make_docs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from moddesk.kit.errors import ServiceError
from moddesk.pvf.annotations import RuleValidationError, parse_document, parse_document_text, parse_script
from moddesk.pvf.annotations.engine import section_path_matches

_json_leaf = st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=8)
_json = st.recursive(
    _json_leaf,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=5),
    max_leaves=25,
)
_keys = st.sampled_from(
    [
        "id",
        "field",
        "match",
        "target",
        "annotation",
        "kind",
        "section",
        "index",
        "range",
        "start",
        "endExclusive",
        "recordTokens",
        "type",
        "title",
        "values",
        "relation",
        "extensions",
        "glob",
        "pvfVersions",
        "disabled",
        "listPath",
        "contextPaths",
        "relations",
        "separator",
        "tokensPerLineIndex",
        "groupOffset",
        "standaloneValues",
    ]
)
_rule_like = st.recursive(
    _json_leaf,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_keys, inner, max_size=6),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.dictionaries(st.sampled_from(["version", "rules", "fields", "relations", "description"]), _rule_like)
)
def test_loader_parses_or_raises_rule_validation_error(doc: dict) -> None:
    try:
        parsed = parse_document(doc, "fuzz.json")
    except RuleValidationError as exc:
        assert exc.issues and all(i.path.startswith("$") for i in exc.issues)
        return
    # anything accepted must also activate or fail as RULES_INVALID, never crash
    try:
        make_docs().reload([parsed])
    except ServiceError as exc:
        assert exc.code == "RULES_INVALID"


@settings(max_examples=150, deadline=None)
@given(_json)
def test_loader_on_arbitrary_json(value: object) -> None:
    with contextlib.suppress(RuleValidationError):
        parse_document(value, "fuzz.json")


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=200))
def test_loader_on_arbitrary_text(text: str) -> None:
    with contextlib.suppress(RuleValidationError):
        parse_document_text(text, "fuzz.json")


def test_loader_on_deep_nesting() -> None:
    deep = "[" * 100_000 + "]" * 100_000
    try:
        parse_document_text(deep, "deep.json")
    except RuleValidationError as exc:
        assert exc.issues


_script_alphabet = st.sampled_from(
    [
        *list("[]/`{}=<>:#\t\n\r -.0123456789abcXYZ"),
        "火",
        "🗡",
        "é",
        "[name]",
        "[/name]",
        "{6=`",
        "`}",
        "<3::",
        "#PVF_File",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_script_alphabet, max_size=120).map("".join))
def test_script_view_and_engine_on_arbitrary_text(text: str) -> None:
    view = parse_script(text)
    normalized = view.text
    assert "\r" not in normalized
    units = len(normalized.encode("utf-16-le")) // 2
    for section in view.sections:
        assert 0 <= section.tag_start < section.tag_end <= section.end <= len(normalized)
        for token in section.tokens:
            assert normalized[token.start : token.end] == token.raw
    docs = make_docs()
    out = docs.explain(
        "weapon/sword/fuzz.wpn",
        text,
        workspace_id="w",
        revision=1,
        pvf_version="90CN",
        lookup=None,
        limit=100,
    )
    for ann in out["annotations"]:
        rng = ann["range"]
        assert 0 <= rng["start"] <= rng["end"] <= units
        assert ann["startLine"] >= 1 and ann["startColumn"] >= 1
        assert (ann["startLine"], ann["startColumn"]) <= (ann["endLine"], ann["endColumn"])
    json.dumps(out, ensure_ascii=False)


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=300))
def test_engine_on_any_unicode(text: str) -> None:
    out = make_docs().explain("a/b.lst", text, workspace_id="w", revision=1, pvf_version=None, lookup=None)
    assert out["totalMatches"] >= len(out["annotations"])


def test_builtin_rules_layer_is_valid() -> None:
    # a sanity anchor for the fuzz module: the fixture layer itself must load
    assert parse_document(base_rules(), "b.json").rules


def _split_matcher(want: list[str], have: list[str]) -> bool:
    """The reference: try every split for ``**`` (exponential in the number of ``**``)."""
    if not want:
        return not have
    head = want[0]
    if head == "**":
        return any(_split_matcher(want[1:], have[i:]) for i in range(len(have) + 1))
    if not have:
        return False
    ok = head == "*" or have[0] in head.split("|")
    return ok and _split_matcher(want[1:], have[1:])


@settings(max_examples=500, deadline=None)
@given(
    want=st.lists(st.sampled_from(["**", "*", "a", "b", "a|b", "c"]), min_size=1, max_size=6),
    have=st.lists(st.sampled_from(["a", "b", "c"]), min_size=1, max_size=6),
)
def test_section_patterns_match_like_trying_every_split(want: list[str], have: list[str]) -> None:
    """The table matcher answers what trying every split answers (it replaced that for speed)."""
    assert section_path_matches("/".join(want), "/".join(have)) == _split_matcher(want, have)


def test_many_double_stars_answer() -> None:
    """``**/`` × 200 over a 50-deep path: exponential for the split matcher, a table here."""
    assert section_path_matches("/".join(["**"] * 200 + ["zzz"]), "/".join(["a"] * 50)) is False
    assert section_path_matches("/".join(["**"] * 200 + ["a"]), "/".join(["a"] * 50)) is True
