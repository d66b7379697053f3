"""The builtin rule layer: JSON documents shipped inside the package, parsed once."""

from __future__ import annotations

from functools import lru_cache
from importlib import resources

from moddesk.pvf.annotations.loader import parse_document_text
from moddesk.pvf.annotations.model import RuleDocument

BUILTIN_FILES: tuple[str, ...] = (
    "common.json",
    "equipment.json",
    "stackable.json",
    "skill.json",
    "dungeon.json",
    "files.json",
    "lists.json",
)


@lru_cache(maxsize=1)
def builtin_documents() -> tuple[RuleDocument, ...]:
    """Every builtin document, validated (a broken builtin file is a packaging bug and raises)."""
    base = resources.files(__name__)
    return tuple(
        parse_document_text(base.joinpath(name).read_text("utf-8"), f"builtin:{name}")
        for name in BUILTIN_FILES
    )
