"""Builtin annotation rules explained over real script text (../shared/corpora/pvf)."""

from __future__ import annotations

from pathlib import Path

import pytest

from moddesk.pvf.annotations import AnnotationDocs, DirectoryLookup, parse_script

pytestmark = pytest.mark.corpus


class CorpusArchive:
    """The sample tree plus the two list excerpts standing in for the huge real lists."""

    def __init__(self, root: Path) -> None:
        self.tree = DirectoryLookup(root / "pvf_1031-sample")
        excerpts = root / "pvf_1031-excerpts"
        self.lists = {
            "equipment/equipment.lst": (excerpts / "equipment/equipment.lst.0-16000.excerpt").read_text(
                "utf-8"
            ),
            "stackable/stackable.lst": (excerpts / "stackable/stackable.lst.0-31993.excerpt").read_text(
                "utf-8"
            ),
        }

    def read_text(self, path: str) -> str | None:
        return self.lists.get(path) or self.tree.read_text(path)

    def exists(self, path: str) -> bool:
        return path in self.lists or self.tree.exists(path)


@pytest.fixture(scope="module")
def archive(pvf_corpus: Path) -> CorpusArchive:
    return CorpusArchive(pvf_corpus)


@pytest.fixture(scope="module")
def docs() -> AnnotationDocs:
    return AnnotationDocs()


def _explain(docs: AnnotationDocs, archive: CorpusArchive, path: str, **kwargs: object) -> dict:
    text = archive.read_text(path)
    assert text is not None, path
    out: list[dict] = []
    cursor = None
    while True:
        page = docs.explain(
            path,
            text,
            workspace_id="ws",
            revision=1,
            pvf_version="classic",
            lookup=archive,
            cursor=cursor,
            limit=100,
            **kwargs,
        )
        out.extend(page["annotations"])
        cursor = page["nextCursor"]
        if cursor is None:
            page["annotations"] = out
            return page


def _labels(result: dict, rule_id: str) -> list[tuple[str, str | None]]:
    return [(a["value"], a.get("valueLabel")) for a in result["annotations"] if rule_id in a["ruleIds"]]


def _js_slice(text: str, start: int, end: int) -> str:
    return text.encode("utf-16-le")[2 * start : 2 * end].decode("utf-16-le")


def test_every_sample_file_explains_with_exact_ranges(
    docs: AnnotationDocs, archive: CorpusArchive, pvf_corpus: Path
) -> None:
    root = pvf_corpus / "pvf_1031-sample"
    explained = 0
    for file in sorted(root.rglob("*")):
        if not file.is_file():
            continue
        rel = file.relative_to(root).as_posix()
        text = file.read_text("utf-8")
        result = _explain(docs, archive, rel)
        for ann in result["annotations"]:
            raw = ann.get("rawValue")
            if raw and ann["type"] not in ("image", "placeholder"):
                assert _js_slice(text, ann["range"]["start"], ann["range"]["end"]) == raw, (rel, ann)
            line = text.split("\n")[ann["startLine"] - 1]
            prefix = line.encode("utf-16-le")[: 2 * (ann["startColumn"] - 1)].decode("utf-16-le")
            assert line.startswith(prefix)
        explained += 1
    assert explained > 100


def test_equipment_labels(docs: AnnotationDocs, archive: CorpusArchive) -> None:
    out = _explain(docs, archive, "equipment/character/common/amulet/100300068.equ")
    assert _labels(out, "equ.rarity") == [("2", "稀有 Rare (purple)")]
    assert _labels(out, "equ.usable-job") == [("[demonic swordman]", "黑暗武士 Dark Knight")]
    assert _labels(out, "equ.equipment-type") == [("[amulet]", "项链 Necklace")]
    assert _labels(out, "item.attach-type") == [("[account]", "账号绑定 Account bound")]
    price = [a for a in out["annotations"] if a["ruleIds"] == ["equ.price"]]
    assert [(a["title"], a["value"], a["startLine"], a["startColumn"]) for a in price] == [
        ("价格 Price", "0", 33, 2)
    ]
    assert price[0]["fieldId"] == "item.price"
    assert [p["scopePath"] for p in out["pathContext"]][:2] == ["equipment", "equipment/character/common"]
    # [grade] inside [level linear ability] is not the item grade
    grades = [a for a in out["annotations"] if a["ruleIds"] == ["equ.grade"]]
    assert [(g["section"], g["value"]) for g in grades] == [("grade", "61")]


