"""The matching engine: which rules hit which sections/tokens of a real file, plus runtime notes.

Output items are plain dicts (unresolved references carry a ``_ref`` request that the caller
resolves only for the page it returns). Ranges are Python indexes into the normalised text
until ``locate`` turns them into the seed's UTF-16 ranges and 1-based line/column.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from moddesk.pvf.annotations.model import TargetSpec, normalize_archive_path
from moddesk.pvf.annotations.pathmatch import glob_match
from moddesk.pvf.annotations.relations import list_records, list_target_path
from moddesk.pvf.annotations.script import ScriptView, Section, Token, find_placeholders
from moddesk.pvf.annotations.snapshot import Entry, Snapshot

_TEMPLATE_RE = re.compile(r"<(int|float\d?)>")
_IMAGE_SUFFIX = ".img"


@dataclass
class Hit:
    """One computed annotation before paging: sort key, location, payload."""

    start: int
    end: int
    order: int
    section: Section | None
    payload: dict[str, Any]
    ref: tuple[str, str, str | None] | None = None


@dataclass
class EngineResult:
    """Everything explain needs for one file."""

    path_context: list[dict[str, Any]]
    hits: list[Hit]
    warnings: list[dict[str, Any]] = field(default_factory=list)


def section_matches(pattern: str, section: Section) -> bool:
    """Match a rule's section path against a section of the file."""
    return _match_parts(_compile_section(pattern), section.names())


def section_path_matches(pattern: str, path: str) -> bool:
    """Plain names are top-level; ``a/b`` nests; ``*`` is one level, ``**`` any depth, ``x|y`` either.

    Inside a name, ``#`` is one digit and ``*`` any run of characters, so ``FRAME###`` is every
    numbered frame of an animation (``[FRAME000]`` …) without a rule per number.
    """
    return _match_parts(_compile_section(pattern), [p.casefold() for p in path.split("/")])


@dataclass(frozen=True)
class _Names:
    """One part of a section pattern: literal names, plus names with ``#``/``*`` wildcards."""

    literals: frozenset[str]
    wildcards: tuple[str, ...] = ()

    def allows(self, name: str) -> bool:
        return name in self.literals or any(section_name_matches(w, name) for w in self.wildcards)


_Part = str | _Names


@lru_cache(maxsize=4096)
def _compile_section(pattern: str) -> tuple[_Part, ...]:
    parts: list[_Part] = []
    for raw in pattern.split("/"):
        part = raw.strip().casefold()
        if part in ("*", "**"):
            parts.append(part)
            continue
        names = [p.strip() for p in part.split("|")]
        wild = tuple(n for n in names if _is_wildcard(n))
        parts.append(_Names(frozenset(n for n in names if n not in wild), wild))
    return tuple(parts)


def _is_wildcard(name: str) -> bool:
    return "#" in name or "*" in name


def section_name_matches(pattern: str, name: str) -> bool:
    """Whether one section name matches a name pattern (``#`` one digit, ``*`` any run; no case).

    A table in O(len(pattern) × len(name)), never backtracking: the pattern can come from an agent.
    """
    pattern, name = pattern.casefold(), name.casefold()
    # alive[j]: pattern[:i] matches name[:j], for the characters read so far
    alive = [True] + [False] * len(name)
    for char in pattern:
        if char == "*":
            reached = False
            for j in range(len(name) + 1):
                reached = reached or alive[j]
                alive[j] = reached
            continue
        alive = [False] + [
            alive[j] and ("0" <= name[j] <= "9" if char == "#" else name[j] == char) for j in range(len(name))
        ]
    return alive[len(name)]


def _last_names(pattern: str) -> frozenset[str] | None:
    """The literal names a pattern's last part allows (None when any name there is a wildcard)."""
    last = _compile_section(pattern)[-1]
    return last.literals if isinstance(last, _Names) and not last.wildcards else None


def _match_parts(want: tuple[_Part, ...], have: list[str]) -> bool:
    """Whether the section names ``have`` match the parts ``want``, in O(len(want) × len(have)).

    A table, not recursion: ``**/**/…/x`` tried every split of the path for each ``**``
    (exponential in the number of ``**``), and the section pattern can come from an agent.
    """
    # alive[j]: want[:i] matches have[:j], for the parts read so far
    alive = [True] + [False] * len(have)
    for part in want:
        if part == "**":
            reached = False
            for j in range(len(have) + 1):
                reached = reached or alive[j]
                alive[j] = reached
            continue
        alive = [False] + [
            alive[j] and (part == "*" or (isinstance(part, _Names) and part.allows(have[j])))
            for j in range(len(have))
        ]
    return alive[len(have)]


