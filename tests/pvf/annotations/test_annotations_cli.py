"""``moddesk pvf docs …`` through the typer app: search, get, explain (file, folder, archive), check."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from annotations_testkit import WEAPON_TEXT
from typer.testing import CliRunner

from moddesk.pvf.annotations.cli import register

runner = CliRunner()


def _app() -> typer.Typer:
    app = typer.Typer()

    @app.callback()
    def root() -> None:
        """pvf"""

    register(app)
    return app


def _run(*args: str) -> tuple[int, str]:
    result = runner.invoke(_app(), list(args))
    return result.exit_code, result.output


def test_search_and_get_as_json() -> None:
    code, out = _run(
        "docs",
        "search",
        "--file",
        "equipment/example.equ",
        "--section",
        "[price]",
        "--version",
        "90CN",
        "--json",
    )
    assert code == 0
    found = json.loads(out)
    rule = next(i for i in found["items"] if i["ruleId"] == "equ.price")
    code, out = _run("docs", "get", rule["documentId"], "--revision", found["rulesRevision"], "--json")
    assert code == 0
    assert json.loads(out)["resolvedDefinition"]["fieldId"] == "item.price"
    code, out = _run("docs", "get", rule["documentId"], "--revision", "rules-old")
    assert code == 2 and "STALE_RULES" in out


def test_search_text_output_and_enum_lookup() -> None:
    code, out = _run("docs", "search", "稀有度", "--kind", "rule", "--version", "classic")
    assert code == 0 and "equ.rarity" in out and "stk.rarity" in out
    found = json.loads(_run("docs", "search", "equ.rarity", "--version", "all", "--json")[1])
    doc_id = found["items"][0]["documentId"]
    code, out = _run("docs", "get", doc_id, "--value", "3")
    assert code == 0 and "神器" in out
    code, out = _run("docs", "get", doc_id, "--value", "03")
    assert "not found" in out


def test_explain_a_text_file_with_user_rules(tmp_path: Path) -> None:
    script = tmp_path / "blade.equ"
    script.write_text("#PVF_File\r\n\r\n[price]\r\n\t1200\r\n\r\n[rarity]\r\n\t4\r\n", "utf-8")
    rules = tmp_path / "mine.json"
    rules.write_text(json.dumps({"rules": [{"id": "equ.rarity", "disabled": True}]}), "utf-8")
    code, out = _run("docs", "explain", str(script), "equipment/blade.equ", "--version", "90CN", "--json")
    assert code == 0
    result = json.loads(out)
    assert [(a["ruleIds"], a["startLine"]) for a in result["annotations"]] == [
        (["equ.price"], 4),
        (["equ.rarity"], 7),
    ]
    code, out = _run("docs", "explain", str(script), "equipment/blade.equ", "--rules", str(rules), "--json")
    assert [a["ruleIds"] for a in json.loads(out)["annotations"]] == [["equ.price"]]
    code, out = _run("docs", "explain", str(script), "equipment/blade.equ")
    assert code == 0 and "价格 Price" in out and "史诗 Epic" in out


def test_explain_inside_an_exported_folder(tmp_path: Path) -> None:
    (tmp_path / "weapon").mkdir()
    (tmp_path / "weapon" / "blade.wpn").write_text(WEAPON_TEXT, "utf-8")
    code, out = _run("docs", "explain", str(tmp_path), "weapon/blade.wpn", "--section", "icon", "--json")
    assert code == 0
    assert [a["type"] for a in json.loads(out)["annotations"]] == ["image"]  # runtime image detection
    code, out = _run("docs", "explain", str(tmp_path), "weapon/none.wpn")
    assert code == 2 and "NOT_FOUND" in out


def test_explain_an_entry_of_a_real_archive(tmp_path: Path) -> None:
    from moddesk.pvf.archive import Archive

    archive = Archive.new("classic", region="tw")  # classic files do not record their region
    archive.write_text("equipment/equipment.lst", "#PVF_File\n\n7\n`a/sword.equ`\n")
    archive.write_text(
        "equipment/a/sword.equ", "#PVF_File\n\n[name]\n\t`劍`\n\n[set item]\n\t7\n[/set item]\n"
    )
    target = tmp_path / "my archive.pvf"
    archive.save_as(target)
    archive.close()
    code, out = _run("docs", "explain", str(target), "equipment/a/sword.equ", "--json")
    assert code == 0, out
    result = json.loads(out)
    assert result["pvfVersion"] == "classic"
    ref = next(a["reference"] for a in result["annotations"] if a["ruleIds"] == ["equ.set-item"])
    assert (
        ref["resolutionStatus"] == "resolved"
        and ref["path"] == "equipment/a/sword.equ"
        and ref["name"] == "劍"
    )


def test_check_reports_json_paths(tmp_path: Path) -> None:
    good = tmp_path / "good.json"
    good.write_text(json.dumps({"rules": [{"id": "equ.price", "disabled": True}]}), "utf-8")
    bad = tmp_path / "bad.json"
    bad.write_text(
        json.dumps({"rules": [{"id": "x", "target": {"kind": "token", "section": "a", "index": -1}}]}),
        "utf-8",
    )
    assert _run("docs", "check", str(good)) == (0, "有效 valid\n")
    code, out = _run("docs", "check", str(bad), "--json")
    assert code == 1
    paths = [i["path"] for i in json.loads(out)["issues"]]
    assert "bad.json:$.rules[0].target.index" in paths and "bad.json:$.rules[0].match" in paths


def test_top_level_explain_alias(tmp_path: Path) -> None:
    script = tmp_path / "gold.stk"
    script.write_text("#PVF_File\n\n[stackable type]\n\t`[waste]`\t0\n", "utf-8")
    code, out = _run("explain", str(script), "stackable/gold.stk")
    assert code == 0 and "消耗品 Consumable" in out


def test_check_reports_a_relation_no_file_defines(tmp_path: Path) -> None:
    """#35: a rule naming an undefined relation would explain nothing; check says so, with where."""
    rules = {
        "rules": [
            {
                "id": "wpn.broken",
                "match": {"extensions": [".wpn"]},
                "target": {"kind": "token", "section": "broken"},
                "annotation": {"title": "Broken ref", "type": "reference", "relation": "no-such-relation"},
            }
        ]
    }
    named = tmp_path / "refs.json"
    named.write_text(json.dumps(rules), "utf-8")
    code, out = _run("docs", "check", str(named), "--json")
    assert code == 1
    issues = json.loads(out)["issues"]
    assert issues == [
        {
            "path": "refs.json:$.rules[0].annotation.relation",
            "message": "relation 'no-such-relation' is not defined",
        }
    ]
    code, out = _run("docs", "check", str(named))
    assert code == 1 and "no-such-relation" in out
