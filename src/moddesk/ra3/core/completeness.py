"""What an answer may be missing: skipped content summarised as caveats with counts.

The index leaves some places out on purpose or by necessity: elements the schema does not
declare (their references are only inferred), files that do not parse, includes that resolve to
nothing it may read. Every answer whose scope touches them names how many places were left out,
so an empty or short answer is never mistaken for the whole truth.
"""

from __future__ import annotations

import os
import re
from collections import Counter
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


# --- gaps: what makes an index incomplete -----------------------------------------------------
INCLUDE_NOT_FOUND, XML_MALFORMED, UNKNOWN_ELEMENT, FILE_UNREACHED, NO_SCHEMA_FOR_TYPE = (
    "INCLUDE_NOT_FOUND",
    "XML_MALFORMED",
    "UNKNOWN_ELEMENT",
    "FILE_UNREACHED",
    "NO_SCHEMA_FOR_TYPE",
)
GAP_KINDS = (INCLUDE_NOT_FOUND, XML_MALFORMED, UNKNOWN_ELEMENT, FILE_UNREACHED, NO_SCHEMA_FOR_TYPE)
# which diagnostic codes count as which gap kind
_GAP_OF_CODE = {
    "INCLUDE_NOT_FOUND": INCLUDE_NOT_FOUND,
    "XI_INCLUDE_NOT_FOUND": INCLUDE_NOT_FOUND,
    "INCLUDE_SOURCE_MISSING": INCLUDE_NOT_FOUND,
    "XI_INCLUDE_NO_HREF": INCLUDE_NOT_FOUND,
    "XML_MALFORMED": XML_MALFORMED,
    "FILE_UNREADABLE": FILE_UNREACHED,
    "INCLUDE_OUTSIDE_ROOTS": FILE_UNREACHED,
    "MANIFEST_INVALID": FILE_UNREACHED,
    "NO_SCHEMA_FOR_TYPE": NO_SCHEMA_FOR_TYPE,
}
# a type the schema lacks is read by the inference rules (every attribute / text value that names an
# existing asset), so it is reported but does not by itself make the index incomplete
_COVERED_BY_INFERENCE = frozenset({NO_SCHEMA_FOR_TYPE})
TOP_FILES = 5
_NO_SCHEMA_TYPE = re.compile(r"^<([\w.:-]+) id=")


def gaps(data: IndexData) -> dict[str, dict[str, Any]]:
    """What keeps the index from covering everything, by kind: count, files, top files, fix.

    Only kinds with something in them appear; `blocking` says whether the kind makes `complete` false.
    Cached on the data's generation (every answer's status block carries it).
    """
    cached = data.gaps_cache
    if cached is not None and cached[0] == data.generation:
        return cached[1]
    per_file: dict[str, Counter[str]] = {kind: Counter() for kind in GAP_KINDS}
    seen: set[tuple[str, str, int]] = set()
    untyped: Counter[str] = Counter()
    untyped_by_file: Counter[str] = Counter()
    first_malformed: dict[str, int] = {}
    for d in data.diagnostics:
        kind = _GAP_OF_CODE.get(d.code)
        if kind is None or (kind != NO_SCHEMA_FOR_TYPE and (d.code, d.file, d.line) in seen):
            continue
        seen.add((d.code, d.file, d.line))
        per_file[kind][d.file] += 1
        if kind == NO_SCHEMA_FOR_TYPE:
            untyped_by_file[d.file] += 1
            m = _NO_SCHEMA_TYPE.match(d.message)
            if m:
                untyped[m.group(1)] += 1
        elif kind == XML_MALFORMED:
            first_malformed.setdefault(d.file, d.line)
    for file, n in data.unknown_by_file.items():
        inside = n - untyped_by_file.get(file, 0)  # the top-level untyped assets are counted above
        if inside > 0:
            per_file[UNKNOWN_ELEMENT][file] += inside
    out: dict[str, dict[str, Any]] = {}
    for kind in GAP_KINDS:
        counts = per_file[kind]
        if not counts:
            continue
        entry: dict[str, Any] = {
            "count": sum(counts.values()),
            "files": len(counts),
            "blocking": kind not in _COVERED_BY_INFERENCE,
            "top": [{"file": f, "count": n} for f, n in counts.most_common(TOP_FILES)],
        }
        if kind == NO_SCHEMA_FOR_TYPE:
            entry["types"] = [{"type": t, "count": n} for t, n in untyped.most_common(TOP_FILES)]
        fix = _fix(kind, data, counts, first_malformed, untyped)
        if fix:
            entry["fix"] = fix
        out[kind] = entry
    data.gaps_cache = (data.generation, out)
    return out


