"""Per-file diagnostics: the index's own findings for the file, located on the value, plus two the
editor needs (the file is in no stream; a reference names an id that exists only as another type).

Severities are the index's (`Diagnostic.severity`). Unresolved references are split by where the
target would live: `mod-local` when the project indexes base-game data of that type (so the id is
truly missing) or the id has mod-local near misses, `base-game` when no base-game definitions of
that type are indexed (the public RA3 corpora ship none, so such ids cannot be checked).
"""

from __future__ import annotations

import bisect
import difflib
from collections import defaultdict

from lsprotocol import types as lsp

from moddesk.ra3.core.model import UNRESOLVED, IndexData
from moddesk.ra3.core.parse import Diagnostic, RefSite, parse_xml_bytes
from moddesk.ra3.core.schema import FILE
from moddesk.ra3.lsp.positions import Lines, Span
from moddesk.ra3.lsp.sites import assets_in, refs_in, value_span

SOURCE = "moddesk-ra3"
_SEVERITY = {
    "error": lsp.DiagnosticSeverity.Error,
    "warning": lsp.DiagnosticSeverity.Warning,
    "info": lsp.DiagnosticSeverity.Information,
    "information": lsp.DiagnosticSeverity.Information,
    "hint": lsp.DiagnosticSeverity.Hint,
}


