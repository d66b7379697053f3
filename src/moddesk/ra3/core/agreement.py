"""Agreement with EA's compiler: compare an index built from XML with the compiled `.manifest` files.

Assets are matched by `(FastHash(type), FastHash(lower(id)))`, exactly the ids BAB writes. For
reference edges, a compiled asset's edges are compared with what the index says that asset
references: its own references plus those it inherits through `inheritFrom` (the compiler copies
the base's XML into the derived asset), plus the `inheritFrom` base itself. Every miss is counted
by a category that explains it, so a low figure is never a mystery.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from moddesk.ra3.core.manifest import Manifest, instance_id, type_id
from moddesk.ra3.core.model import AMBIGUOUS, RESOLVED, IndexData, Key
from moddesk.ra3.core.project import ProjectConfig, resolve_source
from moddesk.ra3.core.schema import FILE, INHERIT

HashKey = tuple[int, int]


@dataclass(slots=True)
class Agreement:
    """Shares of manifest assets and edges the index reproduces, with misses by category."""

    manifest_assets: int = 0
    assets_comparable: int = 0
    assets_known: int = 0
    asset_misses: Counter[str] = field(default_factory=Counter)
    manifest_edges: int = 0
    edges_comparable: int = 0
    edges_matched: int = 0
    edge_misses: Counter[str] = field(default_factory=Counter)
    examples: dict[str, list[str]] = field(default_factory=dict)

    @property
    def asset_share(self) -> float:
        """Known / comparable manifest assets."""
        return self.assets_known / self.assets_comparable if self.assets_comparable else 0.0

    @property
    def edge_share(self) -> float:
        """Matched / comparable manifest reference edges."""
        return self.edges_matched / self.edges_comparable if self.edges_comparable else 0.0

    def to_json(self) -> dict[str, Any]:
        """A report shape for tests, benchmarks and the CLI."""
        return {
            "manifestAssets": self.manifest_assets,
            "assetsComparable": self.assets_comparable,
            "assetsKnown": self.assets_known,
            "assetShare": round(self.asset_share, 5),
            "assetMisses": dict(self.asset_misses.most_common()),
            "manifestEdges": self.manifest_edges,
            "edgesComparable": self.edges_comparable,
            "edgesMatched": self.edges_matched,
            "edgeShare": round(self.edge_share, 5),
            "edgeMisses": dict(self.edge_misses.most_common()),
            "examples": {k: v[:5] for k, v in self.examples.items()},
        }

    def _example(self, category: str, text: str) -> None:
        bucket = self.examples.setdefault(category, [])
        if len(bucket) < 5:
            bucket.append(text)


def _source_area(source: str) -> str:
    """`ART:`, `AUDIO:` or `DATA:<first folder>` of a manifest source name, to group misses."""
    alias, _sep, rest = source.replace("\\", "/").partition(":")
    folder = rest.split("/", 1)[0] if "/" in rest else ""
    return f"{alias.upper()}:{folder}" if folder and alias.lower() == "data" else f"{alias.upper()}:"


def _hash_key(key: Key) -> HashKey:
    return (type_id(key[0]), instance_id(key[1]))


def _our_edges(data: IndexData, key: Key, cache: dict[Key, set[HashKey]], depth: int = 0) -> set[HashKey]:
    """Hashes of everything `key` references, including what its inheritFrom ancestors reference."""
    hit = cache.get(key)
    if hit is not None:
        return hit
    cache[key] = set()  # cycle guard
    out: set[HashKey] = set()
    for ref in data.refs_by_owner.get(key, []):
        if ref.kind == FILE:
            continue
        res = data.resolve(ref)
        if res.status not in (RESOLVED, AMBIGUOUS):
            continue
        for target in res.keys:
            if ref.kind == INHERIT:
                out.add(_hash_key(target))
                if target != key and depth < 8:
                    out |= _our_edges(data, target, cache, depth + 1)
            else:
                out.add(_hash_key(target))
    cache[key] = out
    return out


def compare(
    data: IndexData, manifests: list[Manifest], config: ProjectConfig, vanilla_roots: list[Path] | None = None
) -> Agreement:
    """Compare an index (built with `use_manifests=False`) against compiled manifests of the same XML."""
    report = Agreement()
    ours: dict[HashKey, Key] = {}
    for d in data.assets():
        if d.origin != "manifest":
            ours.setdefault(_hash_key(d.key), d.key)
    source_exists: dict[str, bool] = {}

    def exists(source: str) -> bool:
        hit = source_exists.get(source)
        if hit is None:
            res = resolve_source(config, source, config.project_dir / "x.xml")
            hit = res.path is not None
            source_exists[source] = hit
        return hit

    all_compiled: dict[HashKey, str] = {}
    for m in manifests:
        for a in m.assets:
            all_compiled[(a.type_id, a.instance_id)] = a.source
    cache: dict[Key, set[HashKey]] = {}
    for m in manifests:
        for a in m.assets:
            report.manifest_assets += 1
            hk = (a.type_id, a.instance_id)
            mine = ours.get(hk)
            if not exists(a.source):
                category = f"source file not in corpus ({_source_area(a.source)})"
                report.asset_misses[category] += 1
                report._example(category, f"{a.name} <- {a.source}")
                continue
            report.assets_comparable += 1
            if mine is None:
                resolved = resolve_source(config, a.source, config.project_dir / "x.xml").path
                shown = str(resolved) if resolved else a.source
                in_index = any(f.path.lower().endswith(Path(shown).name.lower()) for f in data.files.values())
                category = (
                    "source file indexed, asset missing"
                    if in_index
                    else "source file not reached from entries"
                )
                report.asset_misses[category] += 1
                report._example(category, f"{a.name} <- {a.source}")
                continue
            report.assets_known += 1
            edges = _our_edges(data, mine, cache)
            for target in a.references:
                report.manifest_edges += 1
                if target in edges:
                    report.edges_comparable += 1
                    report.edges_matched += 1
                    continue
                tsource = all_compiled.get(target)
                if target not in ours:
                    category = (
                        "target defined outside the corpus (art/audio/other stream)"
                        if tsource is None or not exists(tsource)
                        else "target not indexed"
                    )
                    if category == "target not indexed":
                        report.edges_comparable += 1
                    report.edge_misses[category] += 1
                    report._example(category, f"{a.name} -> {target}")
                    continue
                report.edges_comparable += 1
                report.edge_misses["edge not found (both ends indexed)"] += 1
                report._example("edge not found (both ends indexed)", f"{a.name} -> {ours[target]}")
    return report
