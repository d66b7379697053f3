"""The panel in a real headless Chromium: click moves, see the engine's and the model's replies arrive."""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from moddesk.xiangqi.game import GameService
from moddesk.xiangqi.serving import XiangqiHttp
from moddesk.xiangqi.store import Settings

CHROMIUM = os.environ.get("MODDESK_CHROMIUM", "/usr/bin/chromium")
ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-extensions",
    "--no-first-run",
]

pytestmark = pytest.mark.external


def _need_chromium() -> None:
    if Path(CHROMIUM).exists() or shutil.which("chromium"):
        return
    if os.environ.get("MODDESK_REQUIRE_EXTERNAL") == "1":
        pytest.fail(f"chromium is required (MODDESK_REQUIRE_EXTERNAL=1) but {CHROMIUM} is missing")
    pytest.skip(f"chromium not installed at {CHROMIUM}")


def artifact_dir() -> Path:
    path = Path(os.environ.get("MODDESK_ARTIFACTS") or Path(tempfile.gettempdir()) / "moddesk-artifacts")
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture
def panel_settings() -> dict[str, Any]:
    """Extra settings of the served game service (a test overrides it with parametrize)."""
    return {}


@pytest.fixture
def served(tmp_path: Path, panel_settings: dict[str, Any]) -> Iterator[tuple[GameService, XiangqiHttp]]:
    _need_chromium()
    extra = panel_settings
    service = GameService(
        Settings(db_path=tmp_path / "games.db", think_time=0.05, hint_time=0.1, review_time=0.02, **extra)
    )
    service.start_watchdog(0.2)  # as `xiangqi serve` does: the server's timeout fires without any read
    http = XiangqiHttp(service, 0)
    http.start()
    try:
        yield service, http
    finally:
        http.stop()
        service.close()


@pytest.fixture
def page(served: tuple[GameService, XiangqiHttp]) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        try:
            context = browser.new_context(viewport={"width": 1000, "height": 720}, locale="zh-CN")
            context.set_default_timeout(60000)  # two shared cores under parallel test load
            page = context.new_page()
            # the person logs in with the link `serve` prints: session cookie + the page's CSRF token
            page.goto(served[1].login_link())
            page.wait_for_function("() => !!localStorage.getItem('moddesk-csrf') && !location.hash")
            yield page
        finally:
            browser.close()


def _moves(page: Any) -> list[str]:
    return [t.strip() for t in page.locator("#movelist .mv").all_inner_texts()]


def test_play_local_engine_undo_hint(served: tuple[GameService, XiangqiHttp], page: Any) -> None:
    _service, http = served
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(f"{http.url}/xiangqi/")
    page.select_option("#new-opponent", "local")
    page.click("#btn-new")
    page.wait_for_selector('g.piece[data-square="70"].movable')
    page.click('g.piece[data-square="70"]')  # the red cannon on h2
    page.wait_for_selector('circle.target-hit[data-target="67"]')
    page.click('circle.target-hit[data-target="67"]', force=True)
    page.wait_for_function("document.querySelectorAll('#movelist .mv').length >= 2", timeout=60000)
    moves = _moves(page)
    assert moves[0] == "炮二平五" and len(moves) == 2
    assert page.locator("#status").inner_text() == "轮到你走"
    page.wait_for_function("document.getElementById('evaltext').textContent !== ''", timeout=60000)

    page.click("#btn-hint")
    page.wait_for_selector("#hints .candidate", timeout=60000)
    assert page.locator("#hints .candidate").count() >= 1
    shot = artifact_dir() / "xiangqi-panel.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 10_000

    page.click("#btn-undo")
    page.wait_for_function("document.querySelectorAll('#movelist .mv').length === 0", timeout=60000)
    assert page.locator('g.piece[data-square="70"]').count() == 1  # the cannon is home again
    assert errors == []


