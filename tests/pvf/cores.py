"""Which pvf core a block of test code runs on (``MODDESK_CORE``), for tests that compare both."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def use_core(name: str) -> Iterator[None]:
    """``MODDESK_CORE=name`` inside the block; the caller's setting (or its absence) after it."""
    saved = os.environ.get("MODDESK_CORE")
    os.environ["MODDESK_CORE"] = name
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("MODDESK_CORE", None)
        else:
            os.environ["MODDESK_CORE"] = saved
