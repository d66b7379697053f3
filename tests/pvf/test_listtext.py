"""Layout-keeping list and string-table edits: the entries are exactly the asked ones, the rest untouched."""

from __future__ import annotations

import difflib

from hypothesis import given, settings
from hypothesis import strategies as st

from moddesk.pvf.listtext import edit_list, edit_str, list_entries, render_list, string_entries

paths = st.text(alphabet="abcxyz/._0123456789", min_size=1, max_size=12)
entries = st.dictionaries(st.integers(-5, 400), paths, max_size=25)


def layout(values: dict[int, str], split: bool, crlf: bool) -> str:
    nl = "\r\n" if crlf else "\n"
    sep = nl if split else "\t"
    return "#PVF_File" + nl + "".join(f"{i}{sep}`{p}`{nl}" for i, p in sorted(values.items()))


@settings(max_examples=150, deadline=None)
@given(before=entries, after=entries, split=st.booleans(), crlf=st.booleans())
def test_edit_list_holds_exactly_the_new_entries(
    before: dict[int, str], after: dict[int, str], split: bool, crlf: bool
) -> None:
    text = layout(before, split, crlf)
    edited = edit_list(text, after)
    assert list_entries(edited) == after
    if before:
        # the file's own line breaks are kept
        assert ("\r\n" in edited) == crlf or not after
    # lines of entries that did not change are still there, in order
    kept = [line for line in text.splitlines() if line]
    changed = difflib.SequenceMatcher(a=kept, b=[x for x in edited.splitlines() if x])
    untouched = sum(block.size for block in changed.get_matching_blocks())
    same = sum(1 for i, p in before.items() if after.get(i) == p)
    assert untouched >= same * (2 if split else 1)
    # no blank lines appear where entries were removed or added (an empty list is rebuilt whole)
    assert not before or sum(1 for x in edited.splitlines() if not x.strip()) <= sum(
        1 for x in text.splitlines() if not x.strip()
    )


def test_one_changed_entry_is_a_two_line_diff() -> None:
    text = layout({i: f"w/{i}.equ" for i in range(0, 2000, 2)}, split=True, crlf=True)
    edited = edit_list(text, {**list_entries(text), 10: "w/new.equ"})
    diff = [
        d for d in difflib.unified_diff(text.splitlines(), edited.splitlines(), lineterm="") if d[:1] in "+-"
    ]
    assert diff[2:] == ["-`w/10.equ`", "+`w/new.equ`"]


def test_text_that_is_not_a_list_is_rebuilt() -> None:
    assert list_entries(edit_list("not a list `", {1: "a.equ"})) == {1: "a.equ"}
    assert list_entries(edit_list("", {})) == {}
    assert (
        list_entries(edit_list("", {3: "b.equ"})) == {3: "b.equ"} == list_entries(render_list({3: "b.equ"}))
    )


keys = st.text(alphabet="abcxyz_0123456789", min_size=1, max_size=8)
values = st.text(alphabet="abc xyz0123456789", max_size=8)


@settings(max_examples=150, deadline=None)
@given(
    before=st.dictionaries(keys, values, max_size=15),
    after=st.dictionaries(keys, values, max_size=15),
    crlf=st.booleans(),
)
def test_edit_str_holds_exactly_the_new_entries(
    before: dict[str, str], after: dict[str, str], crlf: bool
) -> None:
    nl = "\r\n" if crlf else "\n"
    text = "// a comment" + nl + nl.join(f"{k}>{v}" for k, v in before.items()) + nl
    edited = edit_str(text, after)
    assert string_entries(edited) == after
    assert edited.startswith("// a comment")


def _by_document(text: str) -> list[tuple[str, object, int, int]]:
    from moddesk.pvf.docparse import build_document

    kinds = {"integer": "int", "string": "string"}
    return [(kinds.get(v.kind, v.kind), v.value, v.start, v.end) for v in build_document(text).preamble]


list_text = st.lists(
    st.one_of(
        st.integers(-(2**31), 2**31 - 1).map(lambda i: f"{'+' if i > 0 and i % 3 == 0 else ''}{i}"),
        st.text(alphabet="ab/.`\u6b66 ", max_size=6).map(lambda t: "`" + t.replace("`", "``") + "`"),
        st.just("\n# a comment line"),
        st.sampled_from(["\t", "\r\n", "\n", "  "]),
    ),
    max_size=30,
).map(lambda parts: "#PVF_File\n" + " ".join(parts))


@settings(max_examples=300, deadline=None)
@given(text=list_text)
def test_the_fast_list_reader_reads_what_the_document_model_reads(text: str) -> None:
    from moddesk.pvf.listtext import _fast_values, list_values

    fast = _fast_values(text)
    assert fast is not None, "a list of integers, strings and comments takes the fast path"
    assert fast == _by_document(text) == list_values(text)
