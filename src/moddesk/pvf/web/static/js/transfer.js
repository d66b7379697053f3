// Import and export dialogs: prepare → preview (warnings to acknowledge) → apply / write, or discard.
import { op } from "./api.js";
import { t, word } from "./i18n.js";
import { $, attempt, h, notice, refreshInfo, showView, ws } from "./main.js";

const lines = (text) => text.split("\n").map((s) => s.trim()).filter(Boolean);

function importForm() {
  const sources = h("textarea", { id: "import-sources", rows: 3, cols: 60 });
  const target = h("input", { id: "import-target", size: 30 });
  const mode = h("select", { id: "import-mode" }, h("option", { value: "text" }, "text"), h("option", { value: "raw" }, "raw"));
  const prepare = async () => {
    const info = ws(); if (!info) return;
    const res = await attempt(() => op("importPrepare", { workspaceId: info.workspaceId, expectedRevision: info.revision, sourcePaths: lines(sources.value), targetDir: target.value.trim(), mode: mode.value }));
    if (res) { notice(t("transfer.prepared", { n: res.files }), [], "info"); await refreshInfo(); showView("activity"); }
  };
  return h("section", { class: "panel" }, h("h2", {}, t("transfer.import")),
    h("div", { class: "field" }, h("span", {}, t("transfer.sources")), sources),
    h("div", { class: "field" }, h("span", {}, t("transfer.target")), target),
    h("div", { class: "field" }, h("span", {}, t("transfer.mode")), mode),
    h("button", { class: "primary", id: "import-prepare", onclick: prepare }, t("transfer.prepare")));
}

// An export step runs as a task (a 200,000-file export takes minutes): show its progress with a
// cancel button until it ends; its result, or its error (CANCELLED included) as a notice.
async function followTask(handle, box) {
  const cancel = h("button", { id: "export-cancel", onclick: () => attempt(() => op("exportCancel", { taskId: handle.taskId })) }, t("transfer.cancel"));
  const bar = h("progress", { id: "export-progress" });
  const label = h("span", { class: "muted", id: "export-progress-text" });
  box.replaceChildren(bar, " ", label, " ", cancel);
  try {
    for (;;) {
      const s = await op("task", { taskId: handle.taskId, logLimit: 1 });
      const p = s.progress || {};
      if (p.total) { bar.max = p.total; bar.value = p.done; } else bar.removeAttribute("value");
      label.textContent = `${word(p.message || s.kind)}: ${p.done ?? 0}${p.total ? ` / ${p.total}` : ""}`;
      if (s.state === "succeeded") return s.result;
      if (s.state === "failed" || s.state === "cancelled") { notice({ code: s.error.error, message: s.error.message, hint: s.error.hint, payload: s.error }); return undefined; }
      await new Promise((r) => setTimeout(r, 250));
    }
  } finally { box.replaceChildren(); }
}

