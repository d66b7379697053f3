"""The search core: index, paging positions, changed entries, byte caps, bounded regex."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from moddesk.kit.errors import ServiceError
from moddesk.pvf.workbench.search import ContentIndex, Matcher, Searcher, SearchQuery, check_regex, glob_match
from moddesk.pvf.workbench.searchadvice import advice
from moddesk.pvf.workbench.searchindex import fold_text, in_chunks, normalize_path

TEXTS: dict[str, str | None] = {
    "equipment/weapon/sword.equ": "[name]\n`Iron Sword`\n[price]\n\t9\n",
    "equipment/weapon/axe.equ": "[name]\n`Big Axe`\n[price]\n\t120\n",
    "equipment/armor/mail.equ": "[name]\n`STRASSE Mail`\n[price]\n\t9\n",
    "skill/fire.skl": "[name]\n`Fire Sword Dance`\n",
    "stackable/potion.stk": "[name]\n`Potion`\n",
}


def searcher(
    texts: dict[str, str | None] = TEXTS,
    changed: dict[str, str | None] | None = None,
    deleted: frozenset[str] = frozenset(),
) -> Searcher:
    index = ContentIndex.build(texts.items())
    current = {**texts, **(changed or {})}
    return Searcher(index, changed or {}, deleted, lambda p: current.get(p))


def all_hits(s: Searcher, query: SearchQuery, limit: int = 2) -> list[tuple[str, int | None]]:
    out: list[tuple[str, int | None]] = []
    after = None
    while True:
        page = s.page(query, after, limit=limit)
        out.extend((h.path, h.line) for h in page.hits)
        if page.next_position is None:
            return out
        after = page.next_position


def test_content_search_casefold_and_lines() -> None:
    hits = all_hits(searcher(), SearchQuery("content", "sword"))
    assert hits == [("equipment/weapon/sword.equ", 2), ("skill/fire.skl", 2)]
    # Unicode case folding: ß folds to ss
    assert all_hits(searcher(), SearchQuery("content", "straße")) == [("equipment/armor/mail.equ", 2)]


def test_snippet_is_original_text() -> None:
    page = searcher().page(SearchQuery("content", "iron"))
    assert page.hits[0].snippet == "`Iron Sword`"


def test_case_sensitive() -> None:
    assert all_hits(searcher(), SearchQuery("content", "Sword", case_sensitive=True)) == [
        ("equipment/weapon/sword.equ", 2),
        ("skill/fire.skl", 2),
    ]
    assert all_hits(searcher(), SearchQuery("content", "SWORD", case_sensitive=True)) == []


def test_scope_and_extensions() -> None:
    q = SearchQuery("content", "[price]", scope="equipment/weapon")
    assert [p for p, _ in all_hits(searcher(), q)] == [
        "equipment/weapon/axe.equ",
        "equipment/weapon/sword.equ",
    ]
    q = SearchQuery("content", "[name]", extensions=("skl", ".stk"))
    assert [p for p, _ in all_hits(searcher(), q)] == ["skill/fire.skl", "stackable/potion.stk"]


def test_paging_covers_everything_once() -> None:
    texts: dict[str, str | None] = {f"dir/f{i:03}.equ": "a\nhit\nb\nhit again\n" for i in range(50)}
    hits = all_hits(searcher(texts), SearchQuery("content", "hit"), limit=7)
    assert len(hits) == 100
    assert len(set(hits)) == 100
    assert hits == sorted(hits, key=lambda h: (h[0], h[1]))


def test_changed_entries_override_index() -> None:
    s = searcher(
        changed={"equipment/weapon/sword.equ": "[name]\n`Wooden Club`\n", "new/added.equ": "sword here\n"},
        deleted=frozenset({"skill/fire.skl"}),
    )
    assert all_hits(s, SearchQuery("content", "sword")) == [("new/added.equ", 1)]
    assert all_hits(s, SearchQuery("content", "club")) == [("equipment/weapon/sword.equ", 2)]
    paths = [p for p, _ in all_hits(s, SearchQuery("path", "**/*.equ"))]
    assert "new/added.equ" in paths and "skill/fire.skl" not in paths


def test_path_glob_and_substring() -> None:
    assert [p for p, _ in all_hits(searcher(), SearchQuery("path", "equipment/*/*.equ"))] == [
        "equipment/armor/mail.equ",
        "equipment/weapon/axe.equ",
        "equipment/weapon/sword.equ",
    ]
    assert [
        p for p, _ in all_hits(searcher(), SearchQuery("path", "equipment/*.equ"))
    ] == []  # * stays in one folder
    assert [p for p, _ in all_hits(searcher(), SearchQuery("path", "POTION"))] == ["stackable/potion.stk"]
    assert glob_match("**/sword.equ", "equipment/weapon/sword.equ")


def test_a_glob_without_a_slash_matches_file_names_in_any_folder() -> None:
    # as people type it (and as .gitignore reads it): *.equ is every .equ, wherever it lives
    equ = [p for p, _ in all_hits(searcher(), SearchQuery("path", "*.equ"))]
    assert equ == ["equipment/armor/mail.equ", "equipment/weapon/axe.equ", "equipment/weapon/sword.equ"]
    assert [p for p, _ in all_hits(searcher(), SearchQuery("path", "s*.equ"))] == [
        "equipment/weapon/sword.equ"
    ]
    assert [p for p, _ in all_hits(searcher(), SearchQuery("path", "*.EQU", scope="equipment/armor"))] == [
        "equipment/armor/mail.equ"
    ]
    # a leading / anchors a name glob to the root; a glob with / still matches the whole path
    assert all_hits(searcher({**TEXTS, "top.lst": "x"}), SearchQuery("path", "/*.lst")) == [("top.lst", None)]
    assert all_hits(searcher(), SearchQuery("path", "/*.equ")) == []
    assert glob_match("*.stk", "stackable/potion.stk") and not glob_match("*.stk", "stackable/potion.stk.bak")


def test_zero_hits_say_why_and_what_would_match() -> None:
    s = searcher()

    def advise(query: SearchQuery) -> dict[str, Any]:
        assert not s.page(query, None).hits
        return advice(query, lambda alt: s.page(alt, None, limit=1), content_ready=True)

    one_level = advise(SearchQuery("path", "equipment/*.equ"))
    assert "whole path" in one_level["reason"] and "通配符" in one_level["reasonZh"]
    assert one_level["tryInstead"][0]["query"] == "equipment/**/*.equ"
    assert one_level["tryInstead"][0]["example"] == "equipment/armor/mail.equ"
    wrong_scope = advise(SearchQuery("content", "Potion", scope="equipment"))
    assert "under equipment/" in wrong_scope["reason"]
    assert [(a["change"], a["example"]) for a in wrong_scope["tryInstead"]] == [
        ("without the scope and extension filters", "stackable/potion.stk")
    ]
    as_content = advise(SearchQuery("path", "strasse"))
    assert [(a["mode"], a["example"]) for a in as_content["tryInstead"]] == [
        ("content", "equipment/armor/mail.equ")
    ]
    nothing = advise(SearchQuery("content", "no such words"))
    assert nothing["tryInstead"] == [] and "no file text contains" in nothing["reason"]


def test_regex_and_bounds() -> None:
    hits = all_hits(searcher(), SearchQuery("regex", r"^\t\d$"))
    assert hits == [("equipment/armor/mail.equ", 4), ("equipment/weapon/sword.equ", 4)]
    # nested repetition is fine on the linear-time engine; what it cannot run is refused by name
    assert all_hits(searcher(), SearchQuery("regex", r"^(\t\d)+$")) == hits
    for bad, construct in [(r"(a)\1", "backreference"), ("(?=a)b", "lookahead"), ("([a-z]", None)]:
        with pytest.raises(ServiceError) as err:
            check_regex(bad, False)
        assert err.value.code == "INVALID_PATTERN"
        assert construct is None or construct in err.value.message
        assert err.value.details["errorZh"]


def test_byte_cap_marks_truncated() -> None:
    texts: dict[str, str | None] = {f"f{i}.equ": "x" * 150 + "needle" + "y" * 150 for i in range(40)}
    s = searcher(texts)
    page = s.page(SearchQuery("content", "needle"), limit=100, byte_cap=2048)
    assert page.truncated and page.reason == "byte-cap"
    assert 1 <= len(page.hits) < 40 and page.next_position is not None
    assert len(all_hits(s, SearchQuery("content", "needle"), limit=100)) == 40


def test_time_budget_resumes_without_losing_hits() -> None:
    texts: dict[str, str | None] = {f"f{i:05}.equ": "nothing\n" for i in range(5000)}
    texts["f04999.equ"] = "the end\n"
    s = searcher(texts)
    query = SearchQuery("regex", "end", case_sensitive=True)  # the per-file scan
    page = s.page(query, time_budget=0.0)
    assert page.truncated and page.reason == "time-budget" and page.hits == []
    after = page.next_position
    found: list[str] = []
    while after is not None:
        page = s.page(query, after, time_budget=0.0)
        found.extend(h.path for h in page.hits)
        after = page.next_position
    assert found == ["f04999.equ"]


def test_binary_entries_are_path_only() -> None:
    s = searcher({"a.bin": None, "b.equ": "bin"})
    assert all_hits(s, SearchQuery("content", "bin")) == [("b.equ", 1)]
    assert [p for p, _ in all_hits(s, SearchQuery("path", "a.bin"))] == ["a.bin"]


def test_bad_queries() -> None:
    for bad in ["", "x" * 600, "a\x00b"]:
        with pytest.raises(ServiceError):
            SearchQuery("content", bad)


@settings(max_examples=60, deadline=None)
@given(
    texts=st.dictionaries(
        st.from_regex(r"[a-c]{1,3}/[a-d]{1,4}\.equ", fullmatch=True),
        st.text(alphabet="abAB\nßSs ", max_size=40),
        max_size=12,
    ),
    needle=st.text(alphabet="abAB ßs", min_size=1, max_size=3),
    limit=st.integers(1, 5),
)
def test_index_agrees_with_naive_scan(texts: dict[str, str], needle: str, limit: int) -> None:
    """Property: paging the index gives exactly the lines a naive case-folded scan finds."""
    s = searcher(dict(texts))
    expected = sorted(
        (path, n)
        for path, text in texts.items()
        for n, line in enumerate(text.split("\n"), 1)
        if needle.casefold() in line.casefold()
    )
    assert all_hits(s, SearchQuery("content", needle), limit=limit) == expected


def published(
    folder: Path, texts: dict[str, str | None] = TEXTS, key: str = "abc"
) -> tuple[ContentIndex, Path]:
    index = ContentIndex.build(texts.items(), folder=folder)
    target = folder / f"{key}.idx"
    index.publish(target, key)
    return index, target


def base_of(texts: dict[str, str | None] = TEXTS) -> list[str]:
    """The path list as the build saw it (the order a cache is loaded with)."""
    return [normalize_path(p) for p in texts]


def test_index_cache_round_trip(tmp_path: Path) -> None:
    index, target = published(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["abc.idx"]  # no build leftovers
    loaded = ContentIndex.load(target, "abc", base_of())
    assert loaded is not None
    assert loaded.paths == index.paths and loaded.all_paths == index.all_paths
    assert loaded.offsets.tolist() == index.offsets.tolist()
    assert [loaded.folded_text(i) for i in range(len(loaded))] == [
        index.folded_text(i) for i in range(len(index))
    ]
    assert index.folded_text(0) == b"[name]\n`strasse mail`\n[price]\n\t9\n"
    assert ContentIndex.load(target, "other content", base_of()) is None
    assert ContentIndex.load(target, "abc", base_of()[:-1]) is None
    assert ContentIndex.load(target, "abc", [*base_of()[:-1], "zz/other.equ"]) is None
    assert ContentIndex.load(target, "abc", base_of()[::-1]) is None  # not the listing it was built from
    data = target.read_bytes()
    for name, damaged in (("cut", data[:-3]), ("junk", b"junk" + data), ("grown", data + b"\0")):
        (tmp_path / name).write_bytes(damaged)
        assert ContentIndex.load(tmp_path / name, "abc", base_of()) is None
    _, empty_file = published(tmp_path / "empty", {}, "e")
    assert ContentIndex.load(empty_file, "e", []) is not None


def test_an_index_without_a_cache_folder_lives_in_an_anonymous_file() -> None:
    index = ContentIndex.build(TEXTS.items())
    assert len(index) == 5 and index.nbytes == sum(len(t or "") + 1 for t in TEXTS.values())


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=300), st.integers(0, 5000))
def test_index_cache_never_crashes_on_damage(noise: bytes, cut: int) -> None:
    """Property: a damaged cache file loads as None (rebuild) or as an index, never raises."""
    with tempfile.TemporaryDirectory() as folder:
        index, target = published(Path(folder))
        data = target.read_bytes()
        target.write_bytes(data[:cut] + noise + data[cut + len(noise) :])
        loaded = ContentIndex.load(target, "abc", base_of())
        assert loaded is None or (len(loaded) == len(loaded.paths) and loaded.all_paths == index.all_paths)


@settings(max_examples=80, deadline=None)
@given(
    texts=st.dictionaries(
        st.from_regex(r"[a-c]{1,3}/[a-d]{1,4}\.equ", fullmatch=True),
        st.text(alphabet="abAB\ns ", max_size=30),
        max_size=10,
    ),
    pattern=st.sampled_from(
        ["a.b", "^s", "b$", "[ab]s", "a\\nb", "(?s)b.a", "^$", "s+", "\\As", "b\\Z", "\\A\\Z"]
    ),
    block=st.integers(1, 64),
)
def test_regex_blocks_agree_with_a_per_file_scan(texts: dict[str, str], pattern: str, block: int) -> None:
    """Property: block scanning finds every file a per-file regex finds (tiny blocks included)."""
    import re as std_re

    index = ContentIndex.build(texts.items())
    regex = check_regex(pattern, False, relax_string_anchors=True)  # what Searcher scans blocks with
    got = sorted(
        index.paths[o] for o in index.regex_candidates(regex, 0, len(index), 1e18, block_bytes=block)
    )
    expected = sorted(
        p for p, t in texts.items() if std_re.search(pattern, t.casefold(), std_re.M | std_re.I)
    )
    assert set(expected) <= set(got)
    assert all_hits(searcher(dict(texts)), SearchQuery("regex", pattern), limit=3) == sorted(
        (path, n)
        for path, lines in ((p, Matcher(SearchQuery("regex", pattern)).lines(t)) for p, t in texts.items())
        for n, _col in lines
    )


def test_regex_block_scan_stops_on_budget_after_progress() -> None:
    texts = {f"f{i:03}.equ": "line\n" * 10 for i in range(300)}
    index = ContentIndex.build(texts.items())
    out = list(index.regex_candidates(check_regex("nothing", False), 0, len(index), 0.0, block_bytes=256))
    assert len(out) == 1 and out[0] < -1  # one block was scanned, then the budget stopped it


@settings(max_examples=200, deadline=None)
@given(pattern=st.text(max_size=40), mode=st.sampled_from(["content", "path", "regex"]))
def test_any_query_text_is_accepted_or_invalid_pattern(pattern: str, mode: str) -> None:
    """Property: a query either runs or raises INVALID_PATTERN, never another exception."""
    try:
        query = SearchQuery(mode, pattern)  # type: ignore[arg-type]
        searcher().page(query, limit=5)
    except ServiceError as exc:
        assert exc.code == "INVALID_PATTERN"


@pytest.mark.parametrize("size", [1, 2, 5])
def test_the_first_entry_of_a_path_wins_within_and_across_chunks(size: int) -> None:
    items = [("a.equ", "One"), ("b.equ", None), ("A.EQU", "two"), ("c.equ", "three"), ("b.equ", "four")]
    folded = ((normalize_path(p), fold_text(t)) for p, t in items)
    index = ContentIndex.build_folded(in_chunks(folded, size))
    assert index.all_paths == ["a.equ", "b.equ", "c.equ"]
    assert index.paths == ["a.equ", "c.equ"]
    assert [index.folded_text(i) for i in range(len(index))] == [b"one", b"three"]


def test_big_texts_spool_in_order_between_small_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    from moddesk.pvf.workbench import searchindex

    monkeypatch.setattr(searchindex, "SPOOL_FLUSH", 8)  # every text over 8 bytes is "big"
    items = [
        ("b", b"small\x00"),
        ("a", b"0123456789big\x00"),
        ("c", b"x\x00"),
        ("d", None),
        ("e", b"e" * 20 + b"\x00"),
    ]
    index = ContentIndex.build_folded(in_chunks(iter(items), 3), base_paths=["b", "a", "c", "d", "e"])
    assert index.all_paths == ["a", "b", "c", "d", "e"] and index.paths == ["a", "b", "c", "e"]
    assert [index.folded_text(i) for i in range(len(index))] == [b"0123456789big", b"small", b"x", b"e" * 20]
