"""The engine every caller uses: the native Rust search when the core is native, else the reference.

``MODDESK_CORE`` (``moddesk.kit.native``) picks the core: ``auto`` uses ``moddesk_native`` when its
wheel is installed, ``python`` always uses ``moddesk.xiangqi.core.search`` (the reference), and
``native`` requires the wheel (``NATIVE_CORE_MISSING`` otherwise, never a silent fallback).
``new_searcher()`` and ``search()`` have the reference's interface and result types, so hints,
reviews, levels and ``moddesk xiangqi uci`` do not care which engine answers.

The native side receives the game as text: the FEN the recorded game started from plus its ICCS
moves, and the Zobrist keys of earlier positions (both cores compute the same keys), so
repetition scoring sees the same history. The search runs with the GIL released; ``stop()`` and a
``threading.Event`` stop it from any thread.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from types import ModuleType
from typing import Any, Protocol

from moddesk.kit.native import native_core
from moddesk.xiangqi.core import search as reference
from moddesk.xiangqi.core.board import Move, Position, parse_square
from moddesk.xiangqi.core.search_defs import Line, SearchInfo, SearchResult

DEFAULT_HASH_MB = 16


class EngineSearcher(Protocol):
    """What callers need from a searcher (``reference.Searcher`` and ``NativeSearcher`` both fit)."""

    def search(
        self,
        pos: Position,
        depth: int | None = None,
        time_limit: float | None = None,
        nodes: int | None = None,
        multipv: int = 1,
        stop: threading.Event | None = None,
        history: Iterable[int] | None = None,
        on_info: Callable[[SearchInfo], None] | None = None,
    ) -> SearchResult: ...

    def stop(self) -> None: ...

    def resize(self, tt_entries: int) -> None: ...

    def clear(self) -> None: ...


def native_xiangqi() -> ModuleType | None:
    """``moddesk_native.xiangqi`` when the chosen core is native, else None (raises for a missing
    wheel under ``MODDESK_CORE=native``)."""
    module = native_core()
    return None if module is None else module.xiangqi


def engine_name() -> str:
    """``native`` or ``reference`` — which built-in engine ``new_searcher`` returns."""
    return "native" if native_xiangqi() is not None else "reference"


def game_record(pos: Position) -> tuple[str, list[str]]:
    """The FEN the moves on ``pos`` started from and those moves (ICCS), oldest first."""
    root = pos.copy()
    while root.ply:
        root.pop()
    return root.fen(), [m.iccs() for m in pos.move_stack()]


def _move(iccs: str) -> Move:
    return Move(parse_square(iccs[:2]), parse_square(iccs[2:4]))


def _line(raw: dict[str, Any]) -> Line:
    return Line(_move(raw["move"]), raw["score"], raw["mate"], raw["depth"], [_move(m) for m in raw["pv"]])


def _info(raw: dict[str, Any]) -> SearchInfo:
    return SearchInfo(
        depth=raw["depth"],
        seldepth=raw["seldepth"],
        multipv=raw["multipv"],
        score=raw["score"],
        mate=raw["mate"],
        nodes=raw["nodes"],
        nps=raw["nps"],
        time=raw["time"],
        pv=[_move(m) for m in raw["pv"]],
    )


class NativeSearcher:
    """The native engine behind the reference ``Searcher``'s interface (keeps its table between calls)."""

    def __init__(self, module: ModuleType, hash_mb: int = DEFAULT_HASH_MB, quiet_checks: bool = True) -> None:
        self._native = module.Searcher(hash_mb)
        self.quiet_checks = quiet_checks

    def stop(self) -> None:
        """Ask a running search to stop soon and return its best result so far (thread-safe)."""
        self._native.stop()

    def resize(self, tt_entries: int) -> None:
        """Size the table like the reference (``tt_entries`` ≈ 10,000 per megabyte) and clear it."""
        self._native.resize(max(1, tt_entries // 10_000))

    def clear(self) -> None:
        """Forget the transposition table (a new game)."""
        self._native.clear()

    def search(
        self,
        pos: Position,
        depth: int | None = None,
        time_limit: float | None = None,
        nodes: int | None = None,
        multipv: int = 1,
        stop: threading.Event | None = None,
        history: Iterable[int] | None = None,
        on_info: Callable[[SearchInfo], None] | None = None,
    ) -> SearchResult:
        """Search ``pos`` (left unchanged); the limits and ``history`` mean what they mean for the reference."""
        fen, moves = game_record(pos)
        report = None if on_info is None else (lambda raw: on_info(_info(raw)))
        finished = threading.Event()
        watcher = None
        if stop is not None:
            if stop.is_set():
                time_limit = 0.0  # stopped before it began: depth 1 at most
            watcher = threading.Thread(target=self._watch, args=(stop, finished), daemon=True)
            watcher.start()
        try:
            raw = self._native.search(
                fen,
                moves,
                [int(k) for k in history or ()],
                depth,
                time_limit,
                nodes,
                multipv,
                self.quiet_checks,
                report,
            )
        finally:
            finished.set()
            if watcher is not None:
                watcher.join()
        lines = [_line(line) for line in raw["lines"]]
        best = _move(raw["best"]) if raw["best"] is not None else None
        return SearchResult(best, lines, raw["depth"], raw["nodes"], raw["time"], raw["stopped"])

    def _watch(self, stop: threading.Event, finished: threading.Event) -> None:
        # the native search clears its flag when it begins: keep setting it while the caller's
        # event is set, so a stop that lands just before the search starts is not lost
        while not finished.is_set():
            if stop.wait(0.01):
                self._native.stop()
                finished.wait(0.01)


class ReferenceSearcher(reference.Searcher):
    """The Python reference ``Searcher`` with ``clear()`` (the interface both engines share)."""

    def clear(self) -> None:
        """Forget the transposition table (a new game)."""
        self.tt.clear()


def new_searcher(quiet_checks: bool = True) -> EngineSearcher:
    """A reusable searcher of the chosen core."""
    module = native_xiangqi()
    if module is None:
        return ReferenceSearcher(quiet_checks=quiet_checks)
    return NativeSearcher(module, quiet_checks=quiet_checks)


def search(
    pos: Position,
    depth: int | None = None,
    time_limit: float | None = None,
    nodes: int | None = None,
    multipv: int = 1,
    stop: threading.Event | None = None,
    history: Iterable[int] | None = None,
    on_info: Callable[[SearchInfo], None] | None = None,
    quiet_checks: bool = True,
) -> SearchResult:
    """Search ``pos`` with a fresh searcher of the chosen core (``reference.search``'s interface)."""
    return new_searcher(quiet_checks).search(pos, depth, time_limit, nodes, multipv, stop, history, on_info)
