// moddesk xiangqi panel: renders the service's projection and sends the person's actions over RPC.
// The server is the only rules authority: legal targets come from `legalTargets`, never recomputed here.
"use strict";

const RPC = "/xiangqi-mate/";
const CELL = 60, MARGIN = 40, TOP = 60;  // TOP leaves room for the file numbers above and below
const RED_FILES = "九八七六五四三二一";  // Red counts files from its right: a-file is 九 ... i-file is 一
// 炮 and 兵/卒 points get the traditional corner marks: [file, rank] in ICCS terms
const MARKS = [[1, 2], [7, 2], [1, 7], [7, 7], ...[0, 2, 4, 6, 8].flatMap((f) => [[f, 3], [f, 6]])];
const NAMES = {
  K: "帅", A: "仕", B: "相", N: "马", R: "车", C: "炮", P: "兵",
  k: "将", a: "士", b: "象", n: "马", r: "车", c: "炮", p: "卒",
};
const TEXT = {
  zh: {
    title: "象棋对弈", new: "新局", sideRed: "执红", sideBlack: "执黑", oppModel: "对手：模型",
    oppLocal: "对手：本地引擎", undo: "悔棋", hint: "提示", resign: "认输", review: "复盘",
    fallback: "由本地引擎代走", moves: "着法", reviewTitle: "复盘：评估曲线",
    yourTurn: "轮到你走", thinking: "对手思考中…", failed: "对手应招失败", over: "对局结束",
    confirmResign: "确定认输吗？", noGame: "还没有对局，点「新局」开始。",
    pollStopped: "对手长时间未应招，可以点「由本地引擎代走」。",
    countdown: "{n} 秒后由本地引擎代走", countdownDue: "模型超时，本地引擎正在代走…",
    waited: "已等待 {n} 秒",
    "ai.fallback.local": "已由本地引擎代走", "ai.timeout": "模型超时，本地引擎代走",
    "ai.budget": "模型额度用尽，本地引擎代走", "ai.failed": "引擎出错", "game.over": "对局结束",
    "game.resigned": "你已认输", "game.undone": "已悔棋", "game.new": "新局开始",
    opponentModel: "对手：当前会话模型", opponentLocal: "对手：本地引擎", lang: "English",
    candidates: "候选着法", turning: "转折点", best: "最佳", engine: "引擎",
    notation: "记谱", load: "载入棋谱", export: "导出", loaded: "已载入棋谱：{names}，共 {n} 手，从第 {at} 手开始",
    evalTitle: "评估（红方视角，单位：兵）", mateFor: "{side}{n}步杀", red: "红", black: "黑",
    draw: "提和", drawAccept: "同意和棋", drawDecline: "拒绝",
    drawOfferedByOpponent: "对手提和：同意还是拒绝？", drawOfferedByYou: "你已提和，等待对手答复",
    "draw.offered.hero": "你已提和，等待对手答复", "draw.offered.opponent": "对手提和",
    "draw.declined": "和棋提议被拒绝，对局继续", "draw.withdrawn": "和棋提议已失效", "draw.agreed": "双方同意和棋",
    offline: "连接已断开（{time}），{n} 秒后重试", offlineRetrying: "连接已断开（{time}），正在重试…",
    offlineFrozen: "连接断开，倒计时暂停", reconnected: "连接已恢复，棋局已重新读取",
    offlineBlocked: "连接已断开，这一步没有发出；连接恢复后再走",
    httpError: "服务器拒绝了请求（HTTP {status}）", ofGames: "（文件共 {count} 局，载入第 {k} 局）", winLoss: "胜率 {a}% → {b}%（−{d}%）", better: "更优",
  },
  en: {
    title: "Xiangqi", new: "New game", sideRed: "Play red", sideBlack: "Play black", oppModel: "vs model",
    oppLocal: "vs local engine", undo: "Undo", hint: "Hint", resign: "Resign", review: "Review",
    fallback: "Let the local engine move", moves: "Moves", reviewTitle: "Review: evaluation curve",
    yourTurn: "Your move", thinking: "Opponent is thinking…", failed: "Opponent failed to move",
    over: "Game over", confirmResign: "Really resign?", noGame: "No game yet: press New game.",
    pollStopped: "The opponent has not answered; you can let the local engine move.",
    countdown: "The local engine moves in {n} s", countdownDue: "Model timed out; the local engine is moving…",
    waited: "Waiting for {n} s",
    "ai.fallback.local": "The local engine moved instead", "ai.timeout": "Model timed out; the local engine moved",
    "ai.budget": "Model budget used up; the local engine moved", "ai.failed": "Engine error",
    "game.over": "Game over", "game.resigned": "You resigned", "game.undone": "Move taken back",
    "game.new": "New game", opponentModel: "Opponent: the chat model", opponentLocal: "Opponent: local engine",
    lang: "中文", candidates: "Candidates", turning: "Turning points", best: "best", engine: "engine",
    notation: "Notation", load: "Open record", export: "Export", loaded: "Record loaded: {names}, {n} plies, from ply {at}",
    evalTitle: "Evaluation (Red's view, in pawns)", mateFor: "{side} mates in {n}",
    red: "Red", black: "Black",
    draw: "Offer draw", drawAccept: "Accept draw", drawDecline: "Decline",
    drawOfferedByOpponent: "The opponent offers a draw: accept or decline?", drawOfferedByYou: "You offered a draw; waiting for the answer",
    "draw.offered.hero": "You offered a draw", "draw.offered.opponent": "The opponent offers a draw",
    "draw.declined": "The draw offer was declined; play on", "draw.withdrawn": "The draw offer lapsed", "draw.agreed": "Draw agreed",
    offline: "Connection lost ({time}); retrying in {n} s", offlineRetrying: "Connection lost ({time}); retrying…",
    offlineFrozen: "Connection lost; countdown paused", reconnected: "Connection restored; the game was read again",
    offlineBlocked: "Connection lost: nothing was sent; move again once it is back",
    httpError: "The server refused the request (HTTP {status})", ofGames: " (game {k} of {count} in the file)", winLoss: "win {a}% → {b}% (−{d}%)", better: "better",
  },
};

