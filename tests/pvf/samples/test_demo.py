"""`moddesk demo` for pvf: the walk-through runs end to end against a real served archive."""

from __future__ import annotations

import io

from rich.console import Console

from moddesk.pvf.samples.demo import run


def test_demo_walks_the_typical_flow() -> None:
    out = io.StringIO()
    run(Console(file=out, width=200))
    text = out.getvalue()
    for step in (
        "workspace_info:",
        "archive_open:",
        "search hit",
        "read_file",
        "save_as:",
        "archive_save:",
        "history:",
    ):
        assert step in text, step
    assert text.rstrip().endswith("pvf demo ok")
