"""Agent Skill installer: install, sync an unedited copy, refuse an edited one, uninstall."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from moddesk.kit.agents import (
    Locations,
    install_skill,
    installs_of,
    list_installs,
    load_skill,
    skill_dir,
    skill_state,
    sync_skills,
    system_skill,
    uninstall_skill,
)
from moddesk.kit.agents.skills import MARKER, read_record
from moddesk.kit.errors import ServiceError

SKILL_MD = """---
name: demo-skill
description: Use the demo MCP tools when the user asks about demo data.
---

# Demo skill

Call `demo_find` before grepping.
"""


def _source(root: Path, body: str = SKILL_MD, guide: str = "# Query guide\n\nStep 1.\n") -> Path:
    (root / "references").mkdir(parents=True, exist_ok=True)
    (root / "SKILL.md").write_text(body, encoding="utf-8")
    (root / "references" / "query-guide.md").write_text(guide, encoding="utf-8")
    return root


@pytest.fixture
def loc(tmp_path: Path) -> Locations:
    return Locations.under(tmp_path / "home", project=tmp_path / "project", platform="linux")


def test_full_lifecycle(loc: Locations, tmp_path: Path) -> None:
    src = _source(tmp_path / "pkg v1" / "skill")
    skill = load_skill(src)
    assert skill.name == "demo-skill" and set(skill.files) == {"SKILL.md", "references/query-guide.md"}
    user = skill_dir(skill.name, loc)
    assert user == loc.home / ".agents" / "skills" / "demo-skill"
    claude = skill_dir(skill.name, loc, "claude")
    project = skill_dir(skill.name, loc, "project")
    custom = skill_dir(skill.name, loc, custom=tmp_path / "my skills")

    # dry run writes nothing
    assert install_skill(skill, user, loc, dry_run=True).action == "create"
    assert not user.exists() and not loc.skill_record.exists()

    for path in (user, claude, project, custom):
        assert install_skill(skill, path, loc).action == "create"
        assert (path / "SKILL.md").read_text(encoding="utf-8") == SKILL_MD
        assert (path / "references" / "query-guide.md").is_file()
        assert skill_state(path) == "clean"
    marker = json.loads((user / MARKER).read_text(encoding="utf-8"))
    assert marker["managedBy"] == "moddesk" and marker["contentHash"] == skill.content_hash
    assert {Path(item["path"]) for item in read_record(loc)} == {user, claude, project, custom}
    assert install_skill(skill, user, loc).action == "unchanged"  # idempotent

    # the user edits one install; the package is upgraded with a changed skill
    edited = "# my own notes\n"
    (claude / "SKILL.md").write_text(SKILL_MD + edited, encoding="utf-8")
    assert skill_state(claude) == "modified"
    _source(src, SKILL_MD + "\nNew in v2.\n", guide="# Query guide v2\n")

    outcomes = {o.path: o.action for o in sync_skills(loc)}
    assert outcomes == {user: "update", claude: "skip-modified", project: "update", custom: "update"}
    assert (user / "SKILL.md").read_text(encoding="utf-8").endswith("New in v2.\n")
    assert (user / "references" / "query-guide.md").read_text(encoding="utf-8") == "# Query guide v2\n"
    assert (claude / "SKILL.md").read_text(encoding="utf-8").endswith(edited)  # never overwritten
    assert skill_state(user) == "clean"
    assert {o.action for o in sync_skills(loc)} == {"unchanged", "skip-modified"}

    # install over the edited copy is refused too
    assert install_skill(load_skill(src), claude, loc).action == "skip-modified"

    # uninstall: the clean ones go, the edited one stays unless forced
    assert uninstall_skill(user, loc).action == "remove" and not user.exists()
    refused = uninstall_skill(claude, loc)
    assert refused.action == "skip-modified" and claude.exists()
    assert uninstall_skill(claude, loc, force=True).action == "remove" and not claude.exists()
    assert sorted(installs_of(loc, "demo-skill")) == sorted([project, custom])


def test_removed_source_files_are_removed_from_unedited_installs(loc: Locations, tmp_path: Path) -> None:
    src = _source(tmp_path / "skill")
    (src / "references" / "extra.md").write_text("extra\n", encoding="utf-8")
    path = skill_dir("demo-skill", loc)
    install_skill(load_skill(src), path, loc)
    (src / "references" / "extra.md").unlink()
    assert [o.action for o in sync_skills(loc)] == ["update"]
    assert not (path / "references" / "extra.md").exists() and skill_state(path) == "clean"


def test_unmanaged_skill_is_never_touched(loc: Locations, tmp_path: Path) -> None:
    skill = load_skill(_source(tmp_path / "skill"))
    path = skill_dir(skill.name, loc)
    path.mkdir(parents=True)
    (path / "SKILL.md").write_text("my own skill with the same name\n", encoding="utf-8")
    assert skill_state(path) == "unmanaged"
    assert install_skill(skill, path, loc).action == "skip-unmanaged"
    assert uninstall_skill(path, loc, force=True).action == "skip-unmanaged"
    assert (path / "SKILL.md").read_text(encoding="utf-8") == "my own skill with the same name\n"


def test_deleted_install_is_dropped_from_the_record_not_recreated(loc: Locations, tmp_path: Path) -> None:
    skill = load_skill(_source(tmp_path / "skill"))
    path = skill_dir(skill.name, loc)
    install_skill(skill, path, loc)
    for child in sorted(path.rglob("*"), key=lambda p: -len(p.parts)):
        child.rmdir() if child.is_dir() else child.unlink()
    path.rmdir()
    assert [o.action for o in sync_skills(loc)] == ["missing"]
    assert not path.exists() and list_installs(loc) == []


def test_bad_sources_and_damaged_record(loc: Locations, tmp_path: Path) -> None:
    with pytest.raises(ServiceError) as info:
        load_skill(tmp_path / "nowhere")
    assert info.value.code == "SKILL_SOURCE_MISSING"
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "SKILL.md").write_text("---\nname: Not Valid!\n---\n", encoding="utf-8")
    with pytest.raises(ServiceError) as info:
        load_skill(bad)
    assert info.value.code == "SKILL_INVALID"
    loc.skill_record.parent.mkdir(parents=True)
    loc.skill_record.write_text("{not json", encoding="utf-8")
    with pytest.raises(ServiceError) as info:
        list_installs(loc)
    assert info.value.code == "CONFIG_INVALID"
    assert loc.skill_record.read_text(encoding="utf-8") == "{not json"


def test_system_skill_ships_with_the_package(loc: Locations) -> None:
    skill = system_skill("ra3")
    assert skill.name == "ra3-mod-xml" and skill.system == "ra3"
    assert "SKILL.md" in skill.files and any(rel.startswith("references/") for rel in skill.files)
    path = skill_dir(skill.name, loc)
    assert install_skill(skill, path, loc).action == "create"
    assert read_record(loc)[0]["system"] == "ra3"
    with pytest.raises(ServiceError):
        system_skill("chess")


# -- fuzz: the marker, the record and SKILL.md are parsers too


@settings(max_examples=150, deadline=None)
@given(data=st.one_of(st.binary(max_size=200), st.text(alphabet='{}[]:,"0a \n', max_size=60).map(str.encode)))
def test_fuzz_marker_and_record_readers(tmp_path_factory: pytest.TempPathFactory, data: bytes) -> None:
    tmp = tmp_path_factory.mktemp("fz")
    loc = Locations.under(tmp / "home", project=tmp, platform="linux")
    installed = tmp / "skill"
    installed.mkdir()
    (installed / "SKILL.md").write_bytes(b"x")
    (installed / MARKER).write_bytes(data)
    assert skill_state(installed) in ("unmanaged", "clean", "modified")
    loc.skill_record.parent.mkdir(parents=True)
    loc.skill_record.write_bytes(data)
    try:
        installs = read_record(loc)
    except ServiceError as exc:
        assert exc.code == "CONFIG_INVALID"
        assert loc.skill_record.read_bytes() == data
        return
    assert all(isinstance(item["path"], str) for item in installs)
    sync_skills(loc, dry_run=True)  # whatever the record says, a dry run never raises anything else


def test_deeply_nested_record_is_invalid_not_a_crash(loc: Locations) -> None:
    loc.skill_record.parent.mkdir(parents=True)
    loc.skill_record.write_text("[" * 100_000, encoding="utf-8")
    with pytest.raises(ServiceError):
        read_record(loc)


@settings(max_examples=150, deadline=None)
@given(
    body=st.one_of(
        st.binary(max_size=200).map(lambda b: b.decode("utf-8", "replace")),
        st.lists(
            st.sampled_from(
                ["---", "name: ok-name", "name: Bad Name", "description: d", "description:", "x", ""]
            ),
            max_size=6,
        ).map("\n".join),
    )
)
def test_fuzz_skill_front_matter(tmp_path_factory: pytest.TempPathFactory, body: str) -> None:
    root = tmp_path_factory.mktemp("src")
    (root / "SKILL.md").write_text(body, encoding="utf-8")
    try:
        skill = load_skill(root)
    except ServiceError as exc:
        assert exc.code == "SKILL_INVALID"
        return
    assert skill.name == "ok-name" and "SKILL.md" in skill.files


def test_a_file_in_the_way_is_write_failed(loc: Locations, tmp_path: Path) -> None:
    skill = load_skill(_source(tmp_path / "skill"))
    blocker = tmp_path / "not a folder"
    blocker.write_text("x", encoding="utf-8")
    with pytest.raises(ServiceError) as info:
        install_skill(skill, skill_dir(skill.name, loc, custom=blocker), loc)
    assert info.value.code == "WRITE_FAILED" and str(blocker) in info.value.message
    assert blocker.read_text(encoding="utf-8") == "x" and not loc.skill_record.exists()


def test_a_forged_marker_cannot_make_sync_touch_other_files(loc: Locations, tmp_path: Path) -> None:
    src = _source(tmp_path / "skill")
    path = skill_dir("demo-skill", loc, "project")
    install_skill(load_skill(src), path, loc)
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me", encoding="utf-8")
    marker = json.loads((path / MARKER).read_text(encoding="utf-8"))
    marker["files"].append("../../../victim.txt")  # a repo could ship such a marker
    (path / MARKER).write_text(json.dumps(marker), encoding="utf-8")
    assert skill_state(path) == "modified"
    (src / "SKILL.md").write_text(SKILL_MD + "v2\n", encoding="utf-8")
    assert [o.action for o in sync_skills(loc)] == ["skip-modified"]
    assert victim.read_text(encoding="utf-8") == "keep me"


def test_a_symlink_inside_an_install_is_never_written_through(loc: Locations, tmp_path: Path) -> None:
    src = _source(tmp_path / "skill")
    path = skill_dir("demo-skill", loc)
    install_skill(load_skill(src), path, loc)
    outside = tmp_path / "outside"
    outside.mkdir()
    for child in (path / "references").iterdir():
        child.unlink()
    (path / "references").rmdir()
    (path / "references").symlink_to(outside, target_is_directory=True)
    assert skill_state(path) == "modified"
    assert install_skill(load_skill(src), path, loc).action == "skip-modified"
    assert list(outside.iterdir()) == []
