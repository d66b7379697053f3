"""Numbered section names (``[FRAME000]`` …) match one name pattern, and the built-in .ani rules use it."""

from __future__ import annotations

import re

from annotations_testkit import make_docs
from hypothesis import given, settings
from hypothesis import strategies as st

from moddesk.pvf.annotations import AnnotationDocs
from moddesk.pvf.annotations.engine import section_name_matches, section_path_matches

ANI_TEXT = """#PVF_File

[LOOP]
\t1
[FRAME MAX]
\t2

[FRAME000]
\t[IMAGE]
\t\t`Map/Title/Lorien.img`
\t\t0
\t[IMAGE POS]
\t\t-146\t-17
\t[DELAY]
\t\t50
\t[DAMAGE TYPE]
\t\t`SUPERARMOR`

[FRAME001]
\t[IMAGE]
\t\t`Map/Title/Lorien.img`
\t\t1
\t[ATTACK BOX]
\t\t-30\t-20\t0\t60\t40\t80
\t[DELAY]
\t\t50
"""


def _reference(pattern: str, name: str) -> bool:
    """The same language as a regular expression (the matcher is a table; this backtracks)."""
    body = "".join(".*" if c == "*" else "[0-9]" if c == "#" else re.escape(c) for c in pattern.casefold())
    return re.fullmatch(body, name.casefold(), re.S) is not None


@settings(max_examples=500, deadline=None)
@given(
    pattern=st.text(alphabet="ab1#* ", max_size=8),
    name=st.text(alphabet="ab12 ", max_size=8),
)
def test_name_patterns_match_like_a_regex(pattern: str, name: str) -> None:
    assert section_name_matches(pattern, name) == _reference(pattern, name)


def test_name_patterns_in_section_paths() -> None:
    assert section_path_matches("FRAME###", "frame000")
    assert section_path_matches("frame###|frame####", "FRAME1024")
    assert not section_path_matches("FRAME###", "frame max")
    assert not section_path_matches("FRAME###", "frame00")
    assert section_path_matches("**/skill*", "a/b/skill level")
    assert not section_path_matches("FRAME###", "frame٠٠٠")  # Arabic-Indic digits are not 0-9


def test_many_stars_answer_at_once() -> None:
    """``*`` × 500 over a long name that cannot match: exponential for a backtracking matcher."""
    assert section_name_matches("*" * 500 + "z", "a" * 2000) is False


def test_user_rule_with_a_numbered_section_pattern() -> None:
    docs = make_docs(
        [
            {
                "version": 1,
                "rules": [
                    {
                        "id": "user.stage",
                        "match": {"extensions": [".wpn"]},
                        "target": {"kind": "section", "section": "stage##"},
                        "annotation": {"title": "阶段 Stage", "type": "text", "content": "阶段"},
                    }
                ],
            }
        ]
    )
    text = "#PVF_File\n[stage01]\n\t1\n[stage02]\n\t2\n[stage]\n\t3\n"
    out = docs.explain(
        "weapon/x.wpn", text, workspace_id="ws-1", revision=1, pvf_version="90CN", lookup=None, limit=100
    )
    hits = [a for a in out["annotations"] if "user.stage" in a["ruleIds"]]
    assert [h["section"] for h in hits] == ["stage01", "stage02"]


def test_builtin_rules_explain_every_frame_and_its_tags() -> None:
    docs = AnnotationDocs()
    out = docs.explain(
        "dungeon/act1/title/lorien.ani",
        ANI_TEXT,
        workspace_id="ws-1",
        revision=1,
        pvf_version="90CN",
        lookup=None,
        limit=100,
    )
    by_rule: dict[str, list[dict]] = {}
    for annotation in out["annotations"]:
        for rule in annotation["ruleIds"]:
            by_rule.setdefault(rule, []).append(annotation)
    assert [a["section"] for a in by_rule["ani.frame"]] == ["FRAME000", "FRAME001"]
    frame = by_rule["ani.frame"][0]
    assert frame["title"].startswith("动画帧") and "EN:" in frame["content"]
    for rule in ("ani.delay", "ani.image-pos", "ani.damage-type", "ani.attack-box", "ani.frame-image"):
        assert rule in by_rule, rule
