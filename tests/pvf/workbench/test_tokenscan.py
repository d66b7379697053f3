"""Search before the index is whole: token-stream answers equal the built index's, or are refused.

Every query runs through the same ``Searcher`` twice on one workspace — over the built
``ContentIndex`` and over a ``TokenSource`` of the ``TokenMap`` — and the pages (hits, lines,
snippets, cursor positions, truncation) must be identical. Needles come from the recorded
equality cases and, with hypothesis, from substrings of the archive's own rendered texts
(including ones that cross separators, which must be refused: ``answerable`` is False).
"""

from __future__ import annotations

import random
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from moddesk.kit.errors import ServiceError
from moddesk.pvf.samples.generate import generate_archive
from moddesk.pvf.service import PvfService
from moddesk.pvf.workbench.indexing import _IndexState
from moddesk.pvf.workbench.search import Searcher, SearchQuery
from moddesk.pvf.workbench.tokenscan import TokenMap, TokenSource, answerable

sys.path.insert(0, str(Path(__file__).resolve().parent))
import search_equality
from tokenscan_pair import Pair, cut_needles

FILES = 1500


@pytest.fixture(scope="module", params=["90US", "classic"])
def pair(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    path = tmp_path_factory.mktemp(request.param) / "Script.pvf"
    generate_archive(path, fmt=request.param, files=FILES, seed=1)
    made = Pair(path)
    yield made
    made.ws.close()


def test_the_recorded_cases_answer_identically_or_are_refused(pair: Pair) -> None:
    answered = 0
    for case in search_equality.CASES:
        if case.mode == "regex" or (case.mode == "content" and not answerable(case.query.casefold())):
            continue
        spec = SearchQuery(case.mode, case.query, case.scope, case.extensions, case.case_sensitive)  # type: ignore[arg-type]
        kw = {"byte_cap": case.byte_cap} if case.byte_cap else {}
        pair.same(spec, case.limit, case.pages, **kw)
        answered += 1
    assert answered >= 15  # most recorded cases are answered before the index (regex, "`" and "equ`" are not)


@pytest.mark.parametrize(
    ("needle", "ok"),
    [
        ("项链", True),
        ("[price]", True),
        ("name_1", True),
        ("STAR ROAR", True),
        ("a\tb", False),  # a separator
        ("`", False),  # string quoting
        ("{6=", False),
        ("<3::", False),
        ("a=b", False),
        ("12", False),  # a number: numbers and escapes are not looked up
        ("-1.5", False),
        ("#PVF", False),  # the header every script starts with
        ("file", False),
        ("pvf_file", False),
        ("x12", True),
    ],
)
def test_answerable_needles(needle: str, ok: bool) -> None:
    assert answerable(needle.casefold()) is ok


@pytest.mark.parametrize("pair", ["classic"], indirect=True)  # string links are classic only
def test_link_display_texts_are_found_through_the_link_tables(pair: Pair) -> None:
    """Classic names show through ``<3::name_N`shown`>``: the shown text is in no string unit."""
    assert pair.ws.format == "classic"
    shown = next(
        value
        for table in pair.ws.archive._link_tables().values()
        for value in table.values()
        if len(value) > 3
    )
    hits = pair.same(SearchQuery("content", shown), limit=10, pages=2)
    assert hits[0].hits


def test_edited_entries_are_searched_from_their_current_text(pair: Pair) -> None:
    path = next(p for p, t in pair.texts.items() if t and p.endswith(".equ"))
    changed = {path: "#PVF_File\n\n[name]\n\t`zz unique necklace zz`\n"}
    spec = SearchQuery("content", "unique NECKLACE")
    source = TokenSource(pair.tokens, pair.ws.lock, pair.ws.base_text_or_none, pair.ws.base_text_at)
    early = Searcher(source, changed, frozenset(), source.text).page(spec)
    built = Searcher(pair.index, changed, frozenset(), pair.ws.base_text_or_none).page(spec)
    assert early == built
    assert [h.path for h in early.hits] == [path]


def _texts(pair: Pair) -> list[str]:
    return [t for _, t in sorted(pair.texts.items()) if t]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_needles_cut_from_the_archives_own_text(pair: Pair, data: st.DataObject) -> None:
    texts = _texts(pair)
    text = texts[data.draw(st.integers(0, len(texts) - 1), label="file")]
    start = data.draw(st.integers(0, max(0, len(text) - 1)), label="start")
    needle = text[start : start + data.draw(st.integers(1, 14), label="length")]
    if data.draw(st.booleans(), label="upper"):
        needle = needle.upper()
    case_sensitive = data.draw(st.booleans(), label="case")
    if not needle.strip("\x00") or "\x00" in needle:
        return
    if not answerable(needle.casefold()):
        # refused: it holds a separator or syntax, is a number or is part of the header
        assert (
            any(c in needle for c in "\t\n\r`{}=<>:")
            or needle.casefold() in "#pvf_file"
            or all(c in "0123456789-." for c in needle)
        )
        return
    pages = pair.same(SearchQuery("content", needle, case_sensitive=case_sensitive), limit=7, pages=2)
    if not case_sensitive and needle == text[start : start + len(needle)]:
        assert pages[0].hits  # the text it was cut from matches


def test_many_random_needles_across_separators_are_refused_or_equal(pair: Pair) -> None:
    """A cheap sweep: 300 cuts that start or end on a separator (hypothesis above shrinks failures)."""
    rng = random.Random(7)
    texts = _texts(pair)
    refused = answered = 0
    for _ in range(300):
        text = rng.choice(texts)
        seps = [i for i, c in enumerate(text) if c in "\t\n"]
        at = rng.choice(seps)
        cut = rng.randrange(3)  # across the separator, ending on it, or starting after it
        if cut == 0:
            needle = text[max(0, at - rng.randint(0, 6)) : at + rng.randint(1, 6)]
        elif cut == 1:
            needle = text[max(0, at - rng.randint(1, 8)) : at]
        else:
            needle = text[at + 1 : at + 1 + rng.randint(1, 8)]
        if not needle:
            continue
        if cut == 0:
            assert not answerable(needle.casefold())
        if answerable(needle.casefold()):
            pair.same(SearchQuery("content", needle), limit=5, pages=1)
            answered += 1
        else:
            refused += 1
    assert refused > 0 and answered > 0


def test_cuts_around_syntax_characters_are_refused_or_equal(pair: Pair) -> None:
    """Needles cut around each character of the rendered syntax (``<3::key`shown`>``, ``{6=`x`}``,
    numbers): were any of them wrongly called answerable, the token answer would miss files."""
    compared = 0
    for needle in cut_needles(_texts(pair), "`{}=<>:.-0123456789[]_#", seed=11):
        pair.same(SearchQuery("content", needle), limit=5, pages=1)
        compared += 1
    assert compared > 20


# --------------------------------------------------------------------------------- the service


def open_service(path: Path, cache: Path, index_wait: float) -> tuple[PvfService, str]:
    service = PvfService(index_wait=index_wait, index_cache=cache)
    status = service.tasks.wait(service.open(str(path), service.epoch)["taskId"], 120.0)
    assert status["state"] == "succeeded", status
    return service, str(status["result"]["workspaceId"])


def collect(service: PvfService, ws: str) -> dict[str, list[Any]]:
    cases = tuple(
        c
        for c in search_equality.CASES
        if c.mode == "path" or (c.mode == "content" and answerable(c.query.casefold()))
    )
    return search_equality.collect(service, ws, cases)


def test_the_service_answers_from_tokens_while_the_index_is_not_whole(tmp_path: Path) -> None:
    """The token map of the open workspace answers safe queries, refuses the rest with NOT_READY,
    and its answers equal the built index's through the whole service (cursors included)."""
    path = tmp_path / "Script.pvf"
    generate_archive(path, fmt="classic", files=FILES, seed=1)
    service, ws_id = open_service(path, tmp_path / "cache", index_wait=0.0)
    try:
        task_id = service.info()["indexTaskId"]
        ws = service.workspace
        assert ws is not None
        real = service._index
        tokens = TokenMap.build(ws)
        # a state whose index is not built yet (the real build runs on and publishes elsewhere)
        service._index = _IndexState(ws_id, task_id, tokens=tokens)
        early = collect(service, ws_id)
        page = service.search(ws_id, "项链", limit=5)
        assert page["answeredFrom"] == "tokens"
        for query, mode in ((r"\d+项链", "regex"), ("`", "content"), ("123", "content")):
            with pytest.raises(ServiceError) as refused:
                service.search(ws_id, query, mode=mode)
            assert refused.value.code == "NOT_READY"
            assert refused.value.details["indexTaskId"] == task_id
        service._index = real
        assert service.tasks.wait(task_id, 120.0)["state"] == "succeeded"
        assert service.search(ws_id, "项链", limit=5)["answeredFrom"] == "index"
        assert collect(service, ws_id) == early
    finally:
        service.shutdown()


def test_a_search_right_after_open_waits_for_the_token_map_not_the_index(tmp_path: Path) -> None:
    path = tmp_path / "Script.pvf"
    generate_archive(path, fmt="90US", files=FILES, seed=1)
    service, ws_id = open_service(path, tmp_path / "cache", index_wait=60.0)
    try:
        first = service.search(ws_id, "项链", limit=5)  # tokens or index, whichever is first
        task_id = service.info()["indexTaskId"]
        assert service.tasks.wait(task_id, 120.0)["state"] == "succeeded"
        again = service.search(ws_id, "项链", limit=5)
        assert {k: v for k, v in first.items() if k != "answeredFrom"} == {
            k: v for k, v in again.items() if k != "answeredFrom"
        }
    finally:
        service.shutdown()


def test_concurrent_searches_during_the_build_all_get_the_final_answer(tmp_path: Path) -> None:
    """Searches racing the build (tokens, then the index) never see a different page."""
    path = tmp_path / "Script.pvf"
    generate_archive(path, fmt="classic", files=FILES, seed=2)
    service, ws_id = open_service(path, tmp_path / "cache", index_wait=60.0)
    answers: list[dict[str, Any]] = []
    errors: list[BaseException] = []

    def ask() -> None:
        try:
            for _ in range(4):
                answers.append(service.search(ws_id, "之心", limit=9))
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    try:
        threads = [threading.Thread(target=ask) for _ in range(3)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120.0)
        assert not errors
        service.tasks.wait(service.info()["indexTaskId"], 120.0)
        final = service.search(ws_id, "之心", limit=9)
        assert final["answeredFrom"] == "index"
        assert all(a["hits"] == final["hits"] and a["nextCursor"] == final["nextCursor"] for a in answers)
    finally:
        service.shutdown()


def test_the_build_waits_between_chunks_while_a_token_search_runs() -> None:
    """``yield_to_searches`` (called by the build before and between chunks) blocks while a search
    reads the token map or waits for it, and goes on when the last one ends."""
    state = _IndexState("ws", "task")
    state.searching = 1
    state.waiting = 1
    passed = threading.Event()

    def build_step() -> None:
        state.yield_to_searches()
        passed.set()

    thread = threading.Thread(target=build_step)
    thread.start()
    assert not passed.wait(0.3)
    state.publish(waiting=0)
    assert not passed.wait(0.3)  # one search still reads
    state.end_search()
    assert passed.wait(5.0)
    thread.join(5.0)
