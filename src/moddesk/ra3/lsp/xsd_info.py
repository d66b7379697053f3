"""What the editor needs from the XSD set beyond the index's model: documentation and enumerations.

Names follow the schema loader's: an anonymous type inside element `E` of type `T` is `T.E`, one
inside attribute `A` is `T@A`, so the model's declarations find their docs and enum values here.
"""

from __future__ import annotations

import os
from pathlib import Path

from lxml import etree

from moddesk.ra3.core.project import resolve_case_insensitive
from moddesk.ra3.core.schema import XS, SchemaModel

_XS = "{" + XS + "}"
MAX_DOC = 1500


def _doc(node: etree._Element) -> str | None:
    parts = [
        " ".join((d.text or "").split())
        for d in node.findall(f"{_XS}annotation/{_XS}documentation")
        if (d.text or "").strip()
    ]
    return "\n".join(parts)[:MAX_DOC] if parts else None


class XsdInfo:
    """Documentation of types, attributes and child elements, and enumeration values of simple types."""

    def __init__(self) -> None:
        self.docs: dict[tuple[str, str], str] = {}  # (type, "" | "@attr" | "child") -> text
        self.enums: dict[str, list[str]] = {}
        self.list_items: dict[str, str] = {}
        self._seen: set[str] = set()

    @classmethod
    def load(cls, files: list[str]) -> XsdInfo:
        """Read every schema file of the model (already resolved by the loader)."""
        info = cls()
        for path in files:
            info._file(Path(path))
        return info

    def _file(self, path: Path) -> None:
        key = os.path.normcase(str(path))
        if key in self._seen:
            return
        self._seen.add(key)
        try:
            parser = etree.XMLParser(resolve_entities=False, no_network=True)
            root = etree.parse(str(path), parser).getroot()
        except (OSError, etree.XMLSyntaxError):
            return  # the loader already reported unreadable schema files
        for node in root:
            if node.tag == _XS + "complexType" and node.get("name"):
                self._complex(node, str(node.get("name")))
            elif node.tag == _XS + "simpleType" and node.get("name"):
                self._simple(node, str(node.get("name")))
            elif node.tag == _XS + "element" and node.get("name") == "AssetDeclaration":
                inline = node.find(_XS + "complexType")
                if inline is not None:
                    self._complex(inline, "AssetDeclaration")
            elif node.tag in (_XS + "include", _XS + "redefine") and node.get("schemaLocation"):
                target = resolve_case_insensitive(path.parent, str(node.get("schemaLocation")))
                if target is not None:
                    self._file(target)

    def _simple(self, node: etree._Element, name: str) -> None:
        doc = _doc(node)
        if doc:
            self.docs[(name, "")] = doc
        values = [str(e.get("value")) for e in node.iter(_XS + "enumeration") if e.get("value") is not None]
        if values:
            self.enums[name] = values
        lst = node.find(_XS + "list")
        if lst is not None:
            item = lst.get("itemType")
            if item:
                self.list_items[name] = item.rsplit(":", 1)[-1]
            inner = lst.find(_XS + "simpleType")
            if inner is not None:
                self._simple(inner, name + "#item")
                self.list_items[name] = name + "#item"

    def _complex(self, node: etree._Element, name: str) -> None:
        doc = _doc(node)
        if doc:
            self.docs[(name, "")] = doc
        for child in node.iter(_XS + "element", _XS + "attribute"):
            if _owner(child) is not node:
                continue  # belongs to a nested anonymous type, walked with its own name
            cname = child.get("name") or (child.get("ref") or "").rsplit(":", 1)[-1]
            if not cname:
                continue
            attr = child.tag == _XS + "attribute"
            doc = _doc(child)
            if doc:
                self.docs[(name, ("@" if attr else "") + cname)] = doc
            anon = f"{name}@{cname}" if attr else f"{name}.{cname}"
            inline_c = child.find(_XS + "complexType")
            if inline_c is not None:
                self._complex(inline_c, anon)
            inline_s = child.find(_XS + "simpleType")
            if inline_s is not None:
                self._simple(inline_s, anon)

    # --- lookups --------------------------------------------------------------------------------
    def doc_of(self, schema: SchemaModel, type_name: str, member: str = "") -> str | None:
        """Documentation of a type, or of one of its attributes (`@name`) / child elements, base chain included."""
        for t in schema.chain(type_name):
            hit = self.docs.get((t, member))
            if hit:
                return hit
        return None

    def enum_values(self, schema: SchemaModel, type_name: str) -> list[str]:
        """Enumeration values of a simple type (through restrictions and list item types)."""
        for t in schema.chain(type_name):
            if t in self.enums:
                return self.enums[t]
            item = self.list_items.get(t)
            if item is not None:
                return self.enum_values(schema, item)
        return []


def _owner(node: etree._Element) -> etree._Element | None:
    """The nearest enclosing complexType (or the schema) of a declaration."""
    parent = node.getparent()
    while parent is not None and parent.tag not in (_XS + "complexType", _XS + "schema"):
        parent = parent.getparent()
    return parent
