"""The language a person reads in the terminal: Chinese first (the default) or English only.

Our users are Chinese-speaking modders, so what a command prints is Chinese first with the English
kept after it (``已解包 3 个文件 extracted 3 files``), the way errors and the serve banners read.
``MODDESK_LANG=en`` (any value starting with ``en``) prints the English alone. Help texts are
written bilingual in the code (Chinese first) and do not change with it: one help page serves both
readers (and can be rendered ahead of time).
"""

from __future__ import annotations

import os
from typing import Literal

LANG_ENV = "MODDESK_LANG"

Language = Literal["zh-CN", "en"]


def language() -> Language:
    """``en`` when ``MODDESK_LANG`` starts with ``en`` (``en``, ``en_US.UTF-8`` …), else ``zh-CN``."""
    return "en" if os.environ.get(LANG_ENV, "").strip().casefold().startswith("en") else "zh-CN"


def say(zh: str, en: str) -> str:
    """What to print: ``"<zh> <en>"`` (Chinese first, English kept), or ``en`` alone under ``en``."""
    return en if language() == "en" else f"{zh} {en}"
