"""Export sources ``working`` (against history HEAD) and ``commit`` (one commit against its parent)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from moddesk.kit.errors import ServiceError

from .conftest import Bench


def test_working_and_commit_sources(bench: Bench, tmp_path: Path) -> None:
    with pytest.raises(ServiceError) as caught:
        bench.exports.prepare(bench.ws, bench.revision, "working")
    assert caught.value.code == "HISTORY_NOT_ENABLED"
    bench.service.history_init(bench.ws)

    # committed change: w1's price and a new list entry with its new file
    bench.service.apply_changes(
        bench.ws,
        bench.revision,
        {
            "equipment/weapon/w1.equ": "#PVF_File\n[name]\n`Weapon 1`\n[price]\n\t111\n",
            "equipment/weapon/w7.equ": "#PVF_File\n[name]\n`Weapon 7`\n",
            "equipment/equipment.lst": "#PVF_File\n1\t`weapon/w0.equ`\n2\t`weapon/w1.equ`\n7\t`weapon/w7.equ`\n",
        },
    )
    commit = bench.service.history_commit(bench.ws, "price and a new weapon")["commit"]
    assert commit is not None
    # working change after that commit: only w2
    bench.service.apply_changes(
        bench.ws,
        bench.revision,
        {"equipment/weapon/w2.equ": "#PVF_File\n[name]\n`Weapon 2`\n[price]\n\t222\n"},
    )

    working = bench.exports.prepare(
        bench.ws, bench.revision, "working", mode="mod", fmt="110USextend", name="Work"
    )
    keys = {e["entryKey"] for e in bench.exports.preview(working["planId"])["entries"]}
    assert keys == {"pvf/equipment/weapon/w2.equ"}, "working = changes since HEAD only"
    bench.exports.discard(working["planId"])

    one = bench.exports.prepare(
        bench.ws,
        bench.revision,
        "commit",
        commit_id=commit["id"],
        mode="mod",
        fmt="110USextend",
        name="Commit",
    )
    preview = bench.exports.preview(one["planId"])
    assert {e["entryKey"] for e in preview["entries"]} == {
        "pvf/equipment/weapon/w1.equ",
        "pvf/equipment/weapon/w7.equ",
        "merge/equipment/equipment.lst",
    }
    out = tmp_path / "out"
    out.mkdir()
    result = bench.exports.execute(one["planId"], str(out))
    root = Path(result["outputPath"])
    # the list's baseline is the parent commit: only the new entry is a merge line
    assert (root / "merge" / "equipment" / "equipment.lst").read_text() == "7\t`weapon/w7.equ`\n"
    assert "111" in (root / "pvf" / "equipment" / "weapon" / "w1.equ").read_text()
    assert json.loads((root / "pack.json").read_text())["name"] == "Commit"
