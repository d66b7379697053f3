"""A small built-in SDK-shaped sample mod (schema + vanilla data + mod) for the demo and tests.

It exercises every indexing rule on a few files: a case-mismatched `xs:include`, strong / weak /
element-content references, a derived-type target (`BaseRenderAssetType`), an ambiguous id over
`BaseAudioEventInfo`, `inheritFrom` (plain, `Type:Id`, self-override through an instance include),
`xi:include` with an xpointer spliced into a module list, defines and a `=$X` expression,
`all` / `instance` / `reference` includes, an `ART:` two-letter folder, a `.w3x`, a map-metadata
stream, a commented-out include (an inactive file), and a malformed file.
"""

from __future__ import annotations

from pathlib import Path

NS = 'xmlns="uri:ea.com:eala:asset"'

SCHEMA_ROOT = """<?xml version="1.0" encoding="utf-8"?>
<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema" xmlns="uri:ea.com:eala:asset"
  xmlns:xas="uri:ea.com:eala:asset:schema" targetNamespace="uri:ea.com:eala:asset" elementFormDefault="qualified">
  <xs:include schemaLocation="base/AssetBase.xsd"/>
  <xs:include schemaLocation="includes/Ref.xsd"/>
  <xs:include schemaLocation="AssetTypes.xsd"/>
  <xs:element name="AssetDeclaration">
    <xs:complexType>
      <xs:sequence>
        <xs:element name="Tags" minOccurs="0"/>
        <xs:element name="Includes" minOccurs="0"/>
        <xs:element name="Defines" minOccurs="0"/>
        <xs:choice minOccurs="0" maxOccurs="unbounded">
          <xs:element name="GameObject" type="GameObject"/>
          <xs:element name="WeaponTemplate" type="WeaponTemplate"/>
          <xs:element name="LogicCommandSet" type="LogicCommandSet"/>
          <xs:element name="ObjectCreationList" type="ObjectCreationList"/>
          <xs:element name="AudioEvent" type="AudioEvent"/>
          <xs:element name="MusicTrack" type="MusicTrack"/>
          <xs:element name="Texture" type="Texture"/>
          <xs:element name="W3DContainer" type="W3DContainer"/>
          <xs:element name="W3DMesh" type="W3DMesh"/>
          <xs:element name="W3DHierarchy" type="W3DHierarchy"/>
          <xs:element name="MpGameRules" type="MpGameRules"/>
        </xs:choice>
      </xs:sequence>
    </xs:complexType>
  </xs:element>
</xs:schema>
"""

SCHEMA_BASE = """<?xml version="1.0" encoding="utf-8"?>
<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema" xmlns="uri:ea.com:eala:asset"
  xmlns:xas="uri:ea.com:eala:asset:schema" targetNamespace="uri:ea.com:eala:asset" elementFormDefault="qualified">
  <xs:complexType name="BaseAssetType">
    <xs:attribute name="id" type="InstanceId" use="required"/>
  </xs:complexType>
  <xs:complexType name="BaseInheritableAsset">
    <xs:complexContent><xs:extension base="BaseAssetType">
      <xs:attribute name="inheritFrom" type="xs:string"/>
    </xs:extension></xs:complexContent>
  </xs:complexType>
  <xs:simpleType name="InstanceId"><xs:restriction base="xs:string"/></xs:simpleType>
  <xs:simpleType name="AssetReference" xas:isRef="true"><xs:restriction base="xs:string"/></xs:simpleType>
  <xs:simpleType name="WeakReference" xas:isWeakRef="true"><xs:restriction base="xs:string"/></xs:simpleType>
  <xs:simpleType name="Poid" xas:isWeakRef="true"><xs:restriction base="xs:string"/></xs:simpleType>
  <xs:simpleType name="FileReference"><xs:restriction base="xs:anyURI"/></xs:simpleType>
</xs:schema>
"""

SCHEMA_REF = """<?xml version="1.0" encoding="utf-8"?>
<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema" xmlns="uri:ea.com:eala:asset"
  xmlns:xas="uri:ea.com:eala:asset:schema" targetNamespace="uri:ea.com:eala:asset" elementFormDefault="qualified">
  <xs:simpleType name="WeaponTemplateRef" xas:refType="WeaponTemplate"><xs:restriction base="AssetReference"/></xs:simpleType>
  <xs:simpleType name="GameObjectWeakRef" xas:isRef="true" xas:refType="GameObject"><xs:restriction base="WeakReference"/></xs:simpleType>
  <xs:simpleType name="LogicCommandSetWeakRef" xas:refType="LogicCommandSet"><xs:restriction base="WeakReference"/></xs:simpleType>
  <xs:simpleType name="ObjectCreationListRef" xas:refType="ObjectCreationList"><xs:restriction base="AssetReference"/></xs:simpleType>
  <xs:simpleType name="RenderObjectRef" xas:refType="BaseRenderAssetType"><xs:restriction base="AssetReference"/></xs:simpleType>
  <xs:simpleType name="AudioEventInfoRef" xas:refType="BaseAudioEventInfo"><xs:restriction base="AssetReference"/></xs:simpleType>
  <xs:simpleType name="TextureRef" xas:refType="Texture"><xs:restriction base="AssetReference"/></xs:simpleType>
</xs:schema>
"""

