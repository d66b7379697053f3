"""Search over an archive's paths and texts: path glob, content substring, bounded regex.

The content index (``searchindex.py``) is one case-folded UTF-8 corpus of every text entry,
sorted by path, in a file, with a numpy array of file offsets. A substring query is
``bytes.find`` over blocks of that corpus (C speed), jumping to the next file after each hit,
so a page of hits costs only the bytes read to find it. UTF-8 is self-synchronising, so a
byte match of a folded query is a character match.
Entries edited after the index was built are searched from their current text instead.
Pages are ordered by (path, line); a page position is the (path, line) of its last hit.
"""

from __future__ import annotations

import bisect
import json
import re
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from moddesk.kit.linear_regex import LinearRegex, compile_pattern
from moddesk.pvf.errors import pvf_error
from moddesk.pvf.workbench.searchindex import (
    ContentIndex as ContentIndex,  # re-exported: the index lives there
)
from moddesk.pvf.workbench.searchindex import bisect_paths
from moddesk.pvf.workbench.searchindex import fold_text as fold_text
from moddesk.pvf.workbench.searchindex import normalize_path as normalize_path

SearchMode = Literal["path", "content", "regex"]

DEFAULT_LIMIT = 20
MAX_LIMIT = 100
DEFAULT_BYTE_CAP = 32 * 1024
MAX_BYTE_CAP = 256 * 1024
MAX_PATTERN = 512
SNIPPET_CHARS = 200
DEFAULT_TIME_BUDGET = 10.0
# a regex page stops scanning after this long (with a cursor to go on), so that with one
# costly block in flight it answers, or is refused with QUERY_TOO_COSTLY, within 5 s
REGEX_TIME_BUDGET = 3.0


