"""Shared rule documents and archives for the annotation tests (imported by basename)."""

from __future__ import annotations

import json
from typing import Any

from moddesk.pvf.annotations import AnnotationDocs, MappingLookup, parse_document

HUGE_ENUM = {f"{i:03d}": f"label {i}" for i in range(1000)}
HUGE_ENUM["1"] = "one without zero padding"


def base_rules() -> dict[str, Any]:
    """A compact builtin layer exercising every target and annotation feature."""
    return {
        "version": 1,
        "description": "test builtin layer",
        "relations": {
            "weapons": {"listPath": "weapon/weapon.lst", "nameSection": "name"},
            "potions": {"listPath": "potion/potion.lst", "nameSection": "name"},
            "anything": {"kind": "union", "relations": ["weapons", "potions"]},
            "loop-a": {"kind": "union", "relations": ["loop-b"]},
            "loop-b": {"kind": "union", "relations": ["loop-a"]},
            "by-job": {
                "kind": "contextual",
                "contextPaths": {"[knight]": "skill/knight.lst", "[witch]": "skill/witch.lst"},
                "nameSection": "name",
            },
        },
        "fields": [
            {
                "id": "shared.price",
                "description": "shared price field",
                "match": {"extensions": [".wpn", ".ptn"]},
                "target": {"kind": "token", "section": "price", "index": 0},
                "annotation": {"title": "Price", "type": "text", "content": "Shop price in gold."},
                "preview": {
                    "role": "stat",
                    "group": "economy",
                    "order": 1,
                    "format": "gold",
                    "label": "价格",
                },
            }
        ],
        "rules": [
            {"id": "wpn.price", "field": "shared.price", "match": {"extensions": [".wpn"]}},
            {"id": "ptn.price", "field": "shared.price", "match": {"extensions": [".ptn"]}},
            {
                "id": "wpn.kind",
                "description": "weapon kind enum",
                "match": {"extensions": [".wpn"]},
                "target": {"kind": "token", "section": "kind", "index": 0},
                "annotation": {
                    "title": "Kind",
                    "type": "enum",
                    "values": {"[sword]": "Sword", "[bow]": "Bow", "001": "padded one", "1": "plain one"},
                },
            },
            {
                "id": "wpn.code",
                "match": {"glob": "weapon/**/*.wpn"},
                "target": {"kind": "token", "section": "code", "index": 0},
                "annotation": {"title": "Code", "type": "enum", "values": HUGE_ENUM},
            },
            {
                "id": "wpn.name",
                "match": {"extensions": [".wpn"]},
                "target": {"kind": "token", "section": "name", "index": 0},
                "annotation": {"title": "Name", "type": "text", "content": "名称 display name"},
                "pvfVersions": ["90CN"],
            },
            {
                "id": "wpn.name.110us",
                "match": {"extensions": [".wpn"]},
                "target": {"kind": "token", "section": "name", "index": 0},
                "annotation": {"title": "Name placeholder", "type": "text", "content": "string table key"},
                "pvfVersions": ["110US"],
            },
            {
                "id": "wpn.set",
                "match": {"extensions": [".wpn"]},
                "target": {"kind": "token", "section": "set"},
                "annotation": {"title": "Set member", "type": "reference", "relation": "weapons"},
            },
            {
                "id": "wpn.bonus.skill",
                "match": {"extensions": [".wpn"]},
                "target": {
                    "kind": "token",
                    "section": "bonus",
                    "recordTokens": 3,
                    "index": 1,
                    "contextIndex": 0,
                },
                "annotation": {"title": "Bonus skill", "type": "reference", "relation": "by-job"},
            },
            {
                "id": "wpn.loot",
                "match": {"extensions": [".wpn"]},
                "target": {"kind": "token", "section": "loot"},
                "annotation": {"title": "Loot", "type": "reference", "relation": "anything"},
            },
            {
                "id": "wpn.broken",
                "match": {"extensions": [".wpn"]},
                "target": {"kind": "token", "section": "broken"},
                "annotation": {"title": "Broken ref", "type": "reference", "relation": "no-such-relation"},
            },
            {
                "id": "wpn.cycle",
                "match": {"extensions": [".wpn"]},
                "target": {"kind": "token", "section": "cycle"},
                "annotation": {"title": "Cyclic ref", "type": "reference", "relation": "loop-a"},
            },
            {
                "id": "wpn.levels",
                "match": {"extensions": [".wpn"]},
                "target": {"kind": "token", "section": "stats/levels", "tokensPerLineIndex": 0, "index": 1},
                "annotation": {"title": "Level value", "type": "text"},
            },
            {
                "id": "wpn.combo",
                "match": {"extensions": [".wpn"]},
                "target": {"kind": "token", "section": "combo", "separator": ",", "index": 0},
                "annotation": {
                    "title": "Combo key",
                    "type": "enum",
                    "values": {"(A)": "attack", "(J)": "jump"},
                },
            },
            {
                "id": "wpn.icon",
                "match": {"extensions": [".wpn"]},
                "target": {
                    "kind": "token",
                    "section": "icon",
                    "recordTokens": 2,
                    "imagePathToken": 0,
                    "imageIndexToken": 1,
                },
                "annotation": {"title": "Icon", "type": "image"},
            },
            {
                "id": "wpn.effect",
                "match": {"extensions": [".wpn"]},
                "target": {"kind": "section", "section": "effect"},
                "annotation": {
                    "title": "Effect block",
                    "type": "text",
                    "content": "A repeated effect block.",
                },
            },
            {
                "id": "dir.weapon",
                "description": "weapon folder",
                "match": {"glob": "weapon"},
                "target": {"kind": "directory"},
                "annotation": {
                    "title": "Weapons folder",
                    "type": "text",
                    "content": "All weapons live here.",
                },
            },
            {
                "id": "dir.weapon.any",
                "match": {"glob": "weapon/*"},
                "target": {"kind": "directory"},
                "annotation": {"title": "Weapon family", "type": "text"},
            },
            {
                "id": "path.wpn",
                "match": {"extensions": [".wpn"]},
                "target": {"kind": "path"},
                "annotation": {"title": "Weapon file", "type": "text", "content": "One weapon."},
            },
            {
                "id": "lst.path",
                "match": {"extensions": [".lst"]},
                "target": {"kind": "token", "standaloneValues": True, "recordTokens": 2, "index": 1},
                "annotation": {"title": "List path", "type": "text"},
            },
        ],
    }


