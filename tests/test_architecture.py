"""The house rules of src/moddesk, read from the source (AST, nothing is imported).

- No import circle between moddesk modules: every import counts, at the top of a module, inside a
  function, under ``if TYPE_CHECKING:`` and ``importlib.import_module("moddesk....")`` with a
  literal name, so a circle cannot hide behind a lazy import.
- pvf, ra3 and xiangqi never import each other; what they share lives in ``moddesk.kit``, and the
  kit imports no system (nor the root command above it).

The first tests check the checker itself on small packages written to a temp folder.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
SYSTEMS = frozenset({"pvf", "ra3", "xiangqi"})


@dataclass(frozen=True)
class Import:
    """One import statement resolved to the moddesk module it loads."""

    importer: str
    imported: str
    line: int


def module_name(src: Path, path: Path) -> str:
    """``src/moddesk/pvf/web/routes.py`` → ``moddesk.pvf.web.routes``; a package is its folder."""
    parts = list(path.relative_to(src).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def find_modules(src: Path, package: str) -> dict[str, Path]:
    """Every module of ``package`` under ``src``, by dotted name."""
    return {module_name(src, path): path for path in sorted((src / package).rglob("*.py"))}


def _base_of_relative(importer: str, is_package: bool, level: int, target: str | None) -> str:
    """Resolve ``from ..x import y`` inside ``importer`` to the absolute name of ``..x``."""
    package = importer.split(".") if is_package else importer.split(".")[:-1]
    anchor = package[: len(package) - (level - 1)]
    return ".".join(anchor + ([target] if target else []))


def _nearest_module(name: str, modules: dict[str, Path]) -> str | None:
    """The module Python runs for ``import name``: the name itself or its longest known prefix."""
    parts = name.split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in modules:
            return candidate
        parts.pop()
    return None


def _named_targets(node: ast.AST, importer: str, is_package: bool, modules: dict[str, Path]) -> Iterator[str]:
    """Dotted names one AST node loads: ``from x import y`` is ``x.y`` when that is a module."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            yield alias.name
    elif isinstance(node, ast.ImportFrom):
        base = (
            _base_of_relative(importer, is_package, node.level, node.module)
            if node.level
            else node.module or ""
        )
        for alias in node.names:
            submodule = f"{base}.{alias.name}"
            yield submodule if submodule in modules else base
    elif (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "import_module"
        and node.args
        and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, str)
    ):
        yield node.args[0].value


def imports_of(importer: str, path: Path, modules: dict[str, Path]) -> list[Import]:
    """Every moddesk module ``importer`` loads, wherever the import statement stands."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    is_package = path.name == "__init__.py"
    found: dict[str, Import] = {}
    for node in ast.walk(tree):
        for name in _named_targets(node, importer, is_package, modules):
            target = _nearest_module(name, modules)
            if target is None or target == importer or target in found:
                continue
            found[target] = Import(importer, target, getattr(node, "lineno", 0))
    return sorted(found.values(), key=lambda edge: (edge.line, edge.imported))


def import_graph(src: Path, package: str = "moddesk") -> dict[str, list[Import]]:
    """Module → the moddesk modules it imports."""
    modules = find_modules(src, package)
    return {name: imports_of(name, path, modules) for name, path in modules.items()}


def _strongly_connected(graph: dict[str, list[Import]]) -> list[list[str]]:
    """Tarjan's components (iterative: the graph is a few hundred modules deep at most)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work: list[tuple[str, Iterator[Import]]] = [(root, iter(graph[root]))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            edge = next(edges, None)
            if edge is not None:
                child = edge.imported
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(graph.get(child, []))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    components.append(sorted(component))
    return components


def _shortest_cycle(graph: dict[str, list[Import]], members: set[str]) -> list[Import]:
    """One shortest circle through the first module of a component, edge by edge."""
    start = min(members)
    came_from: dict[str, Import] = {}
    frontier = [start]
    while frontier:
        following: list[str] = []
        for node in frontier:
            for edge in graph[node]:
                if edge.imported not in members:
                    continue
                if edge.imported == start:
                    path = [edge]
                    while path[0].importer != start:
                        path.insert(0, came_from[path[0].importer])
                    return path
                if edge.imported not in came_from:
                    came_from[edge.imported] = edge
                    following.append(edge.imported)
        frontier = following
    raise AssertionError(f"no circle through {start}")


def import_cycles(graph: dict[str, list[Import]]) -> list[list[Import]]:
    """One circle per group of modules that import each other (directly or around a ring)."""
    return [_shortest_cycle(graph, set(members)) for members in _strongly_connected(graph)]


def describe_cycle(cycle: list[Import], modules: dict[str, Path], src: Path) -> str:
    """``a (a.py:3) → b (b.py:7) → a`` so the line to change is named."""
    steps = [f"{edge.importer} ({modules[edge.importer].relative_to(src)}:{edge.line})" for edge in cycle]
    return " → ".join([*steps, cycle[0].importer])


