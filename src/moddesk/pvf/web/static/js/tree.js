// The archive tree: loaded folder by folder, in pages, and windowed — only the rows in view exist
// in the DOM (fixed row height), so a 50k-entry folder costs one page fetch and ~40 elements.
import { op } from "./api.js";
import { t } from "./i18n.js";
import { $, emit, h, on, ws } from "./main.js";

const ROW = 22, PAGE = 1000, OVERSCAN = 10;
// type badges drawn with CSS (no emoji font is needed): one letter and a colour per file kind
const KINDS = ["equ", "stk", "skl", "lst", "str", "ani", "chr", "img", "ai", "act", "key", "nut", "bin", "txt"];
const icon = (node) => {
  if (node.folder) return h("span", { class: `ic ic-folder${node.expanded ? " open" : ""}`, "aria-hidden": "true" });
  const ext = node.name.includes(".") ? node.name.split(".").pop().toLowerCase() : "";
  return h("span", { class: `ic ic-${KINDS.includes(ext) ? ext : "file"}`, "aria-hidden": "true" }, (ext || "?").slice(0, 1).toUpperCase());
};

let root = null, rows = [], selected = -1, filter = "", workspaceId = null;
// the person's place, by path (row indexes move when entries come and go): what is selected, and
// which row is at the top of the view with how far it is scrolled into
let selectedPath = null;
const expanded = new Map();
let frame = 0;
// The row at the top of the view as the person left it. While another view is shown the tree is
// hidden (display: none reads scrollTop 0 and drops it), and an import, an undo or the agent's
// plan lands meanwhile: the place is kept here, and put back when the files view shows again.
let kept = null;
let centerOnShow = false; // a file opened from another view: show its row in the middle instead
const visible = () => $("#tree").clientHeight > 0;

function newNode(item, parent) { return { ...item, parent, depth: parent ? parent.depth + 1 : 0, expanded: false, items: [], total: 0, pages: new Set() }; }

async function loadPage(node, page) {
  if (node.pages.has(page)) return;
  node.pages.add(page);
  const info = ws(); if (!info) return;
  try {
    const res = await op("tree", { workspaceId: info.workspaceId, folder: node.path, offset: page * PAGE, limit: PAGE, filter });
    node.total = res.total;
    res.items.forEach((item, i) => { node.items[page * PAGE + i] = newNode(item, node === root ? null : node); });
  } catch (err) { node.pages.delete(page); throw err; }
}

// Refetch the pages of ``node`` that were loaded and merge them by path: an entry that is still
// there keeps its node (so its expanded state, loaded children and selection survive); only new
// entries get new nodes and only changed counts change. Then the same for its open subfolders.
async function refreshFolder(node) {
  const info = ws(); if (!info) return;
  const old = new Map();
  for (const child of node.items) if (child) old.set(child.path, child);
  const pages = node.pages.size ? [...node.pages] : [0];
  const items = [];
  let total = node.total;
  for (const page of pages) {
    let res;
    try { res = await op("tree", { workspaceId: info.workspaceId, folder: node.path, offset: page * PAGE, limit: PAGE, filter }); }
    catch (err) { if (err.code === "NOT_FOUND") { total = 0; break; } throw err; }
    total = res.total;
    res.items.forEach((item, i) => {
      const kept = old.get(item.path);
      items[page * PAGE + i] = kept && kept.folder === item.folder ? Object.assign(kept, item) : newNode(item, node === root ? null : node);
    });
  }
  node.items = items; node.total = total; node.pages = new Set(pages.filter((page) => page * PAGE < Math.max(total, 1)));
  for (const child of items) {
    if (!child || !child.folder) continue;
    if (child.expanded) await refreshFolder(child);
  }
}

// The open folders that are gone (deleted, or hidden by the filter) are no longer open.
function pruneExpanded() {
  const live = new Set();
  const walk = (node) => { for (const child of node.items) if (child && child.folder && child.expanded) { live.add(child.path); walk(child); } };
  if (root) walk(root);
  for (const path of [...expanded.keys()]) if (!live.has(path)) expanded.delete(path);
}

function anchor() {
  if (!visible()) return kept;
  const box = $("#tree");
  const top = Math.floor(box.scrollTop / ROW);
  const row = rows[top];
  return row && !row.placeholder ? { path: row.path, offset: box.scrollTop - top * ROW } : null;
}

// After the rows changed: select the same path again and keep the same row at the top of the view.
function restorePlace(top) {
  selected = selectedPath ? rows.findIndex((r) => !r.placeholder && r.path === selectedPath) : -1;
  const box = $("#tree");
  if (top) {
    kept = top;
    const at = rows.findIndex((r) => !r.placeholder && r.path === top.path);
    if (at >= 0) box.scrollTop = at * ROW + top.offset;
  }
  schedule();
}

