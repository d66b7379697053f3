"""The three annotation tools through the official SDK Client over Streamable HTTP, on a real archive."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from moddesk.kit.mcp import result_payload
from moddesk.pvf.agent.serve import Workbench
from moddesk.pvf.archive import Archive
from moddesk.pvf.service import PvfService

BLADE = "equipment/weapon/blade.equ"
BLADE_TEXT = (
    "#PVF_File\r\n\r\n[name]\r\n\t`龙之刃 🐉 Blade`\r\n\r\n[basic explain]\r\n\t`斩击 <3::name_7> +5%%`\r\n\r\n"
    "[rarity]\r\n\t4\r\n\r\n[price]\r\n\t1200\r\n\r\n"
    "[set item]\r\n\t100\t101\t102\t999\r\n[/set item]\r\n\r\n"
    "[skill levelup]\r\n\t`[swordman]`\t7\t1\r\n\t`[gunner]`\t3\t1\r\n[/skill levelup]\r\n\r\n"
    "[required skill]\r\n\t7\r\n\r\n"
    "[if]\r\n\t[attack success]\r\n\t\t1\r\n[/if]\r\n\r\n[then]\r\n\t[target]\r\n\t\t`enemy`\t-1\r\n[/then]\r\n\r\n"
    "[if]\r\n\t[attack success]\r\n\t\t1\r\n[/if]\r\n\r\n[then]\r\n\t[target]\r\n\t\t`myself`\t-1\r\n[/then]\r\n"
)


def _archive(path: Path) -> Path:
    archive = Archive.new("90CN")
    archive.write_text(
        "equipment/equipment.lst",
        "#PVF_File\n\n100\n`weapon/blade.equ`\n101\n`weapon/bow.equ`\n102\n`weapon/gone.equ`\n",
    )
    archive.write_text(BLADE, BLADE_TEXT)
    archive.write_text("equipment/weapon/bow.equ", "#PVF_File\n\n[name]\n\t`长弓`\n")
    archive.write_text("skill/swordmanskill.lst", "#PVF_File\n\n7\n`swordman/cut.skl`\n")
    archive.write_text("skill/swordman/cut.skl", "#PVF_File\n\n[name]\n\t`十字斩`\n")
    archive.save_as(path)
    archive.close()
    return path


@pytest.fixture
def rules_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "user rules"
    folder.mkdir()
    return folder


@pytest.fixture
def service(rules_dir: Path) -> PvfService:
    return PvfService(rules_dir=rules_dir)


@pytest.fixture
def bench(service: PvfService, tmp_path: Path) -> Iterator[Workbench]:
    with Workbench(service, port=0, roots=[tmp_path]) as running:
        yield running


async def ok(client: Client, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(tool, args)
    assert not result.is_error, result.structured_content
    assert result.structured_content is not None
    return dict(result.structured_content)


async def fails(client: Client, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(tool, args)
    assert result.is_error, result.structured_content
    assert result.structured_content is None  # errors are the JSON text block only
    payload = result_payload(result)
    assert payload is not None and payload["ok"] is False
    return dict(payload)


async def open_archive(client: Client, path: Path) -> dict[str, Any]:
    info = await ok(client, "pvf_workspace_info", {})
    view = await ok(
        client, "pvf_archive_open", {"path": str(path), "expectedWorkspaceEpoch": info["workspaceEpoch"]}
    )
    assert view["state"] == "succeeded", view
    return dict(view["result"])


def _js_slice(text: str, start: int, end: int) -> str:
    return text.encode("utf-16-le")[2 * start : 2 * end].decode("utf-16-le")


def test_annotation_tools_over_mcp(
    bench: Workbench, service: PvfService, tmp_path: Path, rules_dir: Path
) -> None:
    archive = _archive(tmp_path / "Script 90cn.pvf")

    async def flow() -> None:
        async with bench.client() as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            for name in ("pvf_annotation_search", "pvf_annotation_get", "pvf_annotation_explain"):
                hints = tools[name].annotations
                assert hints is not None and hints.read_only_hint is True

            # current version without an archive: NO_ARCHIVE; explicit versions work without one
            no_archive = await fails(
                client, "pvf_annotation_search", {"workspaceId": "none", "pvfVersion": "current"}
            )
            assert no_archive["error"] == "NO_ARCHIVE"
            bad = await fails(client, "pvf_annotation_search", {"pvfVersion": "95XX"})
            assert bad["error"] == "INVALID_VERSION" and "110US" in bad["supportedVersions"]
            browse = await ok(client, "pvf_annotation_search", {"pvfVersion": "all", "limit": 5})
            assert len(browse["items"]) == 5 and browse["nextCursor"]

            opened = await open_archive(client, archive)
            ws, revision = opened["workspaceId"], opened["revision"]

            # the seed's example: equipment price, for a file that does not exist yet
            found = await ok(
                client,
                "pvf_annotation_search",
                {
                    "workspaceId": ws,
                    "pvfVersion": "current",
                    "filePath": "equipment/example.equ",
                    "section": "price",
                    "limit": 20,
                },
            )
            assert found["context"]["pvfVersion"] == "90CN"
            rule = next(i for i in found["items"] if i["ruleId"] == "equ.price")
            assert rule["applicability"] == "matched" and rule["effective"] is True
            detail = await ok(
                client,
                "pvf_annotation_get",
                {"documentId": rule["documentId"], "rulesRevision": found["rulesRevision"]},
            )
            assert (
                detail["definitionsOmitValues"] is True
                and detail["resolvedDefinition"]["fieldId"] == "item.price"
            )
            rarity = next(
                i
                for i in (
                    await ok(client, "pvf_annotation_search", {"pvfVersion": "all", "query": "equ.rarity"})
                )["items"]
            )
            hit = await ok(
                client,
                "pvf_annotation_get",
                {"documentId": rarity["documentId"], "rulesRevision": found["rulesRevision"], "value": "4"},
            )
            assert hit["value"]["found"] is True and "史诗" in hit["value"]["label"]

            # explain the real file: ranges agree with read_file's text
            read = await ok(client, "pvf_read_file", {"workspaceId": ws, "path": BLADE})
            text = read["text"].replace("\r\n", "\n")
            explained = await ok(
                client,
                "pvf_annotation_explain",
                {"workspaceId": ws, "filePath": BLADE, "expectedRevision": revision, "limit": 100},
            )
            assert explained["contentSource"] == "workspace" and explained["revision"] == revision
            assert explained["rulesRevision"] == found["rulesRevision"]
            anns = explained["annotations"]
            for ann in anns:
                if ann.get("rawValue") and ann["type"] not in ("image", "placeholder"):
                    assert _js_slice(text, ann["range"]["start"], ann["range"]["end"]) == ann["rawValue"]
            name = next(a for a in anns if a["ruleIds"] == ["equ.name"])
            assert name["value"] == "龙之刃 🐉 Blade"
            assert [p["ruleIds"][0] for p in explained["pathContext"]] == ["dir.equipment", "path.equ"]
            refs = {a["value"]: a["reference"] for a in anns if a["ruleIds"] == ["equ.set-item"]}
            assert refs["100"]["resolutionStatus"] == "resolved" and refs["100"]["name"] == "龙之刃 🐉 Blade"
            assert refs["101"]["resolutionStatus"] == "resolved" and refs["101"]["name"] == "长弓"
            assert (
                refs["102"]["resolutionStatus"] == "missing"
                and refs["102"]["path"] == "equipment/weapon/gone.equ"
            )
            assert refs["999"]["resolutionStatus"] == "missing"
            skills = {
                a["reference"]["context"]: a["reference"]
                for a in anns
                if a["ruleIds"] == ["equ.skill-levelup.skill"]
            }
            assert (
                skills["[swordman]"]["resolutionStatus"] == "resolved"
                and skills["[swordman]"]["name"] == "十字斩"
            )
            assert skills["[gunner]"]["resolutionStatus"] == "missing"
            required = next(a for a in anns if a["ruleIds"] == ["equ.required-skill"])
            assert required["reference"]["resolutionStatus"] == "context_required"
            placeholder = next(a for a in anns if a["type"] == "placeholder")
            assert placeholder["origin"] == "runtime" and placeholder["documentIds"] == []
            assert [a["occurrence"] for a in anns if a["ruleIds"] == ["equ.then"]] == [0, 1]
            second = await ok(
                client,
                "pvf_annotation_explain",
                {"workspaceId": ws, "filePath": BLADE, "section": "then/target", "occurrence": 1},
            )
            assert [a["value"] for a in second["annotations"] if a["ruleIds"] == ["equ.then.target"]] == [
                "myself"
            ]

            # paging, then a failed hot reload keeps the revision and the cursors
            page = await ok(
                client, "pvf_annotation_explain", {"workspaceId": ws, "filePath": BLADE, "limit": 3}
            )
            assert page["nextCursor"]
            (rules_dir / "mine.json").write_text('{"rules": [{"id": "x"}]}', "utf-8")
            from moddesk.kit.errors import ServiceError
            from moddesk.pvf.annotations import user_rule_sources

            with pytest.raises(ServiceError):
                service.annotations.reload_texts(user_rule_sources(rules_dir))
            again = await ok(
                client,
                "pvf_annotation_explain",
                {"workspaceId": ws, "filePath": BLADE, "limit": 3, "cursor": page["nextCursor"]},
            )
            assert again["rulesRevision"] == found["rulesRevision"] and again["annotations"] == anns[3:6]
            moved = await fails(
                client,
                "pvf_annotation_explain",
                {
                    "workspaceId": ws,
                    "filePath": BLADE,
                    "limit": 3,
                    "cursor": page["nextCursor"],
                    "section": "price",
                },
            )
            assert moved["error"] == "INVALID_CURSOR"

            (rules_dir / "mine.json").write_text(
                json.dumps({"rules": [{"id": "equ.price", "disabled": True}]}), "utf-8"
            )
            service.annotations.reload_texts(user_rule_sources(rules_dir))
            stale = await fails(
                client,
                "pvf_annotation_explain",
                {"workspaceId": ws, "filePath": BLADE, "limit": 3, "cursor": page["nextCursor"]},
            )
            assert stale["error"] == "STALE_RULES"
            stale_get = await fails(
                client,
                "pvf_annotation_get",
                {"documentId": rule["documentId"], "rulesRevision": found["rulesRevision"]},
            )
            assert stale_get["error"] == "STALE_RULES"
            shown = await ok(
                client,
                "pvf_annotation_search",
                {
                    "workspaceId": ws,
                    "pvfVersion": "current",
                    "query": "equ.price",
                    "status": "all",
                    "kinds": ["rule"],
                },
            )
            assert [(i["effective"], i["status"]) for i in shown["items"]] == [(False, "disabled")]
            missing = await fails(
                client, "pvf_annotation_explain", {"workspaceId": ws, "filePath": "equipment/none.equ"}
            )
            assert missing["error"] == "NOT_FOUND"

    anyio.run(flow)


def test_the_agent_sees_no_machine_folder_and_binaries_are_not_explained(
    bench: Workbench, tmp_path: Path, rules_dir: Path
) -> None:
    """#35: the rules folder stays the person's (workspace info names files, not folders); explain on
    a binary entry says it is not text instead of an empty success."""
    archive = Archive.new("classic", region="cn")
    archive.write_text("equipment/weapon/bow.equ", "#PVF_File\n\n[name]\n\t`长弓`\n")
    archive.write_bytes("sprite/icon.img", bytes(range(256)) * 4)
    archive.save_as(tmp_path / "with binaries.pvf")
    archive.close()
    (rules_dir / "mine.json").write_text("{", "utf-8")

    async def flow() -> None:
        async with bench.client() as client:
            opened = await open_archive(client, tmp_path / "with binaries.pvf")
            ws = opened["workspaceId"]
            info = await ok(client, "pvf_workspace_info", {"workspaceId": ws})
            status = info["annotationStatus"]
            assert "mine.json" in status or "user rules" in status
            assert str(rules_dir) not in status and str(tmp_path) not in status
            for binary in ("sprite/icon.img", "stringtable.bin"):
                refused = await fails(
                    client, "pvf_annotation_explain", {"workspaceId": ws, "filePath": binary}
                )
                assert refused["error"] == "NOT_TEXT" and binary in refused["message"], refused
                assert refused["hint"]
            explained = await ok(
                client, "pvf_annotation_explain", {"workspaceId": ws, "filePath": "equipment/weapon/bow.equ"}
            )
            assert explained["filePath"] == "equipment/weapon/bow.equ"

    anyio.run(flow)
