"""Per-file extraction: assets, defines, includes, xi:includes and schema-typed references.

lxml parses with recovery and line numbers, so a malformed file is indexed as far as it parses and
its errors become diagnostics. References are typed from the XSD model in context: a child's type
is its declaration in the parent's type, and `xi:include` fragments are walked in the context of
the element that includes them (as BAB expands XInclude before validation).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache

from lxml import etree

from moddesk.ra3.core.schema import ASSET_DECLARATION, INHERIT, ElementInfo, RefInfo, SchemaModel

XI_NS = "http://www.w3.org/2001/XInclude"
XI_INCLUDE = "{" + XI_NS + "}include"
_XPOINTER = re.compile(r"xpointer\(\s*/\s*(?:[\w.-]+:)?([\w.-]+)\s*/\s*child::\*\s*\)")
INCLUDE_TYPES = ("all", "instance", "reference")
MAX_XI_DEPTH = 64
MAX_UNKNOWN_REPORTED = 20  # per document; the total stays in FileRecord.unknown_elements


@dataclass(slots=True)
class Diagnostic:
    """A problem found while indexing, located at file:line."""

    code: str
    file: str
    line: int
    message: str
    severity: str = "warning"


@dataclass(slots=True)
class AssetSite:
    """A top-level asset definition (`AssetDeclaration/*` with an id)."""

    type: str
    id: str
    file: str
    line: int
    inherit_from: str | None = None


@dataclass(slots=True)
class DefineSite:
    """`<Define name value override/>`; names are case-sensitive as in BAB."""

    name: str
    value: str
    file: str
    line: int
    override: bool = False


@dataclass(slots=True)
class IncludeSite:
    """`<Include type source/>` in a document's `Includes` block."""

    type: str
    source: str
    file: str
    line: int


@dataclass(slots=True)
class XiSite:
    """An `xi:include` (href, xpointer container name) and where it was met."""

    href: str
    container: str | None
    file: str
    line: int
    target: str | None = None


@dataclass(slots=True)
class RefSite:
    """One reference occurrence, with provenance for forward queries.

    `owner_*` is the logical top-level asset; `file`/`line`/`col` locate the text (a fragment's
    file for spliced xi:include content); `target_type` is the `Type:` qualifier when written.
    """

    owner_type: str
    owner_id: str
    kind: str
    ref_type: str | None
    value: str
    target_type: str | None
    target_id: str
    file: str
    line: int
    col: int
    element: str
    parent: str | None
    attribute: str | None
    expression: bool = False
    default: bool = False
    # found inside an element the schema does not declare, typed by the name's use elsewhere
    inferred: bool = False

    @property
    def target_key(self) -> str:
        """The lower-cased id used for lookup (ids are case-insensitive in SAGE)."""
        return self.target_id.lower()


@dataclass(slots=True)
class FileRecord:
    """Everything one parsed XML document contributes, independent of how it was included."""

    path: str
    root: str | None
    assets: list[AssetSite] = field(default_factory=list)
    defines: list[DefineSite] = field(default_factory=list)
    includes: list[IncludeSite] = field(default_factory=list)
    xi_includes: list[XiSite] = field(default_factory=list)
    refs: list[RefSite] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    fragments: set[str] = field(default_factory=set)
    expressions: list[RefSite] = field(default_factory=list)
    seen_keys: set[tuple[str, str]] = field(default_factory=set)
    unknown_elements: int = 0


# resolves an xi:include href from the file that holds it: (fragment file, its nodes) or an error text
FragmentLoader = Callable[[str, str | None, str], "tuple[str, list[etree._Element]] | str"]


def _line(el: etree._Element) -> int:
    line = el.sourceline
    return line if isinstance(line, int) else 0


_LOCAL_NAMES: dict[str, str] = {}


def local_name(tag: object) -> str | None:
    """`{ns}Name` -> `Name`; None for comments and processing instructions (memoised: tags repeat)."""
    if not isinstance(tag, str):
        return None
    hit = _LOCAL_NAMES.get(tag)
    if hit is None:
        hit = tag.rsplit("}", 1)[-1]
        if len(_LOCAL_NAMES) < 100_000:
            _LOCAL_NAMES[tag] = hit
    return hit


