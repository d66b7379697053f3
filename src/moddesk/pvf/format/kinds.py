"""What kind of content an entry holds, from its NKPI data type or its extension."""

from __future__ import annotations

from moddesk.pvf.format.nkpi import DATA_SCRIPT, DATA_TEXT

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


def nkpi_type_for_new(path: str) -> int:
    """The NKPI data type of a new file: 3 (UTF-16 text) for text extensions, else 1 (script)."""
    return DATA_TEXT if ext(path) in TEXT_EXTENSIONS else DATA_SCRIPT


def nkpi_kind_for_new(path: str) -> str:
    """The kind a new NKPI file at ``path`` gets."""
    return "text" if nkpi_type_for_new(path) == DATA_TEXT else "script"
