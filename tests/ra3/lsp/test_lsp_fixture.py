"""`moddesk ra3 lsp` end to end over the hand-written fixture: a real subprocess driven by pytest-lsp."""

from __future__ import annotations

import asyncio
import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from lsp_fixture import write_fixture
from lsp_session import change_doc, command, open_doc, position_of, start, uri, wait_diagnostics, wait_ready
from lsprotocol import types as lsp

from moddesk.ra3.agent.endpoints import HOME_ENV, endpoint_path_for_project
from moddesk.ra3.agent.mcp import Ra3Backend
from moddesk.ra3.core.index import ModIndex
from moddesk.ra3.core.project import detect_project
from moddesk.ra3.core.query import QueryApi
from moddesk.ra3.core.snapshot import snapshot_path
from moddesk.ra3.lsp.positions import to_utf16

pytestmark = pytest.mark.asyncio(loop_scope="function")


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    return write_fixture(tmp_path / "sdk root")


def _in_process(project: Path) -> QueryApi:
    index = ModIndex(detect_project(project))
    index.build()
    return QueryApi(index)


def _u16(project: Path, site: dict) -> int:  # type: ignore[type-arg]
    """A find_references site's column (code points) as the UTF-16 column an editor uses."""
    row = (project / site["file"]).read_text("utf-8").split("\n")[site["line"] - 1]
    return to_utf16(row, site["character"])


def _loc(location: lsp.Location) -> tuple[str, int]:
    return location.uri, location.range.start.line


