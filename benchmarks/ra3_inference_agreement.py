"""How far the inference rules can be trusted: their edges against the schema-backed ones.

The C&C3 base XML (corpora sage/cnc3-sdk/CnC3Xml) is indexed twice with the same files and
entries: once with its schema (every reference typed by a declaration), once reading every asset
as if its type had no schema (`Extractor(infer_all=True)`: the name rule, then the value rule).
An edge is (owner type, owner id, attribute or element, target type, target id), resolved;
inheritFrom and compiled edges are left out (both runs index them the same way). Printed per rule:

- precision: inferred edges that the schema also has / inferred edges (how often an inferred edge
  is a real reference);
- recall: schema edges the inference also finds / schema edges (how much a schema-less type keeps).

Run: .venv/bin/python benchmarks/ra3_inference_agreement.py
"""

from __future__ import annotations

import os
import sys
import time
from collections import Counter
from pathlib import Path

from moddesk.ra3.core.index import ModIndex
from moddesk.ra3.core.model import RESOLVED, IndexData
from moddesk.ra3.core.parse import Extractor, FileRecord
from moddesk.ra3.core.project import detect_project
from moddesk.ra3.core.schema import FILE, INHERIT

Edge = tuple[str, str, str, str, str]


class InferEverything(ModIndex):
    """The index with every asset read by the inference rules alone."""

    def _extract(self, path: str) -> FileRecord:
        extractor = Extractor(self.schema, self._load_fragment, infer_all=True)
        return extractor.extract(path, self.read_document(path))


def edges(data: IndexData) -> dict[Edge, str]:
    """Resolved reference edges (not inheritFrom, file or compiled) -> which rule made them."""
    out: dict[Edge, str] = {}
    for r in data.refs():
        if r.kind in (INHERIT, FILE, "compiled") or r.expression:
            continue
        res = data.resolve(r)
        if res.status != RESOLVED:
            continue
        target = res.keys[0]
        key = (r.owner_type, r.owner_id.lower(), r.attribute or r.element, target[0], target[1])
        rule = ("value" if r.ref_type is None else "name") if r.inferred else "schema"
        out.setdefault(key, rule)
    return out


def main() -> int:
    corpora = Path(os.environ.get("MODDESK_CORPORA") or "/work/shared/corpora")
    sdk = corpora / "sage" / "cnc3-sdk"
    if not (sdk / "CnC3Xml").is_dir():
        print(f"corpus not found under {corpora} (set MODDESK_CORPORA)")
        return 2
    entries = [sdk / "CnC3Xml" / "Static.xml", sdk / "CnC3Xml" / "Global.xml"]
    cfg = detect_project(sdk, entries=entries, use_manifests=False)
    t0 = time.perf_counter()
    typed = ModIndex(cfg)
    typed.build()
    t1 = time.perf_counter()
    guessed = InferEverything(detect_project(sdk, entries=entries, use_manifests=False))
    guessed.build()
    t2 = time.perf_counter()
    assert typed.data is not None and guessed.data is not None
    truth = {k for k, rule in edges(typed.data).items() if rule == "schema"}
    inferred = edges(guessed.data)
    print(f"C&C3 base: {len(truth)} schema-backed edges ({t1 - t0:.1f} s), inference run {t2 - t1:.1f} s")
    by_rule: Counter[str] = Counter(inferred.values())
    for rule in ("name", "value"):
        made = {k for k, r in inferred.items() if r == rule}
        hits = len(made & truth)
        precision = hits / len(made) if made else 0.0
        print(f"  {rule:5} rule: {len(made):6} edges, {hits:6} also schema-backed: precision {precision:.1%}")
    both = set(inferred)
    hits = len(both & truth)
    print(
        f"  both rules: {len(both)} edges, precision {hits / max(len(both), 1):.1%}, "
        f"recall {hits / max(len(truth), 1):.1%} of the schema-backed edges ({by_rule['name']} by name, "
        f"{by_rule['value']} by value)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
