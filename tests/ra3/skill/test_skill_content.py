"""The ra3-mod-xml Agent Skill: applicability section, tool names, no workspace documents."""

from __future__ import annotations

import re
from pathlib import Path

import moddesk.ra3

SKILL_DIR = Path(moddesk.ra3.__file__).parent / "skill"
SKILL = (SKILL_DIR / "SKILL.md").read_text(encoding="utf-8")
GUIDE = (SKILL_DIR / "references" / "query-guide.md").read_text(encoding="utf-8")


def _frontmatter(text: str) -> dict[str, str]:
    match = re.match(r"^---\n(.*?)\n---\n", text, re.S)
    assert match, "SKILL.md starts with YAML front matter"
    fields = {}
    for line in match.group(1).splitlines():
        key, _, value = line.partition(":")
        fields[key.strip()] = value.strip()
    return fields


def test_front_matter_names_the_skill() -> None:
    meta = _frontmatter(SKILL)
    assert meta["name"] == "ra3-mod-xml"
    assert 40 < len(meta["description"]) <= 1024  # the Agent Skills limit


def test_applicability_section_has_positive_and_negative_signals() -> None:
    section = SKILL.split("## When this skill applies", 1)[1].split("\n## ", 1)[0]
    for signal in ("Data/Mod.xml", "mapmetadata_", ".babproj", "AssetDeclaration", "Include"):
        assert signal in section
    assert "CnC3Types.xsd" in section and "does **not** mean" in section
    assert "`get_status`" in section and "no_index" in section and "projectDir" in section
    assert "Do not use it" in section


def test_workflows_and_rules_from_the_seed() -> None:
    for phrase in ("find_asset", "find_references", "is_file_active", "unreferenced", "inheritFrom"):
        assert phrase in SKILL
    assert 'targetTypes=["WeaponTemplate"]' in SKILL  # weapons of a unit
    assert "Prefer the index over full-text search" in SKILL
    assert "pass `type`" in SKILL
    assert "Never read a whole index snapshot" in SKILL


def test_no_workspace_document_is_referenced() -> None:
    for text in (SKILL, GUIDE):
        assert not re.search(r"\bdocs?/[\w./-]+\.md\b", text)
        assert "AGENTS.md" not in text and "codebase-navigation" not in text
        assert "../" not in text and "shared/" not in text
    # the only file the skill points at is its own reference
    linked = set(re.findall(r"references/[\w.-]+", SKILL))
    assert linked == {"references/query-guide.md"}


def test_skill_names_exactly_the_tools_the_server_has(tmp_path: Path) -> None:
    import anyio
    from mcp import Client

    from moddesk.ra3.agent.mcp import Ra3Backend, build_server

    async def names() -> set[str]:
        async with Client(build_server(Ra3Backend(tmp_path))) as client:
            return {t.name for t in (await client.list_tools()).tools}

    tools = anyio.run(names)
    table = SKILL.split("## Tools", 1)[1].split("\n## ", 1)[0]
    mentioned = set(re.findall(r"^\| `(\w+)", table, re.M))
    assert mentioned == tools
    for name in ("get_status", "find_asset", "get_asset_references"):
        assert name in GUIDE


def test_skill_installs_through_the_kit(tmp_path: Path) -> None:
    from moddesk.kit.agents import Locations, install_skill, skill_dir, system_skill

    loc = Locations.under(tmp_path / "home", project=tmp_path)
    source = system_skill("ra3")
    assert source.name == "ra3-mod-xml" and "references/query-guide.md" in source.files
    target = skill_dir(source.name, loc)
    assert install_skill(source, target, loc).action == "create"
    assert (target / "SKILL.md").read_text(encoding="utf-8") == SKILL