def test_multiline_string_is_not_a_section(docs: AnnotationDocs, archive: CorpusArchive) -> None:
    text = archive.read_text("equipment/character/gunner/weapon/revolver/rev_31142.equ")
    assert text is not None
    names = {s.name for s in parse_script(text).sections}
    assert "踏射" not in names and "basic explain" in names
    out = _explain(docs, archive, "equipment/character/gunner/weapon/revolver/rev_31142.equ")
    explain = next(a for a in out["annotations"] if a["ruleIds"] == ["item.explain"])
    assert explain["startLine"] == 10 and explain["endLine"] == 11


def test_set_items_resolve_through_the_equipment_list(docs: AnnotationDocs, archive: CorpusArchive) -> None:
    out = _explain(docs, archive, "equipment/character/common/jacket/cloth/coat_tsage.equ")
    refs = {a["value"]: a["reference"] for a in out["annotations"] if a["ruleIds"] == ["equ.set-item"]}
    assert refs["10043"]["resolutionStatus"] == "resolved"
    assert refs["10043"]["path"] == "equipment/character/common/jacket/cloth/coat_tsage.equ"
    assert refs["10043"]["name"] == "(旧) 贤者的训练上衣"
    assert refs["12043"]["resolutionStatus"] == "missing"  # not in this list excerpt: reported, not guessed


def test_skill_bonuses_resolve_per_job(docs: AnnotationDocs, archive: CorpusArchive) -> None:
    out = _explain(docs, archive, "equipment/character/swordman/weapon/katana/101020001.equ")
    refs = {
        a["value"]: a["reference"] for a in out["annotations"] if a["ruleIds"] == ["equ.skill-levelup.skill"]
    }
    assert refs["176"]["resolutionStatus"] == "resolved"
    assert refs["176"]["path"] == "skill/swordman/magicalattackup.skl"
    assert refs["176"]["context"] == "[swordman]" and refs["176"]["listPath"] == "skill/swordmanskill.lst"
    assert refs["22"]["resolutionStatus"] == "missing" and refs["22"]["path"] == "skill/swordman/firewave.skl"
    glove = _explain(docs, archive, "equipment/character/fighter/weapon/boxglove/102040001.equ")
    required = [a["reference"] for a in glove["annotations"] if a["ruleIds"] == ["equ.required-skill"]]
    assert [r["resolutionStatus"] for r in required] == ["context_required"]
    assert "path" not in required[0]


def test_skill_file(docs: AnnotationDocs, archive: CorpusArchive) -> None:
    out = _explain(docs, archive, "skill/atfighter/earthbreak.skl")
    assert _labels(out, "skl.type") == [("[active]", "主动 Active")]
    assert _labels(out, "skl.command") == [("(RIGHT)", "→ 前"), ("(UP)", "↑ 上"), ("(SKILL)", "技能键 Z")]
    records = [a for a in out["annotations"] if a["ruleIds"] == ["skl.level-info.record"]]
    dungeon = [a for a in records if a["section"] == "dungeon/level info"]
    pvp = [a for a in records if a["section"] == "pvp/level info"]
    assert len(dungeon) == 70 and len(pvp) == 70
    assert [a["recordIndex"] for a in dungeon[:3]] == [0, 1, 2]
    assert [a["value"] for a in dungeon[:2]] == ["110", "123"]
    placeholders = [a for a in out["annotations"] if a["origin"] == "runtime" and a["type"] == "placeholder"]
    assert {p["placeholder"]["format"] for p in placeholders} == {"int", "float1", "float2"}
    assert all(p["documentIds"] == [] for p in placeholders)
    icons = [a["image"] for a in out["annotations"] if a["ruleIds"] == ["item.icon"]]
    assert icons == [
        {"path": "Character/Fighter/Effect/SkillIcon.img", "index": 192},
        {"path": "Character/Fighter/Effect/SkillIcon.img", "index": 193},
    ]


def test_stackables(docs: AnnotationDocs, archive: CorpusArchive) -> None:
    gold = _explain(docs, archive, "stackable/gold.stk")
    assert _labels(gold, "stk.stackable-type") == [("[waste]", "消耗品 Consumable")]
    assert _labels(gold, "stk.usable-job") == [("[all]", "全职业 All jobs")]
    haste = _explain(docs, archive, "stackable/ptn_haste.stk")
    stats = [a["value"] for a in haste["annotations"] if a["ruleIds"] == ["stk.stat-change.stat"]]
    assert stats == ["move speed", "attack speed"]
    box = _explain(docs, archive, "stackable/10000116.stk")
    content = [a["reference"] for a in box["annotations"] if a["ruleIds"] == ["stk.booster.item"]]
    assert [c["id"] for c in content] == ["10000117", "10000119", "10000120", "10000121"]
    assert {c["resolutionStatus"] for c in content} == {"missing"}  # not in the list excerpts
    assert "equipment" in content[0]["reason"] and "stackable" in content[0]["reason"]


