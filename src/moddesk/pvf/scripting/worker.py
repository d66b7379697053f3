"""The script worker: one child process per run, QuickJS-ng inside, data from the parent by RPC.

Protocol (JSON lines): the parent writes the job on the first stdin line; the worker then asks
for data with ``{"op", "args"}`` lines on stdout and reads one ``{"value"}``/``{"error"}`` reply
line from stdin per request; ``{"event": "log"|"progress"}`` lines need no reply; the last line is
``{"event": "done", …}`` with the change set. The parent enforces the wall-clock limit by killing
this process; here the kernel (RLIMIT_CPU, RLIMIT_AS) and QuickJS (heap, stack) enforce the rest.
"""

from __future__ import annotations

import gc
import json
import re
import sys
from collections.abc import Callable
from json.encoder import c_make_encoder, encode_basestring  # type: ignore[attr-defined]
from json.scanner import c_make_scanner  # type: ignore[attr-defined]
from typing import Any

from moddesk.pvf.entrypaths import CONTROL_CHARS, shown
from moddesk.pvf.format.tokens import Family
from moddesk.pvf.scripting import bridge
from moddesk.pvf.scripting.paths import glob_regex, glob_tail, normalize_path
from moddesk.pvf.scripting.texts import SnapshotTexts

# The prelude is evaluated after this many blank lines, so any stack frame with a line number
# above it belongs to the runtime and below it to the user's script (sources are ≤ 1 MiB, so
# they have at most 1,048,577 lines).
PRELUDE_LINE_OFFSET = 1_050_000
WRAP_HEAD = "(function __script__() {"
_FRAME = re.compile(r"<input>:(\d+)(?::(\d+))?")


class Channel:
    """Request/reply with the parent over this process's stdin/stdout.

    Requests carry an id the reply repeats; ``request`` does not wait, so the parent can prepare
    the next batch of texts while this process works on the current one (replies arrive in request
    order; one that arrives before it is waited for is kept until it is).
    """

    def __init__(self) -> None:
        self._in = sys.stdin.buffer
        self._out = sys.stdout.buffer
        self._last_id = 0
        self._early: dict[int, dict[str, Any]] = {}
        self._forgotten: set[int] = set()

    def send(self, message: dict[str, Any]) -> None:
        self._out.write(json.dumps(message, ensure_ascii=False).encode() + b"\n")
        self._out.flush()

    def request(self, op: str, *args: Any) -> int:
        self._last_id += 1
        self.send({"op": op, "args": list(args), "id": self._last_id})
        return self._last_id

    def forget(self, request_id: int) -> None:
        """The reply to ``request_id`` is no longer wanted: drop it whenever it comes."""
        if self._early.pop(request_id, None) is None:
            self._forgotten.add(request_id)

    def wait(self, request_id: int) -> Any:
        reply = self._early.pop(request_id, None)
        while reply is None:
            message = json.loads(self._in.readline())
            if "bytes" in message:  # the texts of a batch follow the line as they are
                message["payload"] = self._in.read(int(message["bytes"]))
            got = message.get("id")
            if got == request_id:
                reply = message
            elif got in self._forgotten:
                self._forgotten.discard(got)
            else:
                self._early[got] = message
        if "error" in reply:
            raise HostError(reply["error"])
        if "payload" in reply:
            return reply["value"], reply["payload"]
        return reply["value"]

    def ask(self, op: str, *args: Any) -> Any:
        return self.wait(self.request(op, *args))


# Two calls or more per file a script reads: JSON in and out without json.loads / json.dumps
# building a decoder or encoder each time (they answer the same text; a host value is never circular)
_SCAN = c_make_scanner(json.JSONDecoder())
_ENCODE = c_make_encoder(
    None, json.JSONEncoder().default, encode_basestring, None, ": ", ", ", False, False, True
)