def _model_move(http: XiangqiHttp, move: str) -> dict[str, Any]:
    out: dict[str, Any] = {}

    async def run() -> None:
        async with http.client() as client:  # the model: the agent's token, /mcp only
            result = await client.call_tool("xiangqi_move", {"move": move})
            out["result"] = result

    thread = threading.Thread(target=lambda: anyio.run(run))
    thread.start()
    thread.join(60)
    return out


def test_model_reply_arrives_by_polling(served: tuple[GameService, XiangqiHttp], page: Any) -> None:
    _service, http = served
    page.goto(f"{http.url}/xiangqi/")
    page.select_option("#new-opponent", "model")
    page.click("#btn-new")
    page.wait_for_selector('g.piece[data-square="70"].movable')
    page.click('g.piece[data-square="70"]')
    page.click('circle.target-hit[data-target="67"]', force=True)
    page.wait_for_function("document.getElementById('status').textContent === '对手思考中…'", timeout=60000)
    result = _model_move(http, "马8进7")["result"]
    assert not result.is_error, result.content[0].text
    page.wait_for_function("document.querySelectorAll('#movelist .mv').length === 2", timeout=60000)
    assert _moves(page) == ["炮二平五", "马8进7"]
    assert page.locator("#status").inner_text() == "轮到你走"
    page.screenshot(path=str(artifact_dir() / "xiangqi-panel-model.png"), full_page=True)


def test_review_and_resign(served: tuple[GameService, XiangqiHttp], page: Any) -> None:
    service, http = served
    value = service.new("hero", "r", "model")
    service.move("hero", "h2e2")
    service.move("opponent", "h9g7")
    page.goto(f"{http.url}/xiangqi/?session={value['sessionId']}")
    page.wait_for_function("document.querySelectorAll('#movelist .mv').length === 2")
    page.click("#btn-review")
    page.wait_for_selector("#review polyline", timeout=60000)
    assert page.locator("#review").is_visible()
    page.on("dialog", lambda dialog: dialog.accept())
    page.click("#btn-resign")
    page.wait_for_function(
        "document.getElementById('status').textContent.startsWith('对局结束')", timeout=60000
    )
    assert service.state(value["sessionId"])["status"]["state"] == "resigned"


def _until(page: Any, script: str, seconds: float = 60) -> None:
    """Advance the page's fake clock in small steps until ``script`` is true (real-time bounded)."""
    deadline = time.monotonic() + seconds
    while not page.evaluate(script):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {script}")
        page.clock.run_for(50)
        time.sleep(0.05)


def test_polling_backs_off_stops_and_offers_fallback(
    served: tuple[GameService, XiangqiHttp], page: Any
) -> None:
    _service, http = served
    polls: list[str] = []
    page.on("request", lambda r: polls.append(r.url) if r.url.endswith("/xiangqi-mate/state") else None)
    page.clock.install()  # fake timers: 30 s of polling in a moment
    page.goto(f"{http.url}/xiangqi/")
    page.select_option("#new-opponent", "model")
    page.click("#btn-new")
    _until(page, "!!document.querySelector('g.piece[data-square=\"70\"].movable')")
    page.click('g.piece[data-square="70"]')
    page.click('circle.target-hit[data-target="67"]', force=True)
    _until(page, "document.getElementById('status').textContent === '对手思考中…'")
    polls.clear()
    assert page.locator("#btn-fallback").is_hidden()
    for _ in range(34):
        page.clock.run_for(1000)
        time.sleep(0.08)  # let each poll's fetch come back before the next tick
    # 800 ms x1.35 capped at 2 s over 30 s is ~16 polls (uncapped it would be ~9), then it stops
    assert 12 <= len(polls) <= 20, len(polls)
    _until(page, "!document.getElementById('btn-fallback').hidden")
    assert "秒后由本地引擎代走" in page.locator("#countdown").inner_text()
    count = len(polls)
    for _ in range(30):
        page.clock.run_for(1000)
        time.sleep(0.03)
    # after the seed's 30 s schedule a slow poll (every 10 s, sooner near the server's timeout) goes on
    assert 1 <= len(polls) - count <= 4, len(polls) - count
    page.click("#btn-fallback")
    _until(page, "document.querySelectorAll('#movelist .mv').length === 2")
    assert page.locator("#message").inner_text() == "已由本地引擎代走"