const state = {
  session: new URLSearchParams(location.search).get("session"),
  view: null, selected: null, lang: "zh", hints: [], hintEngine: null, reviewData: null, notation: "zh",
  poll: { timer: null, delay: 800, started: 0, stopped: false },
  // the server's waiting timeline: seconds left to its automatic fallback, as of `at` (page clock)
  wait: { remaining: null, waited: 0, at: 0, timer: null },
  // the connection: `lost` is when the first request failed; retries back off until the service answers
  conn: { lost: null, delay: 1000, retryAt: 0, timer: null, ticker: null },
};

const t = (key) => (TEXT[state.lang][key] ?? key);
const $ = (id) => document.getElementById(id);
const svgEl = (name, attrs) => {
  const el = document.createElementNS("http://www.w3.org/2000/svg", name);
  for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, v);
  return el;
};

// Every request goes through here. A request that does not reach the service (network error, a 5xx
// page that is not our JSON) means the connection is lost: the page says so, freezes the wait and
// retries by itself. Any other refusal is shown, whatever its shape (our JSON error, or a bare status).
async function rpc(endpoint, payload, quiet) {
  if (state.conn.lost) { if (!quiet) showMessage(t("offlineBlocked"), "error"); return null; }
  const body = Object.assign({}, payload || {});
  if (state.session) body.sessionId = state.session;
  let res;
  try {
    res = await fetch(RPC + endpoint, {
      // the person's session is the HttpOnly cookie plus this page's CSRF token (/_moddesk/person.js)
      method: "POST", headers: { "Content-Type": "application/json", "X-Moddesk-CSRF": window.moddeskCsrf() },
      body: JSON.stringify(body),
    });
  } catch (err) {
    connectionLost();
    return null;
  }
  let data = null;
  try { data = await res.json(); } catch (err) { data = null; }
  if (!data || typeof data !== "object" || !("ok" in data)) {
    if (res.status >= 500) { connectionLost(); return null; }
    if (!quiet) showMessage(t("httpError").replace("{status}", res.status), "error");
    return null;
  }
  if (!data.ok) {
    if (quiet) return null;
    showMessage(errorText(data, res.status), "error");
    return null;
  }
  return data.value;
}