def _room(module: str) -> str:
    """``moddesk.pvf.web.routes`` → ``pvf``; the root modules (``moddesk.cli``) are ``root``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and (parts[1] in SYSTEMS or parts[1] == "kit") else "root"


def boundary_violations(graph: dict[str, list[Import]]) -> list[str]:
    """Imports from one system into another, and from the kit into a system or the root."""
    allowed = {system: {system, "kit"} for system in SYSTEMS} | {"kit": {"kit"}}
    found: list[str] = []
    for edges in graph.values():
        for edge in edges:
            source, target = _room(edge.importer), _room(edge.imported)
            if source in allowed and target not in allowed[source] and edge.imported != "moddesk":
                found.append(f"{edge.importer}:{edge.line} imports {edge.imported}")
    return sorted(found)


def _make(root: Path, files: dict[str, str]) -> Path:
    """Write ``{"moddesk/pvf/a.py": source}`` under ``root``; every folder becomes a package."""
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        for folder in path.relative_to(root).parents:
            if folder != Path("."):
                (root / folder / "__init__.py").touch()
    return root


def _cycles_as_names(cycles: Iterable[list[Import]]) -> list[list[str]]:
    return [[edge.importer for edge in cycle] for cycle in cycles]


def test_checker_sees_a_circle_through_a_function_level_relative_import(tmp_path: Path) -> None:
    src = _make(
        tmp_path,
        {
            "moddesk/pvf/document.py": "from .docparse import parse\n",
            "moddesk/pvf/docparse.py": "def parse():\n    from . import document\n",
        },
    )
    cycles = import_cycles(import_graph(src))
    assert _cycles_as_names(cycles) == [["moddesk.pvf.docparse", "moddesk.pvf.document"]]
    described = describe_cycle(cycles[0], find_modules(src, "moddesk"), src)
    assert described == (
        "moddesk.pvf.docparse (moddesk/pvf/docparse.py:2) → "
        "moddesk.pvf.document (moddesk/pvf/document.py:1) → moddesk.pvf.docparse"
    )


def test_checker_sees_a_ring_of_three_and_type_checking_imports(tmp_path: Path) -> None:
    src = _make(
        tmp_path,
        {
            "moddesk/pvf/agent/serve.py": "from moddesk.pvf.web import routes\n",
            "moddesk/pvf/web/routes.py": "from ..web.settings import Settings\n",
            "moddesk/pvf/web/settings.py": (
                "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n    from moddesk.pvf.agent.serve import Server\n"
            ),
            "moddesk/pvf/web/ops.py": "import moddesk.pvf.web.settings\n",
        },
    )
    cycles = _cycles_as_names(import_cycles(import_graph(src)))
    assert cycles == [["moddesk.pvf.agent.serve", "moddesk.pvf.web.routes", "moddesk.pvf.web.settings"]]


def test_checker_passes_a_tree_that_points_down(tmp_path: Path) -> None:
    src = _make(
        tmp_path,
        {
            "moddesk/kit/errors.py": "class ServiceError(Exception): ...\n",
            "moddesk/xiangqi/game.py": (
                "from moddesk.kit.errors import ServiceError\nfrom .review import review\n"
            ),
            "moddesk/xiangqi/review.py": "from moddesk.kit import errors\n",
            "moddesk/cli.py": "import importlib\nimportlib.import_module('moddesk.xiangqi.game')\n",
        },
    )
    graph = import_graph(src)
    assert import_cycles(graph) == []
    assert boundary_violations(graph) == []
    assert [edge.imported for edge in graph["moddesk.cli"]] == ["moddesk.xiangqi.game"]


def test_checker_sees_systems_meeting_outside_the_kit(tmp_path: Path) -> None:
    src = _make(
        tmp_path,
        {
            "moddesk/pvf/service.py": "def f():\n    from moddesk.ra3.core import index\n",
            "moddesk/ra3/core/index.py": "",
            "moddesk/kit/pages.py": "import importlib\nimportlib.import_module('moddesk.pvf.service')\n",
            "moddesk/kit/tokens.py": "from moddesk import cli\n",
            "moddesk/cli.py": "",
        },
    )
    assert boundary_violations(import_graph(src)) == [
        "moddesk.kit.pages:2 imports moddesk.pvf.service",
        "moddesk.kit.tokens:1 imports moddesk.cli",
        "moddesk.pvf.service:2 imports moddesk.ra3.core.index",
    ]


def test_moddesk_has_no_import_circle() -> None:
    graph = import_graph(SRC)
    assert len(graph) > 150, "the checker found too few modules: is SRC right?"
    modules = find_modules(SRC, "moddesk")
    circles = [describe_cycle(cycle, modules, SRC) for cycle in import_cycles(graph)]
    assert not circles, "import circles (move the shared thing down):\n" + "\n".join(circles)


def test_systems_meet_only_in_the_kit() -> None:
    violations = boundary_violations(import_graph(SRC))
    assert not violations, "imports across systems or from the kit up:\n" + "\n".join(violations)
