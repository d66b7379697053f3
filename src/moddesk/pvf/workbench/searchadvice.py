"""Why a search found nothing, and which nearby queries would find something.

A zero-hit first page is where people and agents get stuck (``*.equ`` under a folder glob,
a scope that is one level off, a content word that is really a file name). The advice names the
rule that excluded everything and tries a few nearby queries — each bounded to one hit and a
short time budget — returning only those that match, with one example path.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from moddesk.pvf.archive import normalize_path
from moddesk.pvf.workbench.search import SearchPage, SearchQuery

ALTERNATIVE_TIME_BUDGET = 0.5
WILDCARDS = "*?"

# runs one nearby query: at most one hit, within ALTERNATIVE_TIME_BUDGET
TryQuery = Callable[[SearchQuery], SearchPage]


def _has_wildcard(text: str) -> bool:
    return any(c in text for c in WILDCARDS)


def _where(query: SearchQuery) -> tuple[str, str]:
    """The filters in English and Chinese ('' when there are none)."""
    en, zh = [], []
    if query.scope_prefix:
        en.append(f"under {query.scope_prefix}")
        zh.append(f"在 {query.scope_prefix} 下")
    if query.suffixes:
        en.append(f"with extensions {', '.join(query.suffixes)}")
        zh.append(f"扩展名为 {'、'.join(query.suffixes)}")
    return (" " + " ".join(en) if en else "", "，".join(zh) + "，" if zh else "")


def reason(query: SearchQuery) -> tuple[str, str]:
    """Why nothing matched, in English and Chinese."""
    where_en, where_zh = _where(query)
    q = query.query
    if query.mode == "path" and _has_wildcard(q):
        return (
            f"no archive path{where_en} matches the glob {q!r}: a glob with / matches the whole path "
            "from the archive root (* and ? stay inside one folder, ** crosses folders); a glob "
            "without / matches file names in any folder",
            f"{where_zh}没有存档路径匹配通配符 {q!r}：含 / 的通配符从存档根目录匹配整个路径（* 和 ? 不跨文件夹，"
            "** 可跨文件夹）；不含 / 的通配符匹配任意文件夹中的文件名",
        )
    if query.mode == "path":
        return (f"no archive path{where_en} contains {q!r}", f"{where_zh}没有存档路径包含 {q!r}")
    if query.mode == "content":
        case = " (case-sensitive)" if query.case_sensitive else ""
        return (
            f"no file text{where_en} contains {q!r}{case}",
            f"{where_zh}没有文件内容包含 {q!r}" + ("（区分大小写）" if query.case_sensitive else ""),
        )
    return (
        f"the regex {q!r} matches no line of any file text{where_en}",
        f"{where_zh}正则 {q!r} 没有匹配任何文件的任何一行",
    )


def alternatives(query: SearchQuery, content_ready: bool) -> list[tuple[str, SearchQuery]]:
    """Nearby queries worth trying, each with what was changed."""
    out: list[tuple[str, SearchQuery]] = []
    text = normalize_path(query.query)
    if query.mode == "path" and _has_wildcard(text) and "/" in text and "**" not in text:
        head, _, tail = text.rpartition("/")
        out.append(("** so the glob also matches in subfolders", replace(query, query=f"{head}/**/{tail}")))
    if query.scope_prefix or query.suffixes:
        out.append(("without the scope and extension filters", replace(query, scope="", extensions=())))
    if query.case_sensitive:
        out.append(("ignoring case", replace(query, case_sensitive=False)))
    if query.mode == "path" and not _has_wildcard(text) and content_ready:
        out.append(("as a content search", replace(query, mode="content")))
    if query.mode == "content":
        out.append(("as a path search", replace(query, mode="path")))
    return out


def advice(query: SearchQuery, try_query: TryQuery, content_ready: bool) -> dict[str, Any]:
    """``{"reason", "reasonZh", "tryInstead": [{change, mode, query, scope, extensions, caseSensitive, example}]}``."""
    why, why_zh = reason(query)
    found: list[dict[str, Any]] = []
    for change, alternative in alternatives(query, content_ready):
        page = try_query(alternative)
        if not page.hits:
            continue
        found.append(
            {
                "change": change,
                "mode": alternative.mode,
                "query": alternative.query,
                "scope": alternative.scope_prefix.rstrip("/"),
                "extensions": list(alternative.suffixes),
                "caseSensitive": alternative.case_sensitive,
                "example": page.hits[0].path,
            }
        )
    return {"reason": why, "reasonZh": why_zh, "tryInstead": found}
