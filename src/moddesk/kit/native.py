"""Which core runs the hot loops: the native Rust core (``moddesk_native``) or the Python reference.

``MODDESK_CORE`` picks it: ``auto`` (the default) uses the native core when its wheel is
installed and the Python reference otherwise; ``python`` always uses the reference; ``native``
requires the wheel and fails with ``NATIVE_CORE_MISSING`` instead of falling back silently, so a
benchmark or a test that asked for the native core can never measure the reference by mistake.
The pure-Python modules stay the oracle: differential tests prove both cores give the same bytes.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType
from typing import Literal

from moddesk.kit.errors import ServiceError, register_codes

CORE_ENV = "MODDESK_CORE"
NATIVE_MODULE = "moddesk_native"

CoreChoice = Literal["python", "native", "auto"]
CORE_CHOICES: tuple[CoreChoice, ...] = ("python", "native", "auto")

register_codes(
    {
        "NATIVE_CORE_MISSING": "MODDESK_CORE=native was asked for but the moddesk_native module is not installed.",
        "CORE_CHOICE_INVALID": "MODDESK_CORE names no known core (python, native or auto).",
    }
)


def core_choice() -> CoreChoice:
    """The core ``MODDESK_CORE`` asks for (``auto`` when unset); an unknown value is an error."""
    raw = os.environ.get(CORE_ENV, "").strip().lower() or "auto"
    for choice in CORE_CHOICES:
        if raw == choice:
            return choice
    raise ServiceError(
        "CORE_CHOICE_INVALID",
        f"{CORE_ENV}={raw!r} is not a core moddesk knows",
        "set MODDESK_CORE to python, native or auto (or unset it)",
        variable=CORE_ENV,
        value=raw,
    )


def _import_native() -> ModuleType | None:
    try:
        return importlib.import_module(NATIVE_MODULE)
    except ImportError:
        return None


def native_core() -> ModuleType | None:
    """The ``moddesk_native`` module when the chosen core is native, else ``None`` (use the reference)."""
    choice = core_choice()
    if choice == "python":
        return None
    module = _import_native()
    if module is None and choice == "native":
        raise ServiceError(
            "NATIVE_CORE_MISSING",
            f"{CORE_ENV}=native, but the {NATIVE_MODULE} module is not installed",
            "build it with `make native` (needs cargo), install a moddesk-native wheel, "
            "or set MODDESK_CORE=python to use the reference core",
            variable=CORE_ENV,
        )
    return module


def core_description() -> str:
    """The ``core`` row of ``moddesk doctor``: which core runs, with the native module's version."""
    try:
        module = native_core()
    except ServiceError as exc:
        return f"{exc.code}: {exc.message}"
    if module is None:
        reason = "MODDESK_CORE=python" if core_choice() == "python" else f"{NATIVE_MODULE} not installed"
        return f"python (reference; {reason})"
    version = getattr(module, "__version__", "?")
    return f"native ({NATIVE_MODULE} {version})"