async def test_definition_references_hover(project: Path, tmp_path: Path) -> None:
    client = await start(project, tmp_path / "home")
    try:
        await wait_ready(client)
        tank = project / "Data" / "Units" / "SampleTank.xml"
        text = tank.read_text("utf-8")
        doc = open_doc(client, tank)
        weapons = uri(project / "Data" / "Weapons.xml")
        gun_line = (
            (project / "Data" / "Weapons.xml")
            .read_text("utf-8")
            .split("\n")
            .index(
                '  <WeaponTemplate id="SampleTankGun" inheritFrom="BaseCannon" ProjectileObject="SampleScout"/>'
            )
        )

        async def define(pos: lsp.Position, path: Path) -> list[lsp.Location]:
            got = await client.text_document_definition_async(
                lsp.DefinitionParams(lsp.TextDocumentIdentifier(uri(path)), pos)
            )
            assert isinstance(got, list)
            return got

        # attribute reference -> the WeaponTemplate's id in Weapons.xml
        hits = await define(position_of(text, 'WeaponName="SampleTankGun"', 14), tank)
        assert [_loc(h) for h in hits] == [(weapons, gun_line)]
        assert hits[0].range.start.character == len('  <WeaponTemplate id="')
        # element-content reference -> SampleScout, a GameObject
        hits = await define(position_of(text, "<IncludeThing>SampleScout", 16), tank)
        assert [_loc(h) for h in hits] == [(doc, text.count("\n", 0, text.index('id="SampleScout"')))]
        # a qualified inheritFrom -> the SDK base object
        hits = await define(position_of(text, "GameObject:BaseVehicle", 13), tank)
        assert hits and hits[0].uri.endswith("BaseObjects/BaseVehicle.xml")
        # include source, and an ART: path with the two-letter folder rule
        mod = project / "Data" / "Mod.xml"
        mod_text = mod.read_text("utf-8")
        hits = await define(position_of(mod_text, 'source="Weapons.xml"', 9), mod)
        assert [h.uri for h in hits] == [weapons]
        hits = await define(position_of(mod_text, 'source="art:TAtank.w3x"', 10), mod)
        assert hits and hits[0].uri.endswith("Art/ta/TATank.w3x")

        # references on the asset id == find_references, every site
        refs = await client.text_document_references_async(
            lsp.ReferenceParams(
                text_document=lsp.TextDocumentIdentifier(doc),
                position=position_of(text, 'id="SampleScout"', 6),
                context=lsp.ReferenceContext(include_declaration=False),
            )
        )
        assert refs is not None
        expected = _in_process(project).find_references("SampleScout", "GameObject")["references"]
        assert len(expected) == 3
        assert sorted(_loc(r) for r in refs) == sorted(
            (uri(project / e["file"]), e["line"] - 1) for e in expected
        )
        # UTF-16 columns: a reference after an astral character (2 UTF-16 units, 1 code point)
        chain = project / "Data" / "Units" / "Chain.xml"
        row = next(r for r in chain.read_text("utf-8").split("\n") if "😀" in r)
        row_no = chain.read_text("utf-8").split("\n").index(row)
        col16 = row.index('WeaponName="') + len('WeaponName="') + 1
        gun_refs = await client.text_document_references_async(
            lsp.ReferenceParams(
                text_document=lsp.TextDocumentIdentifier(weapons),
                position=lsp.Position(gun_line, len('  <WeaponTemplate id="') + 2),
                context=lsp.ReferenceContext(include_declaration=False),
            )
        )
        assert gun_refs is not None
        astral = [r for r in gun_refs if r.uri == uri(chain) and r.range.start.line == row_no]
        assert [(r.range.start.character, r.range.end.character) for r in astral] == [(col16, col16 + 13)]
        hits = await define(lsp.Position(row_no, col16 + 12), chain)  # on the last character, "n"
        assert [_loc(h) for h in hits] == [(weapons, gun_line)]

        at = position_of(text, 'id="SampleScout"', 6)
        labelled = await client.protocol.send_request_async(
            "moddesk/references",
            {"textDocument": {"uri": doc}, "position": {"line": at.line, "character": at.character}},
        )
        assert sorted(row["label"] for row in labelled) == sorted(
            f"{e['kind']}: {e['from']['type']}:{e['from']['id']} "
            + f"{e['parent'] + '/' if e['parent'] else ''}{e['element']}"
            + (f"@{e['attribute']}" if e["attribute"] else "")
            for e in expected
        )
        assert {row["kind"] for row in labelled} == {"weak"}

        # hover: type, where defined, reference count; XSD documentation of an attribute
        hover = await client.text_document_hover_async(
            lsp.HoverParams(
                lsp.TextDocumentIdentifier(doc), position_of(text, 'WeaponName="SampleTankGun"', 15)
            )
        )
        assert hover is not None
        value = hover.contents.value  # type: ignore[union-attr]
        assert "**WeaponTemplate** `SampleTankGun`" in value and f"Data/Weapons.xml:{gun_line + 1}" in value
        assert "referenced 4 time(s) (strong 4)" in value
        assert "The weapon this nugget fires." in value  # the XSD documentation of WeaponName
        hover = await client.text_document_hover_async(
            lsp.HoverParams(lsp.TextDocumentIdentifier(doc), position_of(text, "CommandSet=", 2))
        )
        assert hover is not None and "The command set shown" in hover.contents.value  # type: ignore[union-attr]
        hover = await client.text_document_hover_async(
            lsp.HoverParams(lsp.TextDocumentIdentifier(doc), position_of(text, "=$TANK_COST", 3))
        )
        assert hover is not None and "`$TANK_COST` = `900`" in hover.contents.value  # type: ignore[union-attr]
    finally:
        await client.shutdown_session()


