"""The agent-setup walkthrough (offered to `moddesk demo`) runs clean and says what it showed."""

from __future__ import annotations

import io

from rich.console import Console

from moddesk.kit.agents.demo import run


def test_agents_demo_runs() -> None:
    buffer = io.StringIO()
    run(Console(file=buffer, width=300))
    text = buffer.getvalue()
    assert "runs `moddesk --help`" in text
    assert "byte-for-byte" in text
    assert "refused the edited one" in text
