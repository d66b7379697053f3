"""The workbench page in a real headless Chromium, with an agent (SDK Client, Streamable HTTP) beside it.

One generated archive per module (real corpus texts imported into it when MODDESK_CORPORA is
set); one browser; the page and the agent share one ``moddesk pvf serve`` workbench.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import anyio
import pytest
from mcp import Client

from moddesk.kit.errors import ServiceError
from moddesk.kit.mcp import result_payload
from moddesk.pvf.agent.serve import Workbench
from moddesk.pvf.archive import Archive
from moddesk.pvf.samples.generate import generate_archive
from moddesk.pvf.service import PvfService

CHROMIUM = os.environ.get("MODDESK_CHROMIUM", "/usr/bin/chromium")
ARGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run"]
FILES = 20_000
CORPUS_ITEM = "equipment/character/mage/weapon/broom/111156.equ"
T = TypeVar("T")

pytestmark = pytest.mark.external


def artifact_dir() -> Path:
    path = Path(os.environ.get("MODDESK_ARTIFACTS") or Path(tempfile.gettempdir()) / "moddesk-artifacts")
    path.mkdir(parents=True, exist_ok=True)
    return path


def corpus_texts() -> dict[str, str]:
    """The real .equ/.stk texts of the corpus sample, by archive path (empty without the corpus)."""
    root = Path(os.environ.get("MODDESK_CORPORA", "")) / "pvf" / "pvf_1031-sample"
    if not os.environ.get("MODDESK_CORPORA") or not root.is_dir():
        return {}
    out = {}
    for path in sorted(root.rglob("*")):
        if path.suffix in (".equ", ".stk") and path.is_file():
            out[path.relative_to(root).as_posix()] = path.read_text(encoding="utf-8")
    return out


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not (Path(CHROMIUM).exists() or shutil.which("chromium")):
        if os.environ.get("MODDESK_REQUIRE_EXTERNAL") == "1":
            pytest.fail(f"chromium is required (MODDESK_REQUIRE_EXTERNAL=1) but {CHROMIUM} is missing")
        pytest.skip(f"chromium not installed at {CHROMIUM}")
    path = tmp_path_factory.mktemp("web archive") / "Script test.pvf"
    generate_archive(path, files=FILES, seed=7)
    texts = corpus_texts()
    if texts:  # the real texts go in through the service, as an import would put them
        service = PvfService()
        try:
            handle = service.open(str(path), service.epoch)
            opened = service.tasks.wait(handle["taskId"], 120)["result"]
            applied = service.apply_changes(opened["workspaceId"], opened["revision"], texts)
            saved = service.save(opened["workspaceId"], applied["revision"])
            assert service.tasks.wait(saved["taskId"], 120)["state"] == "succeeded"
        finally:
            service.shutdown()
    return path


@pytest.fixture(scope="module")
def bench(archive: Path) -> Iterator[Workbench]:
    workbench = Workbench(PvfService(), port=0, roots=[archive.parent]).start()
    try:
        yield workbench
    finally:
        workbench.stop()


@pytest.fixture(scope="module")
def browser(bench: Workbench) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture
def page(browser: Any, bench: Workbench) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 800}, locale="zh-CN")
    context.set_default_timeout(30000)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(bench.login_link())  # the printed link logs the browser in (cookie + the page's CSRF token)
    page.wait_for_selector("body[data-ready='1']")
    yield page
    context.close()
    assert not errors, errors


def shot(page: Any, name: str) -> None:
    page.screenshot(path=str(artifact_dir() / f"pvf-web-{name}.png"))


def in_thread(make: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run an async agent session on its own thread (the sync Playwright loop owns this one)."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = anyio.run(make)
        except BaseException as exc:  # handed back to the test thread
            box["error"] = exc

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(120)
    if "error" in box:
        raise box["error"]
    return box["value"]  # type: ignore[no-any-return]


async def tool(client: Client, name: str, args: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(name, args)
    payload = dict(result_payload(result))
    payload["isError"] = result.is_error
    return payload


def open_in_page(page: Any, archive: Path) -> None:
    page.fill("#archive-path", str(archive))
    page.click("#btn-open")
    page.wait_for_selector("#tree .row[data-path='equipment']")


def search(bench: Workbench, ws_id: str, query: str, mode: str, limit: int) -> list[dict[str, Any]]:
    """Hits of a service search, waiting out NOT_READY while the archive's index builds."""
    import time

    deadline = time.monotonic() + 120
    while True:
        try:
            hits: list[dict[str, Any]] = bench.service.search(ws_id, query, mode, limit=limit)["hits"]
            return hits
        except ServiceError as exc:
            if exc.code != "NOT_READY" or time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def workspace(bench: Workbench) -> tuple[str, int]:
    info = bench.service.info()
    return info["workspaceId"], info["revision"]