SCHEMA_TYPES = """<?xml version="1.0" encoding="utf-8"?>
<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema" xmlns="uri:ea.com:eala:asset"
  xmlns:xas="uri:ea.com:eala:asset:schema" targetNamespace="uri:ea.com:eala:asset" elementFormDefault="qualified">
  <xs:complexType name="ModuleData"><xs:attribute name="id" type="Poid" xas:refType="ModuleData"/></xs:complexType>
  <xs:complexType name="WeaponSlot">
    <xs:sequence><xs:element name="Weapon" minOccurs="0" maxOccurs="unbounded">
      <xs:complexType><xs:attribute name="Template" type="WeaponTemplateRef"/></xs:complexType>
    </xs:element></xs:sequence>
  </xs:complexType>
  <xs:complexType name="WeaponSetUpdateModuleData"><xs:complexContent><xs:extension base="ModuleData">
    <xs:sequence><xs:element name="WeaponSlotTurret" type="WeaponSlot" minOccurs="0" maxOccurs="unbounded"/></xs:sequence>
  </xs:extension></xs:complexContent></xs:complexType>
  <xs:complexType name="FireWeaponUpdateModuleData"><xs:complexContent><xs:extension base="ModuleData">
    <xs:sequence><xs:element name="FireWeaponNugget" minOccurs="0" maxOccurs="unbounded">
      <xs:complexType><xs:attribute name="WeaponName" type="WeaponTemplateRef"/></xs:complexType>
    </xs:element></xs:sequence>
  </xs:extension></xs:complexContent></xs:complexType>
  <xs:complexType name="CreateObjectDieModuleData"><xs:complexContent><xs:extension base="ModuleData">
    <xs:attribute name="CreationList" type="ObjectCreationListRef"/>
  </xs:extension></xs:complexContent></xs:complexType>
  <xs:complexType name="DrawModuleData"><xs:complexContent><xs:extension base="ModuleData">
    <xs:sequence><xs:element name="Model" minOccurs="0" maxOccurs="unbounded">
      <xs:complexType><xs:attribute name="Name" type="RenderObjectRef"/></xs:complexType>
    </xs:element></xs:sequence>
  </xs:extension></xs:complexContent></xs:complexType>
  <xs:complexType name="BehaviorModules"><xs:choice minOccurs="0" maxOccurs="unbounded">
    <xs:element name="WeaponSetUpdate" type="WeaponSetUpdateModuleData"/>
    <xs:element name="FireWeaponUpdate" type="FireWeaponUpdateModuleData"/>
    <xs:element name="CreateObjectDie" type="CreateObjectDieModuleData"/>
  </xs:choice></xs:complexType>
  <xs:complexType name="DrawModules"><xs:choice minOccurs="0" maxOccurs="unbounded">
    <xs:element name="ScriptedModelDraw" type="DrawModuleData"/>
  </xs:choice></xs:complexType>
  <xs:complexType name="ObjectFilter">
    <xs:sequence>
      <xs:element name="IncludeThing" type="WeakReference" xas:refType="GameObject" minOccurs="0" maxOccurs="unbounded"/>
    </xs:sequence>
  </xs:complexType>
  <xs:complexType name="GameObject"><xs:complexContent><xs:extension base="BaseInheritableAsset">
    <xs:sequence>
      <xs:element name="Behaviors" type="BehaviorModules" minOccurs="0"/>
      <xs:element name="Draws" type="DrawModules" minOccurs="0"/>
      <xs:element name="Filter" type="ObjectFilter" minOccurs="0"/>
      <xs:element name="Icon" type="FileReference" minOccurs="0"/>
    </xs:sequence>
    <xs:attribute name="CommandSet" type="LogicCommandSetWeakRef"/>
    <xs:attribute name="VoiceSelect" type="AudioEventInfoRef"/>
    <xs:attribute name="ButtonImage" type="AssetReference" xas:refType="Texture"/>
    <xs:attribute name="BuildCost" type="xs:string"/>
  </xs:extension></xs:complexContent></xs:complexType>
  <xs:complexType name="WeaponTemplate"><xs:complexContent><xs:extension base="BaseInheritableAsset">
    <xs:attribute name="ProjectileObject" type="GameObjectWeakRef"/>
  </xs:extension></xs:complexContent></xs:complexType>
  <xs:complexType name="LogicCommandSet"><xs:complexContent><xs:extension base="BaseInheritableAsset"/></xs:complexContent></xs:complexType>
  <xs:complexType name="ObjectCreationList"><xs:complexContent><xs:extension base="BaseAssetType">
    <xs:sequence><xs:element name="CreateObject" type="GameObjectWeakRef" minOccurs="0" maxOccurs="unbounded"/></xs:sequence>
  </xs:extension></xs:complexContent></xs:complexType>
  <xs:complexType name="BaseAudioEventInfo"><xs:complexContent><xs:extension base="BaseInheritableAsset"/></xs:complexContent></xs:complexType>
  <xs:complexType name="AudioEvent"><xs:complexContent><xs:extension base="BaseAudioEventInfo"/></xs:complexContent></xs:complexType>
  <xs:complexType name="MusicTrack"><xs:complexContent><xs:extension base="BaseAudioEventInfo"/></xs:complexContent></xs:complexType>
  <xs:complexType name="Texture"><xs:complexContent><xs:extension base="BaseAssetType"/></xs:complexContent></xs:complexType>
  <xs:complexType name="BaseRenderAssetType"><xs:complexContent><xs:extension base="BaseAssetType"/></xs:complexContent></xs:complexType>
  <xs:complexType name="W3DMesh"><xs:complexContent><xs:extension base="BaseRenderAssetType"/></xs:complexContent></xs:complexType>
  <xs:complexType name="W3DContainer"><xs:complexContent><xs:extension base="BaseRenderAssetType">
    <xs:attribute name="Hierarchy" type="AssetReference" xas:refType="W3DHierarchy"/>
  </xs:extension></xs:complexContent></xs:complexType>
  <xs:complexType name="W3DHierarchy"><xs:complexContent><xs:extension base="BaseAssetType"/></xs:complexContent></xs:complexType>
  <xs:complexType name="MpGameRules"><xs:complexContent><xs:extension base="BaseAssetType"/></xs:complexContent></xs:complexType>
</xs:schema>
"""


