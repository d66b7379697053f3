"""Section-tag coverage of the built-in annotation rules over real files.

For each of .equ .stk .skl .dgn .ani: the section tags used in more than 1% of the corpus's files
of that type, and how many of them a built-in rule documents (a rule's own target or its shared
field's, a name pattern such as ``FRAME###`` for every tag it matches; a rule without
extensions counts for every type). Run:

    MODDESK_CORPORA=/work/shared/corpora .venv/bin/python benchmarks/pvf_annotation_coverage.py [-v]
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections import Counter, defaultdict
from importlib import resources
from pathlib import Path

from moddesk.pvf.annotations.builtin import BUILTIN_FILES
from moddesk.pvf.annotations.engine import section_name_matches

EXTENSIONS = (".equ", ".stk", ".skl", ".dgn", ".ani")
SHARE = 0.01
_TAG = re.compile(r"^\s*\[([^\]/][^\]]*)\]", re.M)


def documented_sections() -> dict[str, set[str]]:
    """Extension -> section names (or name patterns such as ``frame###``) a built-in rule targets."""
    base = resources.files("moddesk.pvf.annotations.builtin")
    docs = [json.loads(base.joinpath(name).read_text("utf-8")) for name in BUILTIN_FILES]
    fields = {f["id"]: f for d in docs for f in d.get("fields", [])}
    out: dict[str, set[str]] = defaultdict(set)
    for doc in docs:
        for rule in doc.get("rules", []):
            field = fields.get(rule.get("field", ""), {})
            target = rule.get("target") or field.get("target") or {}
            match = rule.get("match") or field.get("match") or {}
            # "parent/child" documents the child tag; "a|b" documents each alternative
            last = (target.get("section") or "").split("/")[-1]
            for section in (s.strip().strip("[]").casefold() for s in last.split("|")):
                for ext in (match.get("extensions") or EXTENSIONS) if section else ():
                    out[ext].add(section)
    return out


def main() -> None:
    root = Path(os.environ.get("MODDESK_CORPORA", "")) / "pvf"
    if not root.is_dir():
        sys.exit("set MODDESK_CORPORA to the shared corpora folder")
    documented = documented_sections()
    need_all = have_all = 0
    for ext in EXTENSIONS:
        files = [p for p in root.rglob(f"*{ext}") if p.is_file()]
        counts: Counter[str] = Counter()
        for path in files:
            text = path.read_text(encoding="utf-8", errors="replace")
            counts.update({t.strip().casefold() for t in _TAG.findall(text)})
        needed = sorted(t for t, c in counts.items() if files and c / len(files) > SHARE)
        missing = [t for t in needed if not any(section_name_matches(p, t) for p in documented[ext])]
        have = len(needed) - len(missing)
        need_all, have_all = need_all + len(needed), have_all + have
        print(
            f"{ext}: {len(files)} files, {len(needed)} tags in >1% of them, {have} documented ({100 * have / max(1, len(needed)):.0f}%)"
        )
        if "-v" in sys.argv and missing:
            print("   missing:", ", ".join(missing))
    print(f"all: {have_all}/{need_all} ({100 * have_all / max(1, need_all):.0f}%)")


if __name__ == "__main__":
    main()
