"""One byte budget per tool result, and paging instead of cutting when a result is larger.

Many MCP clients hand the model only the text block, so a text block is never cut: a result whose
complete text exceeds ``TEXT_BUDGET_MAX`` is split into pages of at most ``TEXT_BUDGET`` bytes at
line ends (a longer line is split too, with an explicit continuation marker). The first page is
the answer; the rest stay in a small in-memory store, read with the server's page tool. Tools page
their own data first (limit, cursor, maxBytes); this is the guarantee behind them.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass

from moddesk.kit.errors import ServiceError, register_codes

TEXT_BUDGET = 24 * 1024  # default text bytes of one result (and the size of a page)
TEXT_BUDGET_MAX = 64 * 1024  # no result text is larger; a tool's maxBytes may not ask for more
CONTINUES = "⏎[this line continues on the next page]"

register_codes({"RESULT_NOT_FOUND": "The paged result is unknown or expired; call the tool again."})


def utf8_len(text: str) -> int:
    return len(text.encode("utf-8"))


def split_utf8(text: str, budget: int) -> tuple[str, str]:
    """``text`` split so the head is at most ``budget`` UTF-8 bytes (never inside a character)."""
    head = text.encode("utf-8")[:budget].decode("utf-8", errors="ignore")
    return head, text[len(head) :]


def split_pages(text: str, budget: int = TEXT_BUDGET) -> list[str]:
    """Pages of at most ``budget`` bytes (markers included), broken at line ends where possible."""
    room = budget - utf8_len(CONTINUES) - 1
    pages: list[str] = []
    current: list[str] = []
    used = 0
    for line in text.split("\n"):
        while True:
            size = utf8_len(line) + 1
            if used + size <= room:
                current.append(line)
                used += size
                break
            if current and size <= room:  # the line fits on a page of its own: start one
                pages.append("\n".join(current))
                current, used = [], 0
                continue
            head, line = split_utf8(line, room - used)  # a longer line: fill this page, mark it
            current.append(head + CONTINUES)
            pages.append("\n".join(current))
            current, used = [], 0
    if current or not pages:
        pages.append("\n".join(current))
    return pages


@dataclass
class _Stored:
    pages: list[str]
    size: int
    at: float


class ResultPages:
    """The pages of recent oversized results, bounded in count, bytes and age (LRU)."""

    def __init__(
        self, tool: str, max_results: int = 32, max_bytes: int = 128 << 20, ttl: float = 1800.0
    ) -> None:
        self.tool = tool  # the name of the tool that reads a page, for the markers
        self._max_results = max_results
        self._max_bytes = max_bytes
        self._ttl = ttl
        self._lock = threading.Lock()
        self._results: OrderedDict[str, _Stored] = OrderedDict()

    def first_page(self, text: str) -> str:
        """``text`` if it fits the budget; else its first page, the rest stored, with a marker."""
        if utf8_len(text) <= TEXT_BUDGET_MAX:
            return text
        pages = split_pages(text, TEXT_BUDGET - 200)  # room for the marker line
        result_id = "r" + secrets.token_hex(8)
        with self._lock:
            self._results[result_id] = _Stored(pages, utf8_len(text), time.monotonic())
            self._evict()
        return self._with_marker(result_id, pages, 1)

    def page(self, result_id: str, page: int) -> str:
        """Page ``page`` (1-based) of a stored result, with the marker naming the next one."""
        with self._lock:
            self._evict()
            stored = self._results.get(result_id)
            if stored is not None:
                self._results.move_to_end(result_id)
        if stored is None:
            raise ServiceError(
                "RESULT_NOT_FOUND",
                f"no paged result {result_id} (it expired or the server restarted)",
                hint="Call the original tool again.",
            )
        if not 1 <= page <= len(stored.pages):
            raise ServiceError(
                "INVALID_ARGUMENT",
                f"page must be 1..{len(stored.pages)}",
                hint="Pages are numbered from 1.",
                field="page",
            )
        return self._with_marker(result_id, stored.pages, page)

    def _with_marker(self, result_id: str, pages: list[str], page: int) -> str:
        if page < len(pages):
            tail = f'call {self.tool} {{"resultId":"{result_id}","page":{page + 1}}} for the rest'
        else:
            tail = "end of the result"
        return f"{pages[page - 1]}\n[page {page}/{len(pages)} of result {result_id}; {tail}]"

    def _evict(self) -> None:
        now = time.monotonic()
        for key in [k for k, v in self._results.items() if now - v.at > self._ttl]:
            del self._results[key]
        while self._results and (
            len(self._results) > self._max_results
            or sum(v.size for v in self._results.values()) > self._max_bytes
        ):
            self._results.popitem(last=False)