def _doc(body: str, includes: str = "", defines: str = "") -> str:
    return (
        '<?xml version="1.0" encoding="utf-8"?>\n'
        f'<AssetDeclaration {NS} xmlns:xi="http://www.w3.org/2001/XInclude">\n'
        f"  <Tags/>\n  <Includes>\n{includes}  </Includes>\n"
        + (f"  <Defines>\n{defines}  </Defines>\n" if defines else "")
        + body
        + "</AssetDeclaration>\n"
    )


def sample_files() -> dict[str, str]:
    """Relative path -> text of every file in the sample SDK (mod lives at `Mods/Sample Mod`)."""
    mod = "Mods/Sample Mod"
    return {
        "Schemas/xsd/CnC3Types.xsd": SCHEMA_ROOT,
        "Schemas/xsd/Base/AssetBase.xsd": SCHEMA_BASE,
        "Schemas/xsd/Includes/Ref.xsd": SCHEMA_REF,
        "Schemas/xsd/AssetTypes.xsd": SCHEMA_TYPES,
        "SageXml/BaseObjects/BaseVehicle.xml": _doc(
            '  <GameObject id="BaseVehicle" CommandSet="BaseCommandSet">\n'
            "    <Behaviors>\n"
            '      <WeaponSetUpdate id="ModuleTag_WeaponSet">\n'
            '        <WeaponSlotTurret><Weapon Template="BaseCannon"/></WeaponSlotTurret>\n'
            "      </WeaponSetUpdate>\n"
            "    </Behaviors>\n"
            "  </GameObject>\n"
            '  <GameObject id="SampleTank" CommandSet="BaseCommandSet"/>\n'
            '  <WeaponTemplate id="BaseCannon"/>\n'
            '  <LogicCommandSet id="BaseCommandSet"/>\n'
        ),
        f"{mod}/Data/Mod.xml": _doc(
            "",
            includes=(
                '    <Include type="reference" source="DATA:static.xml"/>\n'
                '    <Include type="all" source="DATA:Sample Mod/Data/Units/SampleTank.xml"/>\n'
                '    <Include type="all" source="Weapons.xml"/>\n'
                '    <Include type="all" source="art:TAtank.w3x"/>\n'
                '    <!-- <Include type="all" source="Units/Unused.xml"/> -->\n'
                '    <Include type="all" source="Broken.xml"/>\n'
                '    <Include type="all" source="Missing/Nowhere.xml"/>\n'
            ),
        ),
        f"{mod}/Data/Units/SampleTank.xml": _doc(
            '  <GameObject id="SampleTank" inheritFrom="SampleTank" CommandSet="SampleTankCommandSet"\n'
            '      VoiceSelect="TankVoice" ButtonImage="SampleTank_Icon" BuildCost="=$TANK_COST">\n'
            "    <Behaviors>\n"
            '      <FireWeaponUpdate id="ModuleTag_Fire">\n'
            '        <FireWeaponNugget WeaponName="SampleTankGun"/>\n'
            "      </FireWeaponUpdate>\n"
            '      <xi:include href="DATA:Sample Mod/Data/Includes/DeathModules.xml"\n'
            '          xpointer="xmlns(n=uri:ea.com:eala:asset) xpointer(/n:DeathModules/child::*)"/>\n'
            "    </Behaviors>\n"
            "    <Draws>\n"
            '      <ScriptedModelDraw id="ModuleTag_Draw"><Model Name="TATank"/></ScriptedModelDraw>\n'
            "    </Draws>\n"
            "    <Filter><IncludeThing>SampleScout</IncludeThing></Filter>\n"
            "    <Icon>Art/Icons/tank.tga</Icon>\n"
            "  </GameObject>\n"
            '  <GameObject id="SampleScout" inheritFrom="GameObject:BaseVehicle"/>\n'
            '  <LogicCommandSet id="SampleTankCommandSet"/>\n'
            '  <AudioEvent id="TankVoice"/>\n'
            '  <MusicTrack id="TankVoice"/>\n'
            '  <Texture id="SampleTank_Icon"/>\n'
            '  <ObjectCreationList id="OCL_TankDebris"><CreateObject>SampleScout</CreateObject></ObjectCreationList>\n'
            '  <GameObject id="Orphan"/>\n',
            includes='    <Include type="instance" source="DATA:SageXml/BaseObjects/BaseVehicle.xml"/>\n',
            defines='    <Define name="TANK_COST" value="900"/>\n',
        ),
        f"{mod}/Data/Includes/DeathModules.xml": (
            '<?xml version="1.0" encoding="utf-8"?>\n'
            f"<DeathModules {NS}>\n"
            '  <CreateObjectDie id="ModuleTag_Death" CreationList="OCL_TankDebris"/>\n'
            "</DeathModules>\n"
        ),
        f"{mod}/Data/Weapons.xml": _doc(
            '  <WeaponTemplate id="SampleTankGun" inheritFrom="BaseCannon" ProjectileObject="SampleScout"/>\n',
            includes='    <Include type="instance" source="DATA:SageXml/BaseObjects/BaseVehicle.xml"/>\n',
        ),
        f"{mod}/Data/Units/Unused.xml": _doc('  <GameObject id="NeverBuilt"/>\n'),
        f"{mod}/Data/Broken.xml": (
            '<?xml version="1.0" encoding="utf-8"?>\n'
            f"<AssetDeclaration {NS}>\n"
            '  <GameObject id="HalfParsed" CommandSet="SampleTankCommandSet">\n'
            "  </Behaviors>\n"
            "</AssetDeclaration>\n"
        ),
        f"{mod}/Data/additionalmaps/MapMetaData_Sample.xml": _doc('  <MpGameRules id="SampleRules"/>\n'),
        f"{mod}/Art/ta/TATank.w3x": (
            '<?xml version="1.0" encoding="utf-8"?>\n'
            f"<AssetDeclaration {NS}>\n"
            '  <W3DMesh id="TATank.BODY"><Vertices/></W3DMesh>\n'
            '  <W3DHierarchy id="TATank_SKL"/>\n'
            '  <W3DContainer id="TATank" Hierarchy="TATank_SKL">\n'
            '    <SubObject SubObjectID="BODY"><RenderObject><Mesh>TATank.BODY</Mesh></RenderObject></SubObject>\n'
            "  </W3DContainer>\n"
            "</AssetDeclaration>\n"
        ),
        "static.xml": _doc("  <!-- placeholder for the compiled static stream -->\n"),
    }


def write_sample_project(root: Path) -> Path:
    """Write the sample SDK under `root` and return the mod's project directory."""
    for rel, text in sample_files().items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root / "Mods" / "Sample Mod"
