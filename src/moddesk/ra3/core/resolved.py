"""The resolved view of an asset: its `inheritFrom` chain applied, each value tagged with its source.

BAB (`NodeJoiner`) starts the derived asset as a deep copy of its base and joins the override into
it: attributes overwrite; a child with an `id` replaces or merges into the base child with that id
(module lists); a child without an `id` merges into the single same-named base child, and is
appended when the base has none or several; `xai:joinAction` `Replace`/`Overwrite` replaces the
matched node, `Remove` deletes it, `Append` (the default) merges. Bit-flag deltas
(`KindOf="+FLAG -FLAG"`) are applied to the inherited value; schema `maxOccurs` is not modelled.
Values keep the file and line they come from, and which asset of the chain wrote them (a delta is
credited to the asset that applied it last).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from lxml import etree

from moddesk.ra3.core.errors import Ra3Error
from moddesk.ra3.core.model import ORIGIN_RANK, RESOLVED, AssetDef, IndexData
from moddesk.ra3.core.parse import local_name, parse_xml_bytes
from moddesk.ra3.core.schema import INHERIT

XAI_NS = "uri:ea.com:eala:asset:instance"
_JOIN = "{" + XAI_NS + "}joinAction"
_FLAG_DELTA = re.compile(r"[+-][A-Za-z_][A-Za-z0-9_]*")
MAX_CHAIN = 8
DEFAULT_MAX_NODES = 2000

# reads one indexed file (display path) as bytes; the editor host passes one that sees unsaved text
TextReader = Callable[[str], bytes]


@dataclass(slots=True)
class Value:
    """One attribute or text value and where it was written."""

    value: str
    file: str
    line: int
    source: str  # "Type:Id" of the chain member that wrote it

    def to_json(self) -> dict[str, Any]:
        """Wire shape."""
        return {"value": self.value, "file": self.file, "line": self.line, "from": self.source}


@dataclass(slots=True)
class Node:
    """One element of the resolved asset."""

    name: str
    file: str
    line: int
    source: str
    attributes: dict[str, Value] = field(default_factory=dict)
    text: Value | None = None
    children: list[Node] = field(default_factory=list)

    @property
    def ident(self) -> str | None:
        """The lower-cased `id` attribute, the key module lists are merged by."""
        found = self.attributes.get("id")
        return found.value.lower() if found is not None else None

    def copy(self) -> Node:
        """A deep copy (the derived asset starts as a copy of its base)."""
        return Node(
            self.name,
            self.file,
            self.line,
            self.source,
            dict(self.attributes),
            self.text,
            [c.copy() for c in self.children],
        )

    def to_json(self, budget: list[int]) -> dict[str, Any]:
        """Wire shape; `budget` counts down nodes so a huge asset stays bounded."""
        budget[0] -= 1
        out: dict[str, Any] = {
            "element": self.name,
            "file": self.file,
            "line": self.line,
            "from": self.source,
        }
        if self.attributes:
            out["attributes"] = {k: v.to_json() for k, v in self.attributes.items()}
        if self.text is not None:
            out["text"] = self.text.to_json()
        kids = []
        for child in self.children:
            if budget[0] <= 0:
                out["truncated"] = True
                break
            kids.append(child.to_json(budget))
        if kids:
            out["children"] = kids
        return out


def disk_reader(project_dir: str) -> TextReader:
    """A reader of display paths (relative to the project, or absolute) from disk."""

    def read(path: str) -> bytes:
        full = path if os.path.isabs(path) else os.path.join(project_dir, path)
        with open(full, "rb") as fh:
            return fh.read()

    return read


def _line(el: etree._Element) -> int:
    line = el.sourceline
    return line if isinstance(line, int) else 0


def _best(defs: list[AssetDef]) -> AssetDef:
    return sorted(defs, key=lambda d: (ORIGIN_RANK.get(d.origin, 9), d.file, d.line))[0]


def inherit_chain(data: IndexData, start: AssetDef) -> tuple[list[AssetDef], str | None]:
    """The asset and its bases, child first; the second item says why the chain stopped early."""
    chain = [start]
    seen = {(start.type, start.id.lower(), start.file)}
    current = start
    while len(chain) <= MAX_CHAIN:
        inherit = [
            r
            for r in data.refs_by_owner.get(current.key, [])
            if r.kind == INHERIT and r.file == current.file and r.line >= current.line
        ]
        if not inherit:
            return chain, None
        ref = min(inherit, key=lambda r: r.line)
        res = data.resolve(ref)
        if res.status != RESOLVED:
            return chain, f"inheritFrom {ref.value!r} of {current.type}:{current.id} is {res.status}"
        defs = data.by_key.get(res.keys[0], [])
        if res.keys[0] == current.key:  # the override idiom: the other copy of the same id
            defs = [d for d in defs if d.file != current.file]
        if not defs:
            return chain, f"inheritFrom {ref.value!r} has no other definition"
        base = _best(defs)
        marker = (base.type, base.id.lower(), base.file)
        if marker in seen:
            return chain, f"inheritFrom cycle at {base.type}:{base.id}"
        seen.add(marker)
        chain.append(base)
        current = base
    return chain, f"chain longer than {MAX_CHAIN}"


def _element(root: etree._Element, asset: AssetDef) -> etree._Element | None:
    """The top-level element defining `asset` in its parsed file (nearest to its recorded line)."""
    idl = asset.id.lower()
    hits = [
        el
        for el in root.iter()
        if isinstance(el.tag, str)
        and local_name(el.tag) == asset.type
        and (el.get("id") or "").lower() == idl
    ]
    if not hits:
        return None
    return min(hits, key=lambda el: abs(_line(el) - asset.line))


@dataclass(slots=True)
class _Source:
    """One parsed file's text, to put values on the line they are written on.

    libxml2 numbers an element by the line where its start tag *ends*; a tag spread over several
    lines has its attributes above that line.
    """

    file: str
    lines: list[str]

    def tag_line(self, el: etree._Element) -> int:
        """The line of `<Name`."""
        end = _line(el)
        pattern = re.compile(r"<(?:[\w.-]+:)?" + re.escape(local_name(el.tag) or "") + r"(?![\w.:-])")
        for number in range(min(end, len(self.lines)), max(end - 40, 0), -1):
            if pattern.search(self.lines[number - 1]):
                return number
        return end

    def attr_line(self, el: etree._Element, name: str, start: int) -> int:
        """The line of `name=` inside the start tag that begins on `start`."""
        pattern = re.compile(r"(?<![\w:.-])" + re.escape(name) + r"\s*=")
        for number in range(start, min(_line(el), len(self.lines)) + 1):
            if pattern.search(self.lines[number - 1]):
                return number
        return start


def _attributes(el: etree._Element, src: _Source) -> list[tuple[str, str, int]]:
    """(name, value, line) of an element's own attributes (namespaced ones dropped)."""
    start = src.tag_line(el)
    out = []
    for key, value in el.items():
        name = str(key)
        if not name.startswith("{"):
            out.append((name, str(value), src.attr_line(el, name, start) if _line(el) != start else start))
    return out


