"""Fixtures shared by every test folder."""

from __future__ import annotations

import os
from pathlib import Path

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
