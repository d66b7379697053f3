"""Python-syntax patterns on the linear-time engine: same matches as ``re``, refusals by name."""

from __future__ import annotations

import random
import re
import time

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from moddesk.kit.errors import ServiceError
from moddesk.kit.linear_regex import compile_pattern, translate
from moddesk.kit.regex_worker import POOL

ATOMS = [
    "a",
    "b",
    "é",
    "雷",
    ".",
    r"\d",
    r"\w",
    r"\s",
    r"\W",
    "[ab]",
    "[^a]",
    r"[\w-]",
    r"[\W\d]",
    "^",
    "$",
    r"\A",
    r"\Z",
    r"\n",
    " ",
]
TEXT = st.text(alphabet="ab é雷1２_-\n\t\u3000", max_size=30)


@st.composite
def patterns(draw: st.DrawFn, depth: int = 0) -> str:
    """Small patterns of every supported construct (small enough for ``re`` to stay quick)."""
    parts = []
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["atom", "atom", "group", "alt", "repeat"] if depth < 2 else ["atom"]))
        if kind == "atom":
            parts.append(draw(st.sampled_from(ATOMS)))
        elif kind == "group":
            parts.append(f"({draw(patterns(depth + 1))})")
        elif kind == "alt":
            parts.append(f"(?:{draw(patterns(depth + 1))}|{draw(patterns(depth + 1))})")
        else:
            quantifier = draw(st.sampled_from(["*", "+", "?", "{2}", "{1,3}", "*?", "+?"]))
            parts.append(f"(?:{draw(patterns(depth + 1))}){quantifier}")
    return "".join(parts)


def python_lines(pattern: str, text: str, flags: int) -> list[tuple[int, int]]:
    """(line, column) of the first ``re.finditer`` match starting in each line."""
    found: dict[int, int] = {}
    starts = [0] + [i + 1 for i, c in enumerate(text) if c == "\n"]
    for match in re.finditer(pattern, text, flags):
        line = max(i for i, s in enumerate(starts) if s <= match.start())
        found.setdefault(line + 1, match.start() - starts[line])
    return sorted(found.items())


def linear_lines(pattern: str, text: str, ignore_case: bool) -> list[tuple[int, int]]:
    regex = compile_pattern(pattern, ignore_case=ignore_case, multiline=True)
    data = text.encode()
    out = []
    for start, _end in regex.first_match_per_segment(data, b"\n", time.monotonic() + 60):
        line = data.count(b"\n", 0, start) + 1
        line_start = data.rfind(b"\n", 0, start) + 1
        out.append((line, len(data[line_start:start].decode())))
    return out


@settings(max_examples=400, deadline=None)
@given(pattern=patterns(), text=TEXT, ignore_case=st.booleans())
def test_the_first_match_of_each_line_is_pythons(pattern: str, text: str, ignore_case: bool) -> None:
    flags = re.MULTILINE | (re.IGNORECASE if ignore_case else 0)
    # known difference: after an empty match Python may take a non-empty one at the same place
    # (``x*|a\nb``); RE2's chain steps one character on, so a line can start its match later
    assume(re.fullmatch(pattern, "", flags) is None or "\n" not in text)
    try:
        found = linear_lines(pattern, text, ignore_case)
    except ServiceError as exc:  # e.g. many nested Unicode \w: refused, never wrong
        assert exc.code == "QUERY_TOO_COSTLY"
        return
    assert found == python_lines(pattern, text, flags)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40))
def test_any_pattern_compiles_or_is_refused_with_a_code(pattern: str) -> None:
    try:
        compile_pattern(pattern)
    except ServiceError as exc:
        assert exc.code in ("INVALID_PATTERN", "QUERY_TOO_COSTLY")
        assert exc.hint and exc.details["errorZh"]


@pytest.mark.parametrize(
    ("pattern", "construct"),
    [
        (r"(a)\1", "backreference"),
        (r"(?P<x>a)(?P=x)", "backreference"),
        ("(?=a)", "lookahead"),
        ("(?!a)", "negative lookahead"),
        ("(?<=a)b", "lookbehind"),
        ("(?<!a)b", "negative lookbehind"),
        ("(?>ab)", "atomic group"),
        ("a*+", "possessive"),
        (r"[^\W\d]", "negated class"),
    ],
)
def test_unsupported_constructs_are_named(pattern: str, construct: str) -> None:
    with pytest.raises(ServiceError) as err:
        compile_pattern(pattern)
    assert err.value.code == "INVALID_PATTERN" and construct in err.value.message


def test_too_costly_patterns_are_refused() -> None:
    for pattern in ["a{1001}", "(?:a{100}){100}", r"(\w{1,50}\s?){1,20}Z"]:
        with pytest.raises(ServiceError) as err:
            compile_pattern(pattern)
        assert err.value.code == "QUERY_TOO_COSTLY", pattern


def test_string_anchors_can_be_relaxed_to_lines() -> None:
    assert translate(r"\Aa\Z") == r"\Aa\z"
    assert translate(r"\Aa\Z", relax_string_anchors=True) == "(?m:^)a(?m:$)"


def test_a_slow_call_runs_in_a_worker_killed_at_its_deadline() -> None:
    regex = compile_pattern(r"a[ab]{200}x")
    table = bytes(ord("a") if i % 2 else ord("b") for i in range(256))
    data = random.Random(1).randbytes(4 << 20).translate(table)  # random a/b: no DFA can cache it
    assert len(data) > regex.inline_bytes
    started = time.monotonic()
    with pytest.raises(ServiceError) as err:
        regex.first_match_per_segment(data, b"\n", time.monotonic() + 0.5)
    assert err.value.code == "QUERY_TOO_COSTLY"
    assert time.monotonic() - started < 5  # killed, not waited for (it needs about 10 s)
    # the pool replaces the killed worker: a cheap call still answers, in a worker too
    assert regex.first_match_per_segment(
        b"a" + b"b" * 200 + b"x" + b"\n" * (1 << 20), b"\n", time.monotonic() + 30
    ) == [(0, 202)]
    POOL.close()
