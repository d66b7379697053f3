"""`moddesk demo ra3`: index real (or sample) SAGE data, then query a live index through the MCP server."""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from moddesk.kit.mcp import result_payload

DEMO_SCHEMA = """<?xml version="1.0" encoding="utf-8"?>
<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema" xmlns:xas="uri:ea.com:eala:asset:schema"
           xmlns="uri:ea.com:eala:asset" targetNamespace="uri:ea.com:eala:asset"
           elementFormDefault="qualified">
  <xs:simpleType name="InstanceId"><xs:restriction base="xs:string"/></xs:simpleType>
  <xs:simpleType name="AssetReference"><xs:restriction base="xs:string"/></xs:simpleType>
  <xs:simpleType name="WeakReference"><xs:restriction base="xs:string"/></xs:simpleType>
  <xs:simpleType name="FileReference"><xs:restriction base="xs:anyURI"/></xs:simpleType>
  <xs:complexType name="BaseAssetType">
    <xs:attribute name="id" type="InstanceId" use="required"/>
  </xs:complexType>
  <xs:complexType name="BaseInheritableAsset">
    <xs:complexContent><xs:extension base="BaseAssetType">
      <xs:attribute name="inheritFrom" type="xs:string"/>
    </xs:extension></xs:complexContent>
  </xs:complexType>
  <xs:complexType name="Include">
    <xs:attribute name="type" type="xs:string" use="required"/>
    <xs:attribute name="source" type="xs:anyURI" use="required"/>
  </xs:complexType>
  <xs:complexType name="Define">
    <xs:attribute name="name" type="xs:string" use="required"/>
    <xs:attribute name="value" type="xs:string" use="required"/>
  </xs:complexType>
  <xs:simpleType name="WeaponTemplateRef" xas:refType="WeaponTemplate">
    <xs:restriction base="AssetReference"/>
  </xs:simpleType>
  <xs:simpleType name="GameObjectWeakRef" xas:refType="GameObject">
    <xs:restriction base="WeakReference"/>
  </xs:simpleType>
  <xs:simpleType name="FXListRef" xas:refType="FXList">
    <xs:restriction base="AssetReference"/>
  </xs:simpleType>
  <xs:complexType name="FXList">
    <xs:complexContent><xs:extension base="BaseAssetType">
      <xs:attribute name="Duration" type="xs:string"/>
    </xs:extension></xs:complexContent>
  </xs:complexType>
  <xs:complexType name="WeaponTemplate">
    <xs:complexContent><xs:extension base="BaseInheritableAsset">
      <xs:attribute name="FireFX" type="FXListRef"/>
      <xs:attribute name="Damage" type="xs:string"/>
    </xs:extension></xs:complexContent>
  </xs:complexType>
  <xs:complexType name="WeaponSlot">
    <xs:sequence><xs:element name="Weapon" type="WeaponTemplateRef" minOccurs="0" maxOccurs="unbounded"/></xs:sequence>
  </xs:complexType>
  <xs:complexType name="GameObject">
    <xs:complexContent><xs:extension base="BaseInheritableAsset">
      <xs:sequence>
        <xs:element name="WeaponSlot" type="WeaponSlot" minOccurs="0" maxOccurs="unbounded"/>
        <xs:element name="CreateObject" type="GameObjectWeakRef" minOccurs="0" maxOccurs="unbounded"/>
      </xs:sequence>
      <xs:attribute name="DeathFX" type="FXListRef"/>
    </xs:extension></xs:complexContent>
  </xs:complexType>
  <xs:element name="AssetDeclaration">
    <xs:complexType>
      <xs:sequence>
        <xs:element name="Includes" minOccurs="0"><xs:complexType><xs:sequence>
          <xs:element name="Include" type="Include" minOccurs="0" maxOccurs="unbounded"/>
        </xs:sequence></xs:complexType></xs:element>
        <xs:element name="Defines" minOccurs="0"><xs:complexType><xs:sequence>
          <xs:element name="Define" type="Define" minOccurs="0" maxOccurs="unbounded"/>
        </xs:sequence></xs:complexType></xs:element>
        <xs:choice minOccurs="0" maxOccurs="unbounded">
          <xs:element name="GameObject" type="GameObject"/>
          <xs:element name="WeaponTemplate" type="WeaponTemplate"/>
          <xs:element name="FXList" type="FXList"/>
        </xs:choice>
      </xs:sequence>
    </xs:complexType>
  </xs:element>
</xs:schema>
"""

_DECL = '<?xml version="1.0" encoding="utf-8"?>\n<AssetDeclaration xmlns="uri:ea.com:eala:asset">\n{body}</AssetDeclaration>\n'