def _start_waiting_for_the_model(page: Any, url: str) -> None:
    page.clock.install()  # fake page timers: the 30 s fast schedule passes in a few real seconds
    page.goto(f"{url}/xiangqi/")
    page.select_option("#new-opponent", "model")
    page.click("#btn-new")
    _until(page, "!!document.querySelector('g.piece[data-square=\"70\"].movable')")
    page.click('g.piece[data-square="70"]')
    page.click('circle.target-hit[data-target="67"]', force=True)
    _until(page, "document.getElementById('status').textContent === '对手思考中…'")


@pytest.mark.parametrize("panel_settings", [{"model_timeout": 14}])
def test_model_never_answers_countdown_then_the_servers_fallback_arrives(
    served: tuple[GameService, XiangqiHttp], page: Any
) -> None:
    _service, http = served
    polls: list[float] = []
    page.on(
        "request",
        lambda r: polls.append(time.monotonic()) if r.url.endswith("/xiangqi-mate/state") else None,
    )
    started = time.monotonic()
    _start_waiting_for_the_model(page, http.url)
    countdown = page.locator("#countdown").inner_text()
    assert "秒后由本地引擎代走" in countdown, countdown
    for _ in range(34):  # past the seed's 30 s: the fast schedule ends, the fallback button shows
        page.clock.run_for(1000)
        time.sleep(0.08)
    _until(page, "!document.getElementById('btn-fallback').hidden")
    page.screenshot(path=str(artifact_dir() / "xiangqi-panel-waiting.png"), full_page=True)
    after_fast = len(polls)
    # real seconds pass until the server's 14 s timeout; the page keeps a slow poll and picks the move up
    _until(page, "document.querySelectorAll('#movelist .mv').length === 2", seconds=60)
    assert time.monotonic() - started >= 13  # it was the server's timeout, not a page-side move
    assert len(polls) > after_fast
    assert page.locator("#message").inner_text() == "模型超时，本地引擎代走"
    assert page.locator("#status").inner_text() == "轮到你走"
    assert page.locator("#countdown").is_hidden()
    assert page.locator("#btn-fallback").is_hidden()
    page.screenshot(path=str(artifact_dir() / "xiangqi-panel-timeout.png"), full_page=True)


def test_fallback_button_refreshes_when_the_reply_already_came(
    served: tuple[GameService, XiangqiHttp], page: Any
) -> None:
    service, http = served
    _start_waiting_for_the_model(page, http.url)
    for _ in range(34):
        page.clock.run_for(1000)
        time.sleep(0.08)
    _until(page, "!document.getElementById('btn-fallback').hidden")
    # the model answers while the page sits between slow polls (its timers are frozen)
    service.move("opponent", "h9g7")
    page.click("#btn-fallback")
    _until(page, "document.querySelectorAll('#movelist .mv').length === 2")
    assert _moves(page) == ["炮二平五", "马8进7"]
    assert page.locator("#status").inner_text() == "轮到你走"
    assert page.locator("#message").inner_text() != "对手不在思考中"


def _texts(page: Any, selector: str) -> list[str]:
    return [t.strip() for t in page.locator(selector).all_inner_texts()]


