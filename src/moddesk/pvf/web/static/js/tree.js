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
const expanded = new Map();
let frame = 0;

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
  if (!node.folder) { emit("open-file", { path: node.path }); return; }
  node.expanded = !node.expanded;
  if (node.expanded) { expanded.set(node.path, node); if (!node.pages.size) await loadPage(node, 0); }
  else expanded.delete(node.path);
  flatten();
}

async function reload() {
  const info = ws();
  expanded.clear(); rows = []; selected = -1;
  root = info ? newNode({ path: "", name: "", folder: true, count: info.fileCount }, null) : null;
  workspaceId = info ? info.workspaceId : null;
  $("#tree-count").textContent = info ? t("tree.total", { n: info.fileCount.toLocaleString() }) : "";
  if (root) await loadPage(root, 0);
  flatten();
}

// After the agent (or the person) changes the archive: refetch the open folders, keep them open.
async function refresh() {
  const info = ws(); if (!info || !root) return;
  $("#tree-count").textContent = t("tree.total", { n: info.fileCount.toLocaleString() });
  const open = [...expanded.keys()];
  root.items = []; root.pages = new Set();
  await loadPage(root, 0);
  for (const path of open) {
    const node = await reveal(path);
    if (node) { node.expanded = true; expanded.set(path, node); }
  }
  flatten();
}

// Show an opened file in the tree: expand the folders down to it, load only the pages that hold
// each step (the service says at which offset), select its row and scroll it into the middle.
async function revealFile(path) {
  const info = ws(); if (!info || !root) return;
  if (rows[selected] && rows[selected].path === path) return; // clicked in the tree: already there
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
  const box = $("#tree");
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
  const box = $("#tree");
  if (selected * ROW < box.scrollTop) box.scrollTop = selected * ROW;
  if ((selected + 1) * ROW > box.scrollTop + box.clientHeight) box.scrollTop = (selected + 1) * ROW - box.clientHeight;
  schedule();
}

export function init() {
  const box = $("#tree");
  box.append(h("div", { class: "spacer" }));
  box.addEventListener("scroll", schedule);
  box.addEventListener("keydown", keydown);
  box.addEventListener("click", (e) => {
    const el = e.target.closest(".row[data-index]"); if (!el) return;
    selected = Number(el.dataset.index);
    toggle(rows[selected]);
  });
  let timer = 0;
  $("#tree-filter").addEventListener("input", (e) => { clearTimeout(timer); timer = setTimeout(() => { filter = e.target.value.trim(); refresh(); }, 200); });
  on("workspace", reload);
  on("revision", refresh);
  on("open-file", ({ path }) => revealFile(path));
  on("view", (name) => { if (name === "files") { const box = $("#tree"); if (selected >= 0) box.scrollTop = Math.max(0, selected * ROW - box.clientHeight / 2); schedule(); } });
  on("lang", schedule);
  window.addEventListener("resize", schedule);
}
