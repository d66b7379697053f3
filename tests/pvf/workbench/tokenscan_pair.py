"""One workspace searched through its built content index and through its token map (test helper)."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from moddesk.pvf.workbench.search import Searcher, SearchPage, SearchQuery
from moddesk.pvf.workbench.searchindex import ContentIndex
from moddesk.pvf.workbench.tokenscan import TokenMap, TokenSource, answerable
from moddesk.pvf.workbench.workspace import Workspace

BUDGET = 120.0  # generous: a page cut by the time budget would compare timing, not answers


class Pair:
    """One workspace searched through the built index and through its token map."""

    def __init__(self, path: Path) -> None:
        self.ws = Workspace.open(path)
        tokens = TokenMap.build(self.ws)
        assert tokens is not None
        self.tokens = tokens
        self.index = ContentIndex.build_folded(self.ws.base_folded(0), base_paths=self.ws.index_paths())
        self.texts = {p: self.ws.base_text_or_none(p) for p in self.ws.paths()}

    def pages(self, spec: SearchQuery, limit: int, pages: int, early: bool, **kw: Any) -> list[SearchPage]:
        out: list[SearchPage] = []
        after = None
        for _ in range(pages):
            if early:
                source = TokenSource(
                    self.tokens, self.ws.lock, self.ws.base_text_or_none, self.ws.base_text_at
                )
                searcher = Searcher(source, {}, frozenset(), source.text)
            else:
                searcher = Searcher(self.index, {}, frozenset(), self.ws.base_text_or_none)
            page = searcher.page(spec, after, limit=limit, time_budget=BUDGET, **kw)
            assert page.reason != "time-budget"
            out.append(page)
            if page.next_position is None:
                break
            after = page.next_position
        return out

    def same(self, spec: SearchQuery, limit: int = 20, pages: int = 3, **kw: Any) -> list[SearchPage]:
        built = self.pages(spec, limit, pages, early=False, **kw)
        assert self.pages(spec, limit, pages, early=True, **kw) == built, spec
        return built


def _positions(text: str, char: str) -> Iterator[int]:
    at = text.find(char)
    while at >= 0:
        yield at
        at = text.find(char, at + 1)


def cut_needles(texts: list[str], chars: str, seed: int, per_char: int = 12) -> Iterator[str]:
    """Answerable needles cut around occurrences of each of ``chars`` in ``texts``: the character
    alone, with its neighbours, ending on it, starting on it."""
    rng = random.Random(seed)
    for char in chars:
        places = [(t, i) for t in texts for i in _positions(t, char)]
        for text, at in rng.sample(places, min(per_char, len(places))):
            for lo, hi in ((at, at + 1), (at - 1, at + 1), (at - 4, at + 1), (at, at + 5), (at - 3, at + 3)):
                needle = text[max(0, lo) : hi]
                if needle and answerable(needle.casefold()):
                    yield needle