// Both error shapes: the RPC's {error: {code, message, errorZh}} and the guard's {error: CODE, message, errorZh}.
function errorText(data, status) {
  const e = typeof data.error === "object" && data.error ? data.error : data;
  const zh = e.errorZh || e.messageZh;
  const text = (zh && state.lang === "zh" ? zh : e.message) || t("httpError").replace("{status}", status);
  const code = typeof data.error === "string" ? data.error : e.code;
  return code ? `${text}（${code}）` : text;
}

function clockTime(d) { return d.toLocaleTimeString(state.lang === "zh" ? "zh-CN" : "en-GB", { hour12: false }); }

function connectionLost() {
  const c = state.conn;
  if (c.lost) return;
  c.lost = new Date();
  c.delay = 1000;
  stopPolling();
  scheduleRetry();
  c.ticker = setInterval(showConnection, 250);
  render();
  showCountdown();  // frozen from this moment, shown at once
}
function scheduleRetry() {
  const c = state.conn;
  clearTimeout(c.timer);
  c.retryAt = Date.now() + c.delay;
  c.timer = setTimeout(retry, c.delay);
  showConnection();
}
async function retry() {
  const c = state.conn;
  c.retryAt = 0;
  showConnection();
  const body = state.session ? { sessionId: state.session } : {};
  let data = null;
  try {
    const res = await fetch(RPC + "state", {
      method: "POST", headers: { "Content-Type": "application/json", "X-Moddesk-CSRF": window.moddeskCsrf() },
      body: JSON.stringify(body),
    });
    data = await res.json();
  } catch (err) {
    data = null;
  }
  if (!data || typeof data !== "object" || !("ok" in data)) {
    c.delay = Math.min(15000, Math.round(c.delay * 1.6));
    scheduleRetry();
    return;
  }
  connectionRestored(data);
}
function connectionRestored(data) {
  const c = state.conn;
  clearTimeout(c.timer); clearInterval(c.ticker);
  Object.assign(c, { lost: null, timer: null, ticker: null, retryAt: 0 });
  showConnection();
  if (!data.ok) { render(); showMessage(errorText(data, 200), "error"); return; }
  // the state is read again as the service has it: a move sent just before the loss is shown once, if it landed
  state.view = null;
  apply(data.value);
  showMessage(t("reconnected"), "info");
}
function showConnection() {
  const el = $("connection");
  const c = state.conn;
  if (!c.lost) { el.hidden = true; el.textContent = ""; return; }
  el.hidden = false;
  const left = Math.max(0, Math.ceil((c.retryAt - Date.now()) / 1000));
  el.textContent = (c.retryAt ? t("offline").replace("{n}", left) : t("offlineRetrying")).replace("{time}", clockTime(c.lost));
}

function flipped() { return state.view && state.view.hero === "b"; }
function xy(index) {
  let col = index % 9, row = Math.floor(index / 9);
  if (flipped()) { col = 8 - col; row = 9 - row; }
  return [MARGIN + col * CELL, TOP + row * CELL];
}

