"""Matching that may run long, in a worker process killed at its deadline.

RE2 is linear in the text, but its slope depends on the pattern: when its DFA cache overflows
(``a[ab]{200}x`` over random ``a``/``b`` text) it falls back to an NFA that may spend seconds
per MiB, and RE2 has no way to stop a call. A call whose worst case could pass the budget runs
here instead: in a child process, over a pipe, killed when the caller's deadline passes.
The protocol is two frames each way: an 8-byte length and a JSON header, then the data.
Only ``re2`` is imported in the child, so a worker starts in a fraction of a second.
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import threading
import time
from typing import IO, Any

import re2

_UNANCHORED = re2._Anchor.UNANCHORED
MAX_WORKERS = 4  # busy workers at once; more costly calls at once are refused
_FRAME = struct.Struct("<Q")


class WorkerTimeout(Exception):
    """The call passed its deadline; the worker running it was killed."""


class WorkersBusy(Exception):
    """Every worker is running another costly call."""


def first_match_per_segment(
    engine: Any, data: bytes, separator: bytes, skip_rest: bool = True
) -> list[tuple[int, int]]:
    """The span of the first match starting in each segment of ``data`` (cut at ``separator``).

    Segments are searched as lines (a separator reads as a newline, for ``^`` and ``$``).
    Matches chain like ``finditer``'s (each search starts where the last match ended). With
    ``skip_rest`` the rest of a segment that already has a match is skipped (one search per
    matching segment): exact when no match can hold a separator, and for a scan that only needs
    the segments a per-segment search would find (a superset) whatever the pattern.
    """
    spans: list[tuple[int, int]] = []
    text = data if separator == b"\n" else data.replace(separator, b"\n")
    pos, size = 0, len(data)
    next_segment = -1  # where the segment after the last recorded match's segment starts
    match, unanchored = engine._regexp.Match, _UNANCHORED  # the raw call: no wrapper object per call
    while pos <= size:
        start, end = match(unanchored, text, pos, size)[0]
        if start < 0:
            break
        if start >= next_segment:
            spans.append((start, end))
            cut = data.find(separator, start)
            next_segment = size + 1 if cut < 0 else cut + 1
        if skip_rest:
            pos = max(end, next_segment)
        elif end > start:
            pos = end
        else:  # an empty match: step over one UTF-8 character, as finditer does
            pos = start + 1
            while pos < size and 0x80 <= text[pos] < 0xC0:
                pos += 1
    return spans


class _Worker:
    """One child process answering match requests, one at a time."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", "from moddesk.kit.regex_worker import serve; serve()"],
            stdin=subprocess.PIPE,  # explicit: a worker never inherits a stdio server's stdin
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )

    def call(self, header: dict[str, Any], data: bytes, deadline: float) -> Any:
        assert self.process.stdin is not None and self.process.stdout is not None
        _write_frames(self.process.stdin, json.dumps(header).encode(), data)
        answer: list[Any] = []

        def read() -> None:
            try:
                answer.append(json.loads(_read_frame(self.process.stdout)))  # type: ignore[arg-type]
            except (OSError, ValueError, EOFError) as exc:
                answer.append(exc)

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        reader.join(max(0.0, deadline - time.monotonic()))
        if reader.is_alive() or not answer or isinstance(answer[0], Exception):
            self.kill()
            raise WorkerTimeout
        return answer[0]

    def kill(self) -> None:
        self.process.kill()
        self.process.wait()


class WorkerPool:
    """Idle workers kept for the next call; a killed one is replaced by a fresh one on demand."""

    def __init__(self, max_workers: int = MAX_WORKERS) -> None:
        self.max_workers = max_workers
        self._idle: list[_Worker] = []
        self._busy = 0
        self._lock = threading.Lock()

    def first_match_per_segment(
        self, engine_pattern: str, data: bytes, separator: bytes, skip_rest: bool, deadline: float
    ) -> list[tuple[int, int]]:
        """``first_match_per_segment`` in a worker, killed at ``deadline`` (``WorkerTimeout``)."""
        worker: _Worker | None = self._acquire()
        try:
            header = {
                "pattern": engine_pattern,
                "separator": separator.decode("latin-1"),
                "skipRest": skip_rest,
            }
            assert worker is not None
            spans = worker.call(header, data, deadline)
        except WorkerTimeout:
            worker = None
            raise
        finally:
            self._release(worker)
        if isinstance(spans, dict):  # the child could not compile the pattern (it compiled here)
            raise WorkerTimeout
        return [(int(a), int(b)) for a, b in spans]

    def _acquire(self) -> _Worker:
        with self._lock:
            if self._busy >= self.max_workers:
                raise WorkersBusy
            self._busy += 1
            if self._idle:
                return self._idle.pop()
        try:
            return _Worker()
        except OSError:
            with self._lock:
                self._busy -= 1
            raise

    def _release(self, worker: _Worker | None) -> None:
        with self._lock:
            self._busy -= 1
            if worker is not None and worker.process.poll() is None:
                self._idle.append(worker)

    def close(self) -> None:
        """Stop the idle workers (busy ones stop when their call ends or is killed)."""
        with self._lock:
            idle, self._idle = self._idle, []
        for worker in idle:
            worker.kill()


POOL = WorkerPool()


def _write_frames(stream: IO[bytes], *frames: bytes) -> None:
    for frame in frames:
        stream.write(_FRAME.pack(len(frame)))
        stream.write(frame)
    stream.flush()


def _read_exact(stream: IO[bytes], size: int) -> bytes:
    chunks: list[bytes] = []
    while size:
        chunk = stream.read(size)
        if not chunk:
            raise EOFError("the pipe closed")
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def _read_frame(stream: IO[bytes]) -> bytes:
    (size,) = _FRAME.unpack(_read_exact(stream, _FRAME.size))
    return _read_exact(stream, size)


def serve() -> None:
    """The child: answer requests from stdin until it closes (or the parent kills us)."""
    engines: dict[str, Any] = {}
    stdin = sys.stdin.buffer
    stdout = os.fdopen(os.dup(1), "wb")
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)  # nothing else may write to the answer pipe
    options = re2.Options()
    options.log_errors = False
    while True:
        try:
            header = json.loads(_read_frame(stdin))
            data = _read_frame(stdin)
        except EOFError:
            return
        pattern = header["pattern"]
        try:
            engine = engines.get(pattern) or re2.compile(pattern.encode("utf-8"), options)
        except re2.error as exc:
            _write_frames(stdout, json.dumps({"error": str(exc)}).encode())
            continue
        engines[pattern] = engine
        spans = first_match_per_segment(
            engine, data, header["separator"].encode("latin-1"), bool(header["skipRest"])
        )
        _write_frames(stdout, json.dumps(spans).encode())