# ---------------------------------------------------------------------- the person alone


def test_open_browse_search_hover_edit_save(page: Any, bench: Workbench, archive: Path) -> None:
    open_in_page(page, archive)
    assert page.get_attribute("#tree", "role") == "tree"
    page.click("#tree .row[data-path='equipment']")
    page.click("#tree .row[data-path='equipment/character']")
    row = page.locator("#tree .row[data-path='equipment/character/common']")
    assert row.get_attribute("role") == "treeitem" and row.get_attribute("aria-level") == "3"
    shot(page, "tree")

    # search the content for one known line of one file, open the hit at its line
    ws_id, _ = workspace(bench)
    target = "skill/gunnerskill.lst" if not corpus_texts() else CORPUS_ITEM
    text = bench.service.read_file(ws_id, target)["text"]
    lines = text.split("\n")
    line_no = next(i for i, line in enumerate(lines, 1) if i > 3 and line.strip().startswith("`"))
    needle = lines[line_no - 1].strip()
    page.click("#views button[data-view='search']")
    page.fill("#search-q", needle)
    page.fill("#search-ext", "." + target.rsplit(".", 1)[1])
    page.click("#search-form button[type='submit']")
    hit = page.locator(f"#search-results .hit[data-path='{target}'][data-line='{line_no}']")
    hit.wait_for()
    shot(page, "search")
    hit.click()
    page.wait_for_selector(f"#code-wrap[data-path='{target}'][data-line='{line_no}']")
    assert page.locator(f"pre .ln.target[data-n='{line_no}']").count() == 1
    page.click("#views button[data-view='files']")  # the tree followed: the file is revealed and selected
    page.wait_for_selector(f"#tree .row[data-path='{target}'][aria-selected='true']")

    # hover a field: the [grade] value of an .equ file explains itself
    equ = next(
        p for p in search(bench, ws_id, "equipment/**/*.equ", "path", 5) if p["path"].endswith(".equ")
    )["path"]
    page.click("#views button[data-view='files']")
    page.evaluate("path => window.dispatchEvent(new CustomEvent('pvf-open', {detail: path}))", equ)
    page.wait_for_selector(f"#code-wrap[data-path='{equ}']")
    page.wait_for_selector("#ann-panel .item")
    grade_line = bench.service.read_file(ws_id, equ)["text"].split("\n").index("[grade]") + 2
    value = page.locator(f"pre .ln[data-n='{grade_line}'] span.t-number").first
    value.wait_for()
    box = value.bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.wait_for_selector("#tooltip:not([hidden])")
    assert "等级" in page.inner_text("#tooltip") and "Grade" not in page.inner_text(
        "#tooltip"
    )  # Chinese half
    shot(page, "editor-hover")

    # edit: a draft (reported to the service), saved into the workspace, then the archive saved
    original = page.input_value("#code")
    edited = original.replace("[grade]\n\t", "[grade]\n\t7", 1)
    page.fill("#code", edited)
    page.wait_for_selector("#draft-state[data-dirty='true']")
    assert _eventually(lambda: any(w["dirty"] for w in bench.service.info()["drafts"]))
    shot(page, "draft")
    page.click("#btn-save-draft")
    page.wait_for_selector("#draft-state[data-dirty='false']")
    assert _eventually(lambda: not any(w["dirty"] for w in bench.service.info()["drafts"]))
    ws_id, _ = workspace(bench)
    saved_value = bench.service.read_file(ws_id, equ, grade_line, 1)["text"]
    assert saved_value.startswith("\t7")
    page.click("#btn-save")
    assert _eventually(lambda: not bench.service.info()["sourceDirty"], 30)
    with Archive.open(archive) as reread:
        assert reread.read_text(equ).split("\n")[grade_line - 1] == saved_value

    # another program changes the file on disk: Save says so in words and offers the ways out
    page.fill("#code", page.input_value("#code").replace("[grade]\n\t7", "[grade]\n\t8", 1))
    page.click("#btn-save-draft")
    page.wait_for_selector("#draft-state[data-dirty='false']")
    with archive.open("ab") as handle:
        handle.write(b"\0")
    page.click("#btn-save")
    page.wait_for_selector("#notice .code:text('SOURCE_CHANGED')")
    assert "磁盘" in page.inner_text("#notice")
    shot(page, "source-changed")
    copy = archive.with_name("copy of it.pvf")
    page.once("dialog", lambda dialog: dialog.accept(str(copy)))
    page.click("#notice .actions button:text('另存为…')")
    assert _eventually(copy.exists, 30)
    with Archive.open(copy) as reread:
        assert reread.read_text(equ).split("\n")[grade_line - 1].startswith("\t8")

    # the same copy again: TARGET_EXISTS in words, and Overwrite replaces exactly the file it saw
    before_overwrite = copy.stat().st_mtime_ns
    page.once("dialog", lambda dialog: dialog.accept(str(copy)))
    page.click("#btn-save-as")
    page.wait_for_selector("#notice .code:text('TARGET_EXISTS')")
    page.click("#notice .actions button:text('覆盖')")
    assert _eventually(lambda: copy.stat().st_mtime_ns != before_overwrite, 30), page.inner_text("#notice")
    with Archive.open(copy) as reread:
        assert reread.read_text(equ).split("\n")[grade_line - 1].startswith("\t8")