// The files view shows again: the row the person had at the top goes back to the top.
function showAgain() {
  const box = $("#tree");
  const at = kept && !centerOnShow ? rows.findIndex((r) => !r.placeholder && r.path === kept.path) : -1;
  if (at >= 0) box.scrollTop = at * ROW + kept.offset;
  else if (selected >= 0) box.scrollTop = Math.max(0, selected * ROW - box.clientHeight / 2);
  centerOnShow = false;
  schedule();
}

// The place is also kept per archive across a page reload (and a reopen of the same file).
const placeKey = (info) => `pvf-place:${info.sourcePath || info.workspaceId}`;
function savePlace() {
  const info = ws(); if (!info || !root) return;
  const top = anchor();
  const scrollTop = visible() ? $("#tree").scrollTop : (top ? Math.max(0, rows.findIndex((r) => r.path === top.path)) * ROW + top.offset : 0);
  sessionStorage.setItem(placeKey(info), JSON.stringify({ expanded: [...expanded.keys()], selected: selectedPath, anchor: top, scrollTop }));
}
function storedPlace(info) {
  try { return JSON.parse(sessionStorage.getItem(placeKey(info)) || "null"); } catch { return null; }
}

function flatten() {
  rows = [];
  const walk = (node) => {
    for (let i = 0; i < node.total; i++) {
      const child = node.items[i];
      if (!child) { rows.push({ placeholder: node, index: i, depth: node === root ? 0 : node.depth + 1 }); continue; }
      rows.push(child);
      if (child.folder && child.expanded) walk(child);
    }
  };
  if (root) walk(root);
  $("#tree .spacer").style.height = `${rows.length * ROW}px`;
  schedule();
}

function schedule() { if (!frame) frame = requestAnimationFrame(() => { frame = 0; render(); }); }

function render() {
  const box = $("#tree"), spacer = $("#tree .spacer");
  const first = Math.max(0, Math.floor(box.scrollTop / ROW) - OVERSCAN);
  const last = Math.min(rows.length, Math.ceil((box.scrollTop + box.clientHeight) / ROW) + OVERSCAN);
  const out = [];
  const wanted = new Set();
  for (let i = first; i < last; i++) {
    const row = rows[i];
    const style = `top:${i * ROW}px;padding-left:${6 + row.depth * 14}px`;
    if (row.placeholder) {
      wanted.add(row.placeholder);
      out.push(h("div", { class: "row loading", role: "treeitem", style, "aria-level": row.depth + 1 }, t("tree.loading")));
      continue;
    }
    const el = h("div", {
      class: "row", role: "treeitem", id: `tree-row-${i}`, style, "data-path": row.path, "data-index": i,
      "aria-level": row.depth + 1, "aria-selected": i === selected ? "true" : "false",
      "aria-expanded": row.folder ? String(row.expanded) : null, title: row.path,
    },
    h("span", { class: "twisty" }, row.folder ? (row.expanded ? "▾" : "▸") : ""), icon(row),
    h("span", { class: "name" }, row.name), row.folder ? h("span", { class: "count" }, row.count.toLocaleString()) : null);
    out.push(el);
  }
  spacer.replaceChildren(...out);
  if (out.length && !performance.getEntriesByName("pvf-tree-painted").length) performance.mark("pvf-tree-painted"); // benchmarks read it
  if (selected >= 0) box.setAttribute("aria-activedescendant", `tree-row-${selected}`);
  for (const node of wanted) {
    const missing = rows.slice(first, last).filter((r) => r.placeholder === node).map((r) => Math.floor(r.index / PAGE));
    for (const page of new Set(missing)) loadPage(node, page).then(flatten, () => {});
  }
}

async function toggle(node) {
  selectedPath = node.path;
  if (!node.folder) { emit("open-file", { path: node.path }); savePlace(); return; }
  node.expanded = !node.expanded;
  if (node.expanded) { expanded.set(node.path, node); if (!node.pages.size) await loadPage(node, 0); }
  else expanded.delete(node.path);
  flatten();
  restorePlace(null);
  savePlace();
}

// A new workspace: a new listing. Reopening the same archive file (or reloading the page) brings
// back the place the person had in it.
async function reload() {
  const info = ws();
  expanded.clear(); rows = []; selected = -1; selectedPath = null; kept = null;
  root = info ? newNode({ path: "", name: "", folder: true, count: info.fileCount }, null) : null;
  workspaceId = info ? info.workspaceId : null;
  $("#tree-count").textContent = info ? t("tree.total", { n: info.fileCount.toLocaleString() }) : "";
  if (root) await loadPage(root, 0);
  const place = info ? storedPlace(info) : null;
  if (place) {
    const byDepth = [...place.expanded].sort((a, b) => a.split("/").length - b.split("/").length);
    for (const path of byDepth) {
      const node = await reveal(path);
      if (node && node.folder) { node.expanded = true; expanded.set(path, node); if (!node.pages.size) await loadPage(node, 0); }
    }
    selectedPath = place.selected;
  }
  flatten();
  if (place) { $("#tree").scrollTop = place.scrollTop || 0; restorePlace(place.anchor); }
  if (info) $("#tree").dataset.revision = info.revision;
}