function drawGrid(svg) {
  const defs = svgEl("defs");
  const marker = svgEl("marker", { id: "arrowhead", markerWidth: 6, markerHeight: 6, refX: 3, refY: 3, orient: "auto" });
  marker.appendChild(svgEl("path", { d: "M0,0 L6,3 L0,6 z", fill: "#1d8f3a" }));
  defs.appendChild(marker);
  svg.appendChild(defs);
  const g = svgEl("g");
  const L = (x1, y1, x2, y2, cls) => g.appendChild(svgEl("line", { x1, y1, x2, y2, class: cls || "line" }));
  const X = (c) => MARGIN + c * CELL, Y = (r) => TOP + r * CELL;
  for (let r = 0; r < 10; r++) L(X(0), Y(r), X(8), Y(r));
  for (let c = 0; c < 9; c++) {
    if (c === 0 || c === 8) L(X(c), Y(0), X(c), Y(9));
    else { L(X(c), Y(0), X(c), Y(4)); L(X(c), Y(5), X(c), Y(9)); }
  }
  for (const top of [0, 7]) { L(X(3), Y(top), X(5), Y(top + 2)); L(X(5), Y(top), X(3), Y(top + 2)); }
  // position marks: small corners around the cannon and pawn points (only the inward ones at the edges)
  for (const [f, rank] of MARKS) {
    const [x, y] = xy((9 - rank) * 9 + f);
    for (const dx of [-1, 1]) {
      if ((x + dx * CELL < X(0) - 1) || (x + dx * CELL > X(8) + 1)) continue;
      for (const dy of [-1, 1]) {
        const cx = x + dx * 5, cy = y + dy * 5;
        L(cx, cy, cx + dx * 12, cy, "mark"); L(cx, cy, cx, cy + dy * 12, "mark");
      }
    }
  }
  const river = (x, s) => {
    const el = svgEl("text", { x, y: TOP + 4.5 * CELL + 9, class: "river", "text-anchor": "middle" });
    el.textContent = s; g.appendChild(el);
  };
  river(X(2), "楚 河"); river(X(6), "汉 界");
  // file numbers: Red's 九…一 on Red's edge, Black's 1…9 on Black's edge; both follow the board's flip
  for (let file = 0; file < 9; file++) {
    const [x] = xy(file);
    const redAtBottom = !flipped();
    const red = svgEl("text", { x, y: redAtBottom ? Y(9) + 48 : Y(0) - 32, class: "fileno red", "data-file": `r${file}` });
    red.textContent = RED_FILES[file];
    const black = svgEl("text", { x, y: redAtBottom ? Y(0) - 32 : Y(9) + 48, class: "fileno black", "data-file": `b${file}` });
    black.textContent = String(file + 1);
    g.appendChild(red); g.appendChild(black);
  }
  svg.appendChild(g);
}

function myTurn(v) { return v && !state.conn.lost && v.phase === "playing" && v.turn === v.hero && !v.pending; }

function render() {
  const v = state.view;
  const svg = $("board");
  svg.replaceChildren();
  drawGrid(svg);
  if (!v) { $("status").textContent = t("noGame"); return; }
  if (v.lastMove) {
    for (const sq of [v.lastMove.from, v.lastMove.to]) {
      const [x, y] = xy(sq);
      svg.appendChild(svgEl("rect", { x: x - 29, y: y - 29, width: 58, height: 58, class: "last" }));
    }
  }
  const targets = state.selected !== null ? (v.legalTargets[String(state.selected)] || []) : [];
  v.board.forEach((p, i) => {
    if (!p) return;
    const [x, y] = xy(i);
    const red = p === p.toUpperCase();
    const movable = myTurn(v) && (red ? "r" : "b") === v.turn && (v.legalTargets[String(i)] || []).length > 0;
    const g = svgEl("g", {
      class: `piece ${red ? "red" : "black"}${movable ? " movable" : ""}${state.selected === i ? " selected" : ""}`,
      "data-square": i, "data-piece": p,
    });
    g.appendChild(svgEl("circle", { cx: x, cy: y, r: 26 }));
    const txt = svgEl("text", { x, y });
    txt.textContent = NAMES[p] || p;
    g.appendChild(txt);
    g.addEventListener("click", () => onSquare(i));
    svg.appendChild(g);
  });
  for (const to of targets) {
    const [x, y] = xy(to);
    const hit = svgEl("circle", { cx: x, cy: y, r: 27, class: "target-hit", "data-target": to });
    hit.addEventListener("click", (ev) => { ev.stopPropagation(); onSquare(to); });
    svg.appendChild(hit);
    const dot = svgEl("circle", { cx: x, cy: y, r: 9, class: "target", "data-target": to });
    dot.addEventListener("click", (ev) => { ev.stopPropagation(); onSquare(to); });
    svg.appendChild(dot);
  }
  for (const h of state.hints.slice(0, 1)) {
    const [x1, y1] = xy(h.from), [x2, y2] = xy(h.to);
    svg.appendChild(svgEl("line", { x1, y1, x2, y2, class: "hintarrow" }));
  }
  renderSide(v);
}

