"""Plan registry: previews with their own id namespace, a TTL and one pending plan per kind."""

from __future__ import annotations

import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from moddesk.kit.errors import ServiceError

DEFAULT_TTL_SECONDS = 600.0
_TOMBSTONES = 512


@dataclass
class Plan:
    """A pending preview: what it would do (``payload``), who made it and until when it lives."""

    plan_id: str
    kind: str
    payload: Any
    owner: str
    source: str
    created_at: float
    expires_at: float
    wall_created_at: float = field(default_factory=time.time)

    def describe(self) -> dict[str, Any]:
        """A JSON-ready summary (no payload)."""
        return {
            "planId": self.plan_id,
            "kind": self.kind,
            "owner": self.owner,
            "source": self.source,
            "createdAt": self.wall_created_at,
            "expiresInSeconds": max(0.0, round(self.expires_at - time.monotonic(), 1)),
        }


class PlanRegistry:
    """Holds at most one pending plan per kind; expired plans are swept and remembered as expired."""

    def __init__(
        self,
        ttl_seconds: float = DEFAULT_TTL_SECONDS,
        clock: Callable[[], float] = time.monotonic,
        on_expire: Callable[[Plan], None] | None = None,
    ) -> None:
        self._ttl = ttl_seconds
        self._clock = clock
        self._expire_listeners: list[Callable[[Plan], None]] = [on_expire] if on_expire else []
        self._plans: dict[str, Plan] = {}
        self._ended: OrderedDict[str, str] = OrderedDict()  # plan id -> "expired" | "discarded" | "applied"
        # plan id -> how it ended, who ended it ("person" on the page or CLI, "agent"), the revision after
        self._outcomes: dict[str, dict[str, Any]] = {}
        self._lock = threading.RLock()

    def _remember(self, plan_id: str, how: str, by: str | None = None, revision: int | None = None) -> None:
        self._ended[plan_id] = how
        self._outcomes[plan_id] = {"state": how, "by": by, "revision": revision}
        while len(self._ended) > _TOMBSTONES:
            old, _ = self._ended.popitem(last=False)
            self._outcomes.pop(old, None)

    def outcome(self, plan_id: str) -> dict[str, Any]:
        """What became of a plan: ``{"state": pending|applied|discarded|expired|unknown, "by", "revision"}``.

        So whoever made the plan learns what the other principal did with it (the agent, that the
        person applied or discarded its plan on the page, and at which revision).
        """
        self.sweep()
        with self._lock:
            if plan_id in self._plans:
                return {"state": "pending", "by": None, "revision": None}
            return dict(self._outcomes.get(plan_id) or {"state": "unknown", "by": None, "revision": None})

    def sweep(self) -> list[Plan]:
        """Drop expired plans and return them (their ``on_expire`` cleanup has run)."""
        now = self._clock()
        with self._lock:
            expired = [p for p in self._plans.values() if p.expires_at <= now]
            for plan in expired:
                del self._plans[plan.plan_id]
                self._remember(plan.plan_id, "expired")
        for plan in expired:
            for listener in list(self._expire_listeners):
                listener(plan)
        return expired

    def listen_expired(self, callback: Callable[[Plan], None]) -> None:
        """Call ``callback`` with each plan that expires (to free what its payload holds)."""
        self._expire_listeners.append(callback)

    def pending(self, kind: str) -> Plan | None:
        """The live plan of this kind, if any."""
        self.sweep()
        with self._lock:
            return next((p for p in self._plans.values() if p.kind == kind), None)

    def create(
        self,
        kind: str,
        payload: Any,
        *,
        owner: str = "local",
        source: str = "",
        ttl_seconds: float | None = None,
        pending_code: str = "PLAN_PENDING",
    ) -> Plan:
        """Register a new plan; ``pending_code`` if one of this kind is still pending."""
        self.sweep()
        with self._lock:
            existing = next((p for p in self._plans.values() if p.kind == kind), None)
            if existing is not None:
                raise ServiceError(
                    pending_code,
                    f"a {kind} plan is already pending ({existing.plan_id})",
                    hint="Apply or discard the pending plan first, or wait for it to expire.",
                    pendingPlan=existing.describe(),
                )
            now = self._clock()
            plan = Plan(
                plan_id=f"{kind}_{secrets.token_urlsafe(12)}",
                kind=kind,
                payload=payload,
                owner=owner,
                source=source,
                created_at=now,
                expires_at=now + (self._ttl if ttl_seconds is None else ttl_seconds),
            )
            self._plans[plan.plan_id] = plan
            return plan

    def get(self, kind: str, plan_id: str) -> Plan:
        """The live plan with this id and kind; ``PLAN_EXPIRED`` / ``PLAN_NOT_FOUND`` otherwise."""
        self.sweep()
        with self._lock:
            plan = self._plans.get(plan_id)
            if plan is not None and plan.kind == kind:
                return plan
            ended = self._ended.get(plan_id)
        if ended == "expired":
            raise ServiceError("PLAN_EXPIRED", f"plan {plan_id} expired", hint="Prepare the plan again.")
        detail = f" (it was {ended})" if ended else ""
        raise ServiceError(
            "PLAN_NOT_FOUND",
            f"no pending {kind} plan {plan_id}{detail}",
            hint="Prepare a new plan; ids are valid only until applied, discarded or expired.",
        )

    def _end(self, kind: str, plan_id: str, how: str, by: str, revision: int | None) -> Plan:
        plan = self.get(kind, plan_id)
        with self._lock:
            self._plans.pop(plan.plan_id, None)
            self._remember(plan.plan_id, how, by, revision)
        return plan

    def discard(self, kind: str, plan_id: str, by: str = "agent", revision: int | None = None) -> Plan:
        """Remove a pending plan (the caller cleans what its payload holds); ``by`` person or agent."""
        return self._end(kind, plan_id, "discarded", by, revision)

    def complete(self, kind: str, plan_id: str, by: str = "agent", revision: int | None = None) -> Plan:
        """Mark a plan applied at ``revision``: it leaves the registry; its id answers PLAN_NOT_FOUND after."""
        return self._end(kind, plan_id, "applied", by, revision)

    def clear(self) -> list[Plan]:
        """Drop every plan (e.g. when the workspace they refer to goes away)."""
        with self._lock:
            plans = list(self._plans.values())
            for plan in plans:
                self._remember(plan.plan_id, "discarded")
            self._plans.clear()
        return plans


def plan_outcome(outcome: dict[str, Any]) -> dict[str, Any]:
    """The fields a task status adds about the plan it made: ``planState``, ``appliedByPerson``,
    ``discardedByPerson`` and ``resultingRevision`` (the workspace revision after that end)."""
    state, by = outcome.get("state"), outcome.get("by")
    return {
        "planState": state,
        "appliedByPerson": state == "applied" and by == "person",
        "discardedByPerson": state == "discarded" and by == "person",
        "resultingRevision": outcome.get("revision"),
    }


def plan_outcome_lines(status: dict[str, Any]) -> list[str]:
    """The plan's end in a status's text block (the model may see only the text)."""
    state = status.get("planState")
    if state is None or state == "pending":
        return [f"plan state: {state}"] if state else []
    who = "the person" if status.get("appliedByPerson") or status.get("discardedByPerson") else "an agent"
    if state in ("applied", "discarded"):
        after = (
            f", workspace revision now {status.get('resultingRevision')}"
            if status.get("resultingRevision") is not None
            else ""
        )
        return [f"plan state: {state} by {who}{after}"]
    return [f"plan state: {state}"]
