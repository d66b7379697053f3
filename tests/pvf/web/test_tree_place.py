"""The tree keeps the person's place in a real Chromium: open folders, the selection, the scroll
position and the open tabs survive revisions made by someone else, the person's own saved draft,
an import and an undo the person drives on the page, and a page reload; a deleted open file says
so in its tab. Screenshots of the import and undo go to docs/ with ``MODDESK_ZH_SHOTS=docs``."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
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


def _need_chromium() -> None:
    if not (Path(CHROMIUM).exists() or shutil.which("chromium")):
        if os.environ.get("MODDESK_REQUIRE_EXTERNAL") == "1":
            pytest.fail(f"chromium is required (MODDESK_REQUIRE_EXTERNAL=1) but {CHROMIUM} is missing")
        pytest.skip(f"chromium not installed at {CHROMIUM}")


@contextlib.contextmanager
def _workbench(folder: Path) -> Iterator[Workbench]:
    """A serve over a fresh generated archive in ``folder`` (agents and the person may use it)."""
    archive = folder / "Script place.pvf"
    generate_archive(archive, files=3000, seed=7)
    workbench = Workbench(PvfService(), port=0, roots=[archive.parent]).start()
    handle = workbench.service.open(str(archive), workbench.service.epoch)
    assert workbench.service.tasks.wait(handle["taskId"], 120)["state"] == "succeeded"
    try:
        yield workbench
    finally:
        workbench.stop()


@contextlib.contextmanager
def _browser_page(bench: Workbench) -> Iterator[Any]:
    """The page in Chromium, logged in with the person's one-time link; no script error allowed."""
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


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Workbench]:
    _need_chromium()
    with _workbench(tmp_path_factory.mktemp("tree place")) as workbench:
        yield workbench


@pytest.fixture
def page(bench: Workbench) -> Iterator[Any]:
    with _browser_page(bench) as opened:
        yield opened


def _eventually(check: Callable[[], bool], seconds: float = 20) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if check():
            return True
        time.sleep(0.1)
    return check()