def blocking(found: dict[str, dict[str, Any]]) -> bool:
    """True when a gap makes the index incomplete."""
    return any(g.get("blocking", True) for g in found.values())


def _fix(
    kind: str,
    data: IndexData,
    counts: Counter[str],
    first_malformed: dict[str, int],
    untyped: Counter[str],
) -> str | None:
    """The one-line fix for a gap kind, when one is known."""
    if kind == INCLUDE_NOT_FOUND:
        return _include_fix(data)
    if kind == XML_MALFORMED:
        file = counts.most_common(1)[0][0]
        return f"fix the XML at {file}:{first_malformed.get(file, 1)} (list_diagnostics code=XML_MALFORMED)"
    if kind == FILE_UNREACHED:
        if any(d.code == "INCLUDE_OUTSIDE_ROOTS" for d in data.diagnostics):
            return "includes point outside the project and the SDK: add their folder with --data-path"
        return "make the files readable (list_diagnostics code=FILE_UNREADABLE)"
    if kind == UNKNOWN_ELEMENT:
        schema = data.settings.get("schema") or "the schema"
        if data.settings.get("game") == "kw":
            return (
                f"Kane's Wrath modules {schema} (a C&C3 schema) does not declare: their references are inferred "
                "(inferred: true); index with a Kane's Wrath schema (--schema) for schema-backed edges "
                "(list_diagnostics code=UNKNOWN_ELEMENT)"
            )
        return (
            f"these elements are not declared by {schema}: check their names, or index with the game's own "
            "schema (--schema) (list_diagnostics code=UNKNOWN_ELEMENT)"
        )
    if kind == NO_SCHEMA_FOR_TYPE:
        names = ", ".join(t for t, _n in untyped.most_common(3))
        return (
            f"{names}: not in the schema; references inside are inferred (marked inferred), not schema-backed"
        )
    return None


def _include_fix(data: IndexData) -> str | None:
    """Name where the missing includes expect the mod (or the SDK) to be, from their sources."""
    prefixes: Counter[str] = Counter()
    bare = 0
    missing = [e for e in data.includes if e.target is None and e.manifest is None and e.type != "xi"]
    for edge in missing:
        src = edge.source.strip().replace("\\", "/")
        alias, sep, rest = src.partition(":")
        if not sep or alias.lower() != "data":
            continue
        parts = [p for p in rest.split("/") if p]
        if len(parts) >= 2:
            prefixes[parts[0]] += 1
        else:
            bare += 1
    sdk = data.settings.get("sdk")
    project_name = os.path.basename(data.project_dir.rstrip("/\\")).lower()
    fixes: list[str] = []
    if prefixes:
        name, n = prefixes.most_common(1)[0]
        # the mod names itself in its includes (DATA:<mod>/...) but lives in a folder of another name
        if n >= 3 and n * 4 >= len(missing) and name.lower() != project_name:
            where = f"{sdk}/Mods/{name}" if sdk else f"<sdk>/Mods/{name}"
            fixes.append(
                f"this mod's includes expect it at `{where}` ({n} includes say DATA:{name}/...): move it "
                f'there, or add `mod_name = "{name}"` to moddesk-ra3.toml'
            )
    if (bare or prefixes) and not sdk:
        fixes.append(
            "base-game includes (DATA:static.xml, DATA:GlobalData/...) need the SDK: pass --sdk <SDK folder>"
        )
    return "; ".join(fixes) or None


def gap_line(kind: str, gap: dict[str, Any]) -> str:
    """One line of text for a gap kind (the MCP text block and the CLI print it)."""
    top = ", ".join(f"{t['file']} ({t['count']})" for t in gap.get("top") or [])
    covered = "" if gap.get("blocking", True) else " (covered by inference, not blocking)"
    line = f"gap {kind}: {gap.get('count')} in {gap.get('files')} files{covered}; top: {top}"
    if gap.get("fix"):
        line += f"; fix: {gap['fix']}"
    return line