function renderSide(v) {
  let status;
  if (v.phase !== "playing") status = `${t("over")}：${v.status.reasonZh}`;
  else if (v.pending === "ai-thinking") status = t("thinking");
  else if (v.pending === "ai-failed") status = t("failed");
  else if (v.turn === v.hero) status = t("yourTurn");
  else status = t("thinking");
  $("status").textContent = status;
  $("opponent").textContent = v.opponent.kind === "model" ? t("opponentModel")
    : t("opponentLocal") + (v.opponent.level ? ` · ${v.opponent.level}${state.lang === "zh" ? " 级" : ""}` : "");
  if (v.message) showMessage(t(v.message.code), v.message.tone);
  renderMoves(v);
  const playing = v.phase === "playing";
  const offline = !!state.conn.lost;  // nothing that cannot be sent is offered
  $("btn-undo").disabled = offline || v.history.length === 0;
  $("btn-hint").disabled = !myTurn(v);
  $("btn-resign").disabled = offline || !playing;
  for (const id of ["btn-new", "btn-review", "btn-export", "btn-fallback"]) $(id).disabled = offline;
  $("load-file").disabled = offline;
  document.querySelector("label.filebtn").classList.toggle("disabled", offline);
  $("record-game").disabled = offline;
  const offer = playing ? v.drawOffer : null;
  $("btn-draw").disabled = offline || !playing || (offer && offer.by === "hero");
  $("drawbox").hidden = !(offer && offer.by === "opponent");
  $("btn-draw-accept").disabled = offline;
  $("btn-draw-decline").disabled = offline;
  $("drawnote").textContent = offer && offer.by === "hero" ? t("drawOfferedByYou") : "";
  const showFallback = playing && (v.pending === "ai-failed" ||
    (v.pending === "ai-thinking" && v.opponent.kind === "model" && state.poll.stopped));
  $("btn-fallback").hidden = !showFallback;
  if (v.evaluation) setEval(v.evaluation);
  const hintBox = $("hints");
  hintBox.replaceChildren();
  if (state.hints.length) {
    const head = document.createElement("div");
    head.textContent = t("candidates") + (state.hintEngine ? `（${t("engine")}：${state.hintEngine}）` : "");
    hintBox.appendChild(head);
    for (const c of state.hints) {
      const d = document.createElement("div");
      d.className = "candidate";
      const score = c.mate !== null && c.mate !== undefined ? c.scoreZh : `${c.pawns > 0 ? "+" : ""}${c.pawns.toFixed(2)} 兵`;
      d.textContent = `${c.zh}  ${score}  ${(c.pvZh || []).slice(1, 5).join(" ")}`;
      d.title = c.iccs;
      hintBox.appendChild(d);
    }
  }
}

// The record in rounds, as Chinese game records are written: "1. 炮二平五 炮8平7" (a game that starts with
// Black to move opens with "1. … 马8进7"); the notation follows the toggle (Chinese, WXF, ICCS).
function moveText(h) {
  const text = state.notation === "wxf" ? (h.wxf || h.zh) : state.notation === "iccs" ? h.iccs : h.zh;
  return text + (h.captured ? " ×" : "");
}
function renderMoves(v) {
  const list = $("movelist");
  list.replaceChildren();
  const startBlack = v.history.length ? v.history[0].side === "b" : false;
  let li = null;
  v.history.forEach((h, i) => {
    if (h.side !== "b" || !li) {
      li = document.createElement("li");
      const no = document.createElement("span");
      no.className = "round";
      no.textContent = `${list.children.length + 1}.`;
      li.appendChild(no);
      if (h.side === "b" && startBlack && i === 0) {
        const gap = document.createElement("span");
        gap.className = "mv gap"; gap.textContent = "…";
        li.append(" ", gap);
      }
      list.appendChild(li);
    }
    const mv = document.createElement("span");
    mv.className = `mv ${h.side === "r" ? "red" : "black"}${i === v.history.length - 1 ? " current" : ""}`;
    mv.textContent = moveText(h);
    mv.dataset.iccs = h.iccs;
    li.append(" ", mv);  // the spaces keep the copied text readable: "1. 炮二平五 炮8平7"
    if (h.side === "b") li = null;
  });
  list.scrollTop = list.scrollHeight;
}

