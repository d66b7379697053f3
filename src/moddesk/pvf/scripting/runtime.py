"""Parent side of a script run: start the worker, serve it the snapshot, enforce the limits.

A run never touches the archive: the worker reads through ``ScriptHost`` (a frozen snapshot the
caller provides) and hands back its change set, which the caller turns into a plan.
"""

from __future__ import annotations

import contextlib
import json
import logging
import queue
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

import moddesk
from moddesk.kit.errors import ServiceError

logger = logging.getLogger("moddesk.pvf.scripting")

MAX_SOURCE_BYTES = 1 << 20

RunState = Literal["succeeded", "failed", "timeout", "cancelled", "crashed"]


@dataclass(frozen=True)
class ScriptLimits:
    """Limits, outermost first: wall clock (parent kills), CPU and address space, JS heap and stack."""

    wall_seconds: float = 300.0
    memory_mb: int = 256
    stack_kb: int = 1024
    address_space_mb: int = 4096
    max_log_lines: int = 5000
    max_line_bytes: int = 4000
    max_log_bytes: int = 1 << 20
    max_plan_files: int = 20_000  # files one run may change
    max_plan_bytes: int = 64 << 20  # new bytes (text + binary copies) one run may bring

    def job(self) -> dict[str, Any]:
        return {
            "memoryMb": self.memory_mb,
            "stackKb": self.stack_kb,
            "cpuSeconds": int(self.wall_seconds) + 30,
            "addressSpaceMb": self.address_space_mb,
            "limits": {
                "maxLogLines": self.max_log_lines,
                "maxLineBytes": self.max_line_bytes,
                "maxLogBytes": self.max_log_bytes,
                "maxPlanFiles": self.max_plan_files,
                "maxPlanBytes": self.max_plan_bytes,
            },
        }


class ScriptHost(Protocol):
    """What a run may read: a frozen snapshot of the archive (and the user's filesets)."""

    def list_files(self) -> list[tuple[str, int, int]]:
        """Every (path, type, size), paths normalised (lower case, "/")."""

    def read_text(self, path: str) -> str:
        """The text of a script or text file; raise ``ServiceError`` for binary or missing files."""

    def ori_str(self, link: str) -> str | None:
        """The string behind a ``<id::key>`` link, or None."""

    def fileset(self, name: str) -> list[str] | None:
        """A saved fileset's paths, or None."""


@dataclass
class ScriptOutcome:
    """How a run ended and what it would change."""

    state: RunState
    seconds: float
    changes: dict[str, dict[str, Any]] = field(default_factory=dict)
    filesets: dict[str, list[str]] = field(default_factory=dict)
    scanned: int = 0
    logs_dropped: int = 0
    error: dict[str, Any] | None = None


def check_source(source: str) -> None:
    """Refuse sources over the size limit before starting anything."""
    size = len(source.encode("utf-8"))
    if size > MAX_SOURCE_BYTES:
        raise ServiceError(
            "SCRIPT_TOO_LARGE",
            f"the script is {size} bytes; the limit is {MAX_SOURCE_BYTES}",
            hint="Split the work into smaller scripts.",
        )


#: The worker runs isolated (-I: no PYTHONPATH, no user site) yet imports the same moddesk as its parent,
#: which may be a source checkout rather than the installed copy.
_BOOTSTRAP = (
    "import runpy, sys; sys.path.insert(0, sys.argv.pop(1)); "
    "runpy.run_module(sys.argv.pop(1), run_name='__main__', alter_sys=True)"
)


def _worker_command(module: str = "moddesk.pvf.scripting.worker") -> list[str]:
    package_parent = str(Path(moddesk.__file__).resolve().parent.parent)
    return [sys.executable, "-I", "-c", _BOOTSTRAP, package_parent, module]


