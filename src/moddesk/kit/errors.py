"""Expected failures as values: ``ServiceError`` and the registry of stable error codes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# Codes every system may raise. Systems add their own with ``register_codes``.
ERROR_CODES: dict[str, str] = {
    "INVALID_ARGUMENT": "An argument is missing, malformed or out of range.",
    "NOT_FOUND": "The named thing does not exist.",
    "INVALID_CURSOR": "The cursor was tampered with or belongs to another query.",
    "STALE_CURSOR": "The data moved since the cursor was issued; start the listing again.",
    "REQUEST_CONFLICT": "The requestId was already used with different parameters.",
    "PLAN_PENDING": "Another plan of this kind is pending; apply or discard it first.",
    "PLAN_NOT_FOUND": "No plan with this id exists.",
    "PLAN_EXPIRED": "The plan expired; prepare it again.",
    "TASK_NOT_FOUND": "No task with this id exists (finished tasks are kept for a while only).",
    "TASK_RUNNING": "The task has not finished yet; poll its status.",
    "TASK_NOT_CANCELLABLE": "This task cannot be cancelled.",
    "CANCELLED": "The operation was cancelled.",
    "TARGET_EXISTS": "The target path already exists and will not be overwritten.",
    "PORT_IN_USE": "The TCP port is already in use on 127.0.0.1.",
    "CONFIG_INVALID": "A configuration file could not be read; it was left untouched.",
    "SKILL_MODIFIED": "An installed skill was edited by the user and was not overwritten.",
    "INTERNAL_ERROR": "An unexpected internal error; the server log has the details.",
}


def register_codes(codes: Mapping[str, str]) -> None:
    """Add a system's codes to the registry; a code keeps one meaning everywhere."""
    for code, description in codes.items():
        known = ERROR_CODES.get(code)
        if known is not None and known != description:
            raise ValueError(f"error code {code} is already registered with another meaning")
        ERROR_CODES[code] = description


class ServiceError(Exception):
    """An expected failure with a stable machine code, a message and a recovery hint."""

    def __init__(self, code: str, message: str, hint: str | None = None, **details: Any) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.hint = hint
        self.details: dict[str, Any] = details

    def to_payload(self) -> dict[str, Any]:
        """The structured error contract: ``{"ok": false, "error", "message", "hint", …details}``."""
        payload: dict[str, Any] = {"ok": False, "error": self.code, "message": self.message}
        if self.hint is not None:
            payload["hint"] = self.hint
        for key, value in self.details.items():
            payload.setdefault(key, value)
        return payload

    def __str__(self) -> str:
        text = f"{self.code}: {self.message}"
        return f"{text} ({self.hint})" if self.hint else text

    def __repr__(self) -> str:
        return f"ServiceError({self.code!r}, {self.message!r})"
