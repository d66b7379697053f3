// Archive lifecycle: open / close / save / save as, with errors in words and the recovery offered.
import { op } from "./api.js";
import { t, word } from "./i18n.js";
import { $, attempt, h, notice, on, refreshInfo, state, ws } from "./main.js";

const RECENT = "pvf-recent";
const recent = () => JSON.parse(localStorage.getItem(RECENT) || "[]");
function remember(path) {
  const list = [path, ...recent().filter((p) => p !== path)].slice(0, 10);
  localStorage.setItem(RECENT, JSON.stringify(list));
  $("#recent-archives").replaceChildren(...list.map((p) => h("option", { value: p })));
}

function status(info) {
  const el = $("#ws-status");
  if (!info.open) { el.textContent = t("archive.none"); return; }
  el.replaceChildren(
    h("span", { title: info.sourcePath || "" }, info.sourcePath || t("archive.memory")), " · ",
    `${word(info.format)} · ${info.fileCount} ${t("archive.files")} · ${t("archive.revision")} `, h("b", { id: "ws-revision" }, info.revision), " · ",
    h("span", { class: info.sourceDirty ? "dirty" : "" }, info.sourceDirty ? t("archive.unsaved") : t("archive.saved")),
    state.live ? "" : ` · ${t("common.offline")}`,
  );
  for (const id of ["#btn-close", "#btn-save", "#btn-save-as"]) $(id).disabled = !info.open;
}

export async function openArchive(path, dirtyPolicy = "reject") {
  const info = state.info;
  const body = { path, expectedWorkspaceEpoch: info.workspaceEpoch, dirtyPolicy };
  if (info.open) Object.assign(body, { workspaceId: info.workspaceId, expectedRevision: info.revision });
  const done = await attempt(() => op("open", body), (err) => err.code === "UNSAVED_CHANGES"
    ? [[t("archive.saveAndOpen"), () => openArchive(path, "save")], [t("archive.discardAndOpen"), () => openArchive(path, "discard")]]
    : []);
  if (done) { remember(path); notice(`${t("archive.opened")} ${path}`, [], "info"); }
  await refreshInfo();
}

async function close(dirtyPolicy = "reject") {
  const info = ws(); if (!info) return;
  await attempt(() => op("close", { workspaceId: info.workspaceId, expectedRevision: info.revision, dirtyPolicy }),
    (err) => err.code === "UNSAVED_CHANGES" ? [[t("archive.discardAndClose"), () => close("discard")]] : []);
  await refreshInfo();
}

export async function save() {
  const info = ws(); if (!info) return;
  const done = await attempt(() => op("save", { workspaceId: info.workspaceId, expectedRevision: info.revision }), (err) => {
    if (err.code === "SOURCE_CHANGED") return [[t("common.saveAs"), () => saveAs()], [t("archive.reload"), () => openArchive(info.sourcePath, "discard")]];
    if (err.code === "SAVE_AS_REQUIRED") return [[t("common.saveAs"), () => saveAs()]];
    return [];
  });
  if (done) notice(`${t("archive.savedTo")} ${done.result?.writtenPath || info.sourcePath}`, [], "info");
  await refreshInfo();
}

export async function saveAs(path, overwrite = false, targetIdentity = null) {
  const info = ws(); if (!info) return;
  path = path || prompt(t("archive.saveAsPrompt"), info.sourcePath || "");
  if (!path) return;
  const done = await attempt(() => op("saveAs", { workspaceId: info.workspaceId, expectedRevision: info.revision, path, overwrite, targetIdentity }),
    (err) => err.code === "TARGET_EXISTS" ? [[t("archive.overwrite"), () => saveAs(path, true, err.payload.targetIdentity)]] : []);
  if (done) notice(`${t("archive.savedTo")} ${path}`, [], "info");
  await refreshInfo();
}

export function init() {
  remember(recent()[0] || "");
  localStorage.setItem(RECENT, JSON.stringify(recent().filter(Boolean)));
  $("#archive-form").addEventListener("submit", (e) => { e.preventDefault(); const p = $("#archive-path").value.trim(); if (p) openArchive(p); });
  $("#btn-close").addEventListener("click", () => close());
  $("#btn-save").addEventListener("click", () => save());
  $("#btn-save-as").addEventListener("click", () => saveAs());
  on("info", status);
  on("live", () => state.info && status(state.info));
  on("lang", () => state.info && status(state.info));
  on("workspace", (info) => { if (info.open && info.sourcePath && !$("#archive-path").value) $("#archive-path").value = info.sourcePath; });
}