def _candidates(pattern: str, view: ScriptView, by_name: dict[str, list[Section]]) -> list[Section]:
    names = _last_names(pattern)
    if names is None:
        pool = view.sections
    elif len(names) == 1:
        pool = by_name.get(next(iter(names)), [])
    else:
        pool = sorted((s for n in names for s in by_name.get(n, [])), key=lambda s: s.tag_start)
    return [s for s in pool if section_matches(pattern, s)]


def ancestor_directories(path: str) -> list[str]:
    """``a/b/c.equ`` → ``["a", "a/b"]`` (outermost first)."""
    parts = path.split("/")[:-1]
    return ["/".join(parts[: i + 1]) for i in range(len(parts))]


def path_context(snapshot: Snapshot, path: str, version: str | None) -> list[dict[str, Any]]:
    """File and ancestor-directory notes, each with its scope path and rule identity."""
    out: list[dict[str, Any]] = []
    for scope in ancestor_directories(path):
        for entry in snapshot.rules_in_order:
            res = entry.resolved
            if res is None or res.target.kind != "directory" or not res.applies_to_version(version):
                continue
            if res.match.glob is not None and glob_match(res.match.glob, scope):
                out.append(_path_note(entry, scope, "directory"))
    for entry in snapshot.rules_for(path):
        res = entry.resolved
        if res is None or res.target.kind != "path" or not res.applies_to_version(version):
            continue
        if res.matches_path(path):
            out.append(_path_note(entry, path, "file"))
    return out


def _path_note(entry: Entry, scope: str, scope_kind: str) -> dict[str, Any]:
    assert entry.resolved is not None
    ann = entry.resolved.annotation
    return {
        "scopePath": scope,
        "scopeKind": scope_kind,
        "title": ann.title,
        "content": ann.content,
        "type": ann.type,
        "ruleIds": [entry.id],
        "documentIds": [entry.document_id],
        "origin": "rule",
    }


def _records(
    tokens: list[Token], target: TargetSpec
) -> tuple[list[tuple[int | None, list[tuple[int, Token]]]], str | None]:
    """Split direct tokens into records; each token keeps its direct index. Returns (records, problem)."""
    indexed = list(enumerate(tokens))
    tpli = target.tokens_per_line_index
    offset = target.offset if target.offset is not None else (tpli + 1 if tpli is not None else 0)
    body = indexed[offset:]
    if target.record_tokens is not None:
        size = target.record_tokens
        return [(n, body[i : i + size]) for n, i in enumerate(range(0, len(body), size))], None
    if tpli is not None:
        if tpli >= len(tokens):
            return [], f"record size token {tpli} is absent"
        count = tokens[tpli].as_int()
        if count is None:
            return [], f"record size token {tpli} is not an integer ({tokens[tpli].raw})"
        size = count + (target.group_offset or 0)
        if size < 1:
            return [], f"record size {size} from token {tpli} is not positive"
        return [(n, body[i : i + size]) for n, i in enumerate(range(0, len(body), size))], None
    if target.separator is not None:
        records: list[tuple[int | None, list[tuple[int, Token]]]] = []
        current: list[tuple[int, Token]] = []
        for item in body:
            if item[1].value == target.separator and item[1].kind in ("escape", "string", "bare"):
                records.append((len(records), current))
                current = []
            else:
                current.append(item)
        records.append((len(records), current))
        return records, None
    return [(None, body)], None


def _positions(target: TargetSpec, size: int) -> Iterator[int]:
    if target.index is not None:
        if target.index < size:
            yield target.index
        return
    if target.range is not None:
        end = size if target.range.end_exclusive is None else min(size, target.range.end_exclusive)
        yield from range(target.range.start, end)
        return
    yield from range(size)


def _rule_base(entry: Entry) -> dict[str, Any]:
    assert entry.resolved is not None
    ann = entry.resolved.annotation
    base: dict[str, Any] = {
        "origin": "rule",
        "title": ann.title,
        "content": ann.content,
        "type": ann.type,
        "ruleIds": [entry.id],
        "documentIds": [entry.document_id],
    }
    if entry.resolved.field_id:
        base["fieldId"] = entry.resolved.field_id
    return base


def _section_info(section: Section | None) -> dict[str, Any]:
    if section is None:
        return {"section": None, "occurrence": None}
    return {"section": section.path, "occurrence": section.occurrence}


