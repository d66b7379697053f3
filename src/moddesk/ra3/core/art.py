"""Shallow scan of `.w3x` art files: top-level W3D assets, their includes, and the art references.

`.w3x` files are 3ds Max exports that reach tens of megabytes, so they are never DOM-parsed: one
linear pass over the text finds the top-level `AssetDeclaration` children (W3DMesh, W3DCollisionBox,
W3DHierarchy, W3DContainer, W3DAnimation ...), `<Include>` lines, and the two art reference forms
BAB resolves: `W3DContainer@Hierarchy` and `<Mesh>` / `<CollisionBox>` sub-object content.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from moddesk.ra3.core.parse import AssetSite, Diagnostic, IncludeSite, RefSite
from moddesk.ra3.core.schema import STRONG

_TAG = re.compile(rb"<(/?)([A-Za-z_][\w.:-]*)((?:[^>\"']|\"[^\"]*\"|'[^']*')*?)(/?)>", re.S)
_ATTR = re.compile(rb"""([\w:.-]+)\s*=\s*(?:"([^"]*)"|'([^']*)')""")
_CONTENT_REFS = {b"Mesh": "W3DMesh", b"CollisionBox": "W3DCollisionBox"}


@dataclass(slots=True)
class ArtScan:
    """What one `.w3x` contributes."""

    path: str
    assets: list[AssetSite] = field(default_factory=list)
    includes: list[IncludeSite] = field(default_factory=list)
    refs: list[RefSite] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)


def _attrs(raw: bytes) -> dict[str, str]:
    out: dict[str, str] = {}
    for m in _ATTR.finditer(raw):
        value = m.group(2) if m.group(2) is not None else m.group(3) or b""
        out[m.group(1).decode("latin-1")] = value.decode("utf-8", "replace")
    return out


def _local(tag: bytes) -> bytes:
    return tag.rsplit(b":", 1)[-1]


def scan_w3x(data: bytes, path: str) -> ArtScan:
    """Scan one `.w3x` text; malformed nesting is reported, never raised."""
    scan = ArtScan(path)
    depth = 0
    owner: AssetSite | None = None
    in_includes = False
    line = 1
    last = 0
    for m in _TAG.finditer(data):
        line += data.count(b"\n", last, m.start())
        last = m.start()
        closing, tag, rest, selfclose = m.group(1), _local(m.group(2)), m.group(3), m.group(4)
        if tag.startswith((b"?", b"!")):
            continue
        if closing:
            depth -= 1
            if depth == 1:
                owner = None
                in_includes = False
            if depth < 0:
                scan.diagnostics.append(
                    Diagnostic("XML_MALFORMED", path, line, "unbalanced closing tag", "error")
                )
                depth = 0
            continue
        if depth == 0 and tag != b"AssetDeclaration":
            scan.diagnostics.append(
                Diagnostic("ART_NOT_ASSET_DECLARATION", path, line, f"root is <{tag.decode('latin-1')}>")
            )
        elif depth == 1:
            attrs = _attrs(rest)
            name = tag.decode("latin-1")
            if name == "Includes":
                in_includes = True
            elif name not in ("Tags", "Defines") and "id" in attrs:
                owner = AssetSite(name, attrs["id"], path, line)
                scan.assets.append(owner)
                hierarchy = attrs.get("Hierarchy")
                if name == "W3DContainer" and hierarchy:
                    scan.refs.append(
                        RefSite(
                            name,
                            owner.id,
                            STRONG,
                            "W3DHierarchy",
                            hierarchy,
                            None,
                            hierarchy,
                            path,
                            line,
                            0,
                            name,
                            None,
                            "Hierarchy",
                        )
                    )
        elif depth == 2 and in_includes and tag == b"Include":
            attrs = _attrs(rest)
            itype = attrs.get("type", "").strip().lower()
            source = attrs.get("source", "").strip()
            if itype and source:
                scan.includes.append(IncludeSite(itype, source, path, line))
        elif owner is not None and tag in _CONTENT_REFS and not selfclose:
            end = data.find(b"<", m.end())
            text = data[m.end() : end if end >= 0 else len(data)].decode("utf-8", "replace").strip()
            if text:
                scan.refs.append(
                    RefSite(
                        owner.type,
                        owner.id,
                        STRONG,
                        _CONTENT_REFS[tag],
                        text,
                        None,
                        text,
                        path,
                        line,
                        0,
                        tag.decode("latin-1"),
                        "RenderObject",
                        None,
                    )
                )
        if not selfclose:
            depth += 1
    if depth != 0:
        scan.diagnostics.append(
            Diagnostic("XML_MALFORMED", path, line, "unclosed elements at end of file", "error")
        )
    return scan
