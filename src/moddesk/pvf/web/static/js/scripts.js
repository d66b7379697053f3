// The person's own .pvf.js runs: edit with the api.d.ts help beside, run / cancel, then the plan
// goes to the same review view as the agent's (preview / apply / discard).
import { op } from "./api.js";
import { errorText, getLang, t, word } from "./i18n.js";
import { $, attempt, h, notice, on, showView, ws } from "./main.js";

const EXAMPLE = `// 例：把 [price] 低于 100 的装备价格改为 100\nfor (const file of pvf.find("equipment/**/*.equ")) {\n  const doc = file.parse();\n  // ...\n}\n`;
const el = {};
let running = null;

async function run() {
  const info = ws(); if (!info) return;
  const res = await attempt(() => op("scriptRun", { workspaceId: info.workspaceId, expectedRevision: info.revision, source: el.src.value, label: "page" }));
  if (!res) return;
  running = res.taskId;
  el.cancel.disabled = false;
  el.out.textContent = `${res.taskId} …`;
}

async function follow(data) {
  if (!running) return;
  const s = data.tasks.find((x) => x.taskId === running);
  if (!s) return;
  el.out.textContent = `${s.taskId}: ${word(s.state)}${s.phase !== s.state ? ` ${word(s.phase)}` : ""}\n${(s.logs || []).join("\n")}${s.error ? `\n${s.error.error}：${errorText(s.error)}` : ""}`;
  if (["succeeded", "failed", "cancelled"].includes(s.state)) {
    running = null;
    el.cancel.disabled = true;
    if (s.state === "succeeded" && s.result && s.result.planId) showView("activity");
  }
}

export function init() {
  el.src = h("textarea", { id: "script-src", spellcheck: "false" });
  el.src.value = localStorage.getItem("pvf-script") || EXAMPLE;
  el.src.addEventListener("input", () => localStorage.setItem("pvf-script", el.src.value));
  el.cancel = h("button", { id: "script-cancel", disabled: true, onclick: () => running && attempt(() => op("scriptCancel", { taskId: running })) }, t("scripts.cancel"));
  el.out = h("pre", { class: "help", id: "script-out" });
  el.help = h("pre", { class: "help", id: "script-help" });
  // the help in the page's language (Chinese: the same api.d.ts with its comments in Chinese)
  const topics = h("select", { id: "script-topic", onchange: async (e) => { const r = await attempt(() => op("scriptHelp", { topic: e.target.value, lang: getLang() })); if (r) el.help.textContent = r.text; } });
  const loadTopics = () => op("scriptHelp", { lang: getLang() }).then((r) => {
    const chosen = topics.value;
    topics.replaceChildren(...r.topics.map((x) => h("option", { value: x.name }, `${x.name} — ${x.summary}`)));
    if (chosen) topics.value = chosen;
    topics.dispatchEvent(new Event("change"));
  }, () => {});
  loadTopics();
  on("lang", loadTopics);
  $("#main-scripts").append(h("div", { class: "panel" }, h("h2", {}, t("scripts.title")), el.src,
    h("div", { class: "actions", style: "display:flex;gap:6px;margin:6px 0" },
      h("button", { class: "primary", id: "script-run", onclick: run }, t("scripts.run")), el.cancel,
      h("button", { onclick: async () => { const r = await attempt(() => op("scriptValidate", { source: el.src.value })); if (r) notice(r.valid ? t("scripts.valid") : r.diagnostics.map((d) => `${d.line}: ${d.message}`).join("\n"), [], r.valid ? "info" : "error"); } }, t("scripts.validate"))),
    el.out, h("h3", {}, t("scripts.help")), topics, el.help));
  on("activity", follow);
}
