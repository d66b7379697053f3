"""The snapshot's texts on the worker side, fetched from the parent ahead of the script.

Scripts mostly walk a listing in order (``for (const file of pvf.glob(…)) file.parse()``). One
request per file costs a round trip between the two processes, and the parent renders while
the worker waits. So when the script reads a file of the last listing it got, the texts of the
next files of that listing come in one batch, and once the script is halfway through a batch the
next one is requested without waiting: the parent renders it on the other core meanwhile.

Batches grow (up to ``MAX_BATCH``) while the script reads most of what was fetched and shrink
when it skips, so a script that reads one file of a big listing costs little. Every text is
exactly what a single ``read`` would answer (the parent serves a batch through the same code);
an error for one file is kept and raised when, and only if, the script reads that file.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

FIRST_BATCH = 16
MAX_BATCH = 512
MIN_BATCH = 4


class Requests(Protocol):
    """The worker's side of the channel (``worker.Channel``)."""

    def request(self, op: str, *args: Any) -> int: ...

    def wait(self, request_id: int) -> Any: ...

    def forget(self, request_id: int) -> None: ...

    def ask(self, op: str, *args: Any) -> Any: ...


class _Batch:
    """Texts of ``order[start:end]``, or the request that will bring them: the UTF-8 of every
    file back to back as it came, each decoded only when the script reads it."""

    def __init__(self, start: int, end: int, paths: list[str], request_id: int) -> None:
        self.start = start
        self.end = end
        self.paths = paths
        self.request_id = request_id
        self.where: dict[str, int] | None = None  # path -> its place in the batch, once it came
        self.spans: list[int] = []
        self.errors: dict[str, str] = {}
        self.payload = b""
        self.hits = 0

    def fill(self, reply: tuple[dict[str, Any], bytes]) -> None:
        value, self.payload = reply
        self.spans = value["spans"]
        self.errors = value["errors"]
        self.where = {path: k for k, path in enumerate(self.paths)}

    def text(self, k: int) -> str | None:
        """The text of the batch's ``k``-th file, None where its read failed."""
        if str(k) in self.errors:
            return None
        return self.payload[self.spans[2 * k] : self.spans[2 * k + 1]].decode("utf-8", "surrogatepass")


class SnapshotTexts:
    """``text(path)``: the snapshot's text of a file, as the parent's ``read`` gives it."""

    def __init__(self, channel: Requests, wanted: Callable[[str], bool], error: type[Exception]) -> None:
        self._channel = channel
        self._wanted = wanted  # files worth fetching ahead (script or text files the run did not change)
        self._error = error
        self._order: list[str] = []
        self._where: dict[str, int] = {}
        self._current: _Batch | None = None
        self._next: _Batch | None = None
        self._size = FIRST_BATCH
        self._single: tuple[str, str] | None = None  # the last file read on its own

    def order(self, paths: list[str]) -> None:
        """The listing the script just got: the order in which it will probably read."""
        if self._next is not None:
            self._channel.forget(self._next.request_id)
        self._order = paths
        self._where = {p: i for i, p in enumerate(paths)}
        self._current = self._next = None

    def text(self, path: str) -> str:
        found = self._ahead(path)
        if found is None:
            if self._single is None or self._single[0] != path:
                self._single = (path, str(self._channel.ask("read", path)))
            return self._single[1]
        batch, k = found
        text = batch.text(k)
        if text is None:
            raise self._error(batch.errors[str(k)])
        return text

    def _ahead(self, path: str) -> tuple[_Batch, int] | None:
        index = self._where.get(path)
        if index is None:
            return None
        batch = self._current
        if batch is None or not batch.start <= index < batch.end:
            batch = self._move_to(index)
        assert batch.where is not None
        k = batch.where.get(path)
        if k is None:
            return None
        batch.hits += 1
        if self._next is None and index >= (batch.start + batch.end) // 2 and batch.end < len(self._order):
            self._next = self._request(batch.end)
        return batch, k

    def _move_to(self, index: int) -> _Batch:
        """Make the batch holding ``index`` current: the one requested ahead, or a new one."""
        old = self._current
        if old is not None:
            used = old.hits * 2 >= len(old.paths)
            self._size = min(self._size * 2, MAX_BATCH) if used else max(self._size // 2, MIN_BATCH)
        ahead = self._next
        self._next = None
        if ahead is not None and ahead.start <= index < ahead.end:
            batch = ahead
        else:
            if ahead is not None:
                self._channel.forget(ahead.request_id)
            batch = self._request(index)
        batch.fill(self._channel.wait(batch.request_id))
        self._current = batch
        return batch

    def _request(self, start: int) -> _Batch:
        paths: list[str] = []
        end = start
        while end < len(self._order) and len(paths) < self._size:
            if self._wanted(self._order[end]):
                paths.append(self._order[end])
            end += 1
        return _Batch(start, end, paths, self._channel.request("read_many", paths))
