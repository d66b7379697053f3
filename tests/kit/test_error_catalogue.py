"""The one error catalogue: every code raised in kit and pvf has a Chinese and an English text."""

from __future__ import annotations

import ast
import importlib
import pkgutil
import re
from pathlib import Path

import pytest

import moddesk
from moddesk.kit.errors import ERROR_CODES, ERROR_ZH, ServiceError, error_catalogue

SRC = Path(moddesk.__file__).parent
CODE = re.compile(r"^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$|^[A-Z]{5,}$")
# a call whose name says it makes or raises an error: ServiceError, PvfFormatError, pvf_error, _fail …
ERRORISH = re.compile(r"(?i)error|fail|raise|refus")
CJK = re.compile(r"[\u4e00-\u9fff]")


def _call_name(node: ast.Call) -> str:
    func = node.func
    if isinstance(func, ast.Name):
        return func.id
    return func.attr if isinstance(func, ast.Attribute) else ""


def _constants(nodes: list[ast.expr | None]) -> list[str]:
    return [n.value for n in nodes if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def raised_codes(package: str) -> dict[str, str]:
    """Every UPPER_SNAKE code the package's source passes to an error constructor or puts under
    an ``error``/``code`` key, with the first place it appears."""
    found: dict[str, str] = {}
    for path in sorted((SRC / package).rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            candidates: list[str] = []
            if isinstance(node, ast.Call) and ERRORISH.search(_call_name(node)):
                candidates += _constants(node.args[:1])
                candidates += _constants([kw.value for kw in node.keywords if kw.arg in ("code", "error")])
            elif isinstance(node, ast.Dict):
                pairs = zip(node.keys, node.values, strict=True)
                candidates += _constants(
                    [v for k, v in pairs if isinstance(k, ast.Constant) and k.value in ("error", "code")]
                )
            for code in candidates:
                if CODE.match(code):
                    found.setdefault(code, f"{path.relative_to(SRC)}:{getattr(node, 'lineno', 0)}")
    return found


def _import_all(package: str) -> None:
    module = importlib.import_module(f"moddesk.{package}")
    for info in pkgutil.walk_packages(module.__path__, f"moddesk.{package}."):
        if not info.name.endswith("__main__"):
            importlib.import_module(info.name)


def test_the_scan_finds_codes_raised_in_several_forms() -> None:
    codes = raised_codes("pvf")
    # ServiceError(...), pvf_error(...), PvfFormatError(...), a {"code": …} warning, a helper _fail(...)
    for code in ("INVALID_ARGUMENT", "STALE_WORKSPACE", "BAD_TOKEN", "ENUM_VALUE_UNKNOWN", "IMPORT_REFUSED"):
        assert code in codes, code
    assert len(codes) > 60


@pytest.mark.parametrize("package", ["kit", "pvf"])
def test_every_raised_code_has_chinese_and_english(package: str) -> None:
    _import_all(package)
    codes = raised_codes(package)
    missing_zh = {code: where for code, where in codes.items() if not CJK.search(ERROR_ZH.get(code, ""))}
    missing_en = {code: where for code, where in codes.items() if not ERROR_CODES.get(code)}
    assert not missing_zh, f"codes without a Chinese message in the catalogue: {missing_zh}"
    assert not missing_en, f"codes without an English description in the catalogue: {missing_en}"


def test_error_payloads_carry_the_catalogue_chinese() -> None:
    _import_all("pvf")
    payload = ServiceError("UI_DRAFT_PENDING", "an editor holds a draft", hint="commit it").to_payload()
    assert payload["errorZh"] == ERROR_ZH["UI_DRAFT_PENDING"] and "草稿" in payload["errorZh"]
    # a raiser's own Chinese (with the specifics) wins over the catalogue's generic text
    own = ServiceError("BAD_TEXT", "line 3", errorZh="第 3 行无法编译").to_payload()
    assert own["errorZh"] == "第 3 行无法编译"
    catalogue = error_catalogue()
    assert catalogue["SECRET_REFUSED"]["zh"] and catalogue["SECRET_REFUSED"]["en"]


def test_every_invalid_argument_says_how_to_recover() -> None:
    # a raiser that gave no hint still hands the caller a recovery step (seed: code, message, hint)
    bare = ServiceError("INVALID_ARGUMENT", "limit must be 1..100")
    assert bare.hint and bare.to_payload()["hint"] == bare.hint
    assert ServiceError("INVALID_ARGUMENT", "x", hint="Pass a number.").hint == "Pass a number."
