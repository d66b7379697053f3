"""`moddesk demo` for ra3 agent access: index a built-in mod, then query it through the MCP server."""

from __future__ import annotations

from pathlib import Path

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
