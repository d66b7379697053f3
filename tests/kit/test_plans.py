"""Plan registry: one pending plan per kind, TTL expiry, discard, namespaces."""

from __future__ import annotations

import pytest

from moddesk.kit.errors import ServiceError
from moddesk.kit.plans import Plan, PlanRegistry


class FakeClock:
    """A settable monotonic clock (time is an input here, not a component)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_one_pending_plan_per_kind() -> None:
    plans = PlanRegistry()
    script = plans.create("script", {"changes": 3}, owner="mcp", source="run-1")
    assert script.plan_id.startswith("script_")
    with pytest.raises(ServiceError) as caught:
        plans.create("script", {})
    assert caught.value.code == "PLAN_PENDING"
    assert caught.value.details["pendingPlan"]["planId"] == script.plan_id
    exported = plans.create("export", {}, pending_code="EXPORT_PLAN_PENDING")
    with pytest.raises(ServiceError) as caught:
        plans.create("export", {}, pending_code="EXPORT_PLAN_PENDING")
    assert caught.value.code == "EXPORT_PLAN_PENDING"
    # ids are namespaced by kind
    with pytest.raises(ServiceError) as caught:
        plans.get("script", exported.plan_id)
    assert caught.value.code == "PLAN_NOT_FOUND"


def test_ttl_expiry_frees_the_kind_and_reports_expired() -> None:
    clock = FakeClock()
    expired: list[Plan] = []
    plans = PlanRegistry(ttl_seconds=600, clock=clock, on_expire=expired.append)
    plan = plans.create("import", {"spill": "/tmp/x"})
    clock.now += 599
    assert plans.get("import", plan.plan_id) is plan
    clock.now += 2
    with pytest.raises(ServiceError) as caught:
        plans.get("import", plan.plan_id)
    assert caught.value.code == "PLAN_EXPIRED"
    assert [p.plan_id for p in expired] == [plan.plan_id]
    assert plans.create("import", {}).plan_id != plan.plan_id


def test_discard_and_complete() -> None:
    plans = PlanRegistry()
    plan = plans.create("script", {})
    plans.discard("script", plan.plan_id)
    with pytest.raises(ServiceError) as caught:
        plans.get("script", plan.plan_id)
    assert caught.value.code == "PLAN_NOT_FOUND"
    assert "discarded" in caught.value.message
    applied = plans.create("script", {})
    plans.complete("script", applied.plan_id)
    assert plans.pending("script") is None