def glob_to_regex(pattern: str) -> LinearRegex:
    """``**`` crosses folders, ``*`` and ``?`` stay inside one; case-insensitive, whole path."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
            continue
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        else:
            out.append(re.escape(char))
        i += 1
    # RE2 (linear time): ``*a*a*a…b`` globs backtrack for ever on long paths under Python's ``re``
    return compile_pattern("".join(out) + r"\Z", ignore_case=True, dotall=True)


@dataclass(frozen=True)
class SearchQuery:
    """What to look for and where; its ``identity`` binds cursors."""

    mode: SearchMode
    query: str
    scope: str = ""
    extensions: tuple[str, ...] = ()
    case_sensitive: bool = False

    def __post_init__(self) -> None:
        if not self.query:
            raise pvf_error("INVALID_PATTERN", "the query is empty")
        if len(self.query) > MAX_PATTERN:
            raise pvf_error("INVALID_PATTERN", f"the query is longer than {MAX_PATTERN} characters")
        if "\x00" in self.query:
            raise pvf_error("INVALID_PATTERN", "the query contains a NUL character")

    @property
    def scope_prefix(self) -> str:
        scope = normalize_path(self.scope)
        return f"{scope}/" if scope else ""

    @property
    def suffixes(self) -> tuple[str, ...]:
        return tuple(e.lower() if e.startswith(".") else f".{e.lower()}" for e in self.extensions if e)

    def identity(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "query": self.query,
            "scope": self.scope_prefix,
            "extensions": sorted(self.suffixes),
            "caseSensitive": self.case_sensitive,
        }

    def in_scope(self, path: str) -> bool:
        return path.startswith(self.scope_prefix) and (not self.suffixes or path.endswith(self.suffixes))


class SearchSource(Protocol):
    """What a page reads: the ``ContentIndex``, or before it is whole a ``tokenscan.TokenSource``.

    ``paths``: the sorted keys ordinals number; ``all_paths``: every entry's key, sorted.
    """

    @property
    def paths(self) -> Sequence[str]: ...

    @property
    def all_paths(self) -> Sequence[str]: ...

    def ordinal_range(self, prefix: str, start_path: str) -> tuple[int, int]: ...

    def containing(self, needle: bytes, lo: int, hi: int, deadline: float | None = None) -> Iterator[int]: ...

    def regex_candidates(self, regex: LinearRegex, lo: int, hi: int, deadline: float) -> Iterator[int]: ...

    def folded_text(self, ordinal: int) -> bytes: ...


@dataclass(frozen=True)
class Hit:
    """One search result: a path, and for content searches the 1-based line and its text."""

    path: str
    line: int | None = None
    snippet: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "line": self.line, "snippet": self.snippet}


@dataclass
class SearchPage:
    """Hits of one page, where the next page starts, and why the page stopped early if it did."""

    hits: list[Hit]
    next_position: tuple[str, int] | None
    truncated: bool = False
    reason: str | None = None


def check_regex(pattern: str, case_sensitive: bool, relax_string_anchors: bool = False) -> LinearRegex:
    """Compile a user regex (Python syntax, multi-line) for the linear-time engine.

    ``INVALID_PATTERN`` names a construct it cannot run (backreference, lookaround, …);
    ``QUERY_TOO_COSTLY`` refuses a pattern too big to run. ``relax_string_anchors``: the variant
    that scans many files joined by newlines (``\\A``/``\\Z`` at every line: a superset).
    """
    return compile_pattern(
        pattern, ignore_case=not case_sensitive, multiline=True, relax_string_anchors=relax_string_anchors
    )


def _line_starts(text: str) -> list[int]:
    starts = [0]
    pos = text.find("\n")
    while pos >= 0:
        starts.append(pos + 1)
        pos = text.find("\n", pos + 1)
    return starts


def _snippet(line: str, column: int, width: int = SNIPPET_CHARS) -> str:
    line = line.rstrip("\r")
    if len(line) <= width:
        return line
    start = max(0, min(column - width // 3, len(line) - width))
    cut = line[start : start + width]
    return ("…" if start > 0 else "") + cut + ("…" if start + width < len(line) else "")


class Matcher:
    """Finds the matching lines (with a column) of one text for a query."""

    def __init__(self, query: SearchQuery) -> None:
        self.query = query
        self.folded_needle = query.query.casefold()
        self.regex: LinearRegex | None = None
        self.block_regex: LinearRegex | None = None  # for the index's many-files scan
        if query.mode == "regex":
            self.regex = check_regex(query.query, query.case_sensitive)
            self.block_regex = check_regex(query.query, query.case_sensitive, relax_string_anchors=True)

    def lines(self, text: str, deadline: float | None = None) -> list[tuple[int, int]]:
        """``(line number, column)`` of each line with a match, one per line.

        A regex search that cannot end by ``deadline`` raises ``QUERY_TOO_COSTLY``.
        """
        if self.query.mode == "regex":
            assert self.regex is not None
            subject = text if self.query.case_sensitive else text.casefold()
            limit = deadline if deadline is not None else time.monotonic() + REGEX_TIME_BUDGET
            return _regex_lines(self.regex, subject, limit)
        else:
            subject, needle = (
                (text, self.query.query)
                if self.query.case_sensitive
                else (text.casefold(), self.folded_needle)
            )
            positions = []
            pos = subject.find(needle)
            while pos >= 0:
                positions.append(pos)
                pos = subject.find(needle, pos + 1)
        if not positions:
            return []
        starts = _line_starts(subject)
        found: dict[int, int] = {}
        for pos in positions:
            line = bisect.bisect_right(starts, pos)
            found.setdefault(line, pos - starts[line - 1])
        return sorted(found.items())


def _regex_lines(regex: LinearRegex, subject: str, deadline: float) -> list[tuple[int, int]]:
    """``(line number, column)`` of the first match starting in each line of ``subject``."""
    data = subject.encode("utf-8", "surrogatepass")
    found: list[tuple[int, int]] = []
    line, line_start = 1, 0
    for start, _end in regex.first_match_per_segment(data, b"\n", deadline):
        line += data.count(b"\n", line_start, start)
        line_start = data.rfind(b"\n", 0, start) + 1
        found.append((line, len(data[line_start:start].decode("utf-8", "surrogatepass"))))
    return found


def hit_size(hit: Hit) -> int:
    """Bytes a hit adds to a JSON response (what the byte cap counts)."""
    return len(json.dumps(hit.to_dict(), ensure_ascii=False).encode("utf-8")) + 1


class Searcher:
    """Answers one page of a query over an index plus the entries changed since it was built.

    ``changed`` maps every path edited, added or deleted since the index was built to its
    current text (``None``: binary or deleted — ``deleted`` tells which); ``current_text``
    returns the current text of an unchanged entry for snippets and case-sensitive checks.
    """

    def __init__(
        self,
        index: SearchSource,
        changed: Mapping[str, str | None],
        deleted: frozenset[str],
        current_text: Callable[[str], str | None],
    ) -> None:
        self.index = index
        self.changed = changed
        self.deleted = deleted
        self.current_text = current_text
        self._lines_of: tuple[str, list[str]] | None = None  # the last hit's file, split in lines

    def page(
        self,
        query: SearchQuery,
        after: tuple[str, int] | None = None,
        limit: int = DEFAULT_LIMIT,
        byte_cap: int = DEFAULT_BYTE_CAP,
        time_budget: float = DEFAULT_TIME_BUDGET,
    ) -> SearchPage:
        """Up to ``limit`` hits after position ``after``, within ``byte_cap`` response bytes."""
        limit = max(1, min(limit, MAX_LIMIT))
        byte_cap = max(1024, min(byte_cap, MAX_BYTE_CAP))
        if query.mode == "regex":
            time_budget = min(time_budget, REGEX_TIME_BUDGET)
        matcher = Matcher(query)
        deadline = time.monotonic() + time_budget
        start_path, after_line = after if after is not None else ("", 0)
        hits: list[Hit] = []
        used = 0
        last: tuple[str, int] | None = None
        for path, lines in self._files(query, matcher, start_path, deadline):
            if lines is None:  # the time budget ran out before this path was scanned
                return SearchPage(hits, (path, -1), truncated=True, reason="time-budget")
            for line, column in lines or [(0, 0)]:
                if path == start_path and after is not None and line <= after_line:
                    continue
                hit = self._hit(path, line, column, query)
                size = hit_size(hit)
                if hits and used + size > byte_cap:
                    return SearchPage(hits, last, truncated=True, reason="byte-cap")
                if len(hits) == limit:
                    return SearchPage(hits, last)
                hits.append(hit)
                used += size
                last = (path, line)
        return SearchPage(hits, None)

    def _hit(self, path: str, line: int, column: int, query: SearchQuery) -> Hit:
        if query.mode == "path":
            return Hit(path)
        if self._lines_of is None or self._lines_of[0] != path:  # a file's hits come together
            text = self.changed.get(path) if path in self.changed else self.current_text(path)
            self._lines_of = (path, (text or "").split("\n"))
        lines = self._lines_of[1]
        snippet = _snippet(lines[line - 1], column) if 0 < line <= len(lines) else ""
        return Hit(path, line, snippet)

    def _files(
        self, query: SearchQuery, matcher: Matcher, start_path: str, deadline: float
    ) -> Iterator[tuple[str, list[tuple[int, int]] | None]]:
        """Matching files from ``start_path`` on, in path order, each with its matching lines.

        ``(path, None)`` ends the stream early: the time budget ran out before ``path``.
        """
        changed_sorted = sorted(p for p in self.changed if p >= start_path and query.in_scope(p))
        pending = list(self._changed(query, matcher, changed_sorted, deadline))
        position = 0
        for path, lines in self._indexed(query, matcher, start_path, deadline):
            while position < len(pending) and pending[position][0] < path:
                yield pending[position]
                position += 1
            yield path, lines
            if lines is None:
                return
        yield from pending[position:]

    def _changed(
        self, query: SearchQuery, matcher: Matcher, paths: Sequence[str], deadline: float
    ) -> Iterator[tuple[str, list[tuple[int, int]] | None]]:
        for path in paths:
            if path in self.deleted:
                continue
            if query.mode == "path":
                if glob_match(query.query, path):
                    yield path, []
                continue
            text = self.changed[path]
            if text is not None and (lines := matcher.lines(text, deadline)):
                yield path, lines

    def _skip(self, path: str) -> bool:
        return path in self.changed or path in self.deleted

    def _indexed(
        self, query: SearchQuery, matcher: Matcher, start_path: str, deadline: float
    ) -> Iterator[tuple[str, list[tuple[int, int]] | None]]:
        index = self.index
        prefix = query.scope_prefix
        if query.mode == "path":
            all_paths = index.all_paths
            lo = bisect_paths(all_paths, max(prefix, start_path))
            pattern = glob_matcher(query.query)
            for i in range(lo, len(all_paths)):
                path = all_paths[i]
                if prefix and not path.startswith(prefix):
                    return
                if i % 4096 == 4095 and time.monotonic() > deadline:
                    yield path, None
                    return
                if query.in_scope(path) and pattern(path) and not self._skip(path):
                    yield path, []
            return
        lo, hi = index.ordinal_range(prefix, start_path)
        if query.mode == "content":
            ordinals: Iterable[int] = index.containing(
                matcher.folded_needle.encode("utf-8", "surrogatepass"), lo, hi, deadline
            )
        elif not query.case_sensitive:
            assert matcher.block_regex is not None
            ordinals = index.regex_candidates(matcher.block_regex, lo, hi, deadline)
        else:
            ordinals = range(lo, hi)
        for count, ordinal in enumerate(ordinals):
            if ordinal < 0:  # the block scan ran out of time before this ordinal
                yield index.paths[-ordinal - 1], None
                return
            path = index.paths[ordinal]
            # a regex checks each file (its cost varies with the pattern); a substring every 1024
            checked = count > 0 and (query.mode == "regex" or count % 1024 == 1023)  # one file at least
            if checked and time.monotonic() > deadline:
                yield path, None
                return
            if not query.in_scope(path) or self._skip(path):
                continue
            if query.case_sensitive:
                text = self.current_text(path) or ""
            else:
                text = index.folded_text(ordinal).decode("utf-8", "surrogatepass")
            if lines := matcher.lines(text, deadline):
                yield path, lines


def glob_matcher(pattern: str) -> Callable[[str], bool]:
    """A path predicate: a glob when the pattern has ``*?``, else a case-insensitive substring.

    As people type globs (and as ``.gitignore`` reads them): one without ``/`` matches the file
    name in any folder (``*.equ``), one with ``/`` the whole path from the root, and a leading
    ``/`` anchors a name glob to the root (``/*.lst``).
    """
    if any(c in pattern for c in "*?"):
        normalized = normalize_path(pattern)
        anchored = pattern.replace("\\", "/").lstrip().startswith("/")
        if "/" not in normalized and not anchored:
            normalized = "**/" + normalized
        regex = glob_to_regex(normalized)
        return regex.fullmatch
    needle = pattern.casefold().replace("\\", "/")
    return lambda path: needle in path


def glob_match(pattern: str, path: str) -> bool:
    """One-off form of ``glob_matcher``."""
    return glob_matcher(pattern)(path)