function evalLabel(e) {
  if (e.mateRed !== null && e.mateRed !== undefined) {
    return t("mateFor").replace("{side}", e.mateRed > 0 ? t("red") : t("black")).replace("{n}", Math.abs(e.mateRed));
  }
  const pawns = e.pawnsRed !== undefined ? e.pawnsRed : e.scoreRed / 100;
  return `${pawns > 0 ? "+" : ""}${pawns.toFixed(1)}`;
}
function setEval(e) {
  const clipped = Math.max(-1000, Math.min(1000, e.scoreRed));
  // the bar fills from the person's side of the board: Red's share when Red is at the bottom
  const ours = flipped() ? -clipped : clipped;
  $("evalfill").style.height = `${50 + ours / 20}%`;
  $("evalfill").style.background = flipped() ? "#222" : "#c0392b";
  $("evalfill").parentElement.style.background = flipped() ? "#c0392b" : "#222";
  $("evaltext").textContent = evalLabel(e);
  $("evaltext").title = t("evalTitle");
}

function showMessage(text, tone) {
  const el = $("message");
  el.textContent = text || "";
  el.className = `message ${tone || ""}`;
}

async function onSquare(i) {
  const v = state.view;
  if (!myTurn(v)) return;
  if (state.selected !== null && (v.legalTargets[String(state.selected)] || []).includes(i)) {
    const from = state.selected;
    state.selected = null;
    await act("move", { from, to: i, iccs: iccsOf(from, i) });
    return;
  }
  const p = v.board[i];
  const own = p && ((p === p.toUpperCase()) === (v.turn === "r"));
  state.selected = own && (v.legalTargets[String(i)] || []).length ? i : null;
  render();
}

function iccsOf(from, to) {
  const sq = (i) => "abcdefghi"[i % 9] + String(9 - Math.floor(i / 9));
  return sq(from) + sq(to);
}

async function act(endpoint, payload) {
  const value = await rpc(endpoint, payload);
  if (!value) return null;
  if (endpoint !== "hint") state.hints = [];
  if (endpoint === "new" || endpoint === "load") { state.session = value.sessionId; history.replaceState(null, "", `?session=${value.sessionId}`); }
  apply(value);
  return value;
}

function apply(value) {
  if (state.view && value.revision < state.view.revision && value.sessionId === state.view.sessionId) return;
  const prevPending = state.view && state.view.pending;
  state.view = value;
  noteWait(value);
  if (!value.message) showMessage("", "");
  render();
  if (value.pending === "ai-thinking") {
    // a new wait (or a fallback asked for after polling stopped) starts a fresh polling round
    if (prevPending !== "ai-thinking") startPolling();
    else if (!state.poll.timer) schedule();
  } else {
    stopPolling();
    if (myTurn(value) && !value.evaluation) refreshEval();
  }
}

async function refreshEval() {
  const rev = state.view.revision;
  const value = await rpc("state", { includeEval: true });
  if (value && value.revision === rev && value.evaluation) { state.view.evaluation = value.evaluation; setEval(value.evaluation); }
}

// Polling: only while the opponent is thinking and the page is visible. The seed's schedule first (800 ms,
// x1.35, 2 s cap, for 30 s; then the fallback button shows), then a slow poll that lands just after the
// server's own timeout, so the engine's automatic move always reaches the board.
const FAST_FOR = 30000, SLOW = 10000;
function startPolling() {
  stopPolling();
  Object.assign(state.poll, { delay: 800, started: Date.now(), stopped: false });
  schedule();
}
function stopPolling() {
  clearTimeout(state.poll.timer);
  state.poll.timer = null;
}
function schedule() {
  clearTimeout(state.poll.timer);  // never two polling chains
  state.poll.timer = setTimeout(tick, state.poll.stopped ? slowDelay() : state.poll.delay);
}
function slowDelay() {
  const left = waitLeft();
  if (left === null) return SLOW;
  return Math.max(1000, Math.min(SLOW, left * 1000 + 400));
}
async function tick() {
  state.poll.timer = null;
  if (document.visibilityState !== "visible") return;
  if (!state.poll.stopped && Date.now() - state.poll.started > FAST_FOR) {
    state.poll.stopped = true;
    showMessage(t("pollStopped"), "warn");
    render();
  }
  const value = await rpc("state", {}, true);
  if (!value) { if (!state.conn.lost && state.view && state.view.pending === "ai-thinking") schedule(); return; }
  if (!state.poll.stopped) state.poll.delay = Math.min(2000, state.poll.delay * 1.35);
  const was = state.view;
  state.view = value;
  noteWait(value);
  if (was && value.revision !== was.revision) render();
  if (value.pending === "ai-thinking") schedule();
  else { stopPolling(); render(); if (myTurn(value)) refreshEval(); }
}
document.addEventListener("visibilitychange", () => {
  if (document.visibilityState === "visible" && !state.conn.lost && state.view && state.view.pending === "ai-thinking" && !state.poll.timer) {
    schedule();
  }
});