async def test_diagnostics_follow_unsaved_edits(project: Path, tmp_path: Path) -> None:
    client = await start(project, tmp_path / "home")
    try:
        await wait_ready(client)
        tank = project / "Data" / "Units" / "SampleTank.xml"
        text = tank.read_text("utf-8")
        doc = open_doc(client, tank)
        codes = lambda ds: {str(d.code) for d in ds}  # noqa: E731
        first = await wait_diagnostics(client, doc, lambda ds: "AMBIGUOUS_REFERENCE" in codes(ds))
        assert "UNRESOLVED_REFERENCE" not in codes(first)

        broken = text.replace('WeaponName="SampleTankGun"', 'WeaponName="SampleTankGunX"')
        change_doc(client, doc, broken, 2)
        after = await wait_diagnostics(client, doc, lambda ds: "UNRESOLVED_REFERENCE" in codes(ds))
        bad = next(d for d in after if d.code == "UNRESOLVED_REFERENCE")
        assert bad.range.start == position_of(broken, 'WeaponName="SampleTankGunX"', 12)
        assert bad.message.startswith("mod-local") and bad.severity == lsp.DiagnosticSeverity.Warning
        assert tank.read_text("utf-8") == text  # nothing was saved

        wrong = text.replace('WeaponName="SampleTankGun"', 'WeaponName="SampleScout"')
        change_doc(client, doc, wrong, 3)
        after = await wait_diagnostics(client, doc, lambda ds: "REFERENCE_WRONG_TYPE" in codes(ds))
        assert (
            next(d for d in after if d.code == "REFERENCE_WRONG_TYPE").severity
            == lsp.DiagnosticSeverity.Error
        )

        change_doc(client, doc, text, 4)
        fixed = await wait_diagnostics(
            client, doc, lambda ds: not codes(ds) & {"UNRESOLVED_REFERENCE", "REFERENCE_WRONG_TYPE"}
        )
        assert "AMBIGUOUS_REFERENCE" in codes(fixed)

        change_doc(client, doc, text.replace("</Behaviors>", "</Behaviours>", 1), 5)
        await wait_diagnostics(client, doc, lambda ds: "XML_MALFORMED" in codes(ds))

        # pull diagnostics agree; a file no stream includes says so; a missing include is reported
        change_doc(client, doc, text, 6)
        await wait_diagnostics(client, doc, lambda ds: "XML_MALFORMED" not in codes(ds))
        pulled = await client.text_document_diagnostic_async(
            lsp.DocumentDiagnosticParams(lsp.TextDocumentIdentifier(doc))
        )
        assert "AMBIGUOUS_REFERENCE" in {str(d.code) for d in pulled.items}  # type: ignore[union-attr]
        unused = open_doc(client, project / "Data" / "Units" / "Unused.xml")
        await wait_diagnostics(client, unused, lambda ds: codes(ds) == {"FILE_INACTIVE"})
        mod = open_doc(client, project / "Data" / "Mod.xml")
        await wait_diagnostics(client, mod, lambda ds: "INCLUDE_NOT_FOUND" in codes(ds))
    finally:
        await client.shutdown_session()