def _decode(text: str) -> Any:
    """``json.loads(text)`` for the arguments JS sends (``JSON.stringify`` of an array)."""
    try:
        value, end = _SCAN(text, 0)
    except (StopIteration, ValueError):
        end = -1
    return value if end == len(text) else json.loads(text)  # json.loads names what is wrong


def _encode(value: Any) -> str:
    """``json.dumps(value, ensure_ascii=False)``."""
    return "".join(_ENCODE(value, 0))


class HostError(Exception):
    """A refusal from the parent; becomes a JS Error with this message."""


PLAN_TOO_LARGE = "PLAN_TOO_LARGE"


def _check_new_path(path: str) -> None:
    """A new entry's path is one line of printable text (it reaches listings and tool results)."""
    match = CONTROL_CHARS.search(path)
    if match is not None:
        raise HostError(
            f"INVALID_ENTRY_PATH: {shown(path)} contains the control character {match.group()!r}; "
            "archive paths are one line of printable text"
        )


def _change_bytes(change: dict[str, Any] | None) -> int:
    """New bytes a change brings: its text (UTF-8) or the size of a binary copy."""
    if change is None or change["kind"] == "delete":
        return 0
    text = change.get("text")
    return len(text.encode("utf-8", "surrogatepass")) if text is not None else int(change.get("size", 0))