def test_board_reads_like_a_chinese_board(served: tuple[GameService, XiangqiHttp], page: Any) -> None:
    service, http = served
    value = service.new("hero", "r", "model")
    for move, actor in (("h2e2", "hero"), ("h9g7", "opponent"), ("h0g2", "hero"), ("i9h9", "opponent")):
        service.move(actor, move)  # type: ignore[arg-type]
    service.move("hero", "i0h0")
    page.goto(f"{http.url}/xiangqi/?session={value['sessionId']}")
    page.wait_for_function("document.querySelectorAll('#movelist .mv').length === 5")
    # Red's files 九…一 along the bottom edge, Black's 1…9 along the top, left to right
    red = page.locator("text.fileno.red")
    black = page.locator("text.fileno.black")
    assert [red.nth(i).text_content() for i in range(9)] == list("九八七六五四三二一")
    assert [black.nth(i).text_content() for i in range(9)] == [str(i) for i in range(1, 10)]
    assert red.first.bounding_box()["y"] > black.first.bounding_box()["y"]
    assert red.first.bounding_box()["x"] < red.last.bounding_box()["x"]
    assert page.locator("#board line.mark").count() > 40  # the 炮/兵 position marks
    # the record counts rounds: one line per Red move and Black's answer
    rounds = _texts(page, "#movelist li")
    assert rounds[0].split() == ["1.", "炮二平五", "马8进7"]
    assert rounds[1].split() == ["2.", "马二进三", "车9平8"]
    assert rounds[2].split() == ["3.", "车一平二"]
    page.select_option("#notation", "wxf")
    assert _texts(page, "#movelist li")[0].split() == ["1.", "C2=5", "H8+7"]
    page.select_option("#notation", "iccs")
    assert _texts(page, "#movelist li")[0].split() == ["1.", "h2e2", "h9g7"]
    page.select_option("#notation", "zh")
    page.screenshot(path=str(artifact_dir() / "xiangqi-panel-board.png"), full_page=True)
    favicon = page.request.get(f"{http.url}/favicon.ico")
    assert favicon.status == 200 and favicon.headers["content-type"].startswith("image/svg+xml")


def test_flipped_board_hint_in_pawns_and_eval_not_clipped(
    served: tuple[GameService, XiangqiHttp], page: Any
) -> None:
    service, http = served
    # Black to move, Red a rook up: the evaluation is far from even
    value = service.new("hero", "b", "model", fen="3k5/9/9/9/9/9/9/9/4R4/5K3 b - - 0 1")
    page.goto(f"{http.url}/xiangqi/?session={value['sessionId']}")
    page.wait_for_function("document.getElementById('status').textContent === '轮到你走'")
    red = page.locator("text.fileno.red")
    black = page.locator("text.fileno.black")
    # flipped: Black's numbers along the bottom (9…1 left to right), Red's 一…九 along the top
    assert red.first.bounding_box()["y"] < black.first.bounding_box()["y"]
    assert black.first.bounding_box()["x"] > black.last.bounding_box()["x"]
    page.wait_for_function("document.getElementById('evaltext').textContent !== ''", timeout=60000)
    label = page.locator("#evaltext")
    text = label.inner_text()
    assert text.startswith("+") or "步杀" in text, text  # Red is better, shown in pawns from Red's view
    box = label.bounding_box()
    assert box["x"] >= 0 and label.evaluate("e => e.scrollWidth <= e.clientWidth + 1")
    page.click("#btn-hint")
    page.wait_for_selector("#hints .candidate", timeout=60000)
    first = page.locator("#hints .candidate").first.inner_text()
    assert " 兵" in first or "步杀" in first, first
    service_label = service.engine.label  # auto: the strongest installed engine answers hints
    assert f"引擎：{service_label}" in page.locator("#hints").inner_text()
    page.screenshot(path=str(artifact_dir() / "xiangqi-panel-flipped.png"), full_page=True)