def _apply_rule(
    entry: Entry,
    view: ScriptView,
    by_name: dict[str, list[Section]],
    hits: list[Hit],
    warnings: list[dict[str, Any]],
) -> None:
    assert entry.resolved is not None
    target = entry.resolved.target
    ann = entry.resolved.annotation
    if target.kind == "section":
        assert target.section is not None
        for tagged in _candidates(target.section, view, by_name):
            payload = {**_rule_base(entry), **_section_info(tagged)}
            hits.append(Hit(tagged.tag_start, tagged.tag_end, entry.order, tagged, payload))
        return
    if target.kind != "token":
        return
    scopes: list[tuple[Section | None, list[Token]]]
    if target.standalone_values:
        scopes = [(None, view.root_tokens)]
    else:
        assert target.section is not None
        scopes = [(s, s.tokens) for s in _candidates(target.section, view, by_name)]
    values = ann.value_map()
    for section, tokens in scopes:
        records, problem = _records(tokens, target)
        if problem is not None:
            warnings.append(
                {"code": "RECORD_LAYOUT", "message": f"rule {entry.id}: {problem}", **_section_info(section)}
            )
            continue
        for record_index, record in records:
            if ann.type == "image":
                _image_hit(entry, section, record_index, record, hits)
                continue
            for position in _positions(target, len(record)):
                direct, token = record[position]
                payload = {
                    **_rule_base(entry),
                    **_section_info(section),
                    "tokenIndex": direct,
                    "rawValue": token.raw,
                    "value": token.value,
                }
                if record_index is not None:
                    payload["recordIndex"] = record_index
                    payload["recordPosition"] = position
                ref: tuple[str, str, str | None] | None = None
                if ann.type == "enum":
                    label = values.get(token.value)
                    payload["valueFound"] = label is not None
                    payload["valueLabel"] = label
                    if label is None:
                        warnings.append(
                            {
                                "code": "ENUM_VALUE_UNKNOWN",
                                "message": f"rule {entry.id}: value {token.value!r} has no label",
                                **_section_info(section),
                                "tokenIndex": direct,
                            }
                        )
                elif ann.type == "reference" and ann.relation is not None:
                    context: str | None = None
                    if target.context_index is not None:
                        ctx = record[target.context_index][1] if target.context_index < len(record) else None
                        context = ctx.value if ctx is not None else None
                    ref = (ann.relation, token.value, context)
                hits.append(Hit(token.start, token.end, entry.order, section, payload, ref))


def _image_hit(
    entry: Entry,
    section: Section | None,
    record_index: int | None,
    record: list[tuple[int, Token]],
    hits: list[Hit],
) -> None:
    assert entry.resolved is not None
    target = entry.resolved.target
    path_pos = target.image_path_token if target.image_path_token is not None else 0
    index_pos = target.image_index_token
    if path_pos >= len(record):
        return
    direct, path_tok = record[path_pos]
    end_tok = path_tok
    image: dict[str, Any] = {"path": path_tok.value, "index": None}
    if index_pos is not None and index_pos < len(record):
        idx_tok = record[index_pos][1]
        image["index"] = idx_tok.as_int()
        end_tok = idx_tok if idx_tok.end > path_tok.end else path_tok
    payload = {
        **_rule_base(entry),
        **_section_info(section),
        "tokenIndex": direct,
        "rawValue": path_tok.raw,
        "image": image,
    }
    if record_index is not None:
        payload["recordIndex"] = record_index
    hits.append(Hit(path_tok.start, end_tok.end, entry.order, section, payload))


def _runtime_base(title: str, kind: str, content: str) -> dict[str, Any]:
    return {
        "origin": "runtime",
        "title": title,
        "content": content,
        "type": kind,
        "ruleIds": [],
        "documentIds": [],
    }