def _eventually(check: Callable[[], bool], timeout: float = 10.0) -> bool:
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.05)
    return check()


# ---------------------------------------------------------------------- the agent beside the person

RAISE_PRICES = """
const files = pvf.glob("stackable/cash/*.stk").slice(0, 3);
for (const f of files) {
  f.setText(f.text().replace("[price]\\n\\t", "[price]\\n\\t9"));
  pvf.log("raised " + f.path);
}
"""


async def run_script(client: Client, source: str) -> dict[str, Any]:
    info = await tool(client, "pvf_workspace_info", {})
    started = await tool(
        client,
        "pvf_script_run",
        {"workspaceId": info["workspaceId"], "expectedRevision": info["revision"], "source": source},
    )
    assert not started["isError"], started
    while True:
        status = await tool(client, "pvf_script_status", {"taskId": started["taskId"]})
        if status["state"] in ("succeeded", "failed", "cancelled"):
            assert status["state"] == "succeeded", status
            return {**status, "revision": info["revision"]}
        await anyio.sleep(0.1)


def test_agent_plan_reviewed_in_page_and_draft_barrier(page: Any, bench: Workbench, archive: Path) -> None:
    if not bench.service.info()["open"]:
        open_in_page(page, archive)
    else:
        page.wait_for_selector("#tree .row[data-path='equipment']")
    ws_id, _ = workspace(bench)
    cash = [h["path"] for h in search(bench, ws_id, "stackable/cash/*.stk", "path", 3)]
    before = {p: bench.service.read_file(ws_id, p)["text"] for p in cash}

    # the person has the first of them open in a tab while the agent works
    page.click("#views button[data-view='files']")
    page.evaluate("path => window.dispatchEvent(new CustomEvent('pvf-open', {detail: path}))", cash[0])
    page.wait_for_selector(f"#code-wrap[data-path='{cash[0]}']")
    page.click("#views button[data-view='activity']")

    async def agent_runs() -> dict[str, Any]:
        async with bench.client() as client:
            return await run_script(client, RAISE_PRICES)

    run = in_thread(agent_runs)
    plan_id = run["planId"]
    # the plan shows up in the review view by itself (server-sent events)
    page.wait_for_selector(f"#review[data-plan-id='{plan_id}'] .change-list input[data-key]")
    keys = page.eval_on_selector_all(
        "#review .change-list input[data-key]", "els => els.map(e => e.dataset.key)"
    )
    assert len(keys) == 3
    page.locator("#review .change-list label").nth(1).hover()
    page.wait_for_selector("#review-diff .ins")
    shot(page, "review")

    # a draft in the page blocks the agent's apply (UI_DRAFT_PENDING), as the seed's barrier says
    page.click("#views button[data-view='files']")
    page.fill("#code", page.input_value("#code") + "\n")
    page.wait_for_selector("#draft-state[data-dirty='true']")
    assert _eventually(lambda: any(w["dirty"] for w in bench.service.info()["drafts"]))

    async def agent_applies() -> dict[str, Any]:
        async with bench.client() as client:
            return await tool(
                client,
                "pvf_script_apply",
                {"planId": plan_id, "expectedRevision": run["revision"], "changeKeys": keys},
            )

    refused = in_thread(agent_applies)
    assert refused["isError"] and refused["error"] == "UI_DRAFT_PENDING", refused

    async def agent_saves() -> dict[str, Any]:
        async with bench.client() as client:
            info = await tool(client, "pvf_workspace_info", {})
            return await tool(
                client,
                "pvf_archive_save",
                {"workspaceId": info["workspaceId"], "expectedRevision": info["revision"]},
            )

    page.click("#btn-discard-draft")
    page.wait_for_selector("#draft-state[data-dirty='false']")
    assert _eventually(lambda: not any(w["dirty"] for w in bench.service.info()["drafts"]))

    # the person deselects one change and applies the rest
    page.click("#views button[data-view='activity']")
    dropped = page.get_attribute("#review .change-list label >> nth=2", "data-path")
    page.locator("#review .change-list input[data-key]").nth(2).uncheck()
    assert page.inner_text("#review-count").startswith("已选 2/3")
    page.click("#review-apply")
    page.wait_for_selector("#review", state="hidden")
    ws_id, _ = workspace(bench)
    for path in cash:
        now = bench.service.read_file(ws_id, path)["text"]
        if path == dropped:
            assert now == before[path]
        else:
            assert now == before[path].replace("[price]\n\t", "[price]\n\t9", 1) != before[path]
    # with no plan pending, a draft still stops the agent's save (seed 001: no "saved" that misses it)
    page.click("#views button[data-view='files']")
    page.fill("#code", page.input_value("#code") + "\n")
    page.wait_for_selector("#draft-state[data-dirty='true']")
    assert _eventually(lambda: any(w["dirty"] for w in bench.service.info()["drafts"]))
    saved = in_thread(agent_saves)
    assert saved["isError"] and saved["error"] == "UI_DRAFT_PENDING", saved
    page.click("#btn-discard-draft")
    page.wait_for_selector("#draft-state[data-dirty='false']")

    # on disk too: a copy saved from the page holds exactly the applied changes
    copy = archive.with_name("after review.pvf")
    page.once("dialog", lambda dialog: dialog.accept(str(copy)))
    page.click("#btn-save-as")
    assert _eventually(copy.exists, 30)
    with Archive.open(copy) as reread:
        for path in cash:
            expected = bench.service.read_file(ws_id, path, 1, 2000)["text"]
            assert reread.read_text(path) == expected
            assert (expected == before[path]) == (path == dropped)
    # the open tab shows the applied change without a reload
    page.click("#views button[data-view='files']")
    if cash[0] != dropped:
        page.wait_for_function(
            "expected => document.querySelector('#code').value === expected",
            arg=bench.service.read_file(ws_id, cash[0], 1, 2000)["text"],
        )
    shot(page, "after-apply")