function exportForm() {
  const paths = h("textarea", { id: "export-paths", rows: 3, cols: 60 });
  const source = h("select", { id: "export-source" }, ...["selection", "memory", "working", "commit"].map((s) => h("option", { value: s }, s)));
  const format = h("select", { id: "export-format" }, h("option", { value: "" }, "direct"));
  const name = h("input", { id: "export-name", size: 20 });
  const modId = h("input", { id: "export-modid", size: 20 });
  const output = h("input", { id: "export-output", size: 40 });
  const result = h("div", { id: "export-preview" });
  const running = h("div", { id: "export-task" });
  op("exportFormats", {}).then((r) => { for (const f of r.formats) if (f.mode === "mod" || f.id !== "direct") format.append(h("option", { value: f.id }, f.id)); }, () => {});
  let plan = null;
  const prepare = async () => {
    const info = ws(); if (!info) return;
    const fmt = format.value || null;
    const started = await attempt(() => op("exportPrepare", { workspaceId: info.workspaceId, expectedRevision: info.revision, source: source.value, paths: paths.value.trim() ? lines(paths.value) : [""],
      mode: fmt ? "mod" : "direct", format: fmt, name: name.value, modId: modId.value || null }));
    plan = started && await followTask(started, running);
    if (!plan) return;
    const preview = await attempt(() => op("exportPreview", { planId: plan.planId, limit: 200 }));
    if (!preview) return;
    const acks = (preview.warnings || []).map((w) => h("label", { class: "warn" }, h("input", { type: "checkbox", "data-warning": w.warningId }), ` ${t("transfer.ack")}: ${w.message || w.warningId}`));
    result.replaceChildren(h("div", { class: "muted" }, `${plan.planId} · ${preview.total ?? preview.entries?.length ?? ""}`),
      h("table", { class: "grid" }, ...(preview.entries || []).slice(0, 200).map((e) => h("tr", {}, h("td", {}, e.entryKey), h("td", {}, e.source || ""), h("td", {}, e.size)))),
      ...acks,
      (preview.missingDependencies || []).length ? h("div", { class: "warn" }, `${t("transfer.missing")}: ${preview.missingDependencies.length} (${preview.missingDependencies.slice(0, 5).join(", ")}…)`) : null,
      h("div", { class: "field" }, h("span", {}, t("transfer.output")), output),
      h("button", { class: "primary", id: "export-execute", onclick: execute }, t("transfer.execute")),
      h("button", { onclick: async () => { await attempt(() => op("exportDiscard", { planId: plan.planId })); result.replaceChildren(); await refreshInfo(); } }, t("transfer.discard")));
  };
  const execute = async () => {
    const acknowledged = [...result.querySelectorAll("input[data-warning]:checked")].map((b) => b.dataset.warning);
    // a direct export writes a new folder named by the name field; MOD formats name their own output
    const outputName = format.value ? null : (name.value.trim() || `export-${plan.revision}`);
    const started = await attempt(() => op("exportExecute", { planId: plan.planId, outputParent: output.value.trim(), outputName, acknowledgedWarningIds: acknowledged }));
    const res = started && await followTask(started, running);
    // the honest summary: what was written where (a cancelled export published nothing, see the notice)
    if (res) { notice(`${t("common.ok")}: ${res.files} ${t("transfer.files")}, ${(res.bytes / 1048576).toFixed(1)} MiB → ${res.outputPath}`, [], "info"); result.replaceChildren(); await refreshInfo(); }
  };
  return h("section", { class: "panel" }, h("h2", {}, t("transfer.export")),
    h("div", { class: "field" }, h("span", {}, t("transfer.source")), source),
    h("div", { class: "field" }, h("span", {}, t("transfer.paths")), paths),
    h("div", { class: "field" }, h("span", {}, t("transfer.format")), format),
    h("div", { class: "field" }, h("span", {}, t("transfer.name")), name, h("span", {}, t("transfer.modId")), modId),
    h("button", { class: "primary", id: "export-prepare", onclick: prepare }, t("transfer.prepare")), running, result);
}

// Someone's MOD (.zip / 115CN package): read and checked, then reviewed in the activity view.
function modForm() {
  const path = h("input", { id: "mod-path", size: 60 });
  const about = h("div", { id: "mod-about", class: "muted" });
  const inspect = async () => {
    const res = await attempt(() => op("modInspect", { modPath: path.value.trim() }));
    if (res) about.textContent = `${res.name || res.modId || ""} ${res.version || ""} · ${res.files ?? res.paths.length} ${t("archive.files")}`;
  };
  const prepare = async () => {
    const info = ws(); if (!info) return;
    const res = await attempt(() => op("modPrepare", { workspaceId: info.workspaceId, modPath: path.value.trim() }));
    if (res) { notice(`${res.planId}: ${t("mod.conflicts")} ${res.conflicts}`, [], "info"); await refreshInfo(); showView("activity"); }
  };
  return h("section", { class: "panel" }, h("h2", {}, t("mod.title")),
    h("div", { class: "field" }, h("span", {}, t("mod.path")), path),
    h("button", { id: "mod-inspect", onclick: inspect }, t("mod.inspect")), " ",
    h("button", { class: "primary", id: "mod-prepare", onclick: prepare }, t("transfer.prepare")), about);
}

export function init() { $("#main-transfer").append(importForm(), exportForm(), modForm()); }