// The countdown to the server's automatic fallback, ticking on the page between polls.
function noteWait(value) {
  const w = value && value.pending === "ai-thinking" ? value.wait : null;
  Object.assign(state.wait, {
    remaining: w && w.remaining !== null && w.remaining !== undefined ? w.remaining : null,
    waited: w ? w.waited : 0, at: Date.now(),
  });
  if (w && !state.wait.timer) state.wait.timer = setInterval(showCountdown, 1000);
  if (!w && state.wait.timer) { clearInterval(state.wait.timer); state.wait.timer = null; }
  showCountdown();
}
// while the connection is lost the page's clock stops at the loss: it cannot know what the server did since
function pageNow() { return state.conn.lost ? state.conn.lost.getTime() : Date.now(); }
function waitLeft() {
  if (state.wait.remaining === null) return null;
  return Math.max(0, state.wait.remaining - (pageNow() - state.wait.at) / 1000);
}
function showCountdown() {
  const el = $("countdown");
  const v = state.view;
  if (!v || v.pending !== "ai-thinking" || v.phase !== "playing") { el.textContent = ""; el.hidden = true; return; }
  const left = waitLeft();
  const waited = Math.round(state.wait.waited + (pageNow() - state.wait.at) / 1000);
  el.hidden = false;
  if (left === null) el.textContent = t("waited").replace("{n}", waited);
  else el.textContent = left > 0 ? t("countdown").replace("{n}", Math.ceil(left)) : t("countdownDue");
  if (state.conn.lost) el.textContent += ` · ${t("offlineFrozen")}`;
}

function drawReview(data) {
  const box = $("review");
  box.hidden = false;
  const svg = $("curve");
  svg.replaceChildren();
  const pts = data.curve;
  if (!pts.length) return;
  const n = Math.max(1, pts.length - 1);
  // Red's expected score (0-100 %), the same measure the turning points are judged by; 50 % is level
  const win = (p) => (p.winRed !== undefined ? p.winRed : 50 + Math.max(-50, Math.min(50, p.scoreRed / 20)));
  const y = (w) => 115 - w * 1.1;
  svg.appendChild(svgEl("line", { x1: 0, y1: y(50), x2: 300, y2: y(50), class: "zero" }));
  svg.appendChild(svgEl("polyline", { points: pts.map((p, i) => `${(i * 300) / n},${y(win(p))}`).join(" ") }));
  for (const tp of data.turningPoints) {
    const at = pts[tp.ply] || pts[pts.length - 1];
    svg.appendChild(svgEl("circle", { cx: (tp.ply * 300) / n, cy: y(win(at)), r: 3 }));
  }
  const list = $("turning");
  list.replaceChildren();
  for (const tp of data.turningPoints) {
    const li = document.createElement("li");
    const loss = t("winLoss").replace("{a}", tp.winBefore).replace("{b}", tp.winAfter).replace("{d}", tp.winLoss);
    li.textContent = `${tp.ply}. ${tp.zh}${tp.judgementZh && state.lang === "zh" ? `（${tp.judgementZh}）` : ""}  ${loss}` +
      (tp.best ? `  ${t("better")}：${(tp.best.lineZh && tp.best.lineZh.length ? tp.best.lineZh : [tp.best.zh]).join(" ")}` : "");
    list.appendChild(li);
  }
}

function applyLang() {
  document.documentElement.lang = state.lang === "zh" ? "zh-CN" : "en";
  for (const el of document.querySelectorAll("[data-i18n]")) el.textContent = t(el.dataset.i18n);
  $("lang").textContent = t("lang");
  render();
}