class Transaction:
    """The run's isolated change set over the frozen snapshot the parent serves.

    Its size is bounded (changed files and new bytes per plan): one script must not grow the shared
    service by gigabytes. A change past a limit is refused with ``PLAN_TOO_LARGE``.
    """

    def __init__(self, channel: Channel, max_files: int = 20_000, max_bytes: int = 64 << 20) -> None:
        self.channel = channel
        self.max_files = max_files
        self.max_bytes = max_bytes
        self.plan_bytes = 0
        self._listing: dict[str, tuple[int, int]] | None = None
        self.changes: dict[str, dict[str, Any]] = {}
        self.filesets: dict[str, list[str]] = {}
        self.scanned: set[str] = set()
        self.texts = SnapshotTexts(channel, self._fetch_ahead, HostError)

    def _fetch_ahead(self, path: str) -> bool:
        """Whether the snapshot's text of ``path`` is worth fetching before the script asks."""
        listed = self.listing().get(path)
        return listed is not None and listed[0] in (1, 3) and path not in self.changes

    def _put(self, path: str, change: dict[str, Any] | None) -> None:
        """Set (or with None drop) the change of ``path``, within the plan limits."""
        previous = self.changes.get(path)
        size = self.plan_bytes - _change_bytes(previous) + _change_bytes(change)
        files = len(self.changes) + (1 if change is not None and previous is None else 0)
        if change is not None and (size > self.plan_bytes and size > self.max_bytes):
            raise HostError(
                f"{PLAN_TOO_LARGE}: this change would bring the plan to {size} new bytes; "
                f"the limit is {self.max_bytes}. Split the work into several runs."
            )
        if change is not None and previous is None and files > self.max_files:
            raise HostError(
                f"{PLAN_TOO_LARGE}: the plan would change more than {self.max_files} files. "
                "Split the work into several runs."
            )
        self.plan_bytes = size
        if change is None:
            self.changes.pop(path, None)
        else:
            self.changes[path] = change

    # ------------------------------------------------------------------ listing
    def listing(self) -> dict[str, tuple[int, int]]:
        if self._listing is None:
            paths, kinds, sizes = self.channel.ask("list")
            self._listing = dict(zip(paths, zip(kinds, sizes, strict=True), strict=True))
        return self._listing

    def exists(self, path: str) -> bool:
        change = self.changes.get(path)
        if change is not None:
            return bool(change["kind"] != "delete")
        return path in self.listing()

    def rows(self, pattern: str) -> list[list[Any]]:
        if self.changes:
            paths = {p for p in self.listing() if self.exists(p)}
            paths |= {p for p, c in self.changes.items() if c["kind"] != "delete"}
            ordered = sorted(paths)
        else:  # every listed file exists; the listing comes in order (sorted checks it in one pass)
            ordered = sorted(self.listing())
        regex = glob_regex(pattern) if pattern else None
        tail = glob_tail(pattern) if pattern else ""
        out = []
        for index, path in enumerate(ordered):
            if regex is None or (
                (not tail or path.endswith(tail) or not path.isascii()) and regex.fullmatch(path)
            ):
                out.append(self.row(path, index))
        self.texts.order([row[1] for row in out])
        return out

    def row(self, path: str, index: int = -1) -> list[Any]:
        change = self.changes.get(path)
        if change is not None and change["kind"] != "delete":
            size = len(change["text"].encode()) if change.get("text") is not None else change.get("size", 0)
            return [index, path, change["type"], size]
        kind, size = self.listing()[path]
        return [index, path, kind, size]

    # ------------------------------------------------------------------ content
    def read(self, path: str) -> str:
        return self.read_key(normalize_path(path))

    def read_key(self, path: str) -> str:
        """``read`` of a path already normalised."""
        if not self.exists(path):
            raise HostError(f"no file {path!r} in the archive")
        self.scanned.add(path)
        change = self.changes.get(path)
        if change is not None and change.get("text") is not None:
            return str(change["text"])
        if change is not None and change.get("copyFrom"):
            return self.read(change["copyFrom"])
        return self.texts.text(path)

    def write(self, path: str, text: str) -> None:
        path = normalize_path(path)
        if not self.exists(path):
            raise HostError(f"no file {path!r}; use pvf.createFile to add one")
        kind = self.row(path)[2]
        if kind not in (1, 3):
            raise HostError(f"{path!r} is a binary file; its text cannot be set")
        previous = self.changes.get(path)
        if previous is not None and previous["kind"] == "add":
            self._put(path, {**previous, "text": text, "copyFrom": None})
            return
        original = self.texts.text(path)  # the snapshot's text
        if original == text:
            self._put(path, None)  # writing the same text back is no change
            return
        self._put(path, {"kind": "modify", "type": kind, "text": text})

    def create(self, path: str, kind: int, text: str) -> list[Any]:
        _check_new_path(path)
        path = normalize_path(path)
        if kind not in (1, 3):
            raise HostError("createFile makes script (1) or unicode text (3) files")
        if self.exists(path):
            raise HostError(f"{path!r} already exists")
        self._put(path, {"kind": "add", "type": kind, "text": text})
        return self.row(path)

    def copy(self, source: str, target: str, overwrite: bool) -> list[Any]:
        _check_new_path(target)
        source, target = normalize_path(source), normalize_path(target)
        if not self.exists(source):
            raise HostError(f"no file {source!r} to copy")
        if self.exists(target) and not overwrite:
            raise HostError(f"{target!r} exists; pass overwrite=true to replace it")
        kind = self.row(source)[2]
        existed = target in self.listing()
        change: dict[str, Any] = {"kind": "modify" if existed else "add", "type": kind}
        if kind in (1, 3):
            change["text"] = self.read(source)
        else:
            change.update(copyFrom=source, size=self.row(source)[3], text=None)
        self._put(target, change)
        return self.row(target)

    def delete(self, path: str) -> bool:
        path = normalize_path(path)
        if not self.exists(path):
            return False
        if path in self.listing():
            self._put(path, {"kind": "delete", "type": self.listing()[path][0]})
        else:
            self._put(path, None)
        return True

    def counts(self) -> list[int]:
        return [len(self.changes), len(self.scanned)]


