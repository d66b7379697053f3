"""The byte budget: no result text over 64 KiB, none cut — a text-only client pages to the end.

A "text-only client" here reads nothing but ``content[0].text`` (many MCP clients give the model
only that): every id, cursor and continuation it needs must be in the text.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import anyio
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp import Client

from moddesk.kit.local_service import http_client
from moddesk.kit.pages import CONTINUES, TEXT_BUDGET, TEXT_BUDGET_MAX, split_pages, utf8_len
from moddesk.pvf.agent.serve import Workbench
from moddesk.pvf.samples.demo import write_sample_archive
from moddesk.pvf.service import PvfService

MARKER = re.compile(r"\n\[page (\d+)/(\d+) of result (r[0-9a-f]+); [^\]]*\]$")


def _rejoin(pages: list[str]) -> str:
    return "\n".join(pages).replace(CONTINUES + "\n", "")


@settings(max_examples=200, deadline=None)
@given(
    text=st.text(st.sampled_from(["a", "中", "\n", "é", "𝄞", " "]), max_size=3000),
    budget=st.integers(min_value=60, max_value=400),
)
def test_split_pages_keeps_every_byte_within_the_budget(text: str, budget: int) -> None:
    pages = split_pages(text, budget)
    assert all(utf8_len(p) <= budget for p in pages)
    assert _rejoin(pages) == text


async def _text(client: Client, tool: str, args: dict[str, Any]) -> str:
    result = await client.call_tool(tool, args)
    [block] = result.content
    text = block.text  # type: ignore[union-attr]
    assert not result.is_error, text
    assert utf8_len(text) <= TEXT_BUDGET_MAX, (tool, utf8_len(text))
    return str(text)


async def _all_pages(client: Client, first: str) -> tuple[str, int]:
    """Follow the page markers to the end, as a model would; the rejoined text and the page count."""
    found = MARKER.search(first)
    if found is None:
        return first, 1
    pages, result_id = [first[: found.start()]], found.group(3)
    total = int(found.group(2))
    for page in range(2, total + 1):
        text = await _text(client, "pvf_result_page", {"resultId": result_id, "page": page})
        assert utf8_len(text) <= TEXT_BUDGET, utf8_len(text)
        mark = MARKER.search(text)
        assert mark is not None and int(mark.group(1)) == page
        pages.append(text[: mark.start()])
    assert "end of the result" in text
    return _rejoin(pages), total


async def _read_whole_file(client: Client, ws: str, path: str) -> tuple[list[str], int]:
    """Read a file text-only, following every continuation marker; its lines and the calls made."""
    lines: list[str] = []
    start, column, calls = 1, 0, 0
    while True:
        calls += 1
        text = await _text(
            client,
            "pvf_read_file",
            {"workspaceId": ws, "path": path, "startLine": start, "startColumn": column},
        )
        assert utf8_len(text) <= TEXT_BUDGET + 512
        head, _, body = text.partition("\n")
        piece = re.search(r"line (\d+) of (\d+), columns (\d+)-", head)
        if piece:  # one piece of a long line
            continues = re.search(
                r"⏎\[line \d+ continues: pvf_read_file startLine=(\d+) startColumn=(\d+)\]$", body
            )
            chunk = body[: continues.start()] if continues else body.rsplit("\n[line", 1)[0]
            if int(piece.group(3)) == 0:
                lines.append(chunk)
            else:
                lines[-1] += chunk
            if continues:
                column = int(continues.group(2))
                continue
            start, column = int(piece.group(1)) + 1, 0
            if start > int(piece.group(2)):
                return lines, calls
            continue
        span = re.search(r"lines (\d+)-(\d+) of (\d+)", head)
        assert span, head
        lines.extend(body.split("\n"))
        more = re.search(r"\(more: startLine=(\d+)\)", head)
        if not more:
            return lines, calls
        start, column = int(more.group(1)), 0


def test_a_3mb_line_and_a_4mb_plan_read_text_only_page_by_page(tmp_path: Path) -> None:
    archive = write_sample_archive(tmp_path / "Script.pvf", files=20)
    big_a, big_b = 3_000_000, 1_200_000
    source = (
        'pvf.createFile("equipment/weapon/long_a.equ", pvf.types.script,'
        f' "#PVF_File\\n\\n[name]\\n\\t`" + "a".repeat({big_a}) + "`\\n");\n'
        'pvf.createFile("equipment/weapon/long_b.equ", pvf.types.script,'
        f' "#PVF_File\\n\\n[name]\\n\\t`" + "b".repeat({big_b}) + "`\\n");\n'
    )

    with Workbench(PvfService(), port=0) as bench:
        opened = bench.open_at_start(archive)
        ws, revision = opened["workspaceId"], opened["revision"]

        async def flow() -> None:
            async with http_client(bench.url, bench.token) as client:
                started = json.loads(
                    await _text(
                        client,
                        "pvf_script_run",
                        {"workspaceId": ws, "expectedRevision": revision, "source": source},
                    )
                )
                task = started["taskId"]
                for _ in range(600):
                    status = await _text(client, "pvf_script_status", {"taskId": task})
                    if "succeeded" in status.split("\n")[0] or "failed" in status.split("\n")[0]:
                        break
                    await anyio.sleep(0.05)
                assert "succeeded" in status.split("\n")[0], status[:2000]
                plan = re.search(r"^planId (\S+)$", status, re.M)
                assert plan, status[:2000]
                # the 4.2 MB preview: first page, then every further page, never more than the budget
                whole, pages, args = "", 0, {"planId": plan.group(1), "limit": 5}
                while True:  # plan pages by nextCursor, each answer in budget-sized text pages
                    first = await _text(client, "pvf_script_preview", args)
                    text, count = await _all_pages(client, first)
                    whole, pages = whole + text + "\n", pages + count
                    cursor = re.search(r"^nextCursor: (\S+)$", text, re.M)
                    if cursor is None:
                        break
                    args = {**args, "cursor": cursor.group(1)}
                assert pages >= (big_a + big_b) // TEXT_BUDGET
                assert re.search(f"a{{{big_a}}}", whole) and re.search(f"b{{{big_b}}}", whole)
                keys = re.findall(r"^changeKey (\S+):", whole, re.M)
                assert len(keys) == 2 and "end of the plan" in whole
                applied = json.loads(
                    await _text(
                        client,
                        "pvf_script_apply",
                        {"planId": plan.group(1), "expectedRevision": revision, "changeKeys": keys},
                    )
                )
                assert applied["revision"] == revision + 1
                # search pages by the cursor in the text to the end, and finds what one big page finds
                paged, args = [], {"workspaceId": ws, "query": "price", "limit": 3}
                while True:
                    text = await _text(client, "pvf_search", args)
                    paged += [ln for ln in text.split("\n")[1:] if ln.startswith("equipment/")]
                    cursor = re.search(r"^nextCursor: (\S+)$", text, re.M)
                    if cursor is None:
                        assert text.endswith("end of the hits")
                        break
                    args = {**args, "cursor": cursor.group(1)}
                one = await _text(client, "pvf_search", {"workspaceId": ws, "query": "price", "limit": 100})
                assert (
                    paged == [ln for ln in one.split("\n")[1:] if ln.startswith("equipment/")]
                    and len(paged) > 3
                )
                # the 3 MB line, read text-only: pieces with continuation markers, all of it
                lines, calls = await _read_whole_file(client, ws, "equipment/weapon/long_a.equ")
                assert calls >= big_a // TEXT_BUDGET
                assert any(line.count("a") == big_a and set(line) <= {"a", "`", "\t"} for line in lines)

        anyio.run(flow)


def test_ra3_lists_page_to_the_end_text_only(tmp_path: Path, monkeypatch: Any) -> None:
    from moddesk.kit.mcp import serve_http
    from moddesk.ra3.agent.demo import write_demo_mod
    from moddesk.ra3.agent.endpoints import HOME_ENV
    from moddesk.ra3.agent.mcp import Ra3Backend, build_server
    from moddesk.ra3.core.snapshot import write_snapshot
    from moddesk.ra3.index_cli import run_index

    monkeypatch.setenv(HOME_ENV, str(tmp_path / "home"))
    project = write_demo_mod(tmp_path / "mod")
    index = run_index(project, quiet=True)
    assert index.data is not None
    write_snapshot(index.data, index.status())

    async def flow(url: str) -> None:
        async with Client(url) as client:
            seen: list[str] = []
            args: dict[str, Any] = {"type": "GameObject", "limit": 1}
            while True:
                text = await _text(client, "list_assets_by_type", args)
                result = json.loads(text.split("\n")[-1])  # the head line, then the complete JSON
                seen += [a["id"] for a in result["assets"]]
                if not result.get("nextCursor"):
                    break
                args = {**args, "cursor": result["nextCursor"]}
            whole = await _text(client, "list_assets_by_type", {"type": "GameObject", "limit": 500})
            everything = json.loads(whole.split("\n")[-1])
            assert seen == [a["id"] for a in everything["assets"]] and len(seen) > 1

    with serve_http(build_server(Ra3Backend(project)), 0) as server:
        anyio.run(flow, f"{server.url}/mcp")
