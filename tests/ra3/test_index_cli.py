"""`moddesk ra3 index` / `moddesk ra3 query …` through typer's runner (tables and --json)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from moddesk.ra3.core.sample import write_sample_project
from moddesk.ra3.index_cli import register


@pytest.fixture()
def cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[typer.Typer, Path]:
    monkeypatch.setenv("RA3MODXML_HOME", str(tmp_path / "home"))
    app = typer.Typer()
    register(app)
    return app, write_sample_project(tmp_path / "sdk")


def test_index_then_query_from_snapshot(cli: tuple[typer.Typer, Path], tmp_path: Path) -> None:
    app, project = cli
    runner = CliRunner()
    out = runner.invoke(app, ["index", str(project), "--json"])
    assert out.exit_code == 0, out.output
    status = json.loads(out.stdout)
    assert status["stats"]["assetCount"] == 18 and Path(status["snapshot"]).is_file()
    assert {d["code"] for d in status["diagnostics"]} >= {"INCLUDE_NOT_FOUND", "XML_MALFORMED"}
    assert (tmp_path / "home" / "snapshots").is_dir()

    found = runner.invoke(app, ["query", "find", "sampletank", "-p", str(project), "--json"])
    answer = json.loads(found.stdout)
    assert answer["index"]["source"] == "snapshot" and answer["total"] == 2

    table = runner.invoke(app, ["query", "refs", "SampleScout", "-p", str(project)])
    assert table.exit_code == 0 and "references to SampleScout" in table.stdout and "weak" in table.stdout

    active = runner.invoke(
        app, ["query", "active", str(project / "Data" / "Units" / "Unused.xml"), "-p", str(project), "--json"]
    )
    assert json.loads(active.stdout)["active"] is False

    forward = runner.invoke(
        app,
        [
            "query",
            "forward",
            "GameObject",
            "SampleTank",
            "--target-type",
            "WeaponTemplate",
            "-p",
            str(project),
            "--json",
        ],
    )
    edges = json.loads(forward.stdout)["edges"]
    assert [e["to"]["id"] for e in edges if e["to"]] == ["SampleTankGun"]

    for verb in (
        ["status"],
        ["def", "GameObject", "SampleTank"],
        ["list", "GameObject"],
        ["include", "ART:TATank.w3x"],
        ["define", "TANK_COST"],
        ["unreferenced"],
        ["diagnostics"],
    ):
        res = runner.invoke(app, ["query", *verb, "-p", str(project)])
        assert res.exit_code == 0, (verb, res.output)


def test_query_without_snapshot_explains(cli: tuple[typer.Typer, Path]) -> None:
    app, project = cli
    res = CliRunner().invoke(app, ["query", "find", "x", "-p", str(project)])
    assert res.exit_code == 2
    assert "SNAPSHOT_NOT_FOUND" in res.output
    fresh = CliRunner().invoke(app, ["query", "find", "SampleTank", "-p", str(project), "--fresh", "--json"])
    assert fresh.exit_code == 0 and json.loads(fresh.stdout)["index"]["source"] == "live"
