"""Every view of the page in zh-CN, with real tasks, plans, errors and notices, says nothing in
English outside code, paths, identifiers and the archive's own data; a screenshot of each view
goes to docs/ (``MODDESK_ZH_SHOTS=docs`` when refreshing them) or the artifacts folder."""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from moddesk.pvf.agent.serve import Workbench
from moddesk.pvf.samples.generate import generate_archive
from moddesk.pvf.scripting.service import ScriptService
from moddesk.pvf.service import PvfService

CHROMIUM = os.environ.get("MODDESK_CHROMIUM", "/usr/bin/chromium")
ARGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run"]
VIEWS = ("files", "search", "activity", "scripts", "transfer", "history", "settings")

pytestmark = pytest.mark.external
RAISE_THREE = """let n = 0;
for (const file of pvf.glob("equipment/**/*.equ")) {
  if (n >= 3) break;
  const doc = file.parse();
  const price = doc.getValue("price");
  if (typeof price === "number") { doc.set("price", price + 1); file.write(doc); n++; }
}
pvf.log(`changed ${n}`);"""

# Text the scan skips: code and script text, archive paths and data, error codes, ids, logs.
SKIP = (
    "pre, code, textarea, input, select, option, .code, .where, .snip, .log, .name, .twisty, #tree,"
    " #tabs, #code-wrap, .archive-data, [data-path], .path, kbd"
)
# words that are names, not English prose: products, formats, units, the language switch
ALLOWED = {
    "moddesk",
    "PVF",
    "MCP",
    "MOD",
    "ID",
    "API",
    "JSON",
    "HTTP",
    "URL",
    "EN",
    "UTF",
    "GSP",
    "SP",
    "HP",
    "MP",
    "KB",
    "MB",
    "MiB",
    "KiB",
    "GiB",
    "ms",
    "Lv",
    "pvf",
    "js",
    "ts",
    "lst",
    "str",
    "equ",
    "stk",
    "skl",
    "dgn",
    "ani",
    "img",
    "zip",
    "none",
    "Script",
    "Chromium",
    "JavaScript",
    "QuickJS-ng",
    "ES2023",
}


def _english_words(text: str) -> list[str]:
    """Words of ASCII letters that are neither identifiers nor allowed names."""
    out = []
    # a word right after . / \\ _ or a digit is part of a name (.lay, inbox/, 90US)
    for token in re.findall(r"(?<![./\\\w-])[A-Za-z][A-Za-z0-9_.:/\\-]*", text):
        word = token.strip(".:-")
        if not word or word in ALLOWED:
            continue
        if re.search(r"[0-9_./:\\]", word) or re.fullmatch(r"[A-Z][A-Z0-9_]+", word):  # ids, paths, CODES
            continue
        if re.fullmatch(r"[a-z]+[A-Z][A-Za-z]*", word):  # camelCase identifiers (planId, changeKey)
            continue
        out.append(word)
    return out


def _visible_text(page: Any) -> list[str]:
    return list(
        page.evaluate(
            """skip => {
              const out = [];
              const walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
              for (let node = walk.nextNode(); node; node = walk.nextNode()) {
                const el = node.parentElement;
                if (!el || !node.textContent.trim() || el.closest(skip)) continue;
                if (el.closest('[hidden]') || !el.getClientRects().length) continue;
                const style = getComputedStyle(el);
                if (style.visibility === 'hidden' || style.display === 'none') continue;
                out.push(node.textContent.trim());
              }
              for (const el of document.querySelectorAll('[placeholder]')) if (el.getClientRects().length) out.push(el.placeholder);
              return out;
            }""",
            SKIP,
        )
    )


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Workbench]:
    if not (Path(CHROMIUM).exists() or shutil.which("chromium")):
        if os.environ.get("MODDESK_REQUIRE_EXTERNAL") == "1":
            pytest.fail(f"chromium is required (MODDESK_REQUIRE_EXTERNAL=1) but {CHROMIUM} is missing")
        pytest.skip(f"chromium not installed at {CHROMIUM}")
    folder = tmp_path_factory.mktemp("zh scan")
    archive = folder / "Script.pvf"
    generate_archive(archive, files=2000, seed=11)
    workbench = Workbench(PvfService(), port=0, roots=[folder]).start()
    handle = workbench.service.open(str(archive), workbench.service.epoch)
    assert workbench.service.tasks.wait(handle["taskId"], 120)["state"] == "succeeded"
    try:
        yield workbench
    finally:
        workbench.stop()


