"""Caller-scoped ``requestId`` deduplication for mutating calls."""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import anyio.to_thread

from moddesk.kit.cursor import canonical_json
from moddesk.kit.errors import ServiceError

T = TypeVar("T")

DEFAULT_CAPACITY = 256
LOCAL_SCOPE = "local"

# refusals whose cause goes away by itself or by another call ("…then retry"): the ledger does not
# record them, so a retry with the same requestId is answered afresh instead of replaying the refusal
TRANSIENT_CODES = frozenset(
    {
        "TASK_BUSY",
        "PLAN_PENDING",
        "EXPORT_PLAN_PENDING",
        "IMPORT_PLAN_PENDING",
        "SCRIPT_PLAN_PENDING",
        "SOURCE_CHANGED",
        "LIFECYCLE_BUSY",
        "NOT_READY",
        "INDEX_NOT_READY",
        "WORKSPACE_BUSY",
        "BUSY",
        "RATE_LIMITED",
        "CANCELLED",  # a cancelled request did nothing: the same requestId runs it afresh
    }
)
TRANSIENT_PREFIXES = ("UI_",)


def is_transient(code: str) -> bool:
    """True for a refusal a retry may not get (the ledger forgets it)."""
    return code in TRANSIENT_CODES or code.startswith(TRANSIENT_PREFIXES)


@dataclass
class _Entry:
    digest: str
    done: threading.Event = field(default_factory=threading.Event)
    result: Any = None
    error: ServiceError | None = None


def params_digest(params: Mapping[str, Any]) -> str:
    """A stable digest of the parameters a request was made with."""
    return hashlib.sha256(canonical_json(dict(params)).encode()).hexdigest()


class RequestLedger:
    """Remembers the outcome of the last ``capacity`` requests per (scope, requestId).

    Same id + same params → the recorded result (or the recorded error); same id + other params
    → ``REQUEST_CONFLICT``; a duplicate arriving while the first still runs waits for it. Only final
    outcomes are recorded: a transient refusal (``is_transient``) is handed to whoever waited for it,
    then forgotten, so a later retry runs again.
    """

    def __init__(
        self, capacity: int = DEFAULT_CAPACITY, forget_result: Callable[[Any], bool] | None = None
    ) -> None:
        """``forget_result`` says when a recorded result is no outcome after all (a task handle whose
        task then failed with a transient refusal): the next retry runs again instead of replaying it."""
        self._capacity = capacity
        self.forget_result = forget_result
        self._entries: OrderedDict[tuple[str, str], _Entry] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    def _claim(self, scope: str, request_id: str, params: Mapping[str, Any]) -> tuple[_Entry, bool]:
        """Return the entry for the request and whether this caller owns running it."""
        digest = params_digest(params)
        key = (scope, request_id)
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                if entry.digest != digest:
                    raise ServiceError(
                        "REQUEST_CONFLICT",
                        f"requestId {request_id!r} was already used with different parameters",
                        hint="Use a new requestId for a different request.",
                        requestId=request_id,
                    )
                if not self._outdated(entry):
                    self._entries.move_to_end(key)
                    return entry, False
                del self._entries[key]
            entry = _Entry(digest)
            self._entries[key] = entry
            self._evict()
            return entry, True

    def _outdated(self, entry: _Entry) -> bool:
        check = self.forget_result
        return entry.done.is_set() and entry.error is None and check is not None and check(entry.result)

    def _evict(self) -> None:
        while len(self._entries) > self._capacity:
            victim = next((k for k, e in self._entries.items() if e.done.is_set()), None)
            if victim is None:
                return  # every entry still runs; never drop one that others wait on
            del self._entries[victim]

    def _finish(self, key: tuple[str, str], entry: _Entry, result: Any, error: ServiceError | None) -> None:
        entry.result, entry.error = result, error
        if error is not None and is_transient(error.code):
            with self._lock:
                if self._entries.get(key) is entry:
                    del self._entries[key]
        entry.done.set()

    @staticmethod
    def _replay(entry: _Entry) -> Any:
        if entry.error is not None:
            raise entry.error
        return entry.result

    @staticmethod
    def _as_service_error(exc: BaseException) -> ServiceError:
        if isinstance(exc, ServiceError):
            return exc
        return ServiceError("INTERNAL_ERROR", f"the request failed: {type(exc).__name__}")

    def run(self, scope: str, request_id: str | None, params: Mapping[str, Any], fn: Callable[[], T]) -> T:
        """Run ``fn`` once per (scope, request_id, params); without an id, just run it."""
        if request_id is None:
            return fn()
        entry, owner = self._claim(scope, request_id, params)
        if not owner:
            entry.done.wait()
            result: T = self._replay(entry)
            return result
        try:
            value = fn()
        except BaseException as exc:
            self._finish((scope, request_id), entry, None, self._as_service_error(exc))
            raise
        self._finish((scope, request_id), entry, value, None)
        return value

    async def arun(
        self,
        scope: str,
        request_id: str | None,
        params: Mapping[str, Any],
        fn: Callable[[], Awaitable[T]],
    ) -> T:
        """The async twin of ``run``: a duplicate waits without blocking the event loop."""
        if request_id is None:
            return await fn()
        entry, owner = self._claim(scope, request_id, params)
        if not owner:
            await anyio.to_thread.run_sync(entry.done.wait)
            result: T = self._replay(entry)
            return result
        try:
            value = await fn()
        except BaseException as exc:
            self._finish((scope, request_id), entry, None, self._as_service_error(exc))
            raise
        self._finish((scope, request_id), entry, value, None)
        return value