def _node(el: etree._Element, src: _Source, source: str) -> Node:
    """An element as a Node (comments and namespaced attributes dropped)."""
    line = src.tag_line(el)
    node = Node(local_name(el.tag) or "", src.file, line, source)
    for name, value, at in _attributes(el, src):
        node.attributes[name] = Value(value, src.file, at, source)
    text = (el.text or "").strip()
    if text and len(el) == 0:
        node.text = Value(text, src.file, _line(el), source)
    for child in el:
        if isinstance(child.tag, str):
            node.children.append(_node(child, src, source))
    return node


def apply_flag_delta(base: str, delta: str) -> str | None:
    """`+FLAG -FLAG` applied to a bit-flag list value (BAB), or None when `delta` is a plain value."""
    tokens = delta.split()
    if not tokens or not all(_FLAG_DELTA.fullmatch(t) for t in tokens):
        return None
    flags = base.split()
    for token in tokens:
        flag = token[1:]
        if token[0] == "+" and flag not in flags:
            flags.append(flag)
        elif token[0] == "-" and flag in flags:
            flags.remove(flag)
    return " ".join(flags)


def _join(base: Node, el: etree._Element, src: _Source, source: str, inherited: str) -> None:
    """Join the override element `el` into `base` in place (BAB NodeJoiner, simplified)."""
    for name, value, at in _attributes(el, src):
        old = base.attributes.get(name)
        merged = apply_flag_delta(old.value if old is not None else "", value)
        base.attributes[name] = Value(value if merged is None else merged, src.file, at, source)
    text = (el.text or "").strip()
    if text and len(el) == 0:
        base.text = Value(text, src.file, _line(el), source)
    for child in el:
        if not isinstance(child.tag, str):
            continue
        action = (child.get(_JOIN) or inherited or "append").strip().lower()
        name = local_name(child.tag) or ""
        ident = (child.get("id") or "").lower() or None
        if ident is not None:
            matches = [i for i, c in enumerate(base.children) if c.ident == ident]
        else:
            same = [i for i, c in enumerate(base.children) if c.name == name and c.ident is None]
            matches = same if len(same) == 1 else []
        if not matches:
            if action != "remove":
                base.children.append(_node(child, src, source))
            continue
        at = matches[0]
        if action == "remove":
            del base.children[at]
        elif action in ("replace", "overwrite", "override") or base.children[at].name != name:
            base.children[at] = _node(child, src, source)
        else:
            _join(base.children[at], child, src, source, action if action != "append" else "")