$("notation").addEventListener("change", () => { state.notation = $("notation").value; if (state.view) renderMoves(state.view); });
$("lang").addEventListener("click", () => { state.lang = state.lang === "zh" ? "en" : "zh"; applyLang(); });
$("btn-new").addEventListener("click", () => {
  state.session = null;
  $("review").hidden = true;
  const payload = { side: $("new-side").value, opponent: $("new-opponent").value };
  if (payload.opponent === "local") payload.level = Number($("new-level").value);
  act("new", payload);
});
$("btn-undo").addEventListener("click", () => {
  const v = state.view;
  act("undo", { plies: v && v.turn !== v.hero && v.phase === "playing" ? 1 : 2 });
});
$("btn-hint").addEventListener("click", async () => {
  const value = await rpc("hint", { count: 3 });
  if (value) { state.hints = value.candidates; state.hintEngine = value.engine || null; apply(value); }
});
$("btn-draw").addEventListener("click", () => act("draw", { action: "offer" }));
$("btn-draw-accept").addEventListener("click", () => act("draw", { action: "accept" }));
$("btn-draw-decline").addEventListener("click", () => act("draw", { action: "decline" }));
$("btn-resign").addEventListener("click", () => { if (confirm(t("confirmResign"))) act("resign", {}); });
$("btn-review").addEventListener("click", async () => {
  const value = await rpc("review", { highlight: "turning" });
  if (value) { drawReview(value.review); apply(value); }
});
// Records: a PGN/XQF/UBB file is sent as base64 and becomes a game at its last move; export downloads one.
$("load-file").addEventListener("change", async () => {
  const file = $("load-file").files[0];
  if (!file) return;
  const bytes = new Uint8Array(await file.arrayBuffer());
  let binary = "";
  for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  state.upload = { data: btoa(binary), name: file.name };
  $("load-file").value = "";
  await loadGame(1);
});
// A file with several games: the list to pick from; picking one loads it from the same upload.
async function loadGame(number) {
  state.session = null;
  const payload = Object.assign({ opponent: $("new-opponent").value, game: number }, state.upload);
  if (payload.opponent === "local") payload.level = Number($("new-level").value);
  const value = await act("load", payload);
  if (!value) return;
  history.replaceState(null, "", `?session=${value.sessionId}`);
  const rec = value.record;
  const pick = $("record-game");
  pick.replaceChildren();
  pick.hidden = rec.count < 2;
  for (const g of rec.games || []) {
    const opt = document.createElement("option");
    opt.value = g.game;
    opt.textContent = g.error ? `${g.game}. ${g.errorZh || g.error}` : `${g.game}. ${g.red || "?"} – ${g.black || "?"}  ${g.result}  ${g.plies} ${state.lang === "zh" ? "手" : "plies"}`;
    opt.disabled = !!g.error;
    opt.selected = g.game === rec.game;
    pick.appendChild(opt);
  }
  const names = `${rec.tags.Red || "?"} / ${rec.tags.Black || "?"}`;
  $("record-info").textContent = t("loaded").replace("{names}", names).replace("{n}", rec.plies).replace("{at}", rec.startedAt) +
    (rec.count > 1 ? t("ofGames").replace("{count}", rec.count).replace("{k}", rec.game) : "");
}
$("record-game").addEventListener("change", () => { if (state.upload) loadGame(Number($("record-game").value)); });
$("btn-export").addEventListener("click", async () => {
  const value = await rpc("export", { format: $("export-format").value });
  if (!value) return;
  if (value.warnings && value.warnings.length) showMessage(value.warnings.join("；"), "warn");
  const data = value.base64 ? Uint8Array.from(atob(value.base64), (c) => c.charCodeAt(0)) : value.text;
  const url = URL.createObjectURL(new Blob([data], { type: value.base64 ? "application/octet-stream" : "text/plain;charset=utf-8" }));
  const a = document.createElement("a");
  a.href = url; a.download = value.fileName;
  document.body.appendChild(a); a.click(); a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
});
$("btn-fallback").addEventListener("click", async () => {
  // always answers: if the reply already came (or the server restarted), the fresh board is shown instead
  const value = await rpc("fallback", {}, true);
  if (value) { state.hints = []; apply(value); startPolling(); return; }
  const now = await rpc("state", {});
  if (now) { apply(now); if (now.pending === "ai-thinking") startPolling(); }
});

(async () => {
  render();
  const value = await rpc("state", {});
  if (value) { state.session = value.sessionId; apply(value); }
})();