async def test_completion_rename_symbols(project: Path, tmp_path: Path) -> None:
    client = await start(project, tmp_path / "home")
    try:
        await wait_ready(client)
        tank = project / "Data" / "Units" / "SampleTank.xml"
        text = tank.read_text("utf-8")
        doc = open_doc(client, tank)

        async def labels(edited: str, needle: str, offset: int) -> set[str]:
            change_doc(client, doc, edited, 2)
            got = await client.text_document_completion_async(
                lsp.CompletionParams(lsp.TextDocumentIdentifier(doc), position_of(edited, needle, offset))
            )
            assert isinstance(got, lsp.CompletionList)
            return {i.label for i in got.items}

        # ids of the expected type only: WeaponTemplates for WeaponName, GameObjects for IncludeThing
        assert await labels(text, 'WeaponName="SampleTankGun"', 12) == {"SampleTankGun", "BaseCannon"}
        things = await labels(text, "<IncludeThing>SampleScout", 14)
        assert {"SampleScout", "SampleTank", "BaseVehicle", "ChainTop"} <= things
        assert "SampleTankGun" not in things and "SampleTankCommandSet" not in things
        edited = text.replace('BuildCost="=$TANK_COST"', 'BuildCost="=$TANK_COST" Side=""')
        assert await labels(edited, 'Side="', 6) == {"Allies", "Soviet", "Japan"}
        assert {"CommandSet", "Side", "inheritFrom"} <= await labels(edited, 'BuildCost="', 0)
        edited = text.replace("    </Behaviors>", "    <\n    </Behaviors>", 1)
        assert {"FireWeaponUpdate", "WeaponSetUpdate", "CreateObjectDie"} == await labels(
            edited, "    <\n", 5
        )
        change_doc(client, doc, text, 3)

        # include paths: files and folders next to the including document
        mod = project / "Data" / "Mod.xml"
        mod_text = mod.read_text("utf-8")
        mod_doc = open_doc(client, mod)
        got = await client.text_document_completion_async(
            lsp.CompletionParams(
                lsp.TextDocumentIdentifier(mod_doc), position_of(mod_text, 'source="Weapons.xml"', 8)
            )
        )
        assert isinstance(got, lsp.CompletionList)
        assert {"Weapons.xml", "Units/", "Broken.xml"} <= {i.label for i in got.items}
        assert "Mod.xml" not in {i.label for i in got.items}  # not itself

        # rename: the definition plus exactly the reference sites find_references lists
        pos = position_of(text, 'WeaponName="SampleTankGun"', 14)
        prepared = await client.text_document_prepare_rename_async(
            lsp.PrepareRenameParams(lsp.TextDocumentIdentifier(doc), pos)
        )
        assert prepared is not None and prepared.placeholder == "SampleTankGun"  # type: ignore[union-attr]
        edit = await client.text_document_rename_async(
            lsp.RenameParams(lsp.TextDocumentIdentifier(doc), pos, "SampleTankCannon")
        )
        assert edit is not None and edit.changes is not None
        sites = sorted(
            (u, e.range.start.line, e.range.start.character) for u, es in edit.changes.items() for e in es
        )
        api = _in_process(project)
        refs = api.find_references("SampleTankGun", "WeaponTemplate")["references"]
        defined = api.find_asset("SampleTankGun", "WeaponTemplate")["assets"]
        assert len(sites) == len(refs) + len(defined) == 5
        assert {(uri(project / r["file"]), r["line"] - 1, _u16(project, r)) for r in refs} <= set(sites)
        assert all(e.new_text == "SampleTankCannon" for es in edit.changes.values() for e in es)

        for needle, offset in (('inheritFrom="GameObject:BaseVehicle', 25), ('VoiceSelect="TankVoice"', 14)):
            with pytest.raises(Exception, match="RENAME_REFUSED"):
                await client.text_document_prepare_rename_async(
                    lsp.PrepareRenameParams(
                        lsp.TextDocumentIdentifier(doc), position_of(text, needle, offset)
                    )
                )

        chain = uri(project / "Data" / "Units" / "Chain.xml")
        syms = await client.text_document_document_symbol_async(
            lsp.DocumentSymbolParams(lsp.TextDocumentIdentifier(chain))
        )
        assert [s.name for s in syms or []] == ["ChainBase", "ChainMid", "ChainTop"]
        found = await client.workspace_symbol_async(lsp.WorkspaceSymbolParams(query="chain"))
        assert {s.name for s in found or []} == {"ChainBase", "ChainMid", "ChainTop"}
    finally:
        await client.shutdown_session()


async def test_resolved_view_of_a_three_level_chain(project: Path, tmp_path: Path) -> None:
    client = await start(project, tmp_path / "home")
    try:
        await wait_ready(client)
        answer = await command(client, "moddesk.ra3.resolvedAsset", "GameObject", "ChainTop")
    finally:
        await client.shutdown_session()
    _check_chain(answer)
    env = {**os.environ, "RA3MODXML_HOME": str(tmp_path / "cli home")}
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "moddesk",
            "ra3",
            "query",
            "resolved",
            "GameObject:ChainTop",
            "--fresh",
            "--json",
            "-p",
            str(project),
        ],
        capture_output=True,
        text=True,
        env=env,
        check=True,
        stdin=subprocess.DEVNULL,
    )
    _check_chain(json.loads(out.stdout))


def _check_chain(answer: dict) -> None:  # type: ignore[type-arg]
    assert [c["id"] for c in answer["chain"]] == ["ChainTop", "ChainMid", "ChainBase"]
    tree = answer["resolved"]
    attrs = tree["attributes"]
    assert attrs["id"]["value"] == "ChainTop" and "inheritFrom" not in attrs
    assert (attrs["Side"]["value"], attrs["Side"]["from"]) == ("Soviet", "GameObject:ChainTop")
    assert (attrs["BuildCost"]["value"], attrs["BuildCost"]["from"]) == ("200", "GameObject:ChainMid")
    assert (attrs["CommandSet"]["from"], attrs["CommandSet"]["line"]) == ("GameObject:ChainBase", 4)
    assert attrs["CommandSet"]["file"] == "Data/Units/Chain.xml"
    assert (attrs["KindOf"]["value"], attrs["KindOf"]["from"]) == (
        "SELECTABLE VEHICLE",
        "GameObject:ChainTop",
    )
    behaviors = tree["children"][0]["children"]
    ids = [m["attributes"]["id"]["value"] for m in behaviors]
    assert ids == ["ModuleTag_Gun", "ModuleTag_Set"]  # Death removed by ChainTop
    gun = behaviors[0]
    assert gun["from"] == "GameObject:ChainMid" and len(gun["children"]) == 2  # replaced by ChainMid