def split_value(raw: str) -> tuple[str | None, str]:
    """`Type:Id\\3` -> ("Type", "Id"); plain ids have no qualifier (BAB's handle syntax)."""
    name = raw.split("\\", 1)[0]
    if ":" in name:
        qual, ident = name.split(":", 1)
        return (qual or None), ident
    return None, name


def parse_xml_bytes(data: bytes, path: str) -> tuple[etree._Element | None, list[Diagnostic]]:
    """Parse with recovery; return the root (or None) and malformed-XML diagnostics with lines."""
    parser = etree.XMLParser(
        recover=True, remove_comments=True, resolve_entities=False, no_network=True, huge_tree=True
    )
    diags: list[Diagnostic] = []
    root: etree._Element | None
    try:
        root = etree.fromstring(data, parser)
    except (etree.XMLSyntaxError, ValueError) as exc:
        root = None
        diags.append(Diagnostic("XML_MALFORMED", path, 1, str(exc), "error"))
    for entry in parser.error_log:
        if entry.level_name in ("ERROR", "FATAL"):
            diags.append(Diagnostic("XML_MALFORMED", path, entry.line, entry.message, "error"))
    if root is None and not diags:
        diags.append(Diagnostic("XML_MALFORMED", path, 1, "no root element", "error"))
    return root, diags[:50]


def xpointer_container(xpointer: str | None) -> str | None:
    """The container name in `xpointer(/n:Name/child::*)`, the only form SAGE data uses."""
    if not xpointer:
        return None
    match = _XPOINTER.search(xpointer)
    return match.group(1) if match else None


def fragment_nodes(root: etree._Element, container: str | None) -> list[etree._Element] | None:
    """The nodes an xi:include splices in: the container's children, or the root itself."""
    if container is None:
        return [root]
    if local_name(root.tag) == container:
        return [c for c in root if isinstance(c.tag, str)]
    for node in root.iter():
        if local_name(node.tag) == container:
            return [c for c in node if isinstance(c.tag, str)]
    return None


class _Lines:
    """Lazy line table to place a value on its line and column (lxml only gives start-tag lines)."""

    def __init__(self, text_of: Callable[[], list[str]]) -> None:
        self._text_of = text_of
        self._lines: list[str] | None = None

    def locate(self, line: int, needle: str | _AttrNeedle, backward: bool = False) -> tuple[int, int]:
        """(line, column) of `needle` at or after `line` (at or before it when `backward`)."""
        if self._lines is None:
            self._lines = self._text_of()
        lines = self._lines
        step = -1 if backward else 1
        for offset in range(0, 40):
            idx = line - 1 + step * offset
            if idx < 0 or idx >= len(lines):
                break
            col = needle.find(lines[idx]) if isinstance(needle, _AttrNeedle) else lines[idx].find(needle)
            if col >= 0:
                return idx + 1, col
        return line, 0


class _AttrNeedle:
    """Finds where an attribute's value starts on a line (`name="` after whitespace), quickly."""

    __slots__ = ("name", "pattern")

    def __init__(self, name: str) -> None:
        self.name = name
        self.pattern = re.compile(r"(?<![\w:.-])" + re.escape(name) + r"\s*=\s*[\"']")

    def find(self, line: str) -> int:
        """Column just after the opening quote, or -1."""
        for quote in ('="', "='"):
            at = line.find(self.name + quote)
            while at >= 0:
                if at == 0 or line[at - 1] in " \t<":
                    return at + len(self.name) + 2
                at = line.find(self.name + quote, at + 1)
        m = self.pattern.search(line)  # spaces around '=' are legal XML, just rare
        return m.end() if m else -1


@lru_cache(maxsize=4096)
def _attr_pattern(name: str) -> _AttrNeedle:
    return _AttrNeedle(name)