DEMO_FILES: dict[str, str] = {
    "Data/Mod.xml": _DECL.format(
        body="""  <Includes>
    <Include type="all" source="Weapons/Weapons.xml"/>
    <Include type="all" source="Units/Tanks.xml"/>
  </Includes>
  <Defines>
    <Define name="TANK_DAMAGE" value="120"/>
  </Defines>
"""
    ),
    "Data/Weapons/Weapons.xml": _DECL.format(
        body="""  <FXList id="FX_CannonFire" Duration="1"/>
  <FXList id="FX_TankDeath" Duration="2"/>
  <WeaponTemplate id="BaseCannon" Damage="$TANK_DAMAGE" FireFX="FX_CannonFire"/>
  <WeaponTemplate id="AthenaCannonWeapon" inheritFrom="BaseCannon" Damage="200"/>
"""
    ),
    "Data/Units/Tanks.xml": _DECL.format(
        body="""  <GameObject id="BaseTank" DeathFX="FX_TankDeath">
    <WeaponSlot><Weapon>BaseCannon</Weapon></WeaponSlot>
  </GameObject>
  <GameObject id="AthenaCannon" inheritFrom="BaseTank">
    <WeaponSlot><Weapon>AthenaCannonWeapon</Weapon></WeaponSlot>
    <CreateObject>AthenaWreck</CreateObject>
  </GameObject>
  <GameObject id="AthenaWreck"/>
"""
    ),
    # never included: `is_file_active` must say so
    "Data/Units/Unused.xml": _DECL.format(body='  <GameObject id="UnusedTank"/>\n'),
}


def write_demo_mod(root: Path) -> Path:
    """Write the built-in demo mod (schema included) under `root`; returns the project folder."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "xsd").mkdir(exist_ok=True)
    (root / "xsd" / "CnC3Types.xsd").write_text(DEMO_SCHEMA, encoding="utf-8")
    for rel, text in DEMO_FILES.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


class DemoFailure(RuntimeError):
    """The demo did not see what it expected."""


def _expect(condition: bool, what: str) -> None:
    if not condition:
        raise DemoFailure(what)


async def _ask(client: Any, tool: str, **args: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, args)
    payload = result_payload(result)
    if not isinstance(payload, dict):
        raise DemoFailure(f"{tool} returned no structured content")
    if result.is_error:
        raise DemoFailure(f"{tool} failed: {payload.get('error')}: {payload.get('message')}")
    return payload


def _run_async(fn: Callable[[], Awaitable[None]]) -> None:
    """anyio.run, with the first DemoFailure unwrapped from the SDK's exception groups."""
    import anyio

    try:
        anyio.run(fn)
    except BaseExceptionGroup as group:
        failure = group.subgroup(lambda exc: isinstance(exc, DemoFailure))
        while failure is not None and isinstance(failure, BaseExceptionGroup):
            failure = failure.exceptions[0] if failure.exceptions else None
        if failure is not None:
            raise failure from group
        raise


def _corpus_sdk() -> Path | None:
    env = os.environ.get("MODDESK_CORPORA")
    root = Path(env) if env else Path(__file__).resolve().parents[4].parent / "shared" / "corpora"
    sdk = root / "sage" / "cnc3-sdk"
    return sdk if (sdk / "CnC3Xml").is_dir() else None


def _index_section(console: Console, root: Path) -> None:
    """The index core on real data: the C&C3 SDK from the corpora when present, else the sample SDK."""
    from moddesk.ra3.core.query import QueryApi
    from moddesk.ra3.core.sample import write_sample_project
    from moddesk.ra3.index_cli import run_index

    sdk = _corpus_sdk()
    project = sdk if sdk is not None else write_sample_project(root / "sample sdk")
    label = "C&C3 SDK (corpora)" if sdk is not None else "built-in sample SDK"
    index = run_index(project, quiet=True)
    api = QueryApi(index)
    status = api.get_status()
    _expect(status["index"]["state"] == "ready", f"{label} indexed")
    stats = status["stats"]
    table = Table(title=f"ra3: index of the {label}")
    table.add_column("query")
    table.add_column("answer")
    table.add_row("get_status", f"ready: {stats['assetCount']} assets, {stats['referenceCount']} references")
    unreferenced = api.unreferenced(limit=3)
    table.add_row("unreferenced", f"{unreferenced['total']} assets nobody references")
    listing = api.list_assets_by_type("GameObject", limit=1)
    _expect(listing["total"] > 0, "GameObjects are indexed")
    first = listing["assets"][0]
    refs = api.find_references(first["id"], "GameObject")
    table.add_row(f"find_references {first['id']}", f"{refs['total']} reference(s)")
    console.print(table)


