"""Who may start a write plan now: one rule shared by script runs and import prepares.

A new script run or import prepare is refused while a lifecycle operation runs
(``LIFECYCLE_BUSY``), while a script runs (``TASK_BUSY``), or while a script or import plan is
pending (``PLAN_PENDING``): both are pending write plans, and at most one exists at a time.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING

from moddesk.pvf.errors import pvf_error

if TYPE_CHECKING:
    from moddesk.pvf.service import PvfService

WRITE_PLAN_KINDS = ("script", "import", "mod")


def ensure_free_for_write_plan(service: PvfService) -> None:
    """Raise the code that says what is in the way (call it holding ``service._state``)."""
    if service._lifecycle_task is not None:
        raise pvf_error("LIFECYCLE_BUSY", "an open/close/save is running", taskId=service._lifecycle_task)
    running = service.tasks.active("script")
    if running:
        raise pvf_error("TASK_BUSY", "a script is running", taskId=running[0])
    for kind in WRITE_PLAN_KINDS:
        pending = service.plans.pending(kind)
        if pending is not None:
            raise pvf_error(
                "PLAN_PENDING",
                f"a {kind} plan is pending ({pending.plan_id})",
                pendingPlan=pending.describe(),
            )


@contextlib.contextmanager
def editors_prepared(service: PvfService, operation: str) -> Iterator[None]:
    """Freeze the editor windows for a write; ``UI_DRAFT_PENDING`` / ``UI_NOT_READY`` otherwise.

    Script apply, import apply and export prepare share this protection with the lifecycle: an
    uncommitted draft in an editor must not be overwritten (or left out of an export) silently.
    """
    operation_id = service.drafts.prepare(operation)
    try:
        yield
    finally:
        service.drafts.release(operation_id)
