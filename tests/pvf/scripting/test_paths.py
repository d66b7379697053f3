"""Script globs: the literal-tail test the listing applies before the regex never changes a match."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from moddesk.pvf.scripting.paths import glob_regex, glob_tail

#: wildcards, the "**/" token, ASCII letters RE2 folds with non-ASCII ones (k, s), those letters
#: themselves (Kelvin sign, long s), a CJK character and dots
PATTERN_CHARS = "abks.*/?\u212a\u017f中e"
PATH_CHARS = "abks./\u212a\u017f中eq"


def _listed(pattern: str, path: str) -> bool:
    """Whether ``Transaction.rows`` lists ``path`` for ``pattern`` (the tail test, then the regex)."""
    tail = glob_tail(pattern)
    return (not tail or path.endswith(tail) or not path.isascii()) and bool(
        glob_regex(pattern).fullmatch(path)
    )


@settings(max_examples=400, deadline=None)
@given(
    st.text(PATTERN_CHARS, min_size=1, max_size=8),
    st.lists(st.text(PATH_CHARS, min_size=1, max_size=9).map(str.lower), min_size=1, max_size=30),
)
def test_the_tail_test_keeps_every_match(pattern: str, paths: list[str]) -> None:
    for path in paths:
        assert _listed(pattern, path) == bool(glob_regex(pattern).fullmatch(path)), (pattern, path)


def test_the_tail_of_common_globs() -> None:
    assert glob_tail("**/*.equ") == ".equ"
    assert glob_tail("Skill/**/*.SKL") == ".skl"
    assert glob_tail("a/**/") == ""  # "**/" is one wildcard: the slash is not required
    assert glob_tail("equipment/a.equ") == "equipment/a.equ"
    assert glob_tail("*中.equ") == ""  # not ASCII: every path goes to the regex
    assert _listed("b\u017f**/", "bs") and _listed("*k", "\u212a")