def test_views_render(page: Any, bench: Workbench, archive: Path) -> None:
    if not bench.service.info()["open"]:
        open_in_page(page, archive)
    page.click("#views button[data-view='settings']")
    page.wait_for_selector("#main-settings [data-client='claude-code'] pre")
    assert bench.url in page.inner_text("#mcp-url")
    # the agent's token, shown to the person for an HTTP config by hand; the configs below carry none
    assert page.inner_text("#token") == bench.token
    assert bench.token not in page.inner_text("#main-settings [data-client='claude-code'] pre")
    assert str(archive.parent) in page.inner_text("#roots")
    shot(page, "settings")
    page.click("#views button[data-view='scripts']")
    page.wait_for_function("() => document.querySelector('#script-help').textContent.length > 20")
    # the person's own script: run → its plan opens in the same review → discarded
    page.fill(
        "#script-src", 'const f = pvf.find("n_string.lst"); f.setText(f.text() + "\\n"); pvf.log("touched");'
    )
    shot(page, "scripts")
    page.click("#script-run")
    page.wait_for_selector("#review[data-plan-id] .change-list input[data-key]")
    assert page.get_attribute("#review .change-list label", "data-path") == "n_string.lst"
    page.click("#review-discard")
    page.wait_for_selector("#review", state="hidden")
    assert _eventually(lambda: bench.service.plans.pending("script") is None)
    page.click("#views button[data-view='transfer']")
    # import a local folder: the plan opens in the review, the person applies it
    source = archive.parent / "my mod"
    source.mkdir(exist_ok=True)
    (source / "new item.equ").write_text("#PVF_File\n\n[name]\n\t`新道具`\n", encoding="utf-8")
    page.fill("#import-sources", str(source))
    page.fill("#import-target", "equipment")
    page.click("#import-prepare")
    page.wait_for_selector("#review[data-plan-id] .change-list input[data-key]")
    page.click("#review-apply")
    page.wait_for_selector("#review", state="hidden")
    ws_id, _ = workspace(bench)
    imported = bench.service.read_file(ws_id, "equipment/my mod/new item.equ")["text"]
    assert "新道具" in imported
    page.click("#views button[data-view='transfer']")
    page.fill("#export-paths", "skill/gunnerskill.lst")
    page.click("#export-prepare")
    page.wait_for_selector("#export-execute")
    out = archive.parent / "exports"
    out.mkdir(exist_ok=True)
    page.fill("#export-output", str(out))
    shot(page, "transfer")
    page.click("#export-execute")
    assert _eventually(lambda: any(out.rglob("gunnerskill.lst")), 30)
    # the export ran as a task the page followed; it ends with what was written where
    summary = page.wait_for_selector("#notice.info:has-text('MiB')").inner_text()
    assert str(out) in summary and "1 " in summary
    page.click("#views button[data-view='history']")
    page.wait_for_selector("#history-init, #history-log")
    page.click("#btn-lang")
    assert page.inner_text("#views button[data-view='files']") == "Files"
    page.click("#btn-lang")