def run(console: Console) -> None:
    """Index real or sample data, then serve a live index through a real stdio MCP server, then offline."""
    import anyio
    from mcp import Client, StdioServerParameters

    from moddesk.ra3.agent.endpoints import HOME_ENV
    from moddesk.ra3.agent.mcp import LIVE_TIMEOUT_ENV
    from moddesk.ra3.agent.watch import Watcher

    with tempfile.TemporaryDirectory(prefix="moddesk-ra3-demo-") as tmp:
        root = Path(tmp)
        previous = os.environ.get(HOME_ENV)
        os.environ[HOME_ENV] = str(root / "ra3 home")  # never touch the user's ~/.ra3modxml
        try:
            _index_section(console, root)
            project = write_demo_mod(root / "Demo Mod")
            table = Table(title="ra3: live index through the MCP server", show_lines=False)
            table.add_column("tool call")
            table.add_column("source")
            table.add_column("answer")
            params = StdioServerParameters(
                command=sys.executable,
                args=["-m", "moddesk.ra3.cli", "mcp", "--project", str(project)],
                env={**os.environ, LIVE_TIMEOUT_ENV: "10"},  # patient on a busy machine
            )
            watcher = Watcher([project], quiet_seconds=0.5).start()

            async def live_session() -> None:
                async with Client(params, read_timeout_seconds=60) as client:
                    status = await _ask(client, "get_status", wait_for_index=True)
                    _expect(
                        status["source"] == "live" and status["index"]["state"] == "ready", "live index ready"
                    )
                    stats = status["result"]["stats"]
                    table.add_row(
                        "get_status",
                        "live",
                        f"ready: {stats['assetCount']} assets, {stats['referenceCount']} refs",
                    )
                    found = await _ask(client, "find_asset", id="AthenaCannon", type="GameObject")
                    asset = found["result"]["assets"][0]
                    _expect(asset["file"] == "Data/Units/Tanks.xml", "AthenaCannon defined in Tanks.xml")
                    table.add_row("find_asset AthenaCannon", "live", f"{asset['file']}:{asset['line']}")
                    edges = await _ask(
                        client,
                        "get_asset_references",
                        type="GameObject",
                        id="AthenaCannon",
                        targetTypes=["WeaponTemplate"],
                    )
                    weapons = sorted(
                        f"{e['to']['id']}" + (f" (from {e['definedIn']['id']})" if e.get("definedIn") else "")
                        for e in edges["result"]["edges"]
                        if e.get("to") and e["to"]["type"] == "WeaponTemplate"
                    )
                    _expect(
                        any(w.startswith("BaseCannon (from BaseTank") for w in weapons), "inherited weapon"
                    )
                    table.add_row("get_asset_references → WeaponTemplate", "live", ", ".join(weapons))
                    inactive = await _ask(client, "is_file_active", path="Data/Units/Unused.xml")
                    _expect(inactive["result"]["active"] is False, "Unused.xml is inactive")
                    table.add_row(
                        "is_file_active Unused.xml", "live", "inactive: not reached from Data/Mod.xml"
                    )
                    tanks = project / "Data/Units/Tanks.xml"
                    tanks.write_text(
                        tanks.read_text().replace(
                            "</AssetDeclaration>", '  <GameObject id="NewTank"/>\n</AssetDeclaration>'
                        ),
                        encoding="utf-8",
                    )
                    for _ in range(100):
                        fresh = await _ask(client, "find_asset", id="NewTank", wait_for_index=True)
                        if fresh["result"]["found"]:
                            break
                        await anyio.sleep(0.1)
                    _expect(fresh["result"]["found"], "the edit shows up in the live index")
                    table.add_row(
                        "edit Tanks.xml, find_asset NewTank", "live", "found after incremental re-index"
                    )

            try:
                _run_async(live_session)
            finally:
                watcher.stop()  # removes its endpoint files and saves the final index

            async def offline_session() -> None:
                async with Client(params, read_timeout_seconds=60) as client:
                    found = await _ask(client, "find_asset", id="NewTank")
                    _expect(found["source"] == "snapshot" and found["result"]["found"], "snapshot fallback")
                    table.add_row(
                        "(watcher stopped) find_asset NewTank", "snapshot", "found in the saved snapshot"
                    )

            _run_async(offline_session)
            console.print(table)
        finally:
            if previous is None:
                os.environ.pop(HOME_ENV, None)
            else:
                os.environ[HOME_ENV] = previous