async def test_mcp_answers_from_the_editors_unsaved_text(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv(HOME_ENV, str(home))  # where this process reads the endpoint files
    client = await start(project, home)
    backend = Ra3Backend(project)
    try:
        await wait_ready(client)
        tank = project / "Data" / "Units" / "SampleTank.xml"
        text = tank.read_text("utf-8")
        doc = open_doc(client, tank)
        line = '  <Texture id="SampleTank_Icon"/>\n'
        change_doc(client, doc, text.replace(line, line + '  <Texture id="UnsavedIcon"/>\n'), 2)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 30
        while True:
            answer = await asyncio.to_thread(backend.ask, "find_asset", {"id": "UnsavedIcon"})
            if answer.source == "live" and answer.result["found"]:
                break
            assert loop.time() < deadline, f"the live index never showed the unsaved asset: {answer}"
            await asyncio.sleep(0.2)
        resolved = await asyncio.to_thread(
            backend.ask, "get_resolved_asset", {"type": "GameObject", "id": "ChainTop"}
        )
        assert resolved.source == "live"
        _check_chain(resolved.result)
        assert endpoint_path_for_project(project).exists()
    finally:
        await client.shutdown_session()
    assert not endpoint_path_for_project(project).exists()  # withdrawn on shutdown
    saved = snapshot_path(str(project))  # written on exit only from what is on disk, never unsaved text
    assert not saved.exists() or b"UnsavedIcon" not in gzip.decompress(saved.read_bytes())


async def test_a_pulling_client_gets_pulled_diagnostics_only(project: Path, tmp_path: Path) -> None:
    client = await start(project, tmp_path / "home", capabilities="neovim")
    try:
        await wait_ready(client)
        tank = project / "Data" / "Units" / "SampleTank.xml"
        text = tank.read_text("utf-8")
        doc = open_doc(client, tank)
        broken = text.replace('WeaponName="SampleTankGun"', 'WeaponName="SampleTankGunX"')
        change_doc(client, doc, broken, 2)
        ident = lsp.TextDocumentIdentifier(doc)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 30
        while True:  # the edit is indexed in the background; pull until it shows
            report = await client.text_document_diagnostic_async(lsp.DocumentDiagnosticParams(ident))
            codes = {str(d.code) for d in report.items}  # type: ignore[union-attr]
            if "UNRESOLVED_REFERENCE" in codes:
                break
            assert loop.time() < deadline, codes
            await asyncio.sleep(0.1)
        assert "AMBIGUOUS_REFERENCE" in codes
        assert doc not in client.diagnostics  # nothing was pushed: no duplicates beside the pulled ones
    finally:
        await client.shutdown_session()


async def test_an_unsaved_include_edit_activates_another_open_file(project: Path, tmp_path: Path) -> None:
    client = await start(project, tmp_path / "home")
    try:
        await wait_ready(client)
        codes = lambda ds: {str(d.code) for d in ds}  # noqa: E731
        unused = open_doc(client, project / "Data" / "Units" / "Unused.xml")
        await wait_diagnostics(client, unused, lambda ds: "FILE_INACTIVE" in codes(ds))
        mod = project / "Data" / "Mod.xml"
        text = mod.read_text("utf-8")
        doc = open_doc(client, mod)
        enabled = text.replace(
            '<!-- <Include type="all" source="Units/Unused.xml"/> -->',
            '<Include type="all" source="Units/Unused.xml"/>',
        )
        assert enabled != text
        change_doc(client, doc, enabled, 2)  # the include graph changes: a re-walk, from the buffer
        await wait_diagnostics(client, unused, lambda ds: "FILE_INACTIVE" not in codes(ds))
        change_doc(client, doc, text, 3)
        await wait_diagnostics(client, unused, lambda ds: "FILE_INACTIVE" in codes(ds))
    finally:
        await client.shutdown_session()