def test_switch_archive_with_unsaved_changes_then_history(page: Any, bench: Workbench, archive: Path) -> None:
    fresh = archive.parent / "fresh archive.pvf"  # inside the roots: the page opens only what agents may
    generate_archive(fresh, files=300, seed=9)
    if bench.service.info()["open"]:
        ws_id, revision = workspace(bench)
        if not bench.service.info()["sourceDirty"]:
            bench.service.apply_changes(ws_id, revision, {"n_string.lst": "#PVF_File\n"})
        # switching away from unsaved changes: refused in words, with the ways out offered
        page.fill("#archive-path", str(fresh))
        page.click("#btn-open")
        page.wait_for_selector("#notice .code:text('UNSAVED_CHANGES')")
        page.click("#notice .actions button:text('放弃修改并打开')")
    else:
        page.fill("#archive-path", str(fresh))
        page.click("#btn-open")
    assert _eventually(lambda: bench.service.info()["sourcePath"] == str(fresh.resolve()), 30)
    page.wait_for_selector("#ws-status:has-text('fresh archive.pvf')")  # the page knows it too

    # history: enable, change a file from the page, commit, see the change, undo it
    # the page shows the new archive before its views are used (its info arrives by server events)
    page.wait_for_function(
        "name => (document.querySelector('#notice')?.textContent || '').includes(name)", arg=fresh.name
    )
    page.click("#views button[data-view='history']")
    page.click("#history-init")
    page.wait_for_selector("#history-commit, #notice:not([hidden]) .code")
    assert page.locator("#history-commit").count() == 1, page.inner_text("#notice")
    ws_id, _ = workspace(bench)
    path = search(bench, ws_id, "**/*.stk", "path", 1)[0]["path"]
    original = bench.service.read_file(ws_id, path, 1, 2000)["text"]
    page.click("#views button[data-view='files']")
    page.evaluate("path => window.dispatchEvent(new CustomEvent('pvf-open', {detail: path}))", path)
    page.wait_for_selector(f"#code-wrap[data-path='{path}']")
    page.fill("#code", original + "\n[new section]\n\t1\n")
    page.click("#btn-save-draft")
    page.wait_for_selector("#draft-state[data-dirty='false']")
    page.click("#views button[data-view='history']")
    page.fill("#history-message", "one change from the page")
    page.click("#history-commit")
    row = page.locator("#history-log tr", has_text="one change from the page")
    row.wait_for()
    row.locator(".h-diff").click()
    page.wait_for_selector(f"#history-changes [data-path='{path}']")
    shot(page, "history")
    row.locator(".h-undo").click()
    page.wait_for_selector("#history-log tr >> nth=1")  # the undo is a commit of its own
    assert _eventually(
        lambda: bench.service.read_file(workspace(bench)[0], path, 1, 2000)["text"] == original
    )
    page.click("#views button[data-view='files']")  # the open tab followed the undo
    page.wait_for_function("expected => document.querySelector('#code').value === expected", arg=original)


