"""Installed skills follow an upgrade: unedited copies are updated when a server starts, edited
ones never are (real files under a substitute home)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from moddesk.kit.agents import Locations
from moddesk.kit.agents.skills import install_skill, load_skill, skill_state, sync_unedited, system_skill


def test_unedited_installs_follow_the_package_and_edited_ones_stay(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MODDESK_HOME", str(tmp_path / "home"))
    loc = Locations.from_env()
    # what an older moddesk shipped: the same skill with an older text
    old = tmp_path / "old ra3 skill"
    shutil.copytree(system_skill("ra3").root, old)
    (old / "SKILL.md").write_text((old / "SKILL.md").read_text("utf-8") + "\nAn older line.\n", "utf-8")
    clean = tmp_path / "skills a" / "ra3-mod-xml"
    edited = tmp_path / "skills b" / "ra3-mod-xml"
    for path in (clean, edited):
        install_skill(load_skill(old, "ra3"), path, loc)
    (edited / "SKILL.md").write_text("my own notes\n", "utf-8")
    assert skill_state(clean) == "clean" and skill_state(edited) == "modified"

    updated = sync_unedited(loc)

    assert [o.path for o in updated] == [clean]
    assert (clean / "SKILL.md").read_text("utf-8") == (system_skill("ra3").root / "SKILL.md").read_text(
        "utf-8"
    )
    assert skill_state(clean) == "clean"
    assert (edited / "SKILL.md").read_text("utf-8") == "my own notes\n"
    assert sync_unedited(loc) == []  # nothing left to do: a second start is a no-op