class _Worker:
    """One worker process with line-oriented pipes, a stdout reader thread and a capped stderr tail."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            _worker_command(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.lines: queue.Queue[bytes | None] = queue.Queue()
        self.stderr_tail: deque[str] = deque(maxlen=20)
        # what goes to the worker is written by a thread of its own: a reply bigger than the pipe
        # waits there until the worker reads it, never in the run's loop (which must go on
        # watching the clock and cancellation whatever the script does meanwhile)
        self._out: queue.Queue[list[bytes] | None] = queue.Queue()
        threading.Thread(target=self._pump_stdout, daemon=True).start()
        threading.Thread(target=self._pump_stderr, daemon=True).start()
        threading.Thread(target=self._pump_stdin, daemon=True).start()

    def _pump_stdout(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def _pump_stderr(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.stderr_tail.append(line.decode("utf-8", "replace").rstrip())

    def _pump_stdin(self) -> None:
        stdin = self.process.stdin
        assert stdin is not None
        # a write that fails means the worker is gone (a broken pipe, or stdin closed by kill):
        # its stdout ends too, and the run reports how it ended; nothing is left to send
        with contextlib.suppress(OSError, ValueError):
            while (parts := self._out.get()) is not None:
                stdin.writelines(parts)
                stdin.flush()
        with contextlib.suppress(OSError):
            stdin.close()

    def send(self, message: dict[str, Any], payload: bytes = b"") -> None:
        """One JSON line to the worker, then ``payload`` (its length in the line's ``bytes``)."""
        if payload:
            message = {**message, "bytes": len(payload)}
        line = json.dumps(message, ensure_ascii=False).encode() + b"\n"
        self._out.put([line, payload] if payload else [line])

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(10)
        self._out.put(None)


class WorkerPool:
    """Keeps one worker started and idle, so a run does not wait for Python and its imports.

    The idle worker has loaded nothing of any run (it waits for its job line); it is used once.
    """

    def __init__(self, warm: bool = True) -> None:
        self._warm = warm
        self._idle: _Worker | None = None
        self._lock = threading.Lock()

    def take(self) -> _Worker:
        with self._lock:
            worker, self._idle = self._idle, None
        if worker is None or worker.process.poll() is not None:
            worker = _Worker()
        if self._warm:
            threading.Thread(target=self._refill, daemon=True).start()
        return worker

    def _refill(self) -> None:
        fresh = _Worker()
        with self._lock:
            if self._idle is None:
                self._idle = fresh
                return
        fresh.kill()

    def close(self) -> None:
        with self._lock:
            worker, self._idle = self._idle, None
        if worker is not None:
            worker.kill()


def _answer(host: ScriptHost, op: str, args: list[Any]) -> tuple[dict[str, Any], bytes]:
    """Serve one worker request: the reply and the bytes that follow it (texts of a batch).
    Every failure becomes an error envelope, never an exception."""
    try:
        if op == "read_many":  # a batch the worker reads ahead: each file answered as "read" would be
            return _read_many(host, [str(p) for p in args[0]])
    except Exception as exc:  # a bug in a host must not kill the run's bookkeeping
        logger.exception("script host failed on %s", op)
        return {"error": f"internal error while serving {op}: {type(exc).__name__}"}, b""
    return _answer_one(host, op, args), b""


def _answer_one(host: ScriptHost, op: str, args: list[Any]) -> dict[str, Any]:
    try:
        if op == "list":  # by column: three flat arrays encode and decode faster than a list per file
            rows = host.list_files()
            return {"value": [[r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows]]}
        if op == "read":
            return {"value": host.read_text(str(args[0]))}
        if op == "ori_str":
            return {"value": host.ori_str(str(args[0]))}
        if op == "fileset":
            return {"value": host.fileset(str(args[0]))}
        return {"error": f"unknown request {op!r}"}
    except ServiceError as exc:
        return {"error": exc.message}
    except Exception as exc:  # a bug in a host must not kill the run's bookkeeping
        logger.exception("script host failed on %s", op)
        return {"error": f"internal error while serving {op}: {type(exc).__name__}"}


def _read_many(host: ScriptHost, paths: list[str]) -> tuple[dict[str, Any], bytes]:
    """The texts of a batch as UTF-8 (surrogatepass) back to back, and ``{"value": {"spans":
    [start, end, …], "errors": {k: message}}}``: file ``k``'s text is ``payload[spans[2k]:spans[2k+1]]``
    unless ``errors`` has its ``read`` error. A host with ``read_texts_utf8`` renders the batch at
    once and leaves some files to ``read`` (if it fails, every file is read on its own); each text
    is exactly what ``read`` answers. No text is decoded or quoted on the way."""
    bulk = getattr(host, "read_texts_utf8", None)
    blob = b""
    spans: list[int] = [0] * (2 * len(paths))
    present: list[bool] = [False] * len(paths)
    if bulk is not None:
        try:
            blob, got, there = bulk(paths)
            spans = got.ravel().tolist()
            present = there.tolist()
        except Exception:  # the one-at-a-time path answers (and reports) every file exactly
            logger.exception("bulk read of %d files failed; reading them one by one", len(paths))
            blob, spans, present = b"", [0] * (2 * len(paths)), [False] * len(paths)
    errors: dict[str, str] = {}
    extra: list[bytes] = [blob]
    size = len(blob)
    for k, there in enumerate(present):
        if there:
            continue
        reply = _answer_one(host, "read", [paths[k]])
        if "error" in reply:
            errors[str(k)] = reply["error"]
            spans[2 * k] = spans[2 * k + 1] = 0
            continue
        data = str(reply["value"]).encode("utf-8", "surrogatepass")
        spans[2 * k], spans[2 * k + 1] = size, size + len(data)
        size += len(data)
        extra.append(data)
    payload = blob if len(extra) == 1 else b"".join(extra)
    return {"value": {"spans": spans, "errors": errors}}, payload


def run_script(
    source: str,
    host: ScriptHost,
    limits: ScriptLimits | None = None,
    *,
    on_log: Callable[[str], None] = lambda line: None,
    on_progress: Callable[[float, float, str | None], None] = lambda d, t, m: None,
    cancelled: Callable[[], bool] = lambda: False,
    pool: WorkerPool | None = None,
) -> ScriptOutcome:
    """Run ``source`` in a fresh worker against ``host``; block until it ends, is killed or cancelled."""
    check_source(source)
    limits = limits or ScriptLimits()
    started = time.monotonic()
    deadline = started + limits.wall_seconds
    worker = pool.take() if pool is not None else _Worker()
    dropped = 0
    try:
        family = getattr(host, "family", "classic")  # escape numbering of parsed documents
        worker.send({**limits.job(), "source": source, "family": family})
        while True:
            if cancelled():
                worker.kill()
                return ScriptOutcome("cancelled", time.monotonic() - started, logs_dropped=dropped)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                worker.kill()
                return ScriptOutcome(
                    "timeout",
                    time.monotonic() - started,
                    logs_dropped=dropped,
                    error={
                        "kind": "timeout",
                        "message": f"the script ran past the {limits.wall_seconds:g} s limit and was stopped",
                        "line": None,
                        "column": None,
                        "stack": [],
                    },
                )
            try:
                raw = worker.lines.get(timeout=min(0.1, remaining))
            except queue.Empty:
                continue
            if raw is None:
                return _crashed(worker, started, dropped)
            message = json.loads(raw)
            event = message.get("event")
            if event == "log":
                on_log(str(message["line"]))
            elif event == "log-dropped":
                dropped += 1
            elif event == "progress":
                on_progress(float(message["done"]), float(message["total"]), message.get("message"))
            elif event == "done":
                return ScriptOutcome(
                    "succeeded" if message["ok"] else "failed",
                    time.monotonic() - started,
                    changes=message["changes"],
                    filesets=message["filesets"],
                    scanned=message["scanned"],
                    logs_dropped=dropped,
                    error=message.get("error"),
                )
            else:
                reply, payload = _answer(host, str(message.get("op")), list(message.get("args", [])))
                worker.send({**reply, "id": message.get("id")}, payload)
    except (BrokenPipeError, OSError, json.JSONDecodeError):
        return _crashed(worker, started, dropped)
    finally:
        worker.kill()


def _crashed(worker: _Worker, started: float, dropped: int) -> ScriptOutcome:
    worker.kill()
    code = worker.process.returncode
    tail = " | ".join(list(worker.stderr_tail)[-3:])
    if code is not None and code < 0 and -code in (24, 9):  # SIGXCPU, SIGKILL from RLIMIT_CPU
        reason = "the script used up its CPU time"
    elif "MemoryError" in tail:
        reason = "the worker ran out of memory"
    else:
        reason = f"the script worker stopped unexpectedly (exit {code})"
    return ScriptOutcome(
        "crashed",
        time.monotonic() - started,
        logs_dropped=dropped,
        error={
            "kind": "crash",
            "message": reason,
            "detail": tail[-500:],
            "line": None,
            "column": None,
            "stack": [],
        },
    )


def validate_source(source: str) -> list[dict[str, Any]]:
    """Syntax diagnostics (line/column) from compiling — not running — the script in a worker."""
    check_source(source)
    command = _worker_command("moddesk.pvf.scripting.validate")
    done = subprocess.run(
        command,
        input=json.dumps({"source": source}).encode(),
        capture_output=True,
        timeout=60,
        check=False,
    )
    if done.returncode != 0:
        raise ServiceError(
            "INTERNAL_ERROR", "the syntax checker failed", hint="Try again; report it if it persists."
        )
    result: list[dict[str, Any]] = json.loads(done.stdout)
    return result


def api_surface() -> dict[str, list[str]]:
    """The members the runtime really exposes (for the api.d.ts consistency check)."""
    command = _worker_command()
    done = subprocess.run(
        command,
        input=json.dumps({"surface": True, "source": ""}).encode() + b"\n",
        capture_output=True,
        timeout=60,
        check=True,
    )
    last = done.stdout.decode().strip().splitlines()[-1]
    surface: dict[str, list[str]] = json.loads(last)["surface"]
    return surface