def test_load_a_record_review_it_and_export_xqf(
    served: tuple[GameService, XiangqiHttp], page: Any, tmp_path: Path
) -> None:
    from moddesk.xiangqi.gamefiles import records

    _service, http = served
    sample = Path(__file__).resolve().parents[1] / "records" / "cchess-zhongpao-liepao.pgn"
    page.goto(f"{http.url}/xiangqi/")
    page.select_option("#new-opponent", "local")
    page.set_input_files("#load-file", str(sample))
    page.wait_for_function("document.querySelectorAll('#movelist .mv').length === 23")
    rounds = _texts(page, "#movelist li")
    assert rounds[0].split() == ["1.", "炮二平五", "炮2平5"] and rounds[-1].split() == [
        "12.",
        "马九退八",
        "×",
    ]  # a capture
    assert "共 23 手" in page.locator("#record-info").inner_text()
    page.click("#btn-review")
    page.wait_for_selector("#review polyline", timeout=60000)
    page.select_option("#export-format", "xqf")
    with page.expect_download() as download:
        page.click("#btn-export")
    saved = tmp_path / download.value.suggested_filename
    download.value.save_as(str(saved))
    assert saved.suffix == ".xqf"
    assert (
        records.read_record(saved.read_bytes(), saved.name).moves
        == records.read_record(sample.read_bytes()).moves
    )
    page.screenshot(path=str(artifact_dir() / "xiangqi-panel-record.png"), full_page=True)


def docs_shot(page: Any, name: str) -> None:
    """A zh-CN screenshot in the artifacts; with MODDESK_DOCS_SHOTS=1 also the committed one under docs/."""
    page.screenshot(path=str(artifact_dir() / name), full_page=True)
    docs = Path(__file__).resolve().parents[3] / "docs"
    if os.environ.get("MODDESK_DOCS_SHOTS") == "1" and docs.is_dir():
        page.screenshot(path=str(docs / name), full_page=True)


def test_connection_loss_and_recovery(served: tuple[GameService, XiangqiHttp], page: Any) -> None:
    """The service goes away while the model thinks: the page says so, freezes the wait, sends nothing,
    retries by itself, and shows the model's move (once) when the service is back on the same port."""
    service, http = served
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    value = service.new("hero", "r", "model")
    session = value["sessionId"]
    service.move("hero", "h2e2")
    page.goto(f"{http.url}/xiangqi/?session={session}")
    page.wait_for_function("document.getElementById('status').textContent === '对手思考中…'")
    page.wait_for_function("document.getElementById('countdown').textContent.includes('秒后由本地引擎代走')")
    port = http.port
    http.stop()  # the service's HTTP side goes away; the page's next poll fails
    page.wait_for_selector("#connection:not([hidden])", timeout=60000)
    banner = page.locator("#connection").inner_text()
    assert banner.startswith("连接已断开（") and ("秒后重试" in banner or "正在重试" in banner)
    frozen = page.locator("#countdown").inner_text()
    assert "倒计时暂停" in frozen
    time.sleep(2.5)
    assert page.locator("#countdown").inner_text() == frozen  # the opponent's countdown stands still
    for button in ("#btn-new", "#btn-undo", "#btn-draw", "#btn-resign", "#btn-review", "#btn-export"):
        assert page.locator(button).is_disabled(), button
    assert page.locator("g.piece.movable").count() == 0  # no move can be made that cannot be sent
    docs_shot(page, "xiangqi-connection-lost.png")
    # the model answers while the page is cut off; then the service comes back on the same port
    service.move("opponent", "h9g7", session)
    # back on the same port with the same person gate (a restarted process has a new one, and the
    # person opens the new login link its terminal prints)
    revived = XiangqiHttp(service, port, person=http.person)
    revived.start()
    try:
        page.wait_for_selector("#connection", state="hidden", timeout=60000)
        page.wait_for_function("document.querySelectorAll('#movelist .mv').length === 2", timeout=60000)
        assert _moves(page) == ["炮二平五", "马8进7"]  # re-read: the model's move once, nothing doubled
        assert page.locator("#status").inner_text() == "轮到你走"
        assert page.locator("#message").inner_text() == "连接已恢复，棋局已重新读取"
        page.wait_for_selector('g.piece[data-square="64"].movable')  # moves can be made again
        assert len(service.state(session)["history"]) == 2
    finally:
        revived.stop()
    assert errors == []