def test_conflict_view_when_the_file_changes_under_a_draft(page: Any, browser: Any, bench: Workbench) -> None:
    """Two windows: a draft in one, the same file saved from the other → the first shows the conflict."""
    if not bench.service.info()["open"]:
        pytest.skip("runs after the archive tests")
    page.wait_for_selector("#tree .row[data-path]")
    path = search(bench, workspace(bench)[0], "stackable/**/*.stk", "path", 1)[0]["path"]
    other_context = browser.new_context(viewport={"width": 1280, "height": 800})
    other = other_context.new_page()
    try:
        other.goto(bench.login_link())
        other.wait_for_selector("#tree .row[data-path]")
        for window in (page, other):
            window.evaluate("path => window.dispatchEvent(new CustomEvent('pvf-open', {detail: path}))", path)
            window.wait_for_selector(f"#code-wrap[data-path='{path}']")
        text = page.input_value("#code")
        page.fill("#code", text + "\n[mine]\n\t1\n")
        page.wait_for_selector("#draft-state[data-dirty='true']")
        other.fill("#code", text + "\n[theirs]\n\t2\n")
        other.click("#btn-save-draft")
        other.wait_for_selector("#draft-state[data-dirty='false'], #notice:not([hidden]) .code")
        assert other.locator("#draft-state[data-dirty='false']").count(), other.inner_text("#notice")
        page.wait_for_selector("#conflict:not([hidden]) pre.theirs")
        assert "[theirs]" in page.inner_text("#conflict pre.theirs")
        assert "[mine]" in page.inner_text("#conflict pre.mine")
        shot(page, "conflict")
        page.click("#conflict button:text('保留我的草稿（基于新版本）')")
        page.click("#btn-save-draft")
        page.wait_for_selector("#draft-state[data-dirty='false'], #notice:not([hidden]) .code")
        assert page.locator("#draft-state[data-dirty='false']").count(), page.inner_text("#notice")
        final = bench.service.read_file(workspace(bench)[0], path, 1, 2000)["text"]
        assert "[mine]" in final and "[theirs]" not in final  # the person's choice won, on the new revision
    finally:
        other_context.close()


