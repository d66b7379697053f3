"""The core choice: MODDESK_CORE=python|native|auto, never a silent fallback, and doctor's row."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from moddesk.kit.errors import ServiceError
from moddesk.kit.native import core_choice, core_description, native_core


def _hide_native(monkeypatch: pytest.MonkeyPatch) -> None:
    # a None entry in sys.modules makes `import moddesk_native` raise ImportError, as on a machine
    # without the wheel
    monkeypatch.setitem(sys.modules, "moddesk_native", None)


def test_python_is_the_reference_whatever_is_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MODDESK_CORE", "python")
    assert native_core() is None
    assert core_description() == "python (reference; MODDESK_CORE=python)"


def test_native_without_the_module_is_an_error_not_a_fallback(monkeypatch: pytest.MonkeyPatch) -> None:
    _hide_native(monkeypatch)
    monkeypatch.setenv("MODDESK_CORE", "native")
    with pytest.raises(ServiceError) as caught:
        native_core()
    assert caught.value.code == "NATIVE_CORE_MISSING"
    assert "MODDESK_CORE=python" in (caught.value.hint or "")
    assert core_description().startswith("NATIVE_CORE_MISSING")


def test_auto_without_the_module_uses_the_reference(monkeypatch: pytest.MonkeyPatch) -> None:
    _hide_native(monkeypatch)
    monkeypatch.delenv("MODDESK_CORE", raising=False)
    assert core_choice() == "auto"
    assert native_core() is None
    assert core_description() == "python (reference; moddesk_native not installed)"


@pytest.mark.parametrize("value", ["rust", "pyhton", "1"])
def test_an_unknown_core_names_the_variable(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("MODDESK_CORE", value)
    with pytest.raises(ServiceError) as caught:
        core_choice()
    assert caught.value.code == "CORE_CHOICE_INVALID"
    assert caught.value.details["variable"] == "MODDESK_CORE"


def test_upper_case_and_spaces_are_accepted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MODDESK_CORE", " Python ")
    assert core_choice() == "python"


def test_the_wheel_is_installed_where_cargo_built_it() -> None:
    """`make test` builds the wheel whenever cargo exists; CI must run the native core, not skip it."""
    try:
        import moddesk_native
    except ImportError:
        if os.environ.get("MODDESK_REQUIRE_EXTERNAL") == "1":
            pytest.fail("moddesk_native is not installed: `make native` did not run or failed")
        pytest.skip("moddesk_native is not installed (no cargo on this machine)")
    assert moddesk_native.__version__ == moddesk_native.pvf.VERSION == moddesk_native.xiangqi.VERSION


@pytest.mark.parametrize("core", ["python", "native"])
def test_doctor_shows_the_core_row(core: str) -> None:
    env = {**os.environ, "MODDESK_CORE": core}
    shown = subprocess.run(
        [sys.executable, "-m", "moddesk.cli", "doctor"], env=env, capture_output=True, text=True, timeout=120
    )
    assert shown.returncode == 0, shown.stderr
    row = next(line for line in shown.stdout.splitlines() if "│ core " in line)
    try:
        import moddesk_native
    except ImportError:
        expected = "python (reference" if core == "python" else "NATIVE_CORE_MISSING"
    else:
        expected = (
            "python (reference"
            if core == "python"
            else f"native (moddesk_native {moddesk_native.__version__})"
        )
    assert expected in row
