// Editor tabs: coloured text, annotation hovers and side panel, drafts registered with the service.
import { op } from "./api.js";
import { highlight } from "./highlight.js";
import { getLang, pick, t, word } from "./i18n.js";
import { $, attempt, emit, h, notice, on, refreshInfo, reportDraft, setDraftCheck, showView, ws } from "./main.js";

const LINE = 18;
const tabs = [];
let active = null, frozen = false;
const el = {};

function current() { return tabs.find((x) => x.path === active) || null; }

async function load(path) {
  const info = ws();
  const res = await op("read", { workspaceId: info.workspaceId, path, startLine: 1, lineCount: 2000 });
  return { text: res.binary ? "" : res.text, binary: res.binary, readonly: res.binary || res.truncated, totalLines: res.totalLines, revision: res.revision, size: res.size };
}

async function explain(tab) {
  const info = ws();
  tab.annotations = [];
  if (tab.binary) return;
  let cursor = null;
  for (let page = 0; page < 5; page++) {
    try {
      const res = await op("explain", { workspaceId: info.workspaceId, path: tab.path, cursor, limit: 100 });
      tab.annotations.push(...res.annotations);
      tab.pathContext = res.pathContext || [];
      cursor = res.nextCursor;
      if (!cursor) break;
    } catch (err) { tab.annotationError = err.code; break; }
  }
}

export async function openFile(path, line) {
  showView(document.body.dataset.view === "search" ? "search" : "files");
  let tab = tabs.find((x) => x.path === path);
  if (!tab) {
    const got = await attempt(() => load(path));
    if (!got) return;
    tab = { path, ...got, saved: got.text, dirty: false, annotations: [], conflict: null };
    tabs.push(tab);
    explain(tab).then(() => { if (active === tab.path) { paintCode(); paintPanel(); } });
  }
  active = path;
  paint();
  saveTabs();
  if (line) goToLine(line);
}

function goToLine(line) {
  const tab = current(); if (!tab) return;
  tab.line = line;
  const ta = el.ta;
  ta.scrollTop = Math.max(0, (line - 1) * LINE - ta.clientHeight / 3);
  const lines = tab.text.split("\n");
  const start = lines.slice(0, line - 1).reduce((n, l) => n + l.length + 1, 0);
  ta.setSelectionRange(start, start + (lines[line - 1] || "").length);
  el.wrap.dataset.line = String(line);
  paintCode();
  sync();
}

// ------------------------------------------------------------------ painting
function paint() {
  el.tabs.replaceChildren(...tabs.map((tab) => h("div", {
    class: `tab${tab.path === active ? " active" : ""}${tab.dirty ? " dirty" : ""}${tab.removed ? " removed" : ""}`, role: "tab", "data-path": tab.path,
    "data-removed": tab.removed ? "true" : null, "aria-selected": String(tab.path === active), onclick: () => { active = tab.path; paint(); saveTabs(); },
  }, h("span", { class: "name", title: tab.path }, tab.path.split("/").pop()),
  tab.removed ? h("span", { class: "gone" }, t("editor.removedTab")) : null,
  h("button", { class: "x", title: "close", onclick: (e) => { e.stopPropagation(); closeTab(tab); } }, "×"))));
  const tab = current();
  el.empty.hidden = !!tab;
  el.body.hidden = !tab;
  if (!tab) return;
  el.ta.value = tab.text;
  el.ta.readOnly = tab.readonly || tab.removed || frozen;
  el.wrap.dataset.path = tab.path;
  paintDraftBar();
  paintCode();
  paintPanel();
}

function paintDraftBar() {
  const tab = current(); if (!tab) return;
  let text = tab.dirty ? t("editor.draft") : t("editor.clean");
  if (tab.binary) text = `${t("editor.binary")} (${tab.size} B)`;
  else if (tab.readonly) text = t("editor.readonly", { n: tab.text.split("\n").length });
  if (tab.removed) text = t("editor.removed");
  if (frozen) text = t("editor.frozen");
  el.state.textContent = text;
  el.state.dataset.dirty = String(tab.dirty);
  el.saveDraft.disabled = !tab.dirty;
  el.discard.disabled = !tab.dirty;
  el.conflict.hidden = !tab.conflict;
  if (tab.conflict) {
    el.conflict.replaceChildren(
      h("div", {}, h("b", {}, t("editor.conflict")), h("div", { class: "muted" }, t("editor.yours")), h("pre", { class: "mine" }, tab.text)),
      h("div", {}, h("div", { class: "muted" }, t("editor.theirs")), h("pre", { class: "theirs" }, tab.conflict),
        h("div", { class: "actions" },
          h("button", { class: "primary", onclick: () => resolve(tab, "mine") }, t("editor.keepMine")),
          h("button", { onclick: () => resolve(tab, "theirs") }, t("editor.takeTheirs")))));
  }
}

function annotationAt(tab, line, col) {
  return tab.annotations.filter((a) => (a.startLine < line || (a.startLine === line && a.startColumn <= col))
    && (a.endLine > line || (a.endLine === line && a.endColumn > col)));
}