class Host:
    """The one function JS calls: dispatch by op, answer with a JSON envelope, never raise."""

    def __init__(self, channel: Channel, job: dict[str, Any]) -> None:
        self.channel = channel
        self.limits = job.get("limits", {})
        self.tx = Transaction(
            channel,
            max_files=int(self.limits.get("maxPlanFiles", 20_000)),
            max_bytes=int(self.limits.get("maxPlanBytes", 64 << 20)),
        )
        self.docs = bridge.Documents(Family(job.get("family", "classic")), reload=self.tx.texts.text)
        self.log_lines = 0
        self.log_bytes = 0
        self.ops: dict[str, Callable[..., Any]] = {
            "files": self.tx.rows,
            "find": self._find,
            "read": self.tx.read,
            "write": self.tx.write,
            "parse": self._parse,
            "render": lambda path, doc: self.tx.write(path, self.docs.render(doc)),
            "doc_sections": self.docs.sections,
            "doc_get": self.docs.get,
            "doc_warnings": self.docs.warnings,
            "doc_delete": self.docs.delete_sections,
            "doc_append_section": self.docs.append_section,
            "sec_values": self.docs.values,
            "sec_children": self.docs.children,
            "sec_remove_children": self.docs.remove_children,
            "sec_set": self.docs.set_value,
            "sec_set_values": self.docs.set_values,
            "sec_append": self.docs.append,
            "sec_append_section": self.docs.append_child,
            "sec_delete": self.docs.delete_section,
            "create": self.tx.create,
            "copy": self.tx.copy,
            "delete": self.tx.delete,
            "lst_get": lambda path: bridge.list_pairs(self.tx.read(path)),
            "lst_set": lambda path, pairs: self.tx.write(
                path, bridge.render_list_pairs(self.tx.read(path), pairs)
            ),
            "ori_str": lambda link: self.channel.ask("ori_str", link),
            "fileset_get": self._fileset_get,
            "fileset_set": self._fileset_set,
            "log": self._log,
            "progress": self._progress,
            "counts": self.tx.counts,
        }

    def __call__(self, op: str, args_json: str) -> str:
        try:
            func = self.ops.get(op)
            if func is None:
                raise HostError(f"unknown host operation {op!r}")
            value = func(*_decode(args_json))
            if value is None:
                return '{"value": null}'
            if type(value) is int:  # a document handle, a count
                return f'{{"value": {value}}}'
            return '{"value": ' + _encode(value) + "}"
        except (HostError, bridge.DocumentError, ValueError, TypeError, KeyError, IndexError) as exc:
            message = str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)
            return json.dumps({"error": message or type(exc).__name__}, ensure_ascii=False)
        except Exception as exc:  # the boundary: a Python exception must never cross into QuickJS
            return json.dumps({"error": f"internal error in {op}: {type(exc).__name__}: {exc}"})

    def _parse(self, path: str) -> int:
        key = normalize_path(path)
        text = self.tx.read_key(key)
        # a file the run has not changed can be parsed again from the snapshot if it is dropped
        return self.docs.open(path, text, from_snapshot=key not in self.tx.changes)

    def _find(self, path: str) -> list[Any] | None:
        path = normalize_path(path)
        return self.tx.row(path) if self.tx.exists(path) else None

    def _fileset_get(self, name: str) -> list[str] | None:
        if name in self.tx.filesets:
            return self.tx.filesets[name]
        value = self.channel.ask("fileset", name)
        return None if value is None else list(value)

    def _fileset_set(self, name: str, paths: list[str]) -> int:
        self.tx.filesets[name] = [normalize_path(p) for p in paths]
        return len(paths)

    def _log(self, line: str) -> None:
        max_lines = int(self.limits.get("maxLogLines", 5000))
        max_line = int(self.limits.get("maxLineBytes", 4000))
        max_total = int(self.limits.get("maxLogBytes", 1 << 20))
        encoded = line.encode("utf-8", "replace")
        if len(encoded) > max_line:
            line = encoded[:max_line].decode("utf-8", "ignore") + " …[line truncated]"
        if self.log_lines >= max_lines or self.log_bytes + len(encoded) > max_total:
            self.channel.send({"event": "log-dropped"})
            return
        self.log_lines += 1
        self.log_bytes += len(encoded)
        self.channel.send({"event": "log", "line": line})

    def _progress(self, done: float, total: float, message: str | None) -> None:
        self.channel.send({"event": "progress", "done": done, "total": total, "message": message})


