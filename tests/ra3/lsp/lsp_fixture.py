"""The hand-written fixture for the language server: the sample SDK plus a 3-level inheritFrom chain,
XSD documentation and an enumerated attribute."""

from __future__ import annotations

from pathlib import Path

from moddesk.ra3.core.sample import NS, write_sample_project

CHAIN = f"""<?xml version="1.0" encoding="utf-8"?>
<AssetDeclaration {NS} xmlns:xai="uri:ea.com:eala:asset:instance">
  <Tags/>
  <GameObject id="ChainBase" CommandSet="SampleTankCommandSet" BuildCost="100" Side="Allies"
      KindOf="SELECTABLE CAN_ATTACK">
    <Behaviors>
      <FireWeaponUpdate id="ModuleTag_Gun">
        <FireWeaponNugget WeaponName="SampleTankGun"/>
      </FireWeaponUpdate>
      <CreateObjectDie id="ModuleTag_Death" CreationList="OCL_TankDebris"/>
    </Behaviors>
  </GameObject>
  <GameObject id="ChainMid" inheritFrom="ChainBase" BuildCost="200">
    <Behaviors>
      <FireWeaponUpdate id="ModuleTag_Gun" xai:joinAction="Replace">
        <!--😀 twin guns--><FireWeaponNugget WeaponName="SampleTankGun"/>
        <FireWeaponNugget WeaponName="SampleTankGun"/>
      </FireWeaponUpdate>
    </Behaviors>
  </GameObject>
  <GameObject id="ChainTop" inheritFrom="ChainMid" Side="Soviet" KindOf="+VEHICLE -CAN_ATTACK">
    <Behaviors>
      <CreateObjectDie id="ModuleTag_Death" xai:joinAction="Remove"/>
      <WeaponSetUpdate id="ModuleTag_Set"/>
    </Behaviors>
  </GameObject>
</AssetDeclaration>
"""


def write_fixture(root: Path) -> Path:
    """Write the fixture under `root`; returns the mod's project folder."""
    project = write_sample_project(root)
    xsd = root / "Schemas" / "xsd" / "AssetTypes.xsd"
    text = xsd.read_text("utf-8")
    text = text.replace(
        '<xs:attribute name="CommandSet" type="LogicCommandSetWeakRef"/>',
        '<xs:attribute name="CommandSet" type="LogicCommandSetWeakRef">'
        "<xs:annotation><xs:documentation>The command set shown when the unit is selected.</xs:documentation>"
        "</xs:annotation></xs:attribute>\n"
        '    <xs:attribute name="Side"><xs:annotation><xs:documentation>Which faction builds it.'
        '</xs:documentation></xs:annotation><xs:simpleType><xs:restriction base="xs:string">'
        '<xs:enumeration value="Allies"/><xs:enumeration value="Soviet"/><xs:enumeration value="Japan"/>'
        "</xs:restriction></xs:simpleType></xs:attribute>",
    )
    text = text.replace(
        '<xs:complexType><xs:attribute name="WeaponName" type="WeaponTemplateRef"/></xs:complexType>',
        '<xs:complexType><xs:attribute name="WeaponName" type="WeaponTemplateRef"><xs:annotation>'
        "<xs:documentation>The weapon this nugget fires.</xs:documentation></xs:annotation></xs:attribute>"
        "</xs:complexType>",
    )
    assert "The weapon this nugget fires." in text
    xsd.write_text(text, encoding="utf-8")
    (project / "Data" / "Units" / "Chain.xml").write_text(CHAIN, encoding="utf-8")
    mod = project / "Data" / "Mod.xml"
    mod.write_text(
        mod.read_text("utf-8").replace(
            '    <Include type="all" source="Weapons.xml"/>\n',
            '    <Include type="all" source="Weapons.xml"/>\n    <Include type="all" source="Units/Chain.xml"/>\n',
        ),
        encoding="utf-8",
    )
    return project
