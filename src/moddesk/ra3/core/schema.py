"""XSD model of a SAGE schema set: types, derivation, and which declarations are asset references.

Reference typing follows EA's BinaryAssetBuilder, not the public VS Code extension: a value is a
reference iff its XSD type derives from `WeakReference` (weak, checked first) or `AssetReference`
(strong); `FileReference` marks a file path; `xas:isRef` flags are ignored. The target type is
`xas:refType` on the declaration, else on the type, else on the base of a type derived by extension.
Element declarations carry references in their text content too (`<IncludeThing>`, `<Value>` ...).
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lxml import etree

from moddesk.kit.files import atomic_write_bytes
from moddesk.ra3.core.errors import Ra3Error
from moddesk.ra3.core.project import resolve_case_insensitive

XS = "http://www.w3.org/2001/XMLSchema"
XAS = "uri:ea.com:eala:asset:schema"
_XS = "{" + XS + "}"
_REFTYPE = "{" + XAS + "}refType"

WEAK = "weak"
STRONG = "strong"
FILE = "file"
INHERIT = "inherit"
COMPILED = "compiled"  # an edge read from a compiled manifest's reference graph

ASSET_DECLARATION = "AssetDeclaration"
ROOT_CONTAINERS = frozenset({"Tags", "Includes", "Defines"})
MODEL_VERSION = 4
# asset types the SDKs' schemas lack, shipped with moddesk (see schema_additions/*.xsd for sources)
ADDITIONS_DIR = Path(__file__).with_name("schema_additions")


@dataclass(slots=True)
class Decl:
    """An attribute or element declaration: its type name and its own `xas:refType`, if any."""

    type: str
    ref_type: str | None = None
    default: str | None = None


@dataclass(slots=True)
class TypeDef:
    """A named (or synthesised anonymous) simple or complex XSD type."""

    name: str
    complex: bool
    base: str | None = None
    extension: bool = False
    simple_content: bool = False
    ref_type: str | None = None
    attributes: dict[str, Decl] = field(default_factory=dict)
    children: dict[str, Decl] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class RefInfo:
    """How a declaration references assets: kind (weak/strong/file), target type, XSD default value."""

    kind: str
    ref_type: str | None
    default: str | None = None


@dataclass(frozen=True, slots=True)
class ElementInfo:
    """A child element in context: its resolved type and, when its text is a reference, how."""

    type: str
    ref: RefInfo | None


def _local(name: str | None) -> str | None:
    """Strip a namespace prefix (`xs:string` -> `string`)."""
    if name is None:
        return None
    return name.rsplit(":", 1)[-1]


class SchemaModel:
    """The derived, queryable view of a schema set; cheap to rebuild from its raw `TypeDef`s."""

    def __init__(
        self,
        types: dict[str, TypeDef],
        top_level: dict[str, str],
        files: list[str],
        added: frozenset[str] = frozenset(),
    ) -> None:
        self.types = types
        self.top_level = top_level
        self.files = files
        # types from moddesk's schema additions: they declare only what carries references, so content
        # they do not declare is read by inference and is not an unknown element
        self.added = added
        self._canonical = {name.lower(): name for name in types}
        self._derived: dict[str, frozenset[str]] | None = None
        self._attr_cache: dict[str, dict[str, RefInfo]] = {}
        self._child_cache: dict[str, dict[str, ElementInfo]] = {}
        self._default_cache: dict[str, list[tuple[str, RefInfo]]] = {}
        self._inference: tuple[dict[str, RefInfo], dict[str, RefInfo]] | None = None
        self._plain: tuple[frozenset[str], frozenset[str]] | None = None
        self._view_cache: dict[
            str, tuple[dict[str, RefInfo], list[tuple[str, RefInfo]], dict[str, ElementInfo]]
        ] = {}

    # --- type relations -------------------------------------------------------------------
    def canonical(self, name: str) -> str:
        """The schema's spelling of a type name, matched case-insensitively (RA3 writes `W3dContainer`)."""
        return self._canonical.get(name.lower(), name)

    def chain(self, name: str) -> list[str]:
        """The type and its bases, nearest first (cycle-safe)."""
        out: list[str] = []
        current: str | None = name
        while current is not None and current not in out:
            out.append(current)
            tdef = self.types.get(current)
            current = tdef.base if tdef is not None else None
        return out

    def is_assignable(self, actual: str, target: str) -> bool:
        """True when `actual` is `target` or derives from it."""
        return target in self.chain(actual)

    def derived_types(self, name: str) -> frozenset[str]:
        """Every type whose chain contains `name` (including itself)."""
        if self._derived is None:
            table: dict[str, set[str]] = {}
            for tname in self.types:
                for ancestor in self.chain(tname):
                    table.setdefault(ancestor, set()).add(tname)
            self._derived = {k: frozenset(v) for k, v in table.items()}
        return self._derived.get(name, frozenset({name}))

    def is_asset_type(self, name: str) -> bool:
        """True for types deriving from `BaseAssetType`."""
        return "BaseAssetType" in self.chain(name)

    def is_inheritable(self, name: str) -> bool:
        """True for types deriving from `BaseInheritableAsset`."""
        return "BaseInheritableAsset" in self.chain(name)

    def asset_type_bases(self) -> list[tuple[str, str | None]]:
        """(type, base) for every asset type and its ancestors: what reference resolution needs."""
        names: set[str] = set()
        for tname in self.types:
            chain = self.chain(tname)
            if "BaseAssetType" in chain:
                names.update(chain)
        return sorted((n, self.types[n].base if n in self.types else None) for n in names)

    def reference_target_types(self) -> frozenset[str]:
        """Asset types some typed reference can point at (directly or as a derived type)."""
        targets: set[str] = set()
        for tdef in self.types.values():
            decls = list(tdef.attributes.values()) + list(tdef.children.values())
            for decl in decls:
                info = self._ref_info(decl)
                if info is not None and info.kind != FILE and info.ref_type:
                    targets.update(self.derived_types(self.canonical(info.ref_type)))
        return frozenset(t for t in targets if self.is_asset_type(t))

    # --- reference classification ---------------------------------------------------------
    def ref_kind(self, type_name: str) -> str | None:
        """weak / strong / file for types derived from the magic bases, else None (Poid is not one)."""
        chain = self.chain(type_name)
        if "WeakReference" in chain:
            return WEAK
        if "AssetReference" in chain:
            return STRONG
        if "FileReference" in chain:
            return FILE
        return None

    def type_ref_type(self, type_name: str) -> str | None:
        """`xas:refType` of a type, else of its base when derived by extension (BAB GetRefTypeName)."""
        for name in self.chain(type_name):
            tdef = self.types.get(name)
            if tdef is None:
                return None
            if tdef.ref_type:
                return tdef.ref_type
            # BAB only follows extensions; restrictions without their own refType are tolerated here
            # because real schemas never hit BAB's "refType missing" error.
        return None

    def _ref_info(self, decl: Decl) -> RefInfo | None:
        kind = self.ref_kind(decl.type)
        if kind is None:
            return None
        ref_type = decl.ref_type or self.type_ref_type(decl.type)
        default = decl.default.strip() if decl.default and decl.default.strip() else None
        return RefInfo(kind, self.canonical(ref_type) if ref_type else None, default)

    def attributes(self, type_name: str) -> dict[str, RefInfo]:
        """Reference-typed attributes of a complex type, including those of its bases."""
        cached = self._attr_cache.get(type_name)
        if cached is not None:
            return cached
        out: dict[str, RefInfo] = {}
        for name in reversed(self.chain(type_name)):
            tdef = self.types.get(name)
            if tdef is None:
                continue
            for attr, decl in tdef.attributes.items():
                info = self._ref_info(decl)
                if info is None:
                    out.pop(attr, None)
                else:
                    out[attr] = info
        self._attr_cache[type_name] = out
        return out

    def default_refs(self, type_name: str) -> list[tuple[str, RefInfo]]:
        """Reference attributes with an XSD default (the compiler fills them in when omitted)."""
        cached = self._default_cache.get(type_name)
        if cached is None:
            cached = [(k, v) for k, v in self.attributes(type_name).items() if v.default and v.kind != FILE]
            self._default_cache[type_name] = cached
        return cached

    def view(
        self, type_name: str
    ) -> tuple[dict[str, RefInfo], list[tuple[str, RefInfo]], dict[str, ElementInfo]]:
        """(reference attributes, attributes with reference defaults, child elements) of a type, cached."""
        hit = self._view_cache.get(type_name)
        if hit is None:
            hit = (self.attributes(type_name), self.default_refs(type_name), self.children(type_name))
            self._view_cache[type_name] = hit
        return hit

    def children(self, type_name: str) -> dict[str, ElementInfo]:
        """Child element declarations of a complex type (base chain included), with content refs."""
        cached = self._child_cache.get(type_name)
        if cached is not None:
            return cached
        out: dict[str, ElementInfo] = {}
        for name in reversed(self.chain(type_name)):
            tdef = self.types.get(name)
            if tdef is None:
                continue
            for child, decl in tdef.children.items():
                out[child] = ElementInfo(decl.type, self._content_ref(decl))
        self._child_cache[type_name] = out
        return out

    def _content_ref(self, decl: Decl) -> RefInfo | None:
        tdef = self.types.get(decl.type)
        if tdef is not None and tdef.complex and not tdef.simple_content:
            return None
        return self._ref_info(decl)

    def inference_table(self) -> tuple[dict[str, RefInfo], dict[str, RefInfo]]:
        """(attribute name, element name) -> reference info, for names every declaration of which in
        the whole schema is a reference of one kind and target type: how undeclared content is read."""
        if self._inference is None:
            tables: list[dict[str, RefInfo]] = []
            for attrs in (True, False):
                seen: dict[str, RefInfo | None] = {}
                for tdef in self.types.values():
                    decls = tdef.attributes if attrs else tdef.children
                    for name, decl in decls.items():
                        info = self._ref_info(decl) if attrs else self._content_ref(decl)
                        if info is not None and (info.kind == FILE or not info.ref_type):
                            info = None
                        if info is not None:
                            info = RefInfo(info.kind, info.ref_type)  # defaults apply only where declared
                        if name in seen and seen[name] != info:
                            seen[name] = None  # used two ways: not a safe guess
                        elif name not in seen:
                            seen[name] = info
                tables.append({k: v for k, v in seen.items() if v is not None})
            self._inference = (tables[0], tables[1])
        return self._inference

    def plain_names(self) -> tuple[frozenset[str], frozenset[str]]:
        """(attribute names, element names) the schema declares only as non-references: a value under
        such a name is data (a display name, a sound string), so the value rule of inference skips it."""
        if self._plain is None:
            by_attr, by_elem = self.inference_table()
            out: list[frozenset[str]] = []
            for attrs, typed in ((True, by_attr), (False, by_elem)):
                names: set[str] = set()
                mixed: set[str] = set(typed)
                for tdef in self.types.values():
                    decls = tdef.attributes if attrs else tdef.children
                    for name, decl in decls.items():
                        info = self._ref_info(decl) if attrs else self._content_ref(decl)
                        (mixed if info is not None else names).add(name)
                out.append(frozenset(names - mixed))
            self._plain = (out[0], out[1])
        return self._plain

    def is_open(self, type_name: str) -> bool:
        """True for a type from the schema additions (undeclared content in it is inferred, not unknown)."""
        return type_name in self.added

    def top_level_type(self, element: str) -> str | None:
        """Type of an `AssetDeclaration` child; falls back to a type named like the element."""
        found = self.top_level.get(element)
        if found is not None:
            return found
        return element if element in self.types else None

    def content_ref_of_type(self, type_name: str) -> RefInfo | None:
        """Reference info for the text of an element whose declaration carries no refType."""
        return self._content_ref(Decl(type_name))

    # --- persistence ----------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        """A plain-JSON form of the raw model, for the schema cache."""
        types = []
        for t in self.types.values():
            types.append(
                [
                    t.name,
                    t.complex,
                    t.base,
                    t.extension,
                    t.simple_content,
                    t.ref_type,
                    {k: [d.type, d.ref_type, d.default] for k, d in t.attributes.items()},
                    {k: [d.type, d.ref_type] for k, d in t.children.items()},
                ]
            )
        return {
            "version": MODEL_VERSION,
            "types": types,
            "topLevel": self.top_level,
            "files": self.files,
            "added": sorted(self.added),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SchemaModel:
        """Rebuild a model written by `to_json`."""
        if data.get("version") != MODEL_VERSION:
            raise Ra3Error("SCHEMA_INVALID", "schema cache has another model version")
        types: dict[str, TypeDef] = {}
        for row in data["types"]:
            name, cplx, base, ext, simple, ref, attrs, kids = row
            types[name] = TypeDef(
                name,
                bool(cplx),
                base,
                bool(ext),
                bool(simple),
                ref,
                {k: Decl(v[0], v[1], v[2]) for k, v in attrs.items()},
                {k: Decl(v[0], v[1]) for k, v in kids.items()},
            )
        return cls(types, dict(data["topLevel"]), list(data["files"]), frozenset(data.get("added") or ()))


# --- loading ------------------------------------------------------------------------------
class _Loader:
    """Reads XSD files following xs:include, filling a TypeDef table."""

    def __init__(self) -> None:
        self.types: dict[str, TypeDef] = {}
        self.top_level: dict[str, str] = {}
        self.files: list[str] = []
        self._seen: set[str] = set()
        self._anon = 0

    def load(self, path: Path) -> None:
        key = os.path.normcase(str(path.resolve()))
        if key in self._seen:
            return
        self._seen.add(key)
        self.files.append(str(path))
        try:
            parser = etree.XMLParser(remove_comments=True, resolve_entities=False, no_network=True)
            root = etree.parse(str(path), parser).getroot()
        except (OSError, etree.XMLSyntaxError) as exc:
            raise Ra3Error("SCHEMA_INVALID", f"cannot read schema file {path}: {exc}") from exc
        for node in root:
            if not isinstance(node.tag, str):
                continue
            tag = node.tag
            if tag == _XS + "include" or tag == _XS + "redefine":
                loc = node.get("schemaLocation")
                if loc:
                    target = resolve_case_insensitive(path.parent, loc)
                    if target is not None:
                        self.load(target)
            elif tag == _XS + "complexType":
                self._complex(node, node.get("name") or self._anon_name("complex"))
            elif tag == _XS + "simpleType":
                self._simple(node, node.get("name") or self._anon_name("simple"))
            elif tag == _XS + "element":
                self._global_element(node)

    def _anon_name(self, hint: str) -> str:
        self._anon += 1
        return f"#anon{self._anon}:{hint}"

    def _global_element(self, node: etree._Element) -> None:
        name = node.get("name")
        if not name:
            return
        if name == ASSET_DECLARATION:
            inline = node.find(_XS + "complexType")
            if inline is not None:
                tdef = self._complex(inline, ASSET_DECLARATION)
                for child, decl in tdef.children.items():
                    if child not in ROOT_CONTAINERS:
                        self.top_level[child] = decl.type
            return
        typ = _local(node.get("type"))
        if typ is None:
            inline = node.find(_XS + "complexType")
            if inline is not None:
                self._complex(inline, name)

    def _simple(self, node: etree._Element, name: str) -> TypeDef:
        tdef = TypeDef(name, complex=False, ref_type=node.get(_REFTYPE))
        for child in node:
            if child.tag == _XS + "restriction":
                tdef.base = _local(child.get("base"))
                if tdef.base is None:
                    inner = child.find(_XS + "simpleType")
                    if inner is not None:
                        tdef.base = self._simple(inner, self._anon_name(name)).name
            elif child.tag == _XS + "list":
                tdef.base = None  # a list is never a restriction of AssetReference (BAB)
        self.types[name] = tdef
        return tdef

    def _complex(self, node: etree._Element, name: str) -> TypeDef:
        tdef = TypeDef(name, complex=True, ref_type=node.get(_REFTYPE))
        self.types[name] = tdef
        for child in node:
            if child.tag == _XS + "simpleContent" or child.tag == _XS + "complexContent":
                tdef.simple_content = child.tag == _XS + "simpleContent"
                for deriv in child:
                    if deriv.tag in (_XS + "extension", _XS + "restriction"):
                        tdef.base = _local(deriv.get("base"))
                        tdef.extension = deriv.tag == _XS + "extension"
                        self._content(deriv, tdef)
            else:
                self._content_item(child, tdef)
        return tdef

    def _content(self, node: etree._Element, tdef: TypeDef) -> None:
        for child in node:
            self._content_item(child, tdef)

    def _content_item(self, child: etree._Element, tdef: TypeDef) -> None:
        tag = child.tag
        if tag in (_XS + "sequence", _XS + "choice", _XS + "all"):
            self._content(child, tdef)
        elif tag == _XS + "element":
            ename = child.get("name") or _local(child.get("ref"))
            if not ename:
                return
            tdef.children[ename] = Decl(self._decl_type(child, f"{tdef.name}.{ename}"), child.get(_REFTYPE))
        elif tag == _XS + "attribute":
            aname = child.get("name")
            if aname:
                tdef.attributes[aname] = Decl(
                    self._decl_type(child, f"{tdef.name}@{aname}"), child.get(_REFTYPE), child.get("default")
                )

    def _decl_type(self, node: etree._Element, anon_name: str) -> str:
        typ = _local(node.get("type"))
        if typ is not None:
            return typ
        inline_c = node.find(_XS + "complexType")
        if inline_c is not None:
            return self._complex(inline_c, anon_name).name
        inline_s = node.find(_XS + "simpleType")
        if inline_s is not None:
            return self._simple(inline_s, anon_name).name
        return "string"


def _addition_files() -> list[Path]:
    return sorted(ADDITIONS_DIR.glob("*.xsd"))


def schema_digest(root: Path) -> str:
    """A content hash of every .xsd file under the root schema's folder and of the shipped additions
    (the cache key)."""
    digest = hashlib.sha1(str(MODEL_VERSION).encode())
    for extra in _addition_files():
        digest.update(extra.name.encode() + extra.read_bytes())
    base = root.parent
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames.sort()
        for fname in sorted(filenames):
            if fname.lower().endswith(".xsd"):
                full = os.path.join(dirpath, fname)
                digest.update(os.path.relpath(full, base).lower().encode())
                with open(full, "rb") as fh:
                    digest.update(fh.read())
    return digest.hexdigest()


def _add_missing_types(loader: _Loader) -> frozenset[str]:
    """Merge the shipped schema additions: only types the project's schema does not declare."""
    extra = _Loader()
    for path in _addition_files():
        extra.load(path)
    added: set[str] = set()
    for name, tdef in extra.types.items():
        if name not in loader.types:
            loader.types[name] = tdef
            added.add(name)
    loader.files.extend(str(p) for p in _addition_files())
    return frozenset(added)


def load_schema(root: Path, cache_dir: Path | None = None) -> SchemaModel:
    """Load a schema set from its root XSD (e.g. `CnC3Types.xsd`), using a content-keyed cache."""
    if not root.is_file():
        raise Ra3Error("SCHEMA_NOT_FOUND", f"schema root {root} does not exist", hint="pass --schema PATH")
    cache_file: Path | None = None
    if cache_dir is not None:
        cache_file = cache_dir / f"schema-{schema_digest(root)}.json"
        if cache_file.is_file():
            try:
                return SchemaModel.from_json(json.loads(cache_file.read_text("utf-8")))
            except (OSError, ValueError, KeyError, TypeError, Ra3Error):
                pass  # a broken cache is rebuilt below
    loader = _Loader()
    loader.load(root)
    added = _add_missing_types(loader)
    model = SchemaModel(loader.types, loader.top_level, loader.files, added)
    if cache_file is not None:
        try:
            cache_file.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_bytes(cache_file, json.dumps(model.to_json()).encode("utf-8"))
        except OSError:
            pass  # the cache is an optimisation; a read-only home must not fail the build
    return model