def resolved_asset(
    data: IndexData, type: str, id: str, read: TextReader, *, max_nodes: int = DEFAULT_MAX_NODES
) -> dict[str, Any]:
    """The asset `(type, id)` with its inheritFrom chain applied, every value tagged file:line:source.

    Raises `ASSET_NOT_FOUND` when no such asset is indexed.
    """
    canon = data.canonical(type)
    idl = id.strip().lower()
    defs = list(data.by_key.get((canon, idl), []))
    if not defs:
        defs = [
            d
            for (t, i), items in data.by_key.items()
            if i == idl and data.is_assignable(t, canon)
            for d in items
        ]
    if not defs:
        raise Ra3Error(
            "ASSET_NOT_FOUND",
            f"no {canon}:{id} in the index",
            hint="check the id with find_asset; ids are case-insensitive, types are not",
        )
    start = _best(defs)
    chain, stopped = inherit_chain(data, start)
    trees: dict[str, tuple[etree._Element | None, _Source]] = {}
    elements: list[tuple[AssetDef, etree._Element, _Source]] = []
    notes: list[str] = [stopped] if stopped else []
    for asset in chain:
        if asset.origin == "manifest":
            notes.append(
                f"{asset.type}:{asset.id} comes from a compiled manifest: its values are not readable"
            )
            break
        if asset.file not in trees:
            try:
                raw = read(asset.file)
                lines = raw.decode("utf-8", "replace").splitlines()
                trees[asset.file] = (parse_xml_bytes(raw, asset.file)[0], _Source(asset.file, lines))
            except OSError as exc:
                trees[asset.file] = (None, _Source(asset.file, []))
                notes.append(f"cannot read {asset.file}: {exc}")
        root, src = trees[asset.file]
        el = _element(root, asset) if root is not None else None
        if el is None:
            notes.append(f"{asset.type}:{asset.id} was not found in {asset.file} (edited since indexing?)")
            break
        elements.append((asset, el, src))
    if not elements:
        raise Ra3Error("ASSET_UNREADABLE", "; ".join(notes) or f"{canon}:{id} has no readable definition")
    base_asset, base_el, base_src = elements[-1]
    merged = _node(base_el, base_src, f"{base_asset.type}:{base_asset.id}")
    for asset, el, src in reversed(elements[:-1]):
        _join(merged, el, src, f"{asset.type}:{asset.id}", "")
    # the resolved asset is the child: its own id and type, not the base's
    first = elements[0][0]
    merged.name = first.type
    merged.attributes["id"] = Value(first.id, first.file, first.line, f"{first.type}:{first.id}")
    merged.attributes.pop("inheritFrom", None)
    budget = [max_nodes]
    tree = merged.to_json(budget)
    out: dict[str, Any] = {
        "asset": {"type": first.type, "id": first.id, "file": first.file, "line": first.line},
        "chain": [
            {"type": a.type, "id": a.id, "file": a.file, "line": a.line, "origin": a.origin} for a in chain
        ],
        "applied": len(elements),
        "resolved": tree,
        "truncated": budget[0] <= 0,
        "rule": "child overrides parent; attributes overwrite; children with an id merge by id; "
        "xai:joinAction Replace/Remove honoured; +FLAG/-FLAG deltas applied",
    }
    if notes:
        out["notes"] = notes
    return out
