// Search: content / path / regex with scope and extensions, paged; a click opens the hit at its line.
import { op } from "./api.js";
import { getLang, t } from "./i18n.js";
import { $, emit, h, notice, on, ws } from "./main.js";

let last = null, busy = false;
const el = {};

async function run(more = false) {
  const info = ws(); if (!info) return;
  if (!more) {
    const extensions = el.ext.value.split(/[\s,]+/).filter(Boolean).map((x) => (x.startsWith(".") ? x : "." + x));
    last = { workspaceId: info.workspaceId, query: el.q.value, mode: el.mode.value, scope: el.scope.value.trim(), extensions, limit: 50, cursor: null, count: 0 };
    el.results.replaceChildren(el.more);
  }
  if (!last.query || busy) return;
  busy = true;
  try { await fetchPage(); } finally { busy = false; }
}

async function fetchPage() {
  el.status.textContent = "…";
  const started = performance.now();
  const query = last;
  for (let attempt = 0; ; attempt++) {
    try {
      const page = await op("search", query);
      if (query !== last) return; // a newer search replaced this one while it ran
      last.cursor = page.nextCursor;
      last.count += page.hits.length;
      for (const hit of page.hits) {
        el.more.before(h("div", { class: "hit", role: "link", "data-path": hit.path, "data-line": hit.line ?? "", onclick: () => emit("open-file", { path: hit.path, line: hit.line }) },
          h("div", { class: "where" }, hit.line ? `${hit.path}:${hit.line}` : hit.path),
          hit.snippet != null ? h("div", { class: "snip" }, hit.snippet) : null));
      }
      el.status.textContent = (last.count ? t("search.hits", { n: last.count + (page.nextCursor ? "+" : "") }) : t("search.none")) + ` · ${Math.round(performance.now() - started)} ms`;
      if (page.noHits) el.more.before(noHits(page.noHits));
      el.results.dataset.done = String(Date.now());
      el.more.hidden = !page.nextCursor;
      return;
    } catch (err) {
      if (err.code === "NOT_READY" && attempt < 120) { el.status.textContent = t("search.notReady"); await new Promise((r) => setTimeout(r, 1000)); continue; }
      el.status.textContent = "";
      notice(err);
      return;
    }
  }
}

// Nothing found: why, and the nearby queries that would find something (one click runs one).
function noHits(info) {
  const tryOne = (alt) => () => {
    el.mode.value = alt.mode; el.q.value = alt.query; el.scope.value = alt.scope; el.ext.value = alt.extensions.join(" ");
    run();
  };
  return h("div", { class: "no-hits", id: "search-no-hits" },
    h("div", {}, getLang() === "zh" ? info.reasonZh : info.reason),
    ...info.tryInstead.map((alt) => h("div", { class: "hit", role: "link", onclick: tryOne(alt) },
      h("div", { class: "where" }, `${t("search.tryInstead")} ${t(`search.${alt.mode}`)}：${alt.query}${alt.scope ? ` · ${alt.scope}` : ""}${alt.extensions.length ? ` · ${alt.extensions.join(" ")}` : ""}`),
      h("div", { class: "snip" }, `${t("search.example")} ${alt.example}`))));
}

function build() {
  const side = $("#side-search");
  el.q = h("input", { type: "search", id: "search-q", placeholder: t("search.query") });
  el.mode = h("select", { id: "search-mode" }, ...["content", "path", "regex"].map((m) => h("option", { value: m }, t(`search.${m}`))));
  el.scope = h("input", { type: "search", id: "search-scope", placeholder: t("search.scope"), size: 12 });
  el.ext = h("input", { type: "search", id: "search-ext", placeholder: t("search.ext"), size: 10 });
  el.status = h("div", { class: "muted", id: "search-status", role: "status" });
  el.results = h("div", { id: "search-results" });
  el.more = h("button", { id: "search-more", hidden: true, onclick: () => run(true) }, t("search.more"));
  const form = h("form", { id: "search-form", onsubmit: (e) => { e.preventDefault(); run(); } },
    el.q, (el.go = h("button", { type: "submit", class: "primary" }, t("search.go"))), h("div", { class: "opts" }, el.mode, el.scope, el.ext));
  el.results.append(el.more);
  side.replaceChildren(form, el.status, el.results);
  // the next page streams in when the end of the list scrolls into view (the button stays for keyboards)
  new IntersectionObserver((seen) => { if (seen[0].isIntersecting && last && last.cursor && !busy) run(true); }, { root: el.results }).observe(el.more);
}

export function init() {
  build();
  on("lang", () => {
    el.q.placeholder = t("search.query"); el.scope.placeholder = t("search.scope"); el.ext.placeholder = t("search.ext");
    for (const option of el.mode.options) option.textContent = t(`search.${option.value}`);
    el.more.textContent = t("search.more"); el.go.textContent = t("search.go");
  });
}
