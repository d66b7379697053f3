// Settings: the MCP switch and port (saved for the next start), the live URL, and a config per client.
import { op } from "./api.js";
import { getLang, t, word } from "./i18n.js";
import { $, attempt, h, notice, on } from "./main.js";

async function paint() {
  const root = $("#main-settings");
  const s = await attempt(() => op("settings", {}));
  if (!s) return;
  const enabled = h("input", { type: "checkbox", id: "mcp-enabled", checked: s.enabled });
  const port = h("input", { type: "number", id: "mcp-port", value: s.port, min: 0, max: 65535 });
  const token = s.token || "—";
  root.replaceChildren(h("div", { class: "panel" }, h("h2", {}, t("settings.title")),
    h("h3", {}, t("settings.mcp")),
    h("div", { class: "field" }, h("span", {}, t("settings.enabled")), enabled),
    h("div", { class: "field" }, h("span", {}, t("settings.port")), port, h("span", { class: "muted" }, t("settings.next"))),
    h("button", { class: "primary", id: "settings-save", onclick: async () => { const r = await attempt(() => op("settingsSave", { enabled: enabled.checked, port: Number(port.value) })); if (r) notice(`${r.path} · ${t("settings.next")}`, [], "info"); } }, t("settings.save")),
    h("div", { class: "field" }, h("span", {}, t("settings.url")), h("code", { id: "mcp-url" }, s.url)),
    h("div", { class: "field" }, h("span", {}, t("settings.token")), h("code", { id: "token" }, token),
      s.token ? h("button", { onclick: () => navigator.clipboard?.writeText(s.token) }, t("settings.copy")) : null),
    h("div", { class: "field" }, h("span", {}, t("settings.roots")),
      h("div", { id: "roots" }, ...(s.roots || []).map((r) => h("div", {}, h("code", {}, r.path), " ", h("span", { class: "muted" }, word(r.label)))))),
    h("h3", {}, t("settings.clients")),
    ...s.clients.map((c) => h("div", { "data-client": c.id }, h("div", { class: "field" }, h("b", { class: "name" }, c.name),
      c.config ? h("button", { onclick: () => navigator.clipboard?.writeText(c.config) }, t("settings.copy")) : null),
      c.config ? h("pre", { class: "config" }, c.config) : h("div", { class: "muted", title: c.note }, getLang() === "zh" && c.noteZh ? c.noteZh : c.note)))));
}

export function init() { on("view", (name) => { if (name === "settings") paint(); }); }