def locate_error(text: str, wrap_head: int = len(WRAP_HEAD)) -> tuple[int | None, int | None]:
    """The user-script line and column of the first stack frame that is not the runtime's."""
    for match in _FRAME.finditer(text):
        line = int(match.group(1))
        if line >= PRELUDE_LINE_OFFSET:
            continue
        column = int(match.group(2)) if match.group(2) else None
        if line == 1 and column is not None:
            column = max(1, column - wrap_head)
        return line, column
    return None, None


def diagnostic(kind: str, text: str) -> dict[str, Any]:
    """A structured error: kind, first message line, user line/column, short stack."""
    first = text.strip().splitlines()[0] if text.strip() else kind
    line, column = locate_error(text)
    frames = [f.strip() for f in text.strip().splitlines()[1:] if "<input>" in f]
    user_frames = [f for f in frames if (m := _FRAME.search(f)) and int(m.group(1)) < PRELUDE_LINE_OFFSET]
    return {"kind": kind, "message": first, "line": line, "column": column, "stack": user_frames[:10]}


def classify(message: str) -> str:
    if message.startswith("SyntaxError"):
        return "syntax"
    if "out of memory" in message:
        return "out-of-memory"
    if message.startswith("RangeError") and "stack" in message:
        return "stack-overflow"
    return "exception"


def run(job: dict[str, Any], channel: Channel) -> dict[str, Any]:
    import quickjs  # the worker is the only place the engine is loaded

    host = Host(channel, job)
    # a run parses file after file; dropped documents are cyclic (sections point at their parents),
    # so collect less often than every 700 allocations (the young generation stays small anyway)
    gc.set_threshold(10_000, 20, 20)
    context = quickjs.Context()
    context.set_memory_limit(int(job.get("memoryMb", 256)) << 20)
    context.set_max_stack_size(int(job.get("stackKb", 1024)) << 10)
    context.add_callable("__host", host)
    context.eval("\n" * PRELUDE_LINE_OFFSET + bridge.prelude_source())
    if job.get("surface"):
        return {"ok": True, "surface": json.loads(context.eval("__api_surface()"))}
    error: dict[str, Any] | None = None
    try:
        context.eval(WRAP_HEAD + job["source"] + "\n})()")
        while context.execute_pending_job():
            pass  # settle promises a script may have started
    except quickjs.StackOverflow as exc:
        error = diagnostic("stack-overflow", f"RangeError: {exc}")
    except quickjs.JSException as exc:
        text = str(exc)
        error = diagnostic(classify(text), text)
    result: dict[str, Any] = {
        "ok": error is None,
        "changes": host.tx.changes,
        "filesets": host.tx.filesets,
        "scanned": len(host.tx.scanned),
    }
    if error is not None:
        result["error"] = error
    return result


def apply_rlimits(job: dict[str, Any]) -> None:
    """Kernel backstops under the parent's wall clock: CPU seconds and address space."""
    try:
        import resource
    except ImportError:  # Windows: the parent's wall-clock kill and QuickJS limits remain
        return
    cpu = int(job.get("cpuSeconds", 330))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 5))
    address_space = int(job.get("addressSpaceMb", 2048)) << 20
    resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))


def main() -> None:
    channel = Channel()
    # a pooled worker waits for its job: load the engine and the native core meanwhile (they are
    # every run's, nothing of a run is known yet)
    import quickjs  # noqa: F401

    bridge.native_ready()
    first = sys.stdin.buffer.readline()
    if not first.strip():
        return  # an idle pooled worker whose parent went away
    job = json.loads(first)
    apply_rlimits(job)
    outcome = run(job, channel)
    channel.send({"event": "done", **outcome})


if __name__ == "__main__":
    main()