class DiagnosticTable:
    """The index's diagnostics of one file at a time, cached per index generation.

    Only the file's own references are resolved (a keystroke changes the generation, and resolving
    every reference of a big mod again would cost a large share of a second).
    """

    def __init__(self) -> None:
        self._generation = -1
        self._parse: dict[str, list[Diagnostic]] = {}
        self._by_file: dict[str, list[Diagnostic]] = {}
        self._base_types: frozenset[str] | None = None
        self._ids: dict[tuple[int, str | None], list[tuple[str, str]]] = {}
        self._near_ids: dict[str | None, list[tuple[str, str]]] = {}
        self._near: dict[str | None, dict[str, str | None]] = {}

    def of(self, data: IndexData, shown: str) -> list[Diagnostic]:
        """Every index diagnostic located in one file (call with the index lock held)."""
        if data.generation != self._generation:
            table: dict[str, list[Diagnostic]] = defaultdict(list)
            for d in data.diagnostics:
                table[d.file].append(d)
            self._parse = dict(table)
            self._by_file = {}
            self._base_types = None
            self._generation = data.generation
        hit = self._by_file.get(shown)
        if hit is None:
            hit = list(self._parse.get(shown, []))
            for r in refs_in(data, shown):
                found = data.reference_diagnostic(r)
                if found is not None:
                    hit.append(found)
            keys = {a.key for a in assets_in(data, shown)}
            hit += [d for d in data.duplicate_diagnostics(keys) if d.file == shown]
            self._by_file[shown] = hit
        return hit

    def near_miss(self, data: IndexData, type_name: str | None, ident: str) -> str | None:
        """A mod asset of the wanted type whose id is a likely misspelling target of `ident`."""
        if len(ident) < 4:
            return None
        key = (data.generation, type_name)
        ids = self._ids.get(key)
        if ids is None:
            wanted = data.derived_types(data.canonical(type_name)) if type_name else None
            ids = sorted(
                {d.id.lower(): d.id for d in data.assets() if wanted is None or d.type in wanted}.items()
            )
            if len(self._ids) > 64:
                self._ids.clear()
            self._ids[key] = ids
            previous = self._near_ids.get(type_name)
            if previous != ids:  # a keystroke rarely changes the ids: keep the answers then
                self._near_ids[type_name] = ids
                self._near.pop(type_name, None)
        memo = self._near.setdefault(type_name, {})
        if ident in memo:
            return memo[ident]
        if len(memo) > 20_000:
            memo.clear()
        memo[ident] = self._closest(ids, ident)
        return memo[ident]

    @staticmethod
    def _closest(ids: list[tuple[str, str]], ident: str) -> str | None:
        stem = ident.lower()[: max(4, len(ident) // 2)]
        at = bisect.bisect_left(ids, (stem, ""))
        candidates: list[str] = []
        while at < len(ids) and ids[at][0].startswith(stem) and len(candidates) < 200:
            candidates.append(ids[at][1])
            at += 1
        close = difflib.get_close_matches(ident, candidates, n=1, cutoff=0.75)
        return close[0] if close else None

    def base_indexed(self, data: IndexData, type_name: str | None) -> bool:
        """True when base-game (SDK or manifest) assets of this type are indexed."""
        if self._base_types is None:
            self._base_types = frozenset(d.type for d in data.assets() if d.origin != "project")
        return type_name is not None and type_name in self._base_types


def _whole_line(lines: Lines, line: int) -> lsp.Range:
    text = lines.line(line)
    start = len(text) - len(text.lstrip())
    return lsp.Range(
        lsp.Position(line, lines.utf16(line, start)), lsp.Position(line, lines.utf16(line, len(text)))
    )


def _lsp(d: Diagnostic, rng: lsp.Range) -> lsp.Diagnostic:
    return lsp.Diagnostic(
        range=rng,
        message=d.message,
        severity=_SEVERITY.get(d.severity, lsp.DiagnosticSeverity.Warning),
        code=d.code,
        source=SOURCE,
    )


def file_diagnostics(
    table: DiagnosticTable, data: IndexData | None, shown: str, text: str, indexed: bool
) -> list[lsp.Diagnostic]:
    """The diagnostics of one open file (`indexed`: the file is a document of the current index)."""
    lines = Lines(text)
    out: list[lsp.Diagnostic] = []
    if data is None or not indexed:
        # not part of the build: check it is well-formed at least, and say it is inactive
        _root, parse_diags = parse_xml_bytes(text.encode("utf-8"), shown)
        out += [_lsp(d, _whole_line(lines, max(d.line - 1, 0))) for d in parse_diags]
        if data is not None:
            out.append(
                lsp.Diagnostic(
                    range=lsp.Range(lsp.Position(0, 0), lsp.Position(0, 0)),
                    message="inactive file: no stream entry (Data/Mod.xml, mapmetadata_*.xml, *.babproj) "
                    "includes it, so the game never loads its assets",
                    severity=lsp.DiagnosticSeverity.Information,
                    code="FILE_INACTIVE",
                    source=SOURCE,
                )
            )
        return out
    refs_by_line: dict[int, list[RefSite]] = defaultdict(list)
    for r in refs_in(data, shown):
        if r.kind != FILE:
            refs_by_line[r.line].append(r)
    for d in table.of(data, shown):
        ref = _ref_of(d, refs_by_line.get(d.line, []))
        span = value_span(lines, ref) if ref is not None else None
        rng = _whole_line(lines, max(d.line - 1, 0)) if span is None else _range(lines, span)
        diag = _lsp(d, rng)
        if ref is not None and d.code == "UNRESOLVED_REFERENCE":
            diag.message, diag.data, severity, code = _unresolved(table, data, ref)
            diag.severity = severity or diag.severity
            diag.code = code
        out.append(diag)
    return out


def _range(lines: Lines, span: Span) -> lsp.Range:
    return lsp.Range(
        lsp.Position(span.line, lines.utf16(span.line, span.start)),
        lsp.Position(span.line, lines.utf16(span.line, span.end)),
    )


def _ref_of(d: Diagnostic, candidates: list[RefSite]) -> RefSite | None:
    """The reference a reference diagnostic is about (its value is quoted in the message)."""
    if d.code not in (
        "UNRESOLVED_REFERENCE",
        "AMBIGUOUS_REFERENCE",
        "INHERIT_NOT_VISIBLE",
        "INHERIT_NOT_INHERITABLE",
    ):
        return None
    for r in candidates:
        if repr(r.value) in d.message:
            return r
    return None


def _unresolved(
    table: DiagnosticTable, data: IndexData, ref: RefSite
) -> tuple[str, dict[str, object], lsp.DiagnosticSeverity | None, str]:
    """Message, grouping data, severity override and code for an unresolved reference."""
    wanted = data.canonical(ref.target_type) if ref.target_type else ref.ref_type
    other = sorted({d.type for d in data.by_id.get(ref.target_key, [])})
    if other and data.resolve(ref).status == UNRESOLVED:
        return (
            f"wrong reference type: {ref.value!r} is a {', '.join(other)}, but {ref.attribute or ref.element} "
            f"expects {wanted}",
            {"scope": "mod-local", "actualTypes": other},
            lsp.DiagnosticSeverity.Error,
            "REFERENCE_WRONG_TYPE",
        )
    near = table.near_miss(data, wanted, ref.target_id)
    if near is not None:
        return (
            f"mod-local: {ref.value!r} ({wanted}) is not defined; did you mean {near!r}?",
            {"scope": "mod-local", "didYouMean": near},
            None,
            "UNRESOLVED_REFERENCE",
        )
    if table.base_indexed(data, wanted) or any(
        table.base_indexed(data, t) for t in data.derived_types(wanted or "")
    ):
        return (
            f"mod-local: {ref.value!r} ({wanted}) is defined neither in the mod nor in the indexed base game",
            {"scope": "mod-local"},
            None,
            "UNRESOLVED_REFERENCE",
        )
    return (
        f"base-game?: {ref.value!r} ({wanted}) is not in the mod, and no base-game {wanted} data is "
        "indexed to check it against",
        {"scope": "base-game"},
        lsp.DiagnosticSeverity.Information,
        "UNRESOLVED_BASE_GAME",
    )
