"""Search answers as canonical pages, to prove a new index answers exactly as the old one did.

Shared by ``tests/pvf/workbench/test_search_equality.py`` (a small generated archive, in ``make test``)
and ``benchmarks/pvf_scale.py --check`` (100k files with the real corpus texts imported). The
recorded digests live in ``fixtures/search_equality.json``; they were taken with the index as it
was before issue #18 changed it (one folded corpus in memory), so a match means same hits, same
order, same lines and snippets, and the same page boundaries (a cursor is the last hit of its
page, so equal pages mean equal cursor positions).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "search_equality.json"


@dataclass(frozen=True)
class Case:
    """One query, paged ``pages`` times (or to its end) with ``limit`` hits per page."""

    name: str
    query: str
    mode: str = "content"
    scope: str = ""
    extensions: tuple[str, ...] = ()
    case_sensitive: bool = False
    limit: int = 20
    pages: int = 3
    byte_cap: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)


CASES: tuple[Case, ...] = (
    Case("many files", "[price]", limit=100, pages=6),
    Case("cjk rare", "项链", limit=50, pages=8),
    Case("cjk common", "之心", pages=4),
    Case("ascii fold", "STAR ROAR", pages=3),
    Case("fold both ways", "[NAME2]", limit=37, pages=3),
    Case("case-sensitive", "Star", case_sensitive=True, pages=3),
    Case("case-sensitive miss", "STAR", scope="skill", case_sensitive=True, pages=1),
    Case("scoped", "[grade]", scope="equipment/character/common", extensions=(".equ",), pages=3),
    Case("extension", "`", extensions=("skl",), limit=25, pages=3),
    Case("lists", "equ`", scope="equipment", extensions=(".lst",), limit=60, pages=3),
    Case("string tables", "name_1", extensions=(".str",), limit=40, pages=2),
    Case("byte cap", "[", limit=100, pages=3, byte_cap=1024),
    Case("absent", "zz-no-such-text-zz", pages=1),
    Case("regex", r"\[grade\]\s+9\d", mode="regex", pages=3),
    Case("regex anchors", r"^\t\d{6}$", mode="regex", limit=30, pages=3),
    Case("regex cjk", r"[雷霆]+之心", mode="regex", pages=3),
    Case("regex case-sensitive", r"Earth\w+", mode="regex", scope="skill", case_sensitive=True, pages=2),
    Case("regex absent", r"zz\d{3}no", mode="regex", pages=1),
    Case("path glob", "**/*.equ", mode="path", scope="equipment/character/gunner", limit=100, pages=3),
    Case("path deep glob", "**/weapon/**", mode="path", limit=100, pages=2),
    Case("path substring", "AMULET", mode="path", limit=50, pages=2),
    Case("corpus text", "[/level info]", limit=50, pages=2),
    Case("corpus cjk", "攻击力", limit=50, pages=3),
)


def collect(service: Any, workspace_id: str, cases: tuple[Case, ...] = CASES) -> dict[str, list[Any]]:
    """Every case's pages through the service: hits, whether a next page exists, truncation."""
    out: dict[str, list[Any]] = {}
    for case in cases:
        pages: list[Any] = []
        cursor = None
        for _ in range(case.pages):
            kwargs: dict[str, Any] = {}
            if case.byte_cap is not None:
                kwargs["byte_cap"] = case.byte_cap
            page = service.search(
                workspace_id,
                case.query,
                mode=case.mode,
                scope=case.scope,
                extensions=case.extensions,
                case_sensitive=case.case_sensitive,
                cursor=cursor,
                limit=case.limit,
                **kwargs,
            )
            if page.get("truncatedReason") == "time-budget":
                raise AssertionError(f"{case.name}: the time budget ran out, the page is timing-dependent")
            hits = [[h["path"], h["line"], h["snippet"]] for h in page["hits"]]
            cursor = page["nextCursor"]
            pages.append({"hits": hits, "more": cursor is not None, "reason": page["truncatedReason"]})
            if cursor is None:
                break
        out[case.name] = pages
    return out


def canonical(result: dict[str, list[Any]]) -> bytes:
    return json.dumps(result, ensure_ascii=False, sort_keys=True, separators=(",", ":")).encode("utf-8")


def summary(result: dict[str, list[Any]]) -> dict[str, Any]:
    """The digest plus a few literal hits (so a mismatch shows something readable)."""
    return {
        "sha256": hashlib.sha256(canonical(result)).hexdigest(),
        "pages": sum(len(pages) for pages in result.values()),
        "hits": sum(len(page["hits"]) for pages in result.values() for page in pages),
        "samples": {
            name: pages[0]["hits"][:2] for name, pages in sorted(result.items()) if pages and pages[0]["hits"]
        },
    }


def load_fixture() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(FIXTURE.read_text(encoding="utf-8")) if FIXTURE.is_file() else {}
    return data


def record(key: str, result: dict[str, list[Any]]) -> None:
    """Store the summary of ``result`` under ``key`` (only ever with the reference implementation)."""
    data = load_fixture()
    data[key] = summary(result)
    FIXTURE.parent.mkdir(parents=True, exist_ok=True)
    FIXTURE.write_text(
        json.dumps(data, ensure_ascii=False, indent=1, sort_keys=True) + "\n", encoding="utf-8"
    )


def differences(key: str, result: dict[str, list[Any]]) -> list[str]:
    """What differs from the recorded summary under ``key`` (empty: identical)."""
    expected = load_fixture().get(key)
    if expected is None:
        return [f"no recorded answers for {key} in {FIXTURE}"]
    got = summary(result)
    problems = []
    for name, hits in expected["samples"].items():
        if got["samples"].get(name) != hits:
            problems.append(f"{name}: first hits {got['samples'].get(name)} != recorded {hits}")
    for what in ("pages", "hits", "sha256"):
        if got[what] != expected[what]:
            problems.append(f"{what}: {got[what]} != recorded {expected[what]}")
    return problems
