"""The JSONC reader/splicer behind the MCP client config writers."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from moddesk.kit.agents import jsonc

ENTRY = {"type": "stdio", "command": "/opt/moddesk-mcp", "args": ["ra3", "mcp"]}


def test_parse_values_comments_and_trailing_commas() -> None:
    doc = jsonc.parse('// head\n{"a": [1, 2.5, true, null,], /* mid */ "b": {"c": "\\u00e9\\n"},}\n')
    assert doc.root is not None
    assert doc.root.value == {"a": [1, 2.5, True, None], "b": {"c": "é\n"}}
    assert doc.comment_texts() == ["// head", "/* mid */"]


@pytest.mark.parametrize(
    "text",
    [
        '{"a": 1,, }',
        '{"a" 1}',
        "[1 2]",
        '{"a": 1} x',
        '{"a": "\x01"}',
        "{'a': 1}",
        '{"a": 1, "a": 2}',
        "/* open",
    ],
)
def test_parse_rejects_with_position(text: str) -> None:
    with pytest.raises(jsonc.JsoncError) as info:
        jsonc.parse(text)
    assert info.value.line >= 1 and info.value.column >= 1


def test_parse_refuses_deep_nesting_and_huge_integers() -> None:
    with pytest.raises(jsonc.JsoncError, match="nested deeper"):
        jsonc.parse("[" * 5000 + "]" * 5000)
    with pytest.raises(jsonc.JsoncError, match="out of range"):
        jsonc.parse("9" * 5000)


def test_insert_keeps_comments_tabs_and_other_members() -> None:
    text = (
        "{\n"
        '\t// servers for this repo\n\t"servers": {\n'
        '\t\t"github": {"type": "http", "url": "https://api.githubcopilot.com/mcp/"}, // trailing comma\n'
        "\t},\n"
        '\t"inputs": [] /* none yet */\n'
        "}\n"
    )
    new = jsonc.set_member(jsonc.parse(text), ("servers", "ra3"), ENTRY)
    for comment in ("// servers for this repo", "// trailing comma", "/* none yet */"):
        assert comment in new
    assert '\t\t"ra3": {\n\t\t\t"type": "stdio",' in new
    parsed = jsonc.parse(new)
    assert parsed.root is not None
    assert parsed.root.value["servers"]["ra3"] == ENTRY
    assert parsed.root.value["servers"]["github"]["url"] == "https://api.githubcopilot.com/mcp/"
    assert parsed.root.value["inputs"] == []


def test_insert_missing_container_and_crlf() -> None:
    text = '{\r\n    "globalShortcut": "Ctrl+Space"\r\n}\r\n'
    new = jsonc.set_member(jsonc.parse(text), ("mcpServers", "x"), {"command": "c", "args": []})
    assert "\n" not in new.replace("\r\n", "")  # only CRLF line endings
    assert '    "mcpServers": {\r\n        "x": {' in new
    assert json.loads(new) == {
        "globalShortcut": "Ctrl+Space",
        "mcpServers": {"x": {"command": "c", "args": []}},
    }


def test_empty_and_comment_only_files() -> None:
    assert json.loads(jsonc.set_member(jsonc.parse(""), ("servers", "x"), 1)) == {"servers": {"x": 1}}
    new = jsonc.set_member(jsonc.parse("// my notes\n"), ("servers", "x"), 1)
    assert new.startswith("// my notes\n")
    assert jsonc.parse(new).root.value == {"servers": {"x": 1}}  # type: ignore[union-attr]


def test_replace_refuses_to_drop_comments_inside_the_value() -> None:
    text = '{"mcpServers": {"x": {"command": "old" /* pinned */}}}'
    with pytest.raises(jsonc.CommentsInTheWay):
        jsonc.set_member(jsonc.parse(text), ("mcpServers", "x"), {"command": "new"})
    plain = '{"mcpServers": {"x": {"command": "old"}}} // after'
    new = jsonc.set_member(jsonc.parse(plain), ("mcpServers", "x"), {"command": "new"})
    assert new.endswith("// after") and jsonc.parse(new).root.value["mcpServers"]["x"] == {"command": "new"}  # type: ignore[union-attr]


def test_non_object_parent_is_a_type_error() -> None:
    with pytest.raises(TypeError):
        jsonc.set_member(jsonc.parse("[1]"), ("servers", "x"), 1)
    with pytest.raises(TypeError):
        jsonc.set_member(jsonc.parse('{"servers": 3}'), ("servers", "x"), 1)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet='{}[]:,"/*\n \tabc01-.etruflsn\\', max_size=80))
def test_fuzz_parse_raises_only_jsonc_error(text: str) -> None:
    try:
        doc = jsonc.parse(text)
    except jsonc.JsoncError:
        return
    if doc.root is not None and "/" not in text and not _has_trailing_comma(text):
        assert doc.root.value == json.loads(text)


def _has_trailing_comma(text: str) -> bool:
    compact = "".join(text.split())
    return ",}" in compact or ",]" in compact


@settings(max_examples=100, deadline=None)
@given(
    st.dictionaries(st.text(max_size=6), json_values, max_size=5),
    st.sampled_from([None, 0, 2, 4, "\t"]),
    st.text(max_size=10),
    json_values,
)
def test_fuzz_set_member_keeps_everything_else(
    root: dict[str, object], indent: int | str | None, name: str, value: object
) -> None:
    text = json.dumps(root, indent=indent)
    doc = jsonc.parse(text)
    try:
        new = jsonc.set_member(doc, ("servers", name), value)
    except TypeError:
        assert not isinstance(root.get("servers"), dict)
        return
    assert json.loads(new) == jsonc.expected_value(root, ("servers", name), value)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"s": {"a": 1, "x": 2, "b": 3}}', '{"s": {"a": 1, "b": 3}}'),
        ('{"s": {"x": 2, "b": 3}}', '{"s": {"b": 3}}'),
        ('{"s": {"a": 1, "x": 2}}', '{"s": {"a": 1}}'),
        ('{"s": {"x": 2}}', '{"s": {}}'),
        ('{"s": {"a": 1}}', '{"s": {"a": 1}}'),
        ("{}", "{}"),
        (
            '// keep\n{"s": {\n  "a": 1, // about a\n  "x": 2\n}}',
            '// keep\n{"s": {\n  "a": 1, // about a\n}}',
        ),
        ('{"s": {"a": 1, "x": {"v": 2 /* mine */}}}', None),
        ('{"s": {"x": 2, /* about b */ "b": 1}}', None),
        ('// keep\n{"s": {\n  "x": 2,\n  "a": 1 // about a\n}}', '// keep\n{"s": {\n  "a": 1 // about a\n}}'),
    ],
)
def test_remove_member(text: str, expected: str | None) -> None:
    doc = jsonc.parse(text)
    if expected is None:
        with pytest.raises(jsonc.CommentsInTheWay):
            jsonc.remove_member(doc, ("s", "x"))
    else:
        assert jsonc.remove_member(doc, ("s", "x")) == expected


@settings(max_examples=100, deadline=None)
@given(
    st.dictionaries(st.text(max_size=6), json_values, max_size=5),
    st.sampled_from([None, 0, 2, "\t"]),
    json_values,
)
def test_fuzz_set_then_remove_restores_the_text(
    root: dict[str, object], indent: int | str | None, value: object
) -> None:
    root.pop("servers", None)
    root["servers"] = {"other": 1} if len(root) % 2 else {}
    text = json.dumps(root, indent=indent)
    added = jsonc.set_member(jsonc.parse(text), ("servers", "moddesk"), value)
    assert jsonc.remove_member(jsonc.parse(added), ("servers", "moddesk")) == text


@pytest.mark.parametrize(
    "text",
    [
        '{"a": {"b": {"c": 1, "c": 2}}}',  # duplicate key in a fast-decoded subtree
        '{"a": {"b": [NaN]}}',
        '{"a": {"b": [1,]}}',  # JSONC in a deep subtree still parses (slow path)
        '{"a": {"b": {"c": 1 /* note */}}}',
    ],
)
def test_fast_and_span_parsers_agree(text: str) -> None:
    results: list[tuple[object, ...]] = []
    for depth in (0, 2, jsonc.MAX_DEPTH):
        try:
            doc = jsonc.parse(text, span_depth=depth)
            results.append(("ok", doc.root.value if doc.root else None, doc.comment_texts()))
        except jsonc.JsoncError as exc:
            results.append(("error", exc.line, exc.column))
    assert results[0] == results[1] == results[2]


def test_key_paths_longer_than_the_span_depth_are_refused() -> None:
    text = '{"projects": {"/home/me/game": {"mcpServers": {}}}}'
    with pytest.raises(ValueError, match="span_depth"):
        jsonc.set_member(jsonc.parse(text), ("projects", "/home/me/game", "mcpServers", "x"), 1)
    new = jsonc.set_member(
        jsonc.parse(text, span_depth=4), ("projects", "/home/me/game", "mcpServers", "x"), 1
    )
    assert json.loads(new)["projects"]["/home/me/game"]["mcpServers"] == {"x": 1}


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet='{}[]:,"/*\n \tab01-.eNaI\\', max_size=80))
def test_fuzz_fast_path_matches_the_span_parser(text: str) -> None:
    outcomes = []
    for depth in (0, jsonc.MAX_DEPTH):
        try:
            doc = jsonc.parse(text, span_depth=depth)
            outcomes.append(repr(doc.root.value if doc.root else None) + repr(doc.comment_texts()))
        except jsonc.JsoncError:
            outcomes.append("error")
    assert outcomes[0] == outcomes[1]
