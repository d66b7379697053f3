"""The tree keeps the person's place in a real Chromium: open folders, the selection, the scroll
position and the open tabs survive revisions made by someone else, the person's own saved draft,
and a page reload; a deleted open file says so in its tab."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from moddesk.pvf.agent.serve import Workbench
from moddesk.pvf.samples.generate import generate_archive
from moddesk.pvf.service import PvfService

CHROMIUM = os.environ.get("MODDESK_CHROMIUM", "/usr/bin/chromium")
ARGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run"]
FOLDER = "stackable/cash"

pytestmark = pytest.mark.external


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Workbench]:
    if not (Path(CHROMIUM).exists() or shutil.which("chromium")):
        if os.environ.get("MODDESK_REQUIRE_EXTERNAL") == "1":
            pytest.fail(f"chromium is required (MODDESK_REQUIRE_EXTERNAL=1) but {CHROMIUM} is missing")
        pytest.skip(f"chromium not installed at {CHROMIUM}")
    archive = tmp_path_factory.mktemp("tree place") / "Script place.pvf"
    generate_archive(archive, files=3000, seed=7)
    workbench = Workbench(PvfService(), port=0, roots=[archive.parent]).start()
    handle = workbench.service.open(str(archive), workbench.service.epoch)
    assert workbench.service.tasks.wait(handle["taskId"], 120)["state"] == "succeeded"
    try:
        yield workbench
    finally:
        workbench.stop()


@pytest.fixture
def page(bench: Workbench) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        context = browser.new_context(viewport={"width": 1280, "height": 700}, locale="zh-CN")
        context.set_default_timeout(30000)
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(bench.login_link())  # the printed link logs the browser in (cookie + CSRF token)
        page.wait_for_selector("body[data-ready='1']")
        yield page
        browser.close()
        assert not errors, errors


def _eventually(check: Callable[[], bool], seconds: float = 20) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if check():
            return True
        time.sleep(0.1)
    return check()


def _place(page: Any) -> dict[str, Any]:
    """What the person sees: open folders, the selected row, the top row, the tabs."""
    return page.evaluate(
        """() => {
          const box = document.querySelector('#tree');
          const rows = [...box.querySelectorAll('.row[data-path]')];
          const top = rows.filter((r) => r.offsetTop >= box.scrollTop).sort((a, b) => a.offsetTop - b.offsetTop)[0];
          return {
            expanded: rows.filter((r) => r.getAttribute('aria-expanded') === 'true').map((r) => r.dataset.path),
            selected: rows.filter((r) => r.getAttribute('aria-selected') === 'true').map((r) => r.dataset.path),
            top: top ? top.dataset.path : null,
            scrollTop: box.scrollTop,
            tabs: [...document.querySelectorAll('#tabs .tab')].map((t) => t.dataset.path),
            children: rows.filter((r) => r.dataset.path.startsWith('stackable/cash/')).length,
          };
        }"""
    )


def _wait_revision(page: Any, bench: Workbench) -> None:
    """Until the page has shown the service's current revision (its info arrives by events)."""
    want = bench.service.info()["revision"]
    page.wait_for_function(
        "want => (document.querySelector('#tree')?.dataset.revision | 0) >= want", arg=want
    )


def test_the_tree_keeps_the_place_across_revisions_and_reload(page: Any, bench: Workbench) -> None:
    service = bench.service
    files = service.list_folder(service.info()["workspaceId"], FOLDER, limit=1000)["items"]
    names = [item["path"] for item in files if not item["folder"]]
    assert len(names) > 60, names
    opened, doomed, edited = names[40], names[41], names[42]

    # expand stackable, then stackable/cash, open two files from it, scroll so the folder is mid-view
    page.click("#tree .row[data-path='stackable']")
    page.click(f"#tree .row[data-path='{FOLDER}']")
    page.wait_for_selector(f"#tree .row[data-path='{names[0]}']")
    page.evaluate("p => window.dispatchEvent(new CustomEvent('pvf-open', {detail: p}))", doomed)
    page.wait_for_selector(f"#tabs .tab[data-path='{doomed}']")
    page.evaluate("() => { document.querySelector('#tree').scrollTop = 22 * 30; }")
    page.wait_for_selector(f"#tree .row[data-path='{opened}']")
    page.click(f"#tree .row[data-path='{opened}']")
    page.wait_for_selector(f"#tabs .tab[data-path='{opened}'][aria-selected='true']")
    before = _place(page)
    assert before["selected"] == [opened] and before["children"] > 10, before

    # someone else changes the archive: one file edited, one new file, the open tab's file deleted
    info = service.info()
    added = f"{FOLDER}/aaa_new_from_agent.stk"
    service.apply_changes(
        info["workspaceId"],
        info["revision"],
        {
            edited: "#PVF_File\n\n[name]\n\t`edited by the agent`\n",
            added: "#PVF_File\n\n[grade]\n\t3\n",
            doomed: None,
        },
    )
    _wait_revision(page, bench)
    after = _place(page)
    assert after["children"] >= before["children"] - 1, (before, after)  # the folder still lists its files
    assert after["selected"] == [opened], after
    assert after["top"] == before["top"] and after["scrollTop"] == pytest.approx(
        before["scrollTop"], abs=22 + 1
    )
    assert page.locator(f"#tree .row[data-path='{doomed}']").count() == 0
    removed_tab = page.locator(f"#tabs .tab[data-path='{doomed}']")
    assert removed_tab.get_attribute("data-removed") == "true" and "已删除" in removed_tab.inner_text()
    page.evaluate("() => { document.querySelector('#tree').scrollTop = 0; }")
    page.wait_for_selector(f"#tree .row[data-path='{added}']")  # the new entry is listed in place
    assert {"stackable", FOLDER} <= set(_place(page)["expanded"])
    page.evaluate(f"() => {{ document.querySelector('#tree').scrollTop = {before['scrollTop']}; }}")

    # the person's own saved draft is a revision too
    page.click(f"#tabs .tab[data-path='{opened}']")
    mid = _place(page)
    page.fill("#code", "#PVF_File\n\n[name]\n\t`edited by the person`\n")
    page.click("#btn-save-draft")
    page.wait_for_selector("#draft-state[data-dirty='false']")
    _wait_revision(page, bench)
    saved = _place(page)
    assert saved["children"] > 10 and saved["selected"] == [opened] and saved["top"] == mid["top"], (
        mid,
        saved,
    )

    # a reload of the page brings back the same place and tabs
    page.reload()
    page.wait_for_selector("body[data-ready='1']")
    page.wait_for_selector(f"#tree .row[data-path='{opened}'][aria-selected='true']")
    page.wait_for_selector(f"#tabs .tab[data-path='{opened}']")
    reloaded = _place(page)
    assert reloaded["children"] > 10 and reloaded["top"] == mid["top"], (mid, reloaded)
    assert opened in reloaded["tabs"], reloaded