def _shot_dir() -> Path:
    chosen = os.environ.get("MODDESK_ZH_SHOTS")
    path = Path(chosen) if chosen else Path(tempfile.gettempdir()) / "moddesk-artifacts"
    path.mkdir(parents=True, exist_ok=True)
    return path


def test_every_view_speaks_chinese(bench: Workbench) -> None:
    from playwright.sync_api import sync_playwright

    service = bench.service
    info = service.info()
    # real work for the activity view: the agent's script run left a plan to review; a failed run
    scripts = service.shared("scripts", lambda: ScriptService(service))
    ran = scripts.run(info["workspaceId"], info["revision"], RAISE_THREE, label="agent")
    assert service.tasks.wait(ran["taskId"], 120)["state"] == "succeeded"
    found: dict[str, list[str]] = {}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        context = browser.new_context(viewport={"width": 1360, "height": 820}, locale="zh-CN")
        context.set_default_timeout(30000)
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(bench.login_link())
        page.wait_for_selector("body[data-ready='1']")

        def scan(view: str) -> None:
            page.wait_for_timeout(300)
            words = sorted({w for text in _visible_text(page) for w in _english_words(text)})
            if words:
                found[view] = words
            # machine paths, the port and the run's token are masked in the pictures
            private = [
                "#ws-status span[title]",
                "#archive-path",
                "#mcp-url",
                "#token",
                "#roots code",
                "pre.config",
                "#notice .path",
            ]
            page.screenshot(
                path=str(_shot_dir() / f"pvf-zh-{view}.png"),
                mask=[page.locator(sel) for sel in private],
            )

        # files: a file open with its field annotations, a hover
        equ = next(p for p in service.list_folder(info["workspaceId"], "equipment", limit=5)["items"])
        page.click("#tree .row[data-path='equipment']")
        page.evaluate(
            "() => window.dispatchEvent(new CustomEvent('pvf-open', {detail: 'equipment/equipment.lst'}))"
        )
        page.wait_for_selector("#code-wrap")
        assert equ
        scan("files")
        # the EN switch shows the English half of the same docs, and back
        page.wait_for_selector("#ann-panel .item")
        assert "其他文件引用" in page.inner_text("#ann-panel")
        page.click("#btn-lang")
        page.wait_for_function(
            "() => document.querySelector('#ann-panel').innerText.includes('The code other files use')"
        )
        assert "其他文件引用" not in page.inner_text("#ann-panel")
        page.click("#btn-lang")
        page.wait_for_function(
            "() => document.querySelector('#ann-panel').innerText.includes('其他文件引用')"
        )
        # search: a query with hits, then one with none (the why and what would match)
        page.click("#views button[data-view='search']")
        page.fill("#search-q", "equipment/*.equ")
        page.select_option("#search-mode", "path")
        page.click("#search-form button[type='submit']")
        page.wait_for_selector("#search-no-hits")
        scan("search")
        # activity: the agent's task and its plan under review
        page.click("#views button[data-view='activity']")
        page.wait_for_selector("#tasks .task")
        page.wait_for_selector("#review:not([hidden])")  # the agent's plan, open for review
        scan("activity")
        # scripts: the help in Chinese
        page.click("#views button[data-view='scripts']")
        page.wait_for_function(
            "() => (document.querySelector('#script-help')?.textContent || '').length > 50"
        )
        scan("scripts")
        page.click("#views button[data-view='transfer']")
        scan("transfer")
        page.click("#views button[data-view='history']")
        scan("history")
        page.click("#views button[data-view='settings']")
        scan("settings")
        # an error notice: saving a copy over an existing file
        page.fill("#archive-path", str(Path(info["sourcePath"]).parent / "missing.pvf"))
        page.click("#btn-open")
        page.wait_for_selector("#notice:not([hidden]) .code")
        scan("notice")
        browser.close()
    assert not errors, errors
    assert not found, f"English words in the zh-CN page: {found}"
