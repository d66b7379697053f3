// History: enable, commit, log, the changes of a commit, checkout and undo.
import { op } from "./api.js";
import { t } from "./i18n.js";
import { $, attempt, h, on, refreshInfo, ws } from "./main.js";

const el = {};

async function paint() {
  const info = ws();
  el.body.replaceChildren();
  if (!info) return;
  if (info.versionStatus !== "attached") {
    el.body.append(h("p", { class: "muted" }, `${t("history.status")}: ${info.versionStatus}`), h("button", { class: "primary", id: "history-init", onclick: async () => { await attempt(() => op("historyInit", { workspaceId: info.workspaceId })); await refreshInfo(); paint(); } }, t("history.init")));
    return;
  }
  const message = h("input", { id: "history-message", placeholder: t("history.message"), size: 40 });
  el.body.append(h("div", { class: "field" }, message, h("button", { class: "primary", id: "history-commit", onclick: async () => { await attempt(() => op("historyCommit", { workspaceId: info.workspaceId, message: message.value || "page" })); paint(); } }, t("history.commit"))));
  const log = await attempt(() => op("historyLog", { limit: 50 }));
  if (!log) return;
  const changes = h("div", { id: "history-changes" });
  el.body.append(h("table", { class: "grid", id: "history-log" }, ...log.commits.map((c) => h("tr", { "data-commit": c.id },
    h("td", {}, c.id.slice(0, 10)), h("td", {}, c.message), h("td", { class: "muted" }, new Date(c.createdAt * 1000).toLocaleString()),
    h("td", {}, h("button", { class: "h-diff", onclick: async () => { const d = await attempt(() => op("historyDiff", { from: c.parent || null, to: c.id })); if (d) changes.replaceChildren(...d.changes.map((x) => h("div", { "data-path": x.path }, `${x.kind} ${x.path}`))); } }, t("history.diff")),
      h("button", { class: "h-checkout", onclick: async () => { const i = ws(); await attempt(() => op("historyCheckout", { workspaceId: i.workspaceId, expectedRevision: i.revision, commitId: c.id })); await refreshInfo(); } }, t("history.checkout")),
      h("button", { class: "danger h-undo", onclick: async () => { const i = ws(); await attempt(() => op("historyUndo", { workspaceId: i.workspaceId, expectedRevision: i.revision, commitId: c.id })); await refreshInfo(); paint(); } }, t("history.undo")))))), changes);
}

export function init() {
  el.body = h("div", {});
  $("#main-history").append(h("div", { class: "panel" }, h("h2", {}, t("history.title")), el.body));
  let shown = null; // repaint when the archive or its history state changes under the open view
  on("view", (name) => { if (name === "history") paint(); });
  on("info", (info) => {
    const now = `${info.workspaceId}:${info.versionStatus}`;
    if (now !== shown) { shown = now; if (document.body.dataset.view === "history") paint(); }
  });
}