function paintCode() {
  const tab = current(); if (!tab) return;
  const lines = highlight(tab.text);
  const marked = new Set(tab.annotations.map((a) => a.startLine));
  el.pre.innerHTML = lines.map((html, i) => `<span class="ln${i + 1 === tab.line ? " target" : ""}" data-n="${i + 1}">${html || " "}</span>`).join("");
  // underline the tokens an annotation covers (they answer a hover)
  for (const span of el.pre.querySelectorAll("span[data-l]")) {
    const l = Number(span.dataset.l);
    if (marked.has(l) || tab.annotations.some((a) => a.startLine <= l && a.endLine >= l)) {
      if (annotationAt(tab, l, Number(span.dataset.c)).length) span.classList.add("ann");
    }
  }
  el.gutter.replaceChildren(...lines.map((_, i) => h("div", {}, i + 1)));
  sync();
}

function describe(a) {
  const parts = [pick(a.title)];
  if (a.valueLabel) parts.push(`= ${pick(a.valueLabel)}`);
  if (a.content) parts.push(pick(a.content));
  if (a.reference) {
    const r = a.reference;
    parts.push(`→ ${r.path || r.listPath || ""} [${word(r.resolutionStatus)}]${r.name ? " " + r.name : ""}${r.reason && getLang() !== "zh" ? " " + r.reason : ""}`);
  }
  return parts.join("\n");
}

function paintPanel() {
  const tab = current(); if (!tab) return;
  const items = tab.annotations.map((a) => h("div", { class: "item", "data-line": a.startLine, onclick: () => goToLine(a.startLine) },
    h("div", { class: "label" }, pick(a.title), a.valueLabel ? ` = ${pick(a.valueLabel)}` : ""),
    h("div", { class: "muted" }, `${t("ann.line")} ${a.startLine} · ${a.section ? `[${a.section}] ` : ""}${a.value ?? ""}`),
    a.content ? h("div", {}, pick(a.content)) : null,
    a.reference && a.reference.path ? h("div", {}, h("a", {
      class: "ref", "data-target": a.reference.path,
      onclick: (e) => { e.stopPropagation(); if (a.reference.resolutionStatus === "resolved") openFile(a.reference.path); },
    }, `→ ${a.reference.path}`), `（${word(a.reference.resolutionStatus)}）`) : null));
  const context = (tab.pathContext || []).map((c) => h("div", { class: "muted" }, `${pick(c.title)}：${pick(c.content)}`));
  el.panel.replaceChildren(h("h3", {}, t("ann.title")), ...context, ...(items.length ? items : [h("div", { class: "muted" }, t("ann.none"))]));
}

function sync() { el.pre.scrollTop = el.ta.scrollTop; el.pre.scrollLeft = el.ta.scrollLeft; el.gutter.scrollTop = el.ta.scrollTop; }

// ------------------------------------------------------------------ hovers: find the token under the pointer in the coloured layer
function hover(e) {
  const tab = current(); if (!tab) return;
  // probe the coloured layer under the textarea: swap which of the two takes the pointer for one call
  el.ta.style.pointerEvents = "none";
  el.pre.style.pointerEvents = "auto";
  const target = document.elementFromPoint(e.clientX, e.clientY);
  el.pre.style.pointerEvents = "";
  el.ta.style.pointerEvents = "";
  const tip = $("#tooltip");
  if (!target || !target.dataset || !target.dataset.l) { tip.hidden = true; return; }
  const found = annotationAt(tab, Number(target.dataset.l), Number(target.dataset.c));
  if (!found.length) { tip.hidden = true; return; }
  tip.textContent = found.map(describe).join("\n\n");
  tip.style.left = `${e.clientX + 12}px`;
  tip.style.top = `${e.clientY + 14}px`;
  tip.hidden = false;
}

// ------------------------------------------------------------------ drafts
let reportTimer = 0;
function edited() {
  $("#tooltip").hidden = true;
  const tab = current(); if (!tab || tab.readonly) return;
  tab.text = el.ta.value;
  const dirty = tab.text !== tab.saved;
  const changed = dirty !== tab.dirty;
  tab.dirty = dirty;
  clearTimeout(reportTimer);
  if (changed) reportDraft(); else reportTimer = setTimeout(reportDraft, 300);
  if (changed) paint(); else { paintCode(); }
}

async function saveDraft() {
  const tab = current(); const info = ws(); if (!tab || !info) return;
  const res = await attempt(() => op("applyDraft", { workspaceId: info.workspaceId, expectedRevision: info.revision, path: tab.path, text: tab.text }));
  if (!res) { await refreshInfo(); return; }
  tab.saved = tab.text; tab.dirty = false; tab.conflict = null; tab.revision = res.revision;
  await reportDraft();
  await refreshInfo();
  await explain(tab);
  paint();
}

function discard() {
  const tab = current(); if (!tab) return;
  tab.text = tab.saved; tab.dirty = false; tab.conflict = null;
  reportDraft();
  paint();
}

