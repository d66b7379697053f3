"""Bulk rendering in worker processes: chunks of script entries rendered by ``BulkRenderer``s in
other processes while this one keeps reading (``Archive.iter_rendered(workers=N)``)."""

from __future__ import annotations

import multiprocessing
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from typing import TypeVar

from moddesk.pvf.format.bulk import BulkRenderer
from moddesk.pvf.format.text import LinkResolver, StringSource
from moddesk.pvf.format.tokens import Family

T = TypeVar("T")

#: The renderer of a worker process (made once per worker by ``_start_worker``).
_WORKER: BulkRenderer | None = None


class LinkTable:
    """A link resolver that travels to worker processes: link id → (key → text), resolved up front."""

    def __init__(self, tables: dict[int, dict[str, str]]) -> None:
        self.tables = tables

    def __call__(self, link_id: int, key: str) -> str | None:
        table = self.tables.get(link_id)
        return None if table is None else table.get(key)


def _start_worker(
    family: Family, strings: StringSource, links: LinkResolver | None, fold: bool, terminator: str
) -> None:
    global _WORKER
    _WORKER = BulkRenderer(family, strings, links=links, fold=fold, terminator=terminator)


def _render_in_worker(paths: list[str], datas: list[bytes]) -> list[bytes | None]:
    assert _WORKER is not None
    return _WORKER.render_chunk(paths, datas)


def render_chunks(
    chunks: Iterable[tuple[T, list[str], list[bytes]]],
    family: Family,
    strings: StringSource,
    *,
    links: LinkResolver | None = None,
    fold: bool = False,
    terminator: str = "",
    workers: int = 0,
) -> Iterator[tuple[T, list[bytes | None]]]:
    """``(tag, BulkRenderer.render_chunk(paths, datas))`` for each ``(tag, paths, datas)``, in order.

    ``workers > 0`` renders in that many worker processes (``spawn``: safe under threads) while
    this process keeps reading ``chunks``; each worker gets a copy of ``strings`` and ``links``
    (pickled: use a :class:`LinkTable`, not a bound method of an open archive) and builds its own
    vocabulary. Starting the workers costs ~0.5 s, so it pays off from ~10^5 entries on.
    """
    if workers <= 0:
        renderer = BulkRenderer(family, strings, links=links, fold=fold, terminator=terminator)
        for tag, paths, datas in chunks:
            yield tag, renderer.render_chunk(paths, datas)
        return
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(
        workers,
        mp_context=context,
        initializer=_start_worker,
        initargs=(family, strings, links, fold, terminator),
    ) as pool:
        pending: deque[tuple[T, Future[list[bytes | None]]]] = deque()
        try:
            for tag, paths, datas in chunks:
                pending.append((tag, pool.submit(_render_in_worker, paths, datas)))
                if len(pending) > 2 * workers:  # a few chunks ahead per worker, no more (memory)
                    done_tag, future = pending.popleft()
                    yield done_tag, future.result()
            while pending:
                done_tag, future = pending.popleft()
                yield done_tag, future.result()
        finally:
            for _, future in pending:
                future.cancel()