WEAPON_TEXT = """#PVF_File

[name]
\t`Blade 🗡 of 火`

[kind]
\t`[sword]`

[price]
\t1200

[code]
\t001

[set]
\t1\t2\t99
[/set]

[bonus]
\t`[knight]`\t7\t1
\t`[witch]`\t8\t2
\t`[orc]`\t9\t3
[/bonus]

[loot]
\t2\t50
[/loot]

[broken]
\t5
[/broken]

[cycle]
\t5
[/cycle]

[stats]
\t[levels]
\t\t2
\t\t10\t11
\t\t20\t21
\t\t30\t31
\t[/levels]
[/stats]

[combo]
\t{6=`(A)`}
\t{8=`,`}
\t{6=`(J)`}
\t{8=`,`}
\t{6=`(X)`}
[/combo]

[icon]
\t`Item/weapon.img`\t4

[effect]
\t`first <3::name_10>`

[effect]
\t`second <int>%%`
"""

ARCHIVE = {
    "weapon/weapon.lst": "#PVF_File\n\n1\n`Sword/Blade.wpn`\n2\n`sword/second.wpn`\n99\n`sword/gone.wpn`\n",
    "weapon/sword/blade.wpn": WEAPON_TEXT,
    "weapon/sword/second.wpn": "#PVF_File\n\n[name]\n\t`Second blade`\n",
    "potion/potion.lst": "#PVF_File\n\n50\n`red.ptn`\n",
    "potion/red.ptn": "#PVF_File\n\n[name]\n\t`Red potion`\n\n[price]\n\t10\n",
    "skill/knight.lst": "#PVF_File\n\n7\n`slash.skl`\n",
    "skill/knight/../slash.skl": "",
    "skill/slash.skl": "#PVF_File\n\n[name]\n\t`Slash`\n",
    "skill/witch.lst": "#PVF_File\n\n1\n`hex.skl`\n",
}

BLADE = "weapon/sword/blade.wpn"


def make_docs(user: list[dict[str, Any]] | None = None, **kwargs: Any) -> AnnotationDocs:
    """AnnotationDocs over the test builtin layer (and optional user documents)."""
    builtin = [parse_document(base_rules(), "builtin:test.json")]
    users = [parse_document(u, f"user{i}.json") for i, u in enumerate(user or [])]
    return AnnotationDocs(users, builtin=builtin, **kwargs)


def lookup() -> MappingLookup:
    """The small test archive."""
    return MappingLookup(ARCHIVE)


def explain(
    docs: AnnotationDocs, text: str = WEAPON_TEXT, path: str = BLADE, **kwargs: Any
) -> dict[str, Any]:
    """explain with the test workspace defaults."""
    params: dict[str, Any] = {
        "workspace_id": "ws-1",
        "revision": 7,
        "pvf_version": "90CN",
        "lookup": lookup(),
        "limit": 100,
    }
    params.update(kwargs)
    return docs.explain(path, text, **params)


def user_text(doc: dict[str, Any]) -> str:
    """JSON text of a user document."""
    return json.dumps(doc, ensure_ascii=False)