function resolve(tab, how) {
  if (how === "theirs") { tab.text = tab.conflict; tab.saved = tab.conflict; tab.dirty = false; }
  else { tab.saved = tab.conflict; tab.dirty = tab.text !== tab.saved; }
  tab.conflict = null;
  reportDraft();
  paint();
}

function closeTab(tab) {
  if (tab.dirty && !confirm(t("editor.draft"))) return;
  tabs.splice(tabs.indexOf(tab), 1);
  if (active === tab.path) active = tabs.length ? tabs[tabs.length - 1].path : null;
  reportDraft();
  paint();
  saveTabs();
}

// The archive moved (the agent applied a plan, an import, a checkout…): reread the open tabs.
async function refreshTabs() {
  for (const tab of [...tabs]) {
    let got;
    try { got = await load(tab.path); } catch (err) {
      // the file is gone from the archive: the tab stays and says so (a draft in it is kept to copy)
      if (err.code === "NOT_FOUND") { tab.removed = true; tab.conflict = null; }
      continue;
    }
    tab.removed = false;
    if (got.text === tab.saved || got.text === tab.text) { tab.saved = got.text; tab.dirty = tab.text !== tab.saved; continue; }
    if (tab.dirty) tab.conflict = got.text;
    else Object.assign(tab, got, { saved: got.text, text: got.text });
    await explain(tab);
  }
  if (active && !tabs.find((x) => x.path === active)) active = tabs.length ? tabs[0].path : null;
  paint();
  reportDraft();
}

// The open tabs are kept per archive file across a page reload and a reopen of the same file.
const tabsKey = () => { const info = ws(); return info ? `pvf-tabs:${info.sourcePath || info.workspaceId}` : null; };
function saveTabs() {
  const key = tabsKey(); if (key) sessionStorage.setItem(key, JSON.stringify({ paths: tabs.map((x) => x.path), active }));
}
async function restoreTabs() {
  tabs.length = 0; active = null;
  const key = tabsKey();
  let saved = null;
  try { saved = key ? JSON.parse(sessionStorage.getItem(key) || "null") : null; } catch { saved = null; }
  for (const path of saved?.paths || []) {
    let got;
    try { got = await load(path); } catch { continue; }
    const tab = { path, ...got, saved: got.text, dirty: false, annotations: [], conflict: null };
    tabs.push(tab);
    explain(tab).then(() => { if (active === tab.path) { paintCode(); paintPanel(); } });
  }
  active = tabs.find((x) => x.path === saved?.active) ? saved.active : tabs.length ? tabs[0].path : null;
  paint();
}

export function init() {
  const root = $("#main-editor");
  el.tabs = h("div", { id: "tabs", role: "tablist" });
  el.empty = h("div", { class: "panel muted", "data-i18n": "editor.empty" }, t("editor.empty"));
  el.state = h("span", { class: "state", id: "draft-state" });
  el.saveDraft = h("button", { class: "primary", id: "btn-save-draft", onclick: saveDraft }, t("editor.saveDraft"));
  el.discard = h("button", { id: "btn-discard-draft", onclick: discard }, t("editor.discard"));
  el.conflict = h("div", { class: "conflict", id: "conflict", hidden: true });
  el.gutter = h("div", { class: "gutter" });
  el.pre = h("pre", { "aria-hidden": "true" });
  el.ta = h("textarea", { id: "code", spellcheck: "false", wrap: "off", "aria-label": "file text" });
  el.wrap = h("div", { class: "code-wrap", id: "code-wrap" }, el.gutter, h("div", { class: "code" }, el.pre, el.ta));
  el.panel = h("aside", { id: "ann-panel", "aria-label": "annotations" });
  el.body = h("div", { id: "editor-area", hidden: true },
    h("div", { id: "editor-col" }, h("div", { id: "draft-bar" }, el.state, el.saveDraft, el.discard), el.conflict, el.wrap), el.panel);
  root.append(el.tabs, el.empty, el.body);
  el.ta.addEventListener("input", edited);
  el.ta.addEventListener("scroll", () => { sync(); $("#tooltip").hidden = true; });
  el.ta.addEventListener("mousemove", hover);
  el.ta.addEventListener("mouseleave", () => { $("#tooltip").hidden = true; });
  el.ta.addEventListener("keydown", (e) => { if ((e.ctrlKey || e.metaKey) && e.key === "s") { e.preventDefault(); saveDraft(); } });
  setDraftCheck(() => tabs.some((x) => x.dirty));
  on("open-file", ({ path, line }) => openFile(path, line));
  on("revision", refreshTabs);
  on("workspace", async () => { await restoreTabs(); reportDraft(); });
  on("frozen", (value) => { frozen = value; if (current()) { el.ta.readOnly = current().readonly || frozen; paintDraftBar(); } });
  on("lang", () => { el.saveDraft.textContent = t("editor.saveDraft"); el.discard.textContent = t("editor.discard"); paint(); });
  emit("editor-ready");
}