// After the agent (or the person) changes the archive — an applied plan, an import, an undo, a
// saved draft — or the filter changes: the same folders stay open, the same file selected, the
// same row at the top; only the entries that changed change. One refresh at a time, in order.
let refreshing = Promise.resolve();
function refresh() {
  refreshing = refreshing.then(refreshNow, refreshNow);
  return refreshing;
}
async function refreshNow() {
  const info = ws(); if (!info || !root) return;
  $("#tree-count").textContent = t("tree.total", { n: info.fileCount.toLocaleString() });
  const top = anchor();
  root.count = info.fileCount;
  await refreshFolder(root);
  pruneExpanded();
  flatten();
  restorePlace(top);
  savePlace();
  $("#tree").dataset.revision = info.revision; // the listing shows this revision (tests wait for it)
}

// Show an opened file in the tree: expand the folders down to it, load only the pages that hold
// each step (the service says at which offset), select its row and scroll it into the middle.
async function revealFile(path) {
  const info = ws(); if (!info || !root) return;
  if (rows[selected] && rows[selected].path === path) return; // clicked in the tree: already there
  await refreshing; // a listing refresh in flight would replace the nodes this walks
  let located;
  try { located = await op("locate", { workspaceId: info.workspaceId, path, filter }); } catch { return; }
  let node = root;
  for (const step of located.steps) {
    if (node !== root && !node.expanded) { node.expanded = true; expanded.set(node.path, node); }
    await loadPage(node, Math.floor(step.offset / PAGE));
    node = node.items[step.offset];
    if (!node || node.path !== step.path) return; // the tree moved meanwhile; the next refresh shows it
  }
  flatten();
  selected = rows.indexOf(node);
  selectedPath = node.path;
  savePlace();
  const box = $("#tree");
  if (!visible()) centerOnShow = true; // opened from the search view: centred when the tree shows
  if (selected >= 0) box.scrollTop = Math.max(0, selected * ROW - box.clientHeight / 2);
  schedule();
}

// Find (loading as needed) the node of ``path`` among loaded folders.
async function reveal(path) {
  let node = root;
  const parts = path.split("/");
  for (let depth = 0; depth < parts.length; depth++) {
    const want = parts.slice(0, depth + 1).join("/");
    let found = node.items.find((c) => c && c.path === want);
    for (let page = 0; !found && page * PAGE < node.total; page++) {
      await loadPage(node, page);
      found = node.items.find((c) => c && c.path === want);
    }
    if (!found) return null;
    if (depth < parts.length - 1 && found.folder && !found.pages.size) await loadPage(found, 0);
    node = found;
  }
  return node;
}

function keydown(e) {
  if (!rows.length) return;
  const row = rows[selected];
  if (e.key === "ArrowDown") selected = Math.min(rows.length - 1, selected + 1);
  else if (e.key === "ArrowUp") selected = Math.max(0, selected - 1);
  else if (e.key === "ArrowRight" && row && row.folder && !row.expanded) { toggle(row); return; }
  else if (e.key === "ArrowLeft" && row && row.folder && row.expanded) { toggle(row); return; }
  else if (e.key === "Enter" && row && !row.placeholder) { toggle(row); return; }
  else return;
  e.preventDefault();
  selectedPath = rows[selected] && !rows[selected].placeholder ? rows[selected].path : null;
  const box = $("#tree");
  if (selected * ROW < box.scrollTop) box.scrollTop = selected * ROW;
  if ((selected + 1) * ROW > box.scrollTop + box.clientHeight) box.scrollTop = (selected + 1) * ROW - box.clientHeight;
  schedule();
}

export function init() {
  const box = $("#tree");
  box.append(h("div", { class: "spacer" }));
  let saveTimer = 0;
  box.addEventListener("scroll", () => {
    if (visible()) kept = anchor();
    schedule(); clearTimeout(saveTimer); saveTimer = setTimeout(savePlace, 300);
  });
  box.addEventListener("keydown", keydown);
  box.addEventListener("click", (e) => {
    const el = e.target.closest(".row[data-index]"); if (!el) return;
    selected = Number(el.dataset.index);
    toggle(rows[selected]);
    schedule();
  });
  let timer = 0;
  $("#tree-filter").addEventListener("input", (e) => { clearTimeout(timer); timer = setTimeout(() => { filter = e.target.value.trim(); refresh(); }, 200); });
  on("workspace", reload);
  on("revision", refresh);
  on("open-file", ({ path }) => revealFile(path));
  on("view", (name) => { if (name === "files") showAgain(); });
  on("lang", schedule);
  window.addEventListener("resize", schedule);
}