def test_list_files_link_their_entries(docs: AnnotationDocs, archive: CorpusArchive) -> None:
    out = _explain(docs, archive, "skill/swordmanskill.lst")
    links = {a["reference"]["id"]: a["reference"] for a in out["annotations"] if a["origin"] == "runtime"}
    assert links["1"]["path"] == "skill/swordman/guard.skl" and links["1"]["resolutionStatus"] == "resolved"
    assert links["2"]["resolutionStatus"] == "missing"
    assert [p["ruleIds"] for p in out["pathContext"]] == [["dir.skill"], ["path.job-skill.lst"]]
    at = _explain(docs, archive, "skill/atfighterskill.lst")
    at_links = {a["reference"]["id"]: a["reference"] for a in at["annotations"] if a["origin"] == "runtime"}
    assert at_links["86"]["path"] == "skill/atfighter/earthbreak.skl"
    assert at_links["169"]["path"] == "skill/passive/backstep.skl"


def test_seed_example_equipment_price_end_to_end(docs: AnnotationDocs, archive: CorpusArchive) -> None:
    found = docs.search(
        workspace_id="ws",
        pvf_version="current",
        current_version="classic",
        file_path="equipment/example.equ",
        section="price",
        limit=20,
    )
    assert [i["ruleId"] for i in found["items"]] == ["equ.price", None]
    rule = found["items"][0]
    assert rule["applicability"] == "matched" and rule["matchReasons"] == ["section", "filePath"]
    assert found["items"][1]["fieldId"] == "item.price"
    detail = docs.get(rule["documentId"], found["rulesRevision"])
    assert detail["resolvedDefinition"]["target"] == {"kind": "token", "section": "price", "index": 0}
    assert detail["resolvedDefinition"]["fieldId"] == "item.price"
    real = _explain(
        docs, archive, "equipment/character/gunner/weapon/revolver/rev_31142.equ", section="price"
    )
    assert [(a["title"], a["value"], a["documentIds"]) for a in real["annotations"]] == [
        ("价格 Price", "110400", [rule["documentId"]])
    ]


def test_builtin_search_spans_categories(docs: AnnotationDocs) -> None:
    out = docs.search(pvf_version="90CN", query="稀有度")
    assert {i["ruleId"] for i in out["items"] if i["kind"] == "rule"} == {"equ.rarity", "stk.rarity"}
    name = docs.search(pvf_version="110US", section="name", extensions=[".equ"], kinds=["rule"])
    assert [i["ruleId"] for i in name["items"]] == ["item.name.110us"]
    cn = docs.search(pvf_version="90CN", section="name", extensions=[".equ"], kinds=["rule"])
    assert [i["ruleId"] for i in cn["items"]] == ["equ.name"]


def test_dungeon_file(docs: AnnotationDocs, archive: CorpusArchive) -> None:
    out = _explain(docs, archive, "dungeon/act1/lorien.dgn")
    by_rule = {a["ruleIds"][0]: a for a in out["annotations"] if a["ruleIds"]}
    assert by_rule["dgn.name"]["value"] == "洛兰"
    assert by_rule["dgn.minimum-required-level"]["value"] == "1"
    assert by_rule["dgn.cutscene-image"]["image"] == {"path": "Map/CutScene/Lorien.img", "index": 0}
    assert by_rule["dgn.greed"]["endLine"] > by_rule["dgn.greed"]["startLine"]  # a multi-line string
    assert [p["ruleIds"][0] for p in out["pathContext"]] == ["dir.dungeon", "path.dgn"]
    listed = _explain(docs, archive, "dungeon/dungeon.lst")
    link = next(a["reference"] for a in listed["annotations"] if a["origin"] == "runtime")
    assert (
        link["id"] == "1"
        and link["path"] == "dungeon/act1/lorien.dgn"
        and link["resolutionStatus"] == "resolved"
    )


def test_animation_file(docs: AnnotationDocs, archive: CorpusArchive) -> None:
    out = _explain(docs, archive, "dungeon/act1/title/lorien.ani")
    assert _labels(out, "ani.loop") == [("1", "循环 Loops")]
    frames = [a for a in out["annotations"] if a["ruleIds"] == ["ani.frame-image"]]
    assert frames and frames[0]["image"] == {"path": "Map/Title/Lorien.img", "index": 0}
    assert (frames[0]["section"], frames[0]["occurrence"]) == ("IMAGE", 0)
    count = next(a for a in out["annotations"] if a["ruleIds"] == ["ani.frame-max"])
    assert int(count["value"]) == len({a["occurrence"] for a in frames}) == 14