def test_draw_offer_on_the_panel(served: tuple[GameService, XiangqiHttp], page: Any) -> None:
    """The model offers a draw: the person sees 对手提和 and accepts; the person's own offer waits for the model."""
    service, http = served
    value = service.new("hero", "r", "model")
    session = value["sessionId"]
    service.move("hero", "h2e2")
    service.move("opponent", "h9g7")
    page.goto(f"{http.url}/xiangqi/?session={session}")
    page.wait_for_function("document.querySelectorAll('#movelist .mv').length === 2")
    page.click("#btn-draw")  # the person offers: it waits for the model
    page.wait_for_function("document.getElementById('drawnote').textContent === '你已提和，等待对手答复'")
    assert page.locator("#btn-draw").is_disabled()
    assert service.state(session)["drawOffer"]["by"] == "hero"
    service.draw("opponent", "decline", session)
    service.move("hero", "h0g2", session)
    service.draw("opponent", "offer", session)  # now the model offers
    page.reload()
    page.wait_for_selector("#drawbox:not([hidden])")
    assert "对手提和" in page.locator("#drawbox").inner_text()
    docs_shot(page, "xiangqi-draw-offer.png")
    page.click("#btn-draw-accept")
    page.wait_for_function("document.getElementById('status').textContent.startsWith('对局结束')")
    assert page.locator("#status").inner_text() == "对局结束：双方同意和棋"
    assert page.locator("#drawbox").is_hidden()
    state = service.state(session)
    assert state["status"]["reason"] == "DRAW_AGREED" and service.export(session)["result"] == "1/2-1/2"


def test_a_refused_upload_is_shown(served: tuple[GameService, XiangqiHttp], page: Any) -> None:
    """载入棋谱 with a 3 MB file: the service refuses it (413) and the person reads why."""
    _service, http = served
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(f"{http.url}/xiangqi/")
    page.wait_for_function("document.getElementById('status').textContent !== ''")
    page.set_input_files(
        "#load-file", files=[{"name": "big.pgn", "mimeType": "text/plain", "buffer": b"1. " * (1 << 20)}]
    )
    page.wait_for_function("document.getElementById('message').textContent.includes('BODY_TOO_LARGE')")
    said = page.locator("#message").inner_text()
    assert "请求内容超过" in said and "棋谱文件最大约 1.5 MB" in said
    assert page.locator("#connection").is_hidden()  # a refusal is not a lost connection
    assert errors == []


def test_a_file_with_two_games_lists_them_and_loads_the_one_picked(
    served: tuple[GameService, XiangqiHttp], page: Any
) -> None:
    _service, http = served
    here = Path(__file__).resolve().parents[1] / "records"
    two = (here / "cchess-test2.pgn").read_text(encoding="utf-8").rstrip() + "\n\n"
    two += (here / "cchess-zhongpao-liepao.pgn").read_text(encoding="utf-8")
    page.goto(f"{http.url}/xiangqi/")
    page.wait_for_function("document.getElementById('status').textContent !== ''")
    page.set_input_files(
        "#load-file", files=[{"name": "two.pgn", "mimeType": "text/plain", "buffer": two.encode("utf-8")}]
    )
    page.wait_for_function(
        "document.getElementById('record-info').textContent.includes('文件共 2 局，载入第 1 局')"
    )
    assert page.locator("#movelist .mv").count() == 102
    assert page.locator("#record-game option").count() == 2 and page.locator("#record-game").is_visible()
    page.select_option("#record-game", "2")
    page.wait_for_function("document.getElementById('record-info').textContent.includes('载入第 2 局')")
    page.wait_for_function("document.querySelectorAll('#movelist .mv').length === 23")
    assert _moves(page)[0] == "炮二平五"