# the value rule of inference: an id-like value in undeclared content is a weak reference to whatever
# asset has that id (any type); it resolves only when such an asset exists, and never reports unresolved
VALUE_GUESS = RefInfo("weak", None)
_ID_LIKE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?::[A-Za-z_][A-Za-z0-9_.]*)?")
_NOT_IDS = frozenset({"true", "false", "yes", "no", "none", "null"})


def looks_like_id(value: str) -> bool:
    """An asset-id-shaped value: a name with a lower-case letter (ALL_CAPS values are enums), no spaces."""
    value = value.strip()
    return (
        3 < len(value) <= 128
        and _ID_LIKE.fullmatch(value) is not None
        and any(c.islower() for c in value)
        and value.lower() not in _NOT_IDS
    )


class Extractor:
    """Walks one document in schema context and fills a `FileRecord`."""

    def __init__(
        self,
        schema: SchemaModel | None,
        load_fragment: FragmentLoader | None = None,
        *,
        infer_all: bool = False,
    ) -> None:
        self.schema = schema
        self.load_fragment = load_fragment
        # read every asset as if its type had no schema: measures the inference rules against the schema
        self.infer_all = infer_all
        self._line_tables: dict[str, _Lines] = {}

    def extract(self, path: str, data: bytes) -> FileRecord:
        """Parse and extract one XML document."""
        root, diags = parse_xml_bytes(data, path)
        record = FileRecord(path=path, root=local_name(root.tag) if root is not None else None)
        record.diagnostics.extend(diags)
        self._line_tables = {path: _Lines(lambda: data.decode("utf-8", "replace").splitlines())}
        if root is None:
            return record
        if record.root != ASSET_DECLARATION:
            # fragments (xi:include targets) are walked from their includer, in its context
            return record
        self._top_level(root, path, record, depth=0)
        return record

    # --- top level --------------------------------------------------------------------------
    def _top_level(self, container: etree._Element, file: str, record: FileRecord, depth: int) -> None:
        for node in container:
            name = local_name(node.tag)
            if name is None:
                continue
            if node.tag == XI_INCLUDE:
                for frag_file, frag in self._splice(node, file, record, depth):
                    self._top_level_nodes(frag, frag_file, record, depth + 1)
                continue
            if name == "Includes" and depth == 0:
                self._includes(node, file, record)
            elif name == "Defines":
                self._defines(node, file, record)
            elif name != "Tags":
                self._asset(node, name, file, record, depth)

    def _top_level_nodes(
        self, nodes: list[etree._Element], file: str, record: FileRecord, depth: int
    ) -> None:
        for node in nodes:
            name = local_name(node.tag)
            if name is None:
                continue
            if node.tag == XI_INCLUDE:
                for frag_file, frag in self._splice(node, file, record, depth):
                    self._top_level_nodes(frag, frag_file, record, depth + 1)
            elif name == ASSET_DECLARATION:
                # a whole document included without an xpointer: its instances join the includer
                self._top_level_nodes([c for c in node if isinstance(c.tag, str)], file, record, depth + 1)
            elif name not in ("Tags", "Includes", "Defines"):
                self._asset(node, name, file, record, depth)

    def _includes(self, node: etree._Element, file: str, record: FileRecord) -> None:
        for inc in node:
            if local_name(inc.tag) != "Include":
                continue
            itype = (inc.get("type") or "").strip().lower()
            source = (inc.get("source") or "").strip()
            line = _line(inc)
            if itype not in INCLUDE_TYPES:
                record.diagnostics.append(
                    Diagnostic(
                        "INCLUDE_TYPE_INVALID",
                        file,
                        line,
                        f"include type {itype!r} is not all/instance/reference",
                    )
                )
                continue
            if not source:
                record.diagnostics.append(
                    Diagnostic("INCLUDE_SOURCE_MISSING", file, line, "include has no source")
                )
                continue
            record.includes.append(IncludeSite(itype, source, file, line))

    def _defines(self, node: etree._Element, file: str, record: FileRecord) -> None:
        for d in node:
            if local_name(d.tag) != "Define":
                continue
            name = d.get("name")
            if not name:
                continue
            override = (d.get("override") or "").strip().lower() in ("true", "1")
            record.defines.append(DefineSite(name, d.get("value") or "", file, _line(d), override))

    def _asset(self, node: etree._Element, type_name: str, file: str, record: FileRecord, depth: int) -> None:
        ident = node.get("id")
        line = _line(node)
        if not ident:
            record.diagnostics.append(
                Diagnostic("ASSET_NO_ID", file, line, f"top-level <{type_name}> has no id attribute", "error")
            )
            return
        inherit = node.get("inheritFrom")
        line = self._locate(file, line, "<" + (node.prefix + ":" if node.prefix else "") + type_name, True)[0]
        key = (type_name, ident.lower())
        if key in record.seen_keys and depth == 0:
            record.diagnostics.append(
                Diagnostic(
                    "DUPLICATE_INSTANCE", file, line, f"{type_name}:{ident} is defined twice in this document"
                )
            )
        record.seen_keys.add(key)
        record.assets.append(AssetSite(type_name, ident, file, line, inherit.strip() if inherit else None))
        if inherit and inherit.strip():
            value = inherit.strip()
            qual, target = split_value(value)
            ln, col = self._locate(file, _line(node), _attr_pattern("inheritFrom"), True)
            record.refs.append(
                RefSite(
                    type_name,
                    ident,
                    INHERIT,
                    type_name,
                    value,
                    qual,
                    target,
                    file,
                    ln,
                    col,
                    type_name,
                    None,
                    "inheritFrom",
                )
            )
        if self.schema is None:
            return
        ctype = None if self.infer_all else self.schema.top_level_type(type_name)
        if ctype is None:
            record.unknown_elements += 1
            before = len(record.refs)
            self._infer(node, type_name, None, type_name, ident, file, record)  # its attributes and content
            # one per asset, never capped: every file whose elements had no schema is named
            record.diagnostics.append(
                Diagnostic(
                    "NO_SCHEMA_FOR_TYPE",
                    file,
                    line,
                    f"<{type_name} id={ident!r}> is an asset type the schema does not declare; its references "
                    f"are indexed only by inference ({len(record.refs) - before} inferred)",
                )
            )
            return
        self._walk(node, ctype, None, type_name, ident, file, record, depth, top=True)

    # --- nested content ---------------------------------------------------------------------
    def _walk(
        self,
        el: etree._Element,
        ctype: str,
        parent: str | None,
        owner_type: str,
        owner_id: str,
        file: str,
        record: FileRecord,
        depth: int,
        top: bool = False,
        name: str | None = None,
    ) -> None:
        assert self.schema is not None
        if name is None:
            name = local_name(el.tag) or ""
        attr_refs, defaults, kids = self.schema.view(ctype)
        items = el.items()
        if items:
            line = _line(el)
            for bkey, braw in items:
                key, raw = str(bkey), str(braw)
                if key[0] == "{" or (top and (key == "id" or key == "inheritFrom")):
                    continue
                info = attr_refs.get(key)
                if info is not None:
                    self._ref(info, raw, owner_type, owner_id, file, line, name, parent, key, record, key)
                elif raw[:1] == "=":
                    self._expression(raw, owner_type, owner_id, file, line, name, parent, key, record)
        if defaults:
            present = {str(k) for k, _v in items}
            for key, info in defaults:
                # BAB fills XSD defaults before extracting references, so an omitted attribute still refers
                if key not in present and info.default is not None:
                    self._ref(
                        info,
                        info.default,
                        owner_type,
                        owner_id,
                        file,
                        _line(el),
                        name,
                        parent,
                        key,
                        record,
                        "",
                    )
                    record.refs[-1].default = True
        if len(el) == 0:
            return
        open_type = self.schema.is_open(ctype)
        for child in el:
            tag = child.tag
            if not isinstance(tag, str):
                continue
            if tag == XI_INCLUDE:
                for frag_file, frag in self._splice(child, file, record, depth):
                    for fnode in frag:
                        self._child(
                            fnode, kids, name, owner_type, owner_id, frag_file, record, depth + 1, open_type
                        )
                continue
            self._child(child, kids, name, owner_type, owner_id, file, record, depth, open_type)

    def _child(
        self,
        child: etree._Element,
        kids: dict[str, ElementInfo],
        parent: str,
        owner_type: str,
        owner_id: str,
        file: str,
        record: FileRecord,
        depth: int,
        open_type: bool = False,
    ) -> None:
        cname = local_name(child.tag)
        if cname is None:
            return
        info = kids.get(cname)
        if info is None and open_type:
            # a schema addition declares only what carries references: the rest is inferred, not unknown
            if child.tag != XI_INCLUDE:
                self._infer(child, cname, parent, owner_type, owner_id, file, record)
            return
        if info is None:
            if child.tag != XI_INCLUDE:
                record.unknown_elements += 1
                before = len(record.refs)
                self._infer(child, cname, parent, owner_type, owner_id, file, record)
                if record.unknown_elements <= MAX_UNKNOWN_REPORTED:
                    # a typo here hides references, or a module of a game the schema lacks: say so
                    added = record.refs[before:]
                    by_value = sum(1 for r in added if r.ref_type is None)
                    record.diagnostics.append(
                        Diagnostic(
                            "UNKNOWN_ELEMENT",
                            file,
                            _line(child),
                            f"<{cname}> is not declared inside <{parent}> by the schema; its content is indexed "
                            f"only by inference ({len(added) - by_value} references inferred from names the schema "
                            f"uses elsewhere, {by_value} values that may name an asset)",
                        )
                    )
            return
        ctype = info.type
        if len(child) == 0:
            text = child.text
            if text:
                content = info.ref
                if content is not None:
                    self._ref(
                        content,
                        text,
                        owner_type,
                        owner_id,
                        file,
                        _line(child),
                        cname,
                        parent,
                        None,
                        record,
                        text.strip(),
                    )
                elif text.lstrip()[:1] == "=":
                    self._expression(
                        text, owner_type, owner_id, file, _line(child), cname, parent, None, record
                    )
            if not child.attrib and (self.schema is None or not self.schema.view(ctype)[1]):
                return
        self._walk(child, ctype, parent, owner_type, owner_id, file, record, depth, name=cname)

    def _infer(
        self,
        el: etree._Element,
        name: str,
        parent: str | None,
        owner_type: str,
        owner_id: str,
        file: str,
        record: FileRecord,
    ) -> None:
        """References inside undeclared content (Kane's Wrath-only modules under an RA3/C&C3 schema),
        typed by attribute / element names every declaration of which in the schema is the same kind of
        reference; flagged `inferred`."""
        assert self.schema is not None
        by_attr, by_elem = self.schema.inference_table()
        plain_attrs, plain_elems = self.schema.plain_names()
        own = owner_id.lower()
        stack: list[tuple[etree._Element, str, str | None]] = [(el, name, parent)]
        while stack:
            node, node_name, node_parent = stack.pop()
            line = _line(node)
            for bkey, braw in node.items():
                key = str(bkey)
                if key[0] == "{" or key == "id" or key == "inheritFrom":
                    continue  # the asset's own id, and inheritFrom (indexed as such)
                info = by_attr.get(key)
                if (
                    info is None
                    and key not in plain_attrs
                    and looks_like_id(str(braw))
                    and str(braw).lower() != own
                ):
                    info = VALUE_GUESS  # names no reference in the schema: a value naming an asset may be one
                if info is not None:
                    count = len(record.refs)
                    self._ref(
                        info,
                        str(braw),
                        owner_type,
                        owner_id,
                        file,
                        line,
                        node_name,
                        node_parent,
                        key,
                        record,
                        key,
                    )
                    if len(record.refs) > count:
                        record.refs[-1].inferred = True
            if len(node) == 0:
                info = by_elem.get(node_name)
                if (
                    info is None
                    and node_name not in plain_elems
                    and node.text
                    and looks_like_id(node.text.strip())
                    and node.text.strip().lower() != own
                ):
                    info = VALUE_GUESS
                if info is not None and node.text and node.text.strip():
                    count = len(record.refs)
                    self._ref(
                        info,
                        node.text,
                        owner_type,
                        owner_id,
                        file,
                        line,
                        node_name,
                        node_parent,
                        None,
                        record,
                        node.text.strip(),
                    )
                    if len(record.refs) > count:
                        record.refs[-1].inferred = True
                continue
            for kid in reversed(node):
                kid_name = local_name(kid.tag)
                if kid_name is not None and kid.tag != XI_INCLUDE:
                    stack.append((kid, kid_name, node_name))

    def _ref(
        self,
        info: RefInfo,
        raw: str,
        owner_type: str,
        owner_id: str,
        file: str,
        line: int,
        element: str,
        parent: str | None,
        attribute: str | None,
        record: FileRecord,
        needle: str,
    ) -> None:
        value = raw.strip()
        if not value:
            return  # BAB ignores empty reference values
        expression = value.startswith("=")
        if expression or info.kind == "file":
            qual, target = None, value
        else:
            qual, target = split_value(value)
        if attribute is not None and needle:
            ln, col = self._locate(file, line, _attr_pattern(attribute), True)
        else:
            ln, col = self._locate(file, line, needle) if needle else (line, 0)
        record.refs.append(
            RefSite(
                owner_type,
                owner_id,
                info.kind,
                info.ref_type,
                value,
                qual,
                target,
                file,
                ln,
                col,
                element,
                parent,
                attribute,
                expression,
            )
        )

    def _expression(
        self,
        raw: str,
        owner_type: str,
        owner_id: str,
        file: str,
        line: int,
        element: str,
        parent: str | None,
        attribute: str | None,
        record: FileRecord,
    ) -> None:
        """A `=$DEFINE ...` value BAB evaluates before validation; kept so define uses can be found."""
        value = raw.strip()
        if attribute is not None:
            ln, col = self._locate(file, line, _attr_pattern(attribute), True)
        else:
            ln, col = self._locate(file, line, value)
        record.expressions.append(
            RefSite(
                owner_type,
                owner_id,
                "expression",
                None,
                value,
                None,
                value,
                file,
                ln,
                col,
                element,
                parent,
                attribute,
                True,
            )
        )

    def _locate(
        self, file: str, line: int, needle: str | _AttrNeedle, backward: bool = False
    ) -> tuple[int, int]:
        table = self._line_tables.get(file)
        if table is None:
            return line, 0
        return table.locate(line, needle, backward)

    def _splice(
        self, node: etree._Element, file: str, record: FileRecord, depth: int
    ) -> list[tuple[str, list[etree._Element]]]:
        href = (node.get("href") or "").strip()
        container = xpointer_container(node.get("xpointer"))
        line = _line(node)
        site = XiSite(href, container, file, line)
        record.xi_includes.append(site)
        if not href:
            record.diagnostics.append(Diagnostic("XI_INCLUDE_NO_HREF", file, line, "xi:include without href"))
            return []
        if depth >= MAX_XI_DEPTH:
            record.diagnostics.append(
                Diagnostic(
                    "XI_INCLUDE_CYCLE", file, line, f"xi:include nested deeper than {MAX_XI_DEPTH}", "error"
                )
            )
            return []
        if self.load_fragment is None:
            return []
        loaded = self.load_fragment(href, container, file)
        if isinstance(loaded, str):
            code, _sep, text = loaded.partition(": ")
            if code == "INCLUDE_OUTSIDE_ROOTS":  # refused, never read: an error, not a missing file
                record.diagnostics.append(Diagnostic(code, file, line, text, "error"))
            else:
                record.diagnostics.append(Diagnostic("XI_INCLUDE_NOT_FOUND", file, line, loaded))
            return []
        frag_file, nodes = loaded
        site.target = frag_file
        record.fragments.add(frag_file)
        if frag_file not in self._line_tables:
            self._line_tables[frag_file] = _Lines(lambda: _read_lines(frag_file))
        return [(frag_file, nodes)]


def _read_lines(path: str) -> list[str]:
    try:
        with open(path, "rb") as fh:
            return fh.read().decode("utf-8", "replace").splitlines()
    except OSError:
        return []