def test_a_mod_reviewed_and_applied_in_the_page(page: Any, bench: Workbench, archive: Path) -> None:
    """Someone's MOD: prepared from the transfer view, conflicts answered in the review, applied."""
    from moddesk.pvf.web.ops import exports

    if not bench.service.info()["open"]:
        open_in_page(page, archive)
    else:
        page.wait_for_selector("#tree .row[data-path]")
    ws = bench.service.workspace
    assert ws is not None
    # two files nobody touched yet: the MOD's base is their saved text
    untouched = [
        h["path"]
        for h in search(bench, ws.workspace_id, "equipment/**/*.equ", "path", 50)
        if ws.base_text_or_none(h["path"]) == ws.current_text_or_none(h["path"]) is not None
    ]
    same, changed = untouched[:2]
    base = {p: ws.current_text_or_none(p) or "" for p in (same, changed)}
    theirs = {p: base[p] + f"\n[mod note]\n\t`from the MOD {n}`\n" for n, p in enumerate((same, changed))}
    # the MOD's author edits both and exports a 115CN MOD of what changed since the archive was opened
    edited = bench.service.apply_changes(ws.workspace_id, ws.revision, dict(theirs))
    shop = exports(bench.service)
    plan = shop.prepare(
        ws.workspace_id,
        edited["revision"],
        "memory",
        mode="mod",
        fmt="115CN-mod",
        name="WebMod",
        mod_id="com.example.webmod",
    )
    acks = [w["warningId"] for w in shop.preview(plan["planId"])["warnings"]]
    out = archive.parent / "mods"
    out.mkdir(exist_ok=True)
    package = shop.execute(plan["planId"], str(out), acknowledged_warning_ids=acks)["outputPath"]
    # back home: one file as it was, the other changed locally in another way → one conflict
    mine = base[changed] + "\n[my own]\n\t1\n"
    bench.service.apply_changes(ws.workspace_id, edited["revision"], {same: base[same], changed: mine})

    page.click("#views button[data-view='transfer']")
    page.fill("#mod-path", package)
    page.click("#mod-inspect")
    page.wait_for_function("() => document.querySelector('#mod-about').textContent.includes('WebMod')")
    page.click("#mod-prepare")
    page.wait_for_selector("#review:not([hidden]) [data-conflict-row]")
    assert page.locator("#review [data-conflict-row]").count() == 1
    assert "本地已修改" in page.inner_text("#review [data-conflict-row]")
    assert page.is_disabled("#review-apply"), "apply waits until every conflict is answered"
    page.locator(f"#review .change-list label[data-path='{same}']").hover()
    page.wait_for_selector("#review-diff .ins")
    assert "from the MOD 0" in page.inner_text("#review-diff")
    page.check("#review input[data-conflict][value='theirs']")
    assert page.inner_text("#review-count").startswith("已处理冲突 1/1")
    shot(page, "mod-review")
    page.click("#review-apply")
    page.wait_for_selector("#review", state="hidden")
    ws_id, _ = workspace(bench)
    for path in (same, changed):
        assert bench.service.read_file(ws_id, path, 1, 2000)["text"] == theirs[path]
