"""``moddesk pvf script|import|export`` as a user runs them: real subprocesses on real files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from moddesk.pvf.archive import Archive

from .conftest import make_archive


def moddesk(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1"}
    return subprocess.run(
        [sys.executable, "-m", "moddesk", "pvf", *args],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        env=env,
        timeout=300,
        check=False,
    )


def test_script_preview_then_apply(tmp_path: Path) -> None:
    archive = make_archive(tmp_path / "my archive.pvf")
    script = tmp_path / "raise.pvf.js"
    script.write_text(
        'for (const f of pvf.glob("equipment/**/*.equ")) {\n'
        '  const d = f.parse(); if (d.getValue("price") < 30) { d.set("price", 30); f.write(d); }\n'
        "}\n"
        'pvf.log("done");\n'
    )
    preview = moddesk("script", "run", str(archive), str(script))
    assert preview.returncode == 0, preview.stdout + preview.stderr
    assert "done" in preview.stdout and "+\t30" in preview.stdout.replace("+   30", "+\t30")
    assert "nothing was written" in preview.stdout
    before = archive.read_bytes()
    applied = moddesk("script", "run", str(archive), str(script), "--apply", "--yes", "--no-diff")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert archive.read_bytes() != before
    with Archive.open(archive) as reopened:
        assert "\t30" in reopened.read_text("equipment/weapon/w0.equ")
        assert "\t55" in reopened.read_text("equipment/weapon/w5.equ")
    broken = tmp_path / "broken.pvf.js"
    broken.write_text("let x = ;\n")
    check = moddesk("script", "check", str(broken))
    assert check.returncode == 1 and ":1:" in check.stdout


def test_import_then_export_mod(tmp_path: Path) -> None:
    archive = make_archive(tmp_path / "a.pvf")
    folder = tmp_path / "newstuff"
    folder.mkdir()
    (folder / "n.equ").write_text("#PVF_File\n[name]\n`N`\n")
    done = moddesk("import", str(archive), str(folder), "--to", "equipment", "--yes")
    assert done.returncode == 0, done.stdout + done.stderr
    with Archive.open(archive) as reopened:
        assert "`N`" in reopened.read_text("equipment/newstuff/n.equ")
    out = tmp_path / "out"
    out.mkdir()
    exported = moddesk(
        "export",
        str(archive),
        "--out",
        str(out),
        "--path",
        "equipment/newstuff",
        "--format",
        "110USextend",
        "--name",
        "Fresh",
    )
    assert exported.returncode == 0, exported.stdout + exported.stderr
    pack = json.loads((out / "Fresh-1.0" / "pack.json").read_text())
    assert pack["types"] == {"equipment/newstuff/n.equ": 1}
    again = moddesk(
        "export",
        str(archive),
        "--out",
        str(out),
        "--path",
        "equipment/newstuff",
        "--format",
        "110USextend",
        "--name",
        "Fresh",
    )
    assert again.returncode == 1 and "TARGET_EXISTS" in again.stdout


def test_import_of_text_that_does_not_compile_is_refused_before_applying(tmp_path: Path) -> None:
    archive = make_archive(tmp_path / "a.pvf")
    before = archive.read_bytes()
    folder = tmp_path / "creds"
    folder.mkdir()
    (folder / "keys.equ").write_text("[default]\nregion = north\n")
    done = moddesk("import", str(archive), str(folder), "--yes")
    assert done.returncode == 1
    assert "TEXT_INVALID" in done.stdout and "creds/keys.equ" in done.stdout and "--mode raw" in done.stdout
    assert archive.read_bytes() == before
