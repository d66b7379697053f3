"""Diagnostics triage: one list with severities error / warning / expected, real problems first.

A big mod has thousands of diagnostics, most of them expected: `type="reference"` includes of the
base game's compiled streams, references to base-game assets when no base-game data is indexed.
Triage gives each diagnostic a severity and a group so the few real problems (malformed XML, a
mod-local typo, an include that reaches nothing) are not buried:

- error: the build is wrong or something was not read (malformed, unreadable, outside the roots,
  a missing `all`/`instance` include, an asset without id);
- warning: likely a mistake in the mod (an unresolved reference with a near-miss id in the mod or
  with base-game data of that type indexed, ambiguous ids, inheritFrom visibility, duplicates,
  undeclared elements, include cycles);
- expected: what a mod without base-game data always shows (a missing `reference` include, an
  unresolved reference nothing in the index could check).
"""

from __future__ import annotations

import bisect
import difflib
import os
from collections import Counter
from dataclasses import dataclass
from typing import Any

from moddesk.ra3.core.model import IndexData
from moddesk.ra3.core.parse import Diagnostic, RefSite

ERROR, WARNING, EXPECTED = "error", "warning", "expected"
SEVERITY_RANK = {ERROR: 0, WARNING: 1, EXPECTED: 2}
_ERRORS = frozenset(
    {
        "XML_MALFORMED",
        "FILE_UNREADABLE",
        "INCLUDE_OUTSIDE_ROOTS",
        "ASSET_NO_ID",
        "MANIFEST_INVALID",
        "SCHEMA_NOT_FOUND",
        "INCLUDE_TYPE_INVALID",
        "INCLUDE_SOURCE_MISSING",
    }
)


@dataclass(frozen=True, slots=True)
class Triaged:
    """A diagnostic with its triage: severity and group (`mod-local`, `base-game`, or the code's area)."""

    diagnostic: Diagnostic
    severity: str
    group: str
    hint: str | None = None

    def to_json(self) -> dict[str, Any]:
        """Query shape."""
        d = self.diagnostic
        out: dict[str, Any] = {
            "code": d.code,
            "file": d.file,
            "line": d.line,
            "message": d.message,
            "severity": self.severity,
            "group": self.group,
        }
        if self.hint:
            out["didYouMean"] = self.hint
        return out


class _NearIds:
    """Mod ids sorted for a prefix window, then difflib: a likely misspelling target, or None."""

    def __init__(self, data: IndexData) -> None:
        self.ids = sorted({a.id.lower(): a.id for a in data.assets() if a.origin == "project"}.items())
        self._memo: dict[str, str | None] = {}  # a base-game id is named by many references

    def closest(self, ident: str) -> str | None:
        if ident not in self._memo:
            self._memo[ident] = self._closest(ident)
        return self._memo[ident]

    def _closest(self, ident: str) -> str | None:
        if len(ident) < 4:
            return None
        stem = ident.lower()[: max(4, len(ident) // 2)]
        at = bisect.bisect_left(self.ids, (stem, ""))
        candidates: list[str] = []
        while at < len(self.ids) and self.ids[at][0].startswith(stem) and len(candidates) < 200:
            candidates.append(self.ids[at][1])
            at += 1
        close = difflib.get_close_matches(ident, candidates, n=1, cutoff=0.75)
        return close[0] if close else None


def triage(data: IndexData) -> list[Triaged]:
    """Every diagnostic (parse, include, reference) with severity and group, worst first; cached."""
    cached = data.triage_cache
    if cached is not None and cached[0] == data.generation:
        return cached[1]
    reference_includes = {(e.source_file, e.line) for e in data.includes if e.type == "reference"}
    base_types = {a.type for a in data.assets() if a.origin != "project"}
    near = _NearIds(data)
    sites: dict[tuple[str, int], list[RefSite]] = {}
    for r in data.refs():
        sites.setdefault((r.file, r.line), []).append(r)
    out: list[Triaged] = []
    for d in [*data.diagnostics, *data.reference_diagnostics()]:
        out.append(_one(data, d, reference_includes, base_types, near, sites))
    out.sort(key=lambda t: (SEVERITY_RANK[t.severity], t.diagnostic.file, t.diagnostic.line))
    data.triage_cache = (data.generation, out)
    return out


def _one(
    data: IndexData,
    d: Diagnostic,
    reference_includes: set[tuple[str, int]],
    base_types: set[str],
    near: _NearIds,
    sites: dict[tuple[str, int], list[RefSite]],
) -> Triaged:
    code = d.code
    if code in _ERRORS:
        return Triaged(d, ERROR, "build")
    if code == "INCLUDE_NOT_FOUND":
        if (d.file, d.line) in reference_includes:
            return Triaged(d, EXPECTED, "base-game")  # another compiled stream, not part of this mod
        if not data.settings.get("sdk") and _names_base_game(data, d.message):
            return Triaged(d, EXPECTED, "base-game")  # a base-game file, and no SDK to find it in
        return Triaged(d, ERROR, "build")
    if code == "UNRESOLVED_REFERENCE":
        ref = next((r for r in sites.get((d.file, d.line), []) if repr(r.value) in d.message), None)
        return _unresolved(data, d, ref, base_types, near)
    return Triaged(
        d, WARNING, "mod-local" if code.startswith(("DUPLICATE", "INHERIT", "AMBIGUOUS")) else "build"
    )


def _unresolved(
    data: IndexData, d: Diagnostic, ref: RefSite | None, base_types: set[str], near: _NearIds
) -> Triaged:
    if ref is None:
        return Triaged(d, WARNING, "mod-local")
    wanted = data.canonical(ref.target_type) if ref.target_type else (ref.ref_type or ref.owner_type)
    hint = near.closest(ref.target_id)
    if hint is not None:
        return Triaged(d, WARNING, "mod-local", hint)
    if base_types & data.derived_types(wanted):
        return Triaged(d, WARNING, "mod-local")  # base-game data of that type is indexed: truly missing
    return Triaged(d, EXPECTED, "base-game")


def _names_base_game(data: IndexData, message: str) -> bool:
    """An include message naming `DATA:`/`ART:`… outside the mod's own folder (`DATA:MyMod/…` is the mod)."""
    source = message.split("'", 2)[1] if message.count("'") >= 2 else ""
    alias, sep, rest = source.partition(":")
    if not sep or alias.lower() not in ("data", "art", "audio"):
        return False
    first = rest.replace("\\", "/").lstrip("/").split("/", 1)[0].lower()
    return first != os.path.basename(data.project_dir.rstrip("/\\")).lower()


def summary(rows: list[Triaged]) -> dict[str, Any]:
    """Counts first: by severity, by group of unresolved references, by code."""
    return {
        "bySeverity": {
            s: n for s in (ERROR, WARNING, EXPECTED) if (n := sum(1 for t in rows if t.severity == s))
        },
        "unresolvedReferences": dict(
            Counter(t.group for t in rows if t.diagnostic.code == "UNRESOLVED_REFERENCE").most_common()
        ),
        "byCode": dict(Counter(t.diagnostic.code for t in rows).most_common()),
    }
