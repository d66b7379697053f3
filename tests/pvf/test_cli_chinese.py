"""`moddesk pvf …` reads Chinese first: every command's and option's help, and what commands print.

The help of every command, group, argument and option (``--help`` included) must hold Chinese and
start with it (English after it); representative commands, run on a real archive, print their
summary lines with Chinese in them by default and in English alone under ``MODDESK_LANG=en``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from moddesk.pvf.cli import app
from moddesk.pvf.samples.generate import generate_archive

CJK = re.compile(r"[\u3400-\u9fff]")
LATIN_WORD = re.compile(r"[A-Za-z]{3,}")


def _commands(command: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    """Every group and command under ``command`` with its argument path."""
    yield path, command
    for name, sub in sorted(getattr(command, "commands", {}).items()):
        yield from _commands(sub, (*path, name))


def _chinese_first(text: str | None) -> bool:
    """Chinese in it, and before most of the English: a help that starts in Chinese."""
    if not text or not CJK.search(text):
        return False
    first_cjk = CJK.search(text)
    words = [m.start() for m in LATIN_WORD.finditer(text)]
    return first_cjk is not None and (not words or first_cjk.start() <= words[len(words) // 2])


def test_every_help_text_is_chinese_first() -> None:
    group = typer.main.get_group(app)
    missing: list[str] = []
    checked = 0
    for path, command in _commands(group):
        where = " ".join(("pvf", *path))
        ctx = command.make_context(where, ["--help"], resilient_parsing=True)
        summary = (command.help or "").strip().split("\n\n")[0]
        if not _chinese_first(summary):
            missing.append(f"{where}: {summary[:80]!r}")
        for param in command.get_params(ctx):
            checked += 1
            text = getattr(param, "help", None)
            if not _chinese_first(text):
                missing.append(f"{where} {param.opts[0] if param.opts else param.name}: {text!r}")
    assert checked > 150  # every command and its parameters were walked
    assert not missing, "help without Chinese first:\n" + "\n".join(missing)


@pytest.mark.parametrize(
    "args",
    [[], ["search"], ["docs"], ["docs", "explain"], ["script", "run"], ["mod", "merge"], ["history", "log"]],
)
def test_rendered_help_pages_show_the_chinese(args: list[str]) -> None:
    done = CliRunner(env={"COLUMNS": "200", "NO_COLOR": "1"}).invoke(app, [*args, "--help"])
    assert done.exit_code == 0, done.output
    assert "显示本帮助并退出" in done.output and CJK.search(done.output.split("Usage:")[1].split("\n")[2])


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("cli zh")
    generate_archive(folder / "a.pvf", files=120)
    generate_archive(folder / "b.pvf", files=120, seed=3)
    (folder / "good.json").write_text(json.dumps({"rules": [{"id": "equ.price", "disabled": True}]}), "utf-8")
    (folder / "ok.pvf.js").write_text('pvf.log("hi");\n', "utf-8")
    return folder


# (arguments with {w} for the workspace folder, the English words that mark the summary line)
CASES: list[tuple[list[str], str]] = [
    (["generate", "{w}/gen.pvf", "--files", "64"], "generated"),
    (["info", "{w}/a.pvf"], "files"),
    (["verify", "{w}/a.pvf"], "ok ("),
    (["search", "{w}/a.pvf", "-q", "[grade]", "--limit", "2"], "hits at revision"),
    (["search", "{w}/a.pvf", "-q", "[grade]", "--limit", "2"], "path"),
    (["extract", "{w}/a.pvf", "{w}/out-{lang}"], "extracted"),
    (["pack", "{w}/out-{lang}", "{w}/packed-{lang}.pvf"], "packed"),
    (["diff", "{w}/a.pvf", "{w}/b.pvf"], "paths"),
    (["diff", "{w}/a.pvf", "{w}/b.pvf"], "status"),
    (["history", "init", "{w}/hist-{lang}.pvf"], "history created"),
    (["history", "diff", "{w}/hist-{lang}.pvf"], "paths differ"),
    (["docs", "search", "price", "--limit", "1"], "match(es)"),
    (["docs", "check", "{w}/good.json"], "valid"),
    (["script", "check", "{w}/ok.pvf.js"], "syntax ok"),
    (["script", "help"], "How scripts run"),
    (["mcp"], "MCP endpoint"),
]


@pytest.mark.parametrize("lang", ["zh-CN", "en"])
@pytest.mark.parametrize(("args", "marker"), CASES, ids=[" ".join(c[0][:2]) + f"/{c[1]}" for c in CASES])
def test_outputs_are_chinese_first_and_english_on_request(
    workspace: Path,
    lang: str,
    args: list[str],
    marker: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import shutil

    monkeypatch.setenv("MODDESK_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setenv("MODDESK_CACHE_DIR", str(tmp_path / "cache"))
    if args[0] == "history":
        target = workspace / f"hist-{lang}.pvf"
        if not target.exists():
            shutil.copy(workspace / "a.pvf", target)
    argv = [a.format(w=workspace, lang=lang) for a in args]
    if args[0] == "pack" and not (workspace / f"out-{lang}").exists():
        CliRunner().invoke(app, ["extract", str(workspace / "a.pvf"), str(workspace / f"out-{lang}")])
    if args[:2] == ["history", "init"] and (workspace / f"hist-{lang}.pvf.moddesk").exists():
        pytest.skip("history made by the diff case")
    done = CliRunner(env={"COLUMNS": "400", "NO_COLOR": "1", "MODDESK_LANG": lang}).invoke(app, argv)
    assert done.exit_code == 0, done.output
    lines = [line for line in done.output.splitlines() if marker in line]
    assert lines, f"no line with {marker!r} in:\n{done.output}"
    if lang == "en":
        assert not any(CJK.search(line) for line in lines), lines
    else:
        assert all(CJK.search(line) for line in lines), lines
        assert all(line.find(marker) > CJK.search(line).start() for line in lines), lines  # type: ignore[union-attr]
