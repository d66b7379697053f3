"""What kind of content an entry holds, from its NKPI data type or its extension."""

from __future__ import annotations

from moddesk.pvf.format.ani import looks_like_text
from moddesk.pvf.format.nkpi import DATA_SCRIPT, DATA_TEXT
from moddesk.pvf.format.tokens import is_classic_script

#: Extensions whose content is plain text (region code page; ``.nut`` is CP949).
TEXT_EXTENSIONS = frozenset({".str", ".nut", ".txt", ".xml", ".csv", ".ini", ".cfg", ".json"})


def ext(path: str) -> str:
    """The lower-case extension of the last path component (``""`` when none)."""
    name = path.rsplit("/", 1)[-1].lower()
    dot = name.rfind(".")
    return name[dot:] if dot > 0 else ""


#: Extensions of game scripts (token streams).
SCRIPT_EXTENSIONS = frozenset(
    [
        ".equ",
        ".stk",
        ".skl",
        ".chr",
        ".lst",
        ".act",
        ".ai",
        ".aic",
        ".key",
        ".obj",
        ".mob",
        ".map",
        ".dgn",
        ".twn",
        ".etc",
        ".shp",
        ".atk",
        ".til",
        ".ptl",
        ".cre",
        ".apd",
        ".npc",
        ".qst",
        ".als",
        ".ora",
        ".lay",
        ".tbl",
        ".gdata",
        ".cdt",
        ".cwk",
        ".mgr",
        ".dlg",
    ]
)


def classic_kind(path: str) -> str:
    """``text``, ``script`` or ``binary`` for a classic entry, by extension (the B0 D0 magic decides later)."""
    suffix = ext(path)
    if suffix in TEXT_EXTENSIONS:
        return "text"
    if suffix in SCRIPT_EXTENSIONS:
        return "script"
    return "binary"


#: Extensions whose classic entries may be binary animations or plain text (decided by content).
ANIMATION_EXTENSIONS = frozenset({".ani", ".als"})


def classic_content_kind(path: str, data: bytes) -> str:
    """``script``, ``text``, ``animation`` or ``binary`` of a classic entry's bytes.

    The content decides (pvfUtility's IsScriptFile: B0 D0 makes a script whatever the name); a
    plain-text ``.ani`` / ``.ani.als`` is text, any other ``.ani`` a binary animation.
    """
    if is_classic_script(data):
        return "script"
    suffix = ext(path)
    if suffix in TEXT_EXTENSIONS:
        return "text"
    if suffix in ANIMATION_EXTENSIONS:
        if looks_like_text(data):
            return "text"
        if suffix == ".ani":
            return "animation"
    return "binary"


def classic_write_kind(path: str, stored: bytes | None, *, stringtable: bool = False) -> str:
    """How text written to a classic ``path`` is stored: the stored content decides, then the name.

    Never a token script for animation text or for an entry stored as plain text.
    """
    kind = classic_kind(path)
    if stored is not None and kind != "text":
        found = classic_content_kind(path, stored)
        kind = "script" if found == "binary" and kind == "script" else found
    if kind == "binary" and ext(path) == ".ani":
        return "animation"  # classic animations are binary .ani, whatever their text looks like
    if kind == "binary" and not stringtable:
        return "script"
    return kind


def nkpi_type_for_new(path: str) -> int:
    """The NKPI data type of a new file: 3 (UTF-16 text) for text extensions, else 1 (script)."""
    return DATA_TEXT if ext(path) in TEXT_EXTENSIONS else DATA_SCRIPT


def nkpi_kind_for_new(path: str) -> str:
    """The kind a new NKPI file at ``path`` gets."""
    return "text" if nkpi_type_for_new(path) == DATA_TEXT else "script"
