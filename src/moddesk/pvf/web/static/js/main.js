// The page's shell: shared state, a tiny event bus, the view switcher, notices and the live stream.
import { op, subscribe, windowCall } from "./api.js";
import * as i18n from "./i18n.js";

export const state = { info: null, windowId: "page-" + Math.random().toString(36).slice(2, 10), live: false };
const handlers = {};
export function on(name, fn) { (handlers[name] ||= []).push(fn); }
export function emit(name, data) { for (const fn of handlers[name] || []) fn(data); }
export const h = (tag, attrs = {}, ...kids) => {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") el.className = v;
    else if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "text") el.textContent = v;
    else if (v !== false && v != null) el.setAttribute(k, v === true ? "" : v);
  }
  for (const kid of kids.flat()) if (kid != null) el.append(kid.nodeType ? kid : document.createTextNode(String(kid)));
  return el;
};
export const $ = (sel) => document.querySelector(sel);

// ------------------------------------------------------------------ notices (errors in words, with recovery)
export function notice(error, actions = [], kind = "error") {
  const box = $("#notice");
  box.className = kind === "info" ? "info" : "";
  box.replaceChildren();
  if (typeof error === "string") box.append(h("div", {}, error));
  else {
    const code = error.code || error.error || "";
    // Chinese: the catalogue's message (it says what to do); English: the message and the hint
    const at = i18n.getLang() === "zh" ? i18n.errorWhere(error) : [];
    box.append(h("div", { title: error.message || "" }, h("span", { class: "code" }, code), " ", i18n.errorText(error, { where: false }),
      at.length ? h("span", { class: "path" }, `（${at.join("，")}）`) : null));
    const hint = error.payload?.hint || error.hint;
    if (hint && i18n.getLang() !== "zh") box.append(h("div", { class: "muted" }, `${i18n.t("common.hint")}: ${hint}`));
  }
  const row = h("div", { class: "actions" });
  for (const [label, fn] of actions) row.append(h("button", { class: "primary", onclick: async () => { box.hidden = true; await fn(); } }, label));
  row.append(h("button", { onclick: () => { box.hidden = true; } }, i18n.t("common.dismiss")));
  box.append(row);
  box.hidden = false;
  clearTimeout(noticeTimer);
  if (kind === "info" && !actions.length) noticeTimer = setTimeout(() => { box.hidden = true; }, 5000);
}
let noticeTimer = 0;
export async function attempt(fn, recover = () => []) {
  try { return await fn(); } catch (err) { if (err.code) notice(err, recover(err)); else notice(String(err)); return undefined; }
}

// ------------------------------------------------------------------ workspace info
export const ws = () => state.info && state.info.open ? state.info : null;
export async function refreshInfo() { setInfo(await op("info")); }
function setInfo(info) {
  const before = state.info;
  state.info = info;
  emit("info", info);
  if (!before || before.workspaceId !== info.workspaceId) emit("workspace", info);
  else if (before.revision !== info.revision) emit("revision", info);
}

// ------------------------------------------------------------------ drafts: the page is one editor window
let generation = 0;
let draftCheck = () => false;
export function setDraftCheck(fn) { draftCheck = fn; }
export async function reportDraft() {
  if (!state.live) return; // the stream's hello reports again once the window is registered
  generation += 1;
  await windowCall(`${state.windowId}/draft`, { dirty: draftCheck(), generation });
}

function onEvent(name, data) {
  if (name === "hello") reportDraft();
  else if (name === "info") setInfo(data);
  else if (name === "activity") emit("activity", data);
  else if (name === "prepare") {
    // a lifecycle operation or an apply asks every editor: answer with the real draft state
    emit("frozen", true);
    for (const operationId of data) windowCall(`${state.windowId}/ack`, { operationId, dirty: draftCheck() });
  } else if (name === "frozen") emit("frozen", data); // editing waits until the operation ends
  else if (name === "denied") notice({ code: data.error, message: data.errorZh || data.message, hint: data.hint });
  else emit(name, data);
}

// ------------------------------------------------------------------ views
export function showView(name) {
  for (const b of document.querySelectorAll("#views button")) b.classList.toggle("active", b.dataset.view === name);
  const side = name === "files" || name === "search" ? name : null;
  $("#side").hidden = !side;
  $("#side-files").hidden = side !== "files";
  $("#side-search").hidden = side !== "search";
  for (const pane of document.querySelectorAll("#main .pane")) pane.hidden = true;
  $(side ? "#main-editor" : `#main-${name}`).hidden = false;
  document.body.dataset.view = name;
  emit("view", name);
}

async function start() {
  i18n.apply();
  $("#btn-lang").addEventListener("click", () => { i18n.toggle(); $("#btn-lang").textContent = i18n.getLang() === "zh" ? "EN" : "中文"; emit("lang"); });
  for (const b of document.querySelectorAll("#views button")) b.addEventListener("click", () => showView(b.dataset.view));
  const modules = ["archive", "tree", "editor", "search", "activity", "scripts", "transfer", "history", "settings"];
  const loaded = await Promise.all(modules.map((name) => import(`./${name}.js`)));  // fetched in parallel
  for (const module of loaded) module.init();
  // other tools on the page (tests, benchmarks, a future "reveal in page" link) open files this way
  window.addEventListener("pvf-open", (e) => emit("open-file", typeof e.detail === "string" ? { path: e.detail } : e.detail));
  await refreshInfo();
  subscribe(state.windowId, onEvent, (live) => { state.live = live; emit("live", live); });
  document.body.dataset.ready = "1";
}
start();
