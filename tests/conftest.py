"""Fixtures shared by every test folder."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture(scope="session")
def pvf_corpus() -> Path:
    """``../shared/corpora/pvf`` (``MODDESK_CORPORA``): skipped without it, a failure in CI.

    CI sets ``MODDESK_REQUIRE_EXTERNAL=1`` with the corpora beside the clone, so a missing corpus
    there is a broken setup, never a quietly skipped check.
    """
    env = os.environ.get("MODDESK_CORPORA")
    root = (Path(env) if env else Path("/work/shared/corpora")) / "pvf"
    if not (root / "pvf_1031-sample").is_dir():
        message = f"PVF corpus not found at {root} (set MODDESK_CORPORA)"
        if os.environ.get("MODDESK_REQUIRE_EXTERNAL") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return root


# ------------------------------------------------------------------ no credential reaches a model
# Every MCP client in the suites (in memory, stdio, Streamable HTTP) is the SDK's ClientSession:
# while a test runs, everything a server sends it (results of tools/call, prompts/get,
# resources/read…, error messages, log and other notifications, progress messages) is recorded,
# and so is every credential a listener or a person gate holds. After the test, no record may
# carry a live credential or the shape of a login link.
_LINK_SHAPES = re.compile(r"[?&]token=|/login\?code=|moddesk-csrf=|moddesk_person_\d+=")


@pytest.fixture(autouse=True)
def no_credential_reaches_the_model(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    from mcp.client.session import ClientSession

    from moddesk.kit.http import HostOriginGuard
    from moddesk.kit.person import PersonGate

    seen: list[tuple[str, str]] = []
    secrets: set[str] = set()

    def record(what: str, value: Any) -> None:
        seen.append((what, json.dumps(value, ensure_ascii=False, default=str)))

    send_request = ClientSession.send_request
    on_notify = ClientSession._on_notify
    guard_init = HostOriginGuard.__init__
    gate_init = PersonGate.__init__
    redeem = PersonGate.redeem

    async def recorded_request(self: Any, request: Any, *args: Any, **kwargs: Any) -> Any:
        method = getattr(request, "method", type(request).__name__)
        progress = kwargs.get("progress_callback")
        if progress is not None:

            async def recorded_progress(done: float, total: float | None, message: str | None) -> None:
                record(f"{method} progress", message)
                await progress(done, total, message)

            kwargs["progress_callback"] = recorded_progress
        try:
            result = await send_request(self, request, *args, **kwargs)
        except Exception as exc:
            record(f"{method} error", str(exc))
            raise
        record(method, result.model_dump(mode="json") if hasattr(result, "model_dump") else result)
        return result

    async def recorded_notify(self: Any, dctx: Any, method: str, params: Any) -> None:
        record(f"notification {method}", params)
        await on_notify(self, dctx, method, params)

    def recorded_guard(self: Any, *args: Any, **kwargs: Any) -> None:
        guard_init(self, *args, **kwargs)
        if self.bearer_token:
            secrets.add(self.bearer_token)

    def recorded_gate(self: Any, *args: Any, **kwargs: Any) -> None:
        gate_init(self, *args, **kwargs)
        secrets.add(self.key)

    def recorded_redeem(self: Any, *args: Any, **kwargs: Any) -> Any:
        session = redeem(self, *args, **kwargs)
        secrets.update((session.session_id, session.csrf))
        return session

    monkeypatch.setattr(ClientSession, "send_request", recorded_request)
    monkeypatch.setattr(ClientSession, "_on_notify", recorded_notify)
    monkeypatch.setattr(HostOriginGuard, "__init__", recorded_guard)
    monkeypatch.setattr(PersonGate, "__init__", recorded_gate)
    monkeypatch.setattr(PersonGate, "redeem", recorded_redeem)
    yield
    leaks = [
        f"{what}: {text[:300]}"
        for what, text in seen
        if _LINK_SHAPES.search(text) or any(secret in text for secret in secrets)
    ]
    if leaks:
        pytest.fail("a credential reached what a model reads:\n" + "\n".join(leaks[:5]))