def _place(page: Any) -> dict[str, Any]:
    """What the person sees: open folders, the selected row, the top row, the tabs — read after the
    tree's next paint (it paints on an animation frame: a view just shown again, or a revision that
    landed while it was hidden, has its rows drawn there, not at once)."""
    return page.evaluate(
        """async () => {
          await new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)));
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


def _shot(page: Any, name: str) -> None:
    """A zh-CN screenshot with the machine's paths masked (docs/ with MODDESK_ZH_SHOTS=docs)."""
    chosen = os.environ.get("MODDESK_ZH_SHOTS")
    folder = Path(chosen) if chosen else Path(tempfile.gettempdir()) / "moddesk-artifacts"
    folder.mkdir(parents=True, exist_ok=True)
    private = [
        "#ws-status span[title]",
        "#archive-path",
        "#import-sources",
        "#notice .path",
        "#history-log td.muted",
    ]
    page.screenshot(path=str(folder / f"pvf-zh-{name}.png"), mask=[page.locator(sel) for sel in private])


def _view(page: Any, name: str) -> None:
    page.click(f"#views button[data-view='{name}']")
    page.wait_for_function("name => document.body.dataset.view === name", arg=name)


def test_the_tree_keeps_the_place_across_an_import_and_an_undo_on_the_page(
    tmp_path: Path,
) -> None:
    """The person imports a file on the page, opens it, commits and undoes the import from the
    history view: the tree keeps its open folders, selection, top row, scroll and tabs through both
    (and through the views the person went through), and the undone file's tab says it is gone."""
    _need_chromium()
    with _workbench(tmp_path) as bench, _browser_page(bench) as page:
        service = bench.service
        workspace = service.info()["workspaceId"]
        names = [
            i["path"] for i in service.list_folder(workspace, FOLDER, limit=1000)["items"] if not i["folder"]
        ]
        assert len(names) > 60, names
        incoming = tmp_path / "incoming"
        incoming.mkdir()
        local = incoming / "aaa_imported.stk"
        local.write_text("#PVF_File\n\n[name]\n\t`imported on the page`\n[grade]\n\t2\n", encoding="utf-8")
        imported = f"{FOLDER}/{local.name}"

        # history on, from the page (an undo needs a commit to reverse)
        _view(page, "history")
        page.click("#history-init")
        page.wait_for_selector("#history-commit")

        # the person's place: two folders open, a file open in a tab, scrolled, another row selected
        _view(page, "files")
        page.click("#tree .row[data-path='stackable']")
        page.click(f"#tree .row[data-path='{FOLDER}']")
        page.wait_for_selector(f"#tree .row[data-path='{names[0]}']")
        page.evaluate("p => window.dispatchEvent(new CustomEvent('pvf-open', {detail: p}))", names[20])
        page.wait_for_selector(f"#tabs .tab[data-path='{names[20]}']")
        page.evaluate("() => { document.querySelector('#tree').scrollTop = 22 * 25 + 7; }")
        page.wait_for_selector(f"#tree .row[data-path='{names[35]}']")
        page.click(f"#tree .row[data-path='{names[35]}']")
        page.wait_for_selector(f"#tabs .tab[data-path='{names[35]}'][aria-selected='true']")
        page.wait_for_timeout(400)  # the place is saved 300 ms after the last scroll
        before = _place(page)
        assert before["selected"] == [names[35]] and before["scrollTop"] > 0, before

        # import on the page: transfer view → prepare → the plan opens for review → apply
        _view(page, "transfer")
        page.fill("#import-sources", str(local))
        page.fill("#import-target", FOLDER)
        page.click("#import-prepare")
        page.wait_for_selector("#review[data-plan-id] .change-list input[data-key]")
        assert page.get_attribute("#review .change-list label", "data-path") == imported
        _shot(page, "import-review")
        page.click("#review-apply")
        page.wait_for_selector("#review", state="hidden")
        _wait_revision(page, bench)
        _view(page, "files")
        page.wait_for_function(
            "want => (document.querySelector('#tree')?.dataset.revision | 0) >= want",
            arg=service.info()["revision"],
        )
        after_import = _place(page)
        assert after_import["expanded"] == before["expanded"], (before, after_import)
        assert after_import["selected"] == before["selected"], (before, after_import)
        assert after_import["top"] == before["top"], (before, after_import)
        # the new file sorts above the top row: one row more above it, the same row at the top
        assert after_import["scrollTop"] == pytest.approx(before["scrollTop"], abs=22 + 1), (
            before,
            after_import,
        )
        assert after_import["tabs"] == before["tabs"], (before, after_import)
        assert after_import["children"] > 10, after_import  # the open folder still lists its files

        # the imported file is listed; the person opens it in a tab, then goes back to the place
        page.evaluate("p => window.dispatchEvent(new CustomEvent('pvf-open', {detail: p}))", imported)
        page.wait_for_selector(f"#tabs .tab[data-path='{imported}']")
        page.wait_for_selector(f"#tree .row[data-path='{imported}'][aria-selected='true']")
        page.evaluate(f"() => {{ document.querySelector('#tree').scrollTop = {after_import['scrollTop']}; }}")
        page.click(f"#tree .row[data-path='{names[35]}']")
        page.wait_for_timeout(400)
        opened = _place(page)
        assert opened["tabs"] == [*before["tabs"], imported] and opened["top"] == before["top"], opened

        # commit the import, then undo that commit from the history view
        _view(page, "history")
        page.fill("#history-message", "import on the page")
        page.click("#history-commit")
        page.wait_for_function(
            "() => [...document.querySelectorAll('#history-log td')].some((c) => c.textContent === 'import on the page')"
        )
        _shot(page, "history-undo")
        row = page.locator("#history-log tr", has_text="import on the page")
        row.locator("button.h-undo").click()
        page.wait_for_function("() => [...document.querySelectorAll('#history-log tr')].length >= 2")
        _wait_revision(page, bench)
        listed = service.list_folder(workspace, FOLDER, limit=1000)["items"]
        assert imported not in {item["path"] for item in listed}  # the undo took the file out
        _view(page, "files")
        page.wait_for_function(
            "want => (document.querySelector('#tree')?.dataset.revision | 0) >= want",
            arg=service.info()["revision"],
        )
        removed_tab = page.locator(f"#tabs .tab[data-path='{imported}']")
        page.wait_for_selector(f"#tabs .tab[data-path='{imported}'][data-removed='true']")
        assert "已删除" in removed_tab.inner_text()
        after_undo = _place(page)
        assert page.locator(f"#tree .row[data-path='{imported}']").count() == 0
        assert after_undo["expanded"] == before["expanded"], (before, after_undo)
        assert after_undo["selected"] == before["selected"], (before, after_undo)
        assert after_undo["top"] == before["top"], (before, after_undo)
        assert after_undo["scrollTop"] == before["scrollTop"], (before, after_undo)
        assert after_undo["tabs"] == opened["tabs"], (opened, after_undo)  # the removed file's tab stays
        page.click(f"#tabs .tab[data-path='{imported}']")
        page.wait_for_selector(f"#tabs .tab[data-path='{imported}'][aria-selected='true']")
        _shot(page, "removed-tab")
        # the folders opened at the start are still open (their rows are above the view until now)
        page.evaluate("() => { document.querySelector('#tree').scrollTop = 0; }")
        page.wait_for_selector(f"#tree .row[data-path='{FOLDER}'][aria-expanded='true']")
        assert {"stackable", FOLDER} <= set(_place(page)["expanded"])
