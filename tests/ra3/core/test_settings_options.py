"""Options and the project file: `--schema` takes a folder, a failed option never persists, and a good
`--schema` repairs a project file whose schema is gone."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from moddesk.kit.errors import ServiceError
from moddesk.ra3.cli import app
from moddesk.ra3.core.sample import write_sample_project
from moddesk.ra3.core.settings import configure, read_settings, settings_paths

MOD = "Mods/Sample Mod"


@pytest.fixture
def sdk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("RA3MODXML_HOME", str(tmp_path / "ra3 home"))
    root = tmp_path / "sdk"
    write_sample_project(root)
    return root


def test_schema_option_accepts_the_folder_holding_it(sdk: Path) -> None:
    for given in (sdk / "Schemas" / "xsd", sdk / "Schemas", sdk):
        cfg, _saved, _written = configure(sdk / MOD, schema=given, remember=None)
        assert cfg.schema_path == sdk / "Schemas" / "xsd" / "CnC3Types.xsd", given


def test_a_bad_schema_option_fails_and_is_not_remembered(sdk: Path, tmp_path: Path) -> None:
    project = sdk / MOD
    empty = tmp_path / "no schema here"
    empty.mkdir()
    for bad in (empty, tmp_path / "missing.xsd"):
        with pytest.raises(ServiceError) as err:
            configure(project, schema=bad, remember="home")
        assert err.value.code == "SCHEMA_NOT_FOUND" and str(bad) in err.value.message
    assert not any(p.exists() for p in settings_paths(project))
    # the CLI says so in one line, no traceback, and still remembers nothing
    result = CliRunner().invoke(app, ["index", str(project), "--schema", str(empty), "--no-snapshot"])
    assert result.exit_code == 2 and "SCHEMA_NOT_FOUND" in result.output and "Traceback" not in result.output
    assert not any(p.exists() for p in settings_paths(project))


def test_a_good_schema_option_repairs_a_saved_schema_that_is_gone(sdk: Path, tmp_path: Path) -> None:
    project = sdk / MOD
    saved_file = settings_paths(project)[0]
    saved_file.write_text('# mine\ngame = "ra3"\nschema = "/gone/CnC3Types.xsd"\n', encoding="utf-8")
    cfg, _saved, _written = configure(project, schema=sdk / "Schemas" / "xsd", remember="home")
    assert cfg.schema_path == sdk / "Schemas" / "xsd" / "CnC3Types.xsd"
    text = saved_file.read_text(encoding="utf-8")
    assert text.startswith("# mine\n") and "/gone/" not in text
    again = read_settings(project)
    assert again is not None and again.schema == sdk / "Schemas" / "xsd" / "CnC3Types.xsd"