def _runtime_hits(
    view: ScriptView, path: str, version: str | None, covered: set[int], hits: list[Hit]
) -> None:
    """Images, string placeholders and list links the engine recognises without a configured rule."""
    runtime_order = 1 << 30
    scopes: list[tuple[Section | None, list[Token]]] = [(None, view.root_tokens)]
    scopes += [(s, s.tokens) for s in view.sections]
    for section, tokens in scopes:
        for i, token in enumerate(tokens):
            if (
                token.kind == "string"
                and token.value.lower().endswith(_IMAGE_SUFFIX)
                and token.start not in covered
                and i + 1 < len(tokens)
                and tokens[i + 1].kind == "int"
            ):
                nxt = tokens[i + 1]
                payload = {
                    **_runtime_base(
                        "图像 Image",
                        "image",
                        "图像帧：ImagePacks2 中的 .img 路径和帧序号。\nEN: An image frame: the .img path inside ImagePacks2 and the frame index.",
                    ),
                    **_section_info(section),
                    "tokenIndex": i,
                    "rawValue": token.raw,
                    "image": {"path": token.value, "index": nxt.as_int()},
                }
                hits.append(Hit(token.start, nxt.end, runtime_order, section, payload))
            if token.kind == "link":
                payload = {
                    **_runtime_base(
                        "字符串链接 String link",
                        "placeholder",
                        "游戏运行时从 .str 字符串表中查出的文字。\nEN: Text looked up in a .str string table at run time.",
                    ),
                    **_section_info(section),
                    "tokenIndex": i,
                    "rawValue": token.raw,
                    "placeholder": {"table": str(token.type_code), "key": token.value},
                }
                hits.append(Hit(token.start, token.end, runtime_order, section, payload))
            if token.kind in ("string", "escape"):
                inner_start = token.start + token.raw.find("`") + 1 if "`" in token.raw else token.start
                for p_start, p_end, table, key in find_placeholders(token.value):
                    payload = {
                        **_runtime_base(
                            "字符串占位符 String placeholder",
                            "placeholder",
                            "游戏会用 .str 条目 <table::key> 替换它。\nEN: Replaced by the game with the .str entry <table::key>.",
                        ),
                        **_section_info(section),
                        "tokenIndex": i,
                        "rawValue": token.value[p_start:p_end],
                        "placeholder": {"table": table, "key": key},
                    }
                    hits.append(
                        Hit(inner_start + p_start, inner_start + p_end, runtime_order, section, payload)
                    )
                if token.kind == "string":
                    for m in _TEMPLATE_RE.finditer(token.value):
                        payload = {
                            **_runtime_base(
                                "数值占位符 Value placeholder",
                                "placeholder",
                                f"<{m.group(1)}> 由游戏用等级数据中的数字填入。\nEN: <{m.group(1)}> is filled by the game with a number from the level data.",
                            ),
                            **_section_info(section),
                            "tokenIndex": i,
                            "rawValue": m.group(0),
                            "placeholder": {"format": m.group(1)},
                        }
                        hits.append(
                            Hit(
                                inner_start + m.start(),
                                inner_start + m.end(),
                                runtime_order,
                                section,
                                payload,
                            )
                        )
    if path.endswith(".lst") and not view.sections:
        base = "root" if version == "110US" and path.startswith("list/") else "list"
        for n, (id_tok, path_tok) in enumerate(list_records(view.root_tokens)):
            if path_tok.kind not in ("string", "escape"):
                continue
            target = list_target_path(path, path_tok.value, base)
            payload = {
                **_runtime_base(
                    "列表条目 List entry",
                    "reference",
                    f"列表条目 {id_tok.value} 指向这个文件。\nEN: List entry {id_tok.value} points at this file.",
                ),
                "section": None,
                "occurrence": None,
                "tokenIndex": 2 * n + 1,
                "recordIndex": n,
                "rawValue": path_tok.raw,
                "reference": {"relation": None, "id": id_tok.value, "context": None, "path": target},
            }
            hits.append(
                Hit(path_tok.start, path_tok.end, runtime_order, None, payload, ("@list", target, None))
            )


def explain_view(snapshot: Snapshot, path: str, view: ScriptView, version: str | None) -> EngineResult:
    """Run every effective rule that matches ``path`` and ``version`` over the parsed view."""
    path = normalize_archive_path(path)
    hits: list[Hit] = []
    warnings: list[dict[str, Any]] = []
    by_name: dict[str, list[Section]] = {}
    for section in view.sections:
        by_name.setdefault(section.name.casefold(), []).append(section)
    for entry in snapshot.rules_for(path):
        res = entry.resolved
        if res is None or res.target.kind in ("path", "directory"):
            continue
        if not res.applies_to_version(version) or not res.matches_path(path):
            continue
        _apply_rule(entry, view, by_name, hits, warnings)
    covered = {h.start for h in hits if h.payload.get("type") == "image"}
    _runtime_hits(view, path, version, covered, hits)
    hits.sort(key=lambda h: (h.start, h.end, h.order))
    for w in view.warnings:
        warnings.append({"code": w.code.upper().replace("-", "_"), "message": w.message, "offset": w.start})
    return EngineResult(path_context(snapshot, path, version), hits, warnings)
