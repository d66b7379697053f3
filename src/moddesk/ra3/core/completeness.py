"""What an answer may be missing: skipped content summarised as caveats with counts.

The index leaves some places out on purpose or by necessity: elements the schema does not
declare (their references are only inferred), files that do not parse, includes that resolve to
nothing it may read. Every answer whose scope touches them names how many places were left out,
so an empty or short answer is never mistaken for the whole truth.
"""

from __future__ import annotations

from typing import Any

from moddesk.ra3.core.model import IndexData

_UNREACHED_CODES = ("INCLUDE_NOT_FOUND", "INCLUDE_OUTSIDE_ROOTS", "XI_INCLUDE_NOT_FOUND")
_UNPARSABLE_CODES = ("XML_MALFORMED", "FILE_UNREADABLE")


def skipped_content(data: IndexData) -> dict[str, tuple[int, int]]:
    """What the index left out, as code -> (places, files): unknown elements, unparsable files,
    unresolved includes. Cached on the data's generation."""
    cached = data.skipped_cache
    if cached is not None and cached[0] == data.generation:
        return dict(cached[1])
    unreached: set[tuple[str, int]] = set()
    bad: set[str] = set()
    for d in data.diagnostics:
        if d.code in _UNREACHED_CODES:
            unreached.add((d.file, d.line))
        elif d.code in _UNPARSABLE_CODES:
            bad.add(d.file)
    out = {
        "UNKNOWN_ELEMENTS": (data.unknown_elements, len(data.unknown_by_file)),
        "UNPARSABLE_FILES": (len(bad), len(bad)),
        "UNRESOLVED_INCLUDES": (len(unreached), len({f for f, _l in unreached})),
    }
    data.skipped_cache = (data.generation, out)
    return dict(out)


_CAVEAT_TEXT = {
    "UNKNOWN_ELEMENTS": "{n} elements in {f} files are not declared by the schema; references inside them "
    "are indexed only where inferred (list_diagnostics code=UNKNOWN_ELEMENT)",
    "UNPARSABLE_FILES": "{n} files are malformed or unreadable and were indexed only as far as they parse "
    "(list_diagnostics code=XML_MALFORMED)",
    "UNRESOLVED_INCLUDES": "{n} includes in {f} files point at nothing this index may read, so whatever they "
    "name is not indexed (list_diagnostics code=INCLUDE_NOT_FOUND / INCLUDE_OUTSIDE_ROOTS)",
}


def caveats(data: IndexData, codes: tuple[str, ...], files: set[str] | None = None) -> list[dict[str, Any]]:
    """The caveats an answer carries when its scope touches skipped content (None = the whole index)."""
    out: list[dict[str, Any]] = []
    skipped = skipped_content(data)
    if files is not None:
        # a scope of a few files: only unknown elements inside them matter
        n = sum(data.unknown_by_file.get(f, 0) for f in files)
        skipped = {"UNKNOWN_ELEMENTS": (n, sum(1 for f in files if data.unknown_by_file.get(f)))}
    for code in codes:
        n, f = skipped.get(code, (0, 0))
        if n:
            out.append({"code": code, "places": n, "message": _CAVEAT_TEXT[code].format(n=n, f=f)})
    return out


ALL_SKIPPED = ("UNKNOWN_ELEMENTS", "UNPARSABLE_FILES", "UNRESOLVED_INCLUDES")
DEFINITION_SKIPPED = ("UNPARSABLE_FILES", "UNRESOLVED_INCLUDES")
