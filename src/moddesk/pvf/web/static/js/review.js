// Plan review: the changes a script or import would make, side-by-side diffs, dependencies,
// select / deselect, then Apply selected or Discard — the same apply/discard operations the agent has.
// A MOD plan is all or nothing, but each conflict with local content is answered mine / theirs first.
import { op } from "./api.js";
import { t, word } from "./i18n.js";
import { attempt, h, notice, refreshInfo, ws } from "./main.js";

const KINDS = {
  script: { preview: "scriptPreview", apply: "scriptApply", discard: "scriptDiscard", key: "changeKey" },
  import: { preview: "importPreview", apply: "importApply", discard: "importDiscard", key: "key" },
};

// Unified diff → rows of [left, right, class]; a run of - lines pairs with the + run after it.
export function sideBySide(diff) {
  const rows = [];
  let dels = [], ins = [];
  const flush = () => {
    for (let i = 0; i < Math.max(dels.length, ins.length); i++) rows.push([dels[i] ?? "", ins[i] ?? "", dels[i] != null ? "del" : "", ins[i] != null ? "ins" : ""]);
    dels = []; ins = [];
  };
  for (const line of (diff || "").split("\n")) {
    if (line === "" || line.startsWith("---") || line.startsWith("+++")) continue; // "" joins lines that kept their own newline
    if (line.startsWith("@@")) { flush(); rows.push([line, null, "hunk", ""]); }
    else if (line.startsWith("-")) dels.push(line.slice(1));
    else if (line.startsWith("+")) ins.push(line.slice(1));
    else { flush(); rows.push([line.slice(1), line.slice(1), "", ""]); }
  }
  flush();
  return rows;
}

function paintSideBySide(diff, text) {
  diff.classList.add("archive-data"); // the archive's own text, shown as it is
  diff.replaceChildren(h("div", { class: "muted" }, t("review.before")), h("div", { class: "muted" }, t("review.after")));
  for (const [a, b, ca, cb] of sideBySide(text)) {
    if (ca === "hunk") { diff.append(h("div", { class: "hunk" }, a)); continue; }
    diff.append(h("div", { class: ca }, a), h("div", { class: cb }, b));
  }
}

// a conflict kind in the page's language; a kind this page does not know yet shows as the service names it
// "审阅 · 导入 · <source>": the source only when it says more than the kind (a person's own import
// is sourced "import", which read "导入 · 导入"); a plan without a source shows its id.
function reviewTitle(plan) {
  const kind = word(plan.kind);
  const source = word(plan.source);
  const detail = source && source !== kind ? source : source ? null : plan.planId;
  return [t("review.title"), kind, detail].filter(Boolean).join(" · ");
}
const kindText = (kind) => (t(`mod.kind.${kind}`) === `mod.kind.${kind}` ? kind : t(`mod.kind.${kind}`));

async function renderModReview(root, plan) {
  const rows = [];
  let cursor = null;
  let head = null;
  for (let page = 0; page < 20; page++) {
    head = await op("modPreview", { planId: plan.planId, cursor, limit: 200 });
    rows.push(...head.rows);
    cursor = head.nextCursor;
    if (!cursor) break;
  }
  const conflicts = rows.filter((r) => r.conflict).map((r) => r.conflict);
  const changes = rows.filter((r) => r.change).map((r) => r.change);
  const answers = new Map(); // conflictId → "mine" | "theirs"; apply waits until every one is answered
  const count = h("span", { class: "muted", id: "review-count" });
  const diff = h("div", { class: "sbs", id: "review-diff" });
  const list = h("div", { class: "change-list", role: "list" });
  const paintCount = () => {
    count.textContent = t("mod.answered", { n: answers.size, m: conflicts.length });
    const button = root.querySelector("#review-apply");
    if (button) button.disabled = answers.size < conflicts.length;
  };
  const show = (change) => {
    for (const label of list.querySelectorAll("label[data-key]")) label.classList.toggle("current", label.dataset.key === change.key);
    paintSideBySide(diff, change.diff || "");
  };
  for (const c of conflicts) {
    const choice = (side) => h("label", {}, h("input", { type: "radio", name: `conflict-${c.conflictId}`, value: side, "data-conflict": c.conflictId,
      onchange: () => { answers.set(c.conflictId, side); paintCount(); } }), ` ${t(`mod.${side}`)}`);
    // an id collision shows both values; a file changed on both sides shows its diff (hover), not hashes
    const values = c.entry != null
      ? h("div", { class: "deps" }, `${t("mod.mine")}: ${c.mine ?? "—"} · ${t("mod.theirs")}: ${c.theirs ?? "—"}`) : null;
    const change = changes.find((x) => x.path === c.path);
    list.append(h("div", { class: "conflict", "data-conflict-row": c.conflictId, onmouseenter: () => change && show(change) },
      h("div", { class: "conflict-head" }, h("span", { class: "kind kind-conflict" }, kindText(c.kind)),
        h("span", { class: "path", title: c.path }, c.path + (c.entry != null ? ` #${c.entry}` : ""))),
      values, h("div", {}, choice("mine"), " ", choice("theirs"))));
  }
  for (const change of changes) {
    const label = h("label", { "data-key": change.key, "data-path": change.path, onmouseenter: () => show(change), onclick: () => show(change) },
      h("span", { class: `kind kind-${change.action}` }, change.action), h("span", {}, change.path),
      change.entries ? h("span", { class: "muted" }, ` (${change.entries})`) : null);
    list.append(h("div", {}, label));
  }
  const apply = async () => {
    const info = ws();
    const res = await attempt(() => op("modApply", { planId: plan.planId, expectedRevision: info.revision, resolutions: Object.fromEntries(answers) }));
    if (res) notice(t("mod.applied", { n: res.written }), [], "info");
    await refreshInfo();
  };
  const discard = async () => { await attempt(() => op("modDiscard", { planId: plan.planId })); await refreshInfo(); };
  const mod = head.mod || {};
  root.replaceChildren(
    h("h2", {}, `${t("review.title")} · MOD · ${mod.name || mod.modId || plan.planId}`),
    h("div", { class: "muted", id: "mod-counts" }, Object.entries(head.counts).map(([k, v]) => `${k} ${v}`).join(" · ") + ` · ${t("mod.conflicts")} ${conflicts.length}`),
    h("div", { class: "actions" },
      h("button", { class: "primary", id: "review-apply", onclick: apply }, t("mod.apply")),
      h("button", { class: "danger", id: "review-discard", onclick: discard }, t("review.discard")),
      count),
    h("div", { class: "changes" }, list, diff));
  root.dataset.planId = plan.planId;
  paintCount();
  paintSideBySide(diff, "");
  if (changes.length) show(changes[0]);
}

export async function renderReview(root, plan) {
  if (plan.kind === "mod") return renderModReview(root, plan);
  const kind = KINDS[plan.kind];
  if (!kind) { root.replaceChildren(); return; }
  const items = [];
  let cursor = null;
  for (let page = 0; page < 20; page++) {
    const res = await op(kind.preview, { planId: plan.planId, cursor, limit: 100 });
    items.push(...res.items);
    cursor = res.nextCursor;
    if (!cursor) break;
  }
  const chosen = new Set(items.map((i) => i[kind.key]));
  const overwrite = new Set(); // import items that replace an entry need their own, explicit tick
  let shown = items[0];
  const count = h("span", { class: "muted", id: "review-count" });
  const list = h("div", { class: "change-list", role: "list" });
  const diff = h("div", { class: "sbs", id: "review-diff" });
  const paintCount = () => {
    count.textContent = t("review.selected", { n: chosen.size, m: items.length });
    const button = root.querySelector("#review-apply");
    if (button) button.disabled = chosen.size === 0; // the service refuses an empty selection anyway
  };
  const paintDiff = () => {
    paintSideBySide(diff, shown ? shown.diff : "");
    if (!shown) return;
    for (const label of list.children) label.classList.toggle("current", label.dataset.key === shown[kind.key]);
  };
  for (const item of items) {
    const key = item[kind.key];
    const box = h("input", { type: "checkbox", checked: true, "data-key": key, onchange: (e) => { if (e.target.checked) chosen.add(key); else chosen.delete(key); paintCount(); } });
    const deps = (item.dependsOn || []).length ? h("div", { class: "deps" }, `${t("review.deps")}: ${item.dependsOn.join(", ")}`) : null;
    const action = item.kind || item.action;
    const replace = action === "overwrite"
      ? h("label", { class: "deps" }, h("input", { type: "checkbox", "data-overwrite": key, onchange: (e) => { if (e.target.checked) overwrite.add(key); else overwrite.delete(key); } }), ` ${t("transfer.overwrite")}`)
      : null;
    const label = h("label", { "data-key": key, "data-path": item.path || item.target, onmouseenter: () => { shown = item; paintDiff(); }, onclick: () => { shown = item; paintDiff(); } },
      box, h("span", { class: `kind kind-${action}` }, word(action)), h("span", { class: "path" }, item.path || item.target));
    list.append(h("div", {}, label, replace, deps, ...(item.warnings || []).map((w) => h("div", { class: "deps" }, typeof w === "string" ? w : JSON.stringify(w)))));
  }
  const apply = async () => {
    const info = ws();
    const keys = [...chosen];
    const body = plan.kind === "script"
      ? { planId: plan.planId, expectedRevision: info.revision, changeKeys: keys }
      : { planId: plan.planId, expectedRevision: info.revision, selectedKeys: keys, overwriteKeys: keys.filter((k) => overwrite.has(k)) };
    const res = await attempt(() => op(kind.apply, body));
    if (res) notice(t("review.applied", { n: keys.length }), [], "info");
    await refreshInfo();
  };
  const discard = async () => { await attempt(() => op(kind.discard, { planId: plan.planId })); await refreshInfo(); };
  root.replaceChildren(
    h("h2", {}, reviewTitle(plan)),
    h("div", { class: "actions" },
      h("button", { class: "primary", id: "review-apply", onclick: apply }, t("review.apply")),
      h("button", { class: "danger", id: "review-discard", onclick: discard }, t("review.discard")),
      h("button", { onclick: () => { items.forEach((i) => chosen.add(i[kind.key])); list.querySelectorAll("input").forEach((b) => { b.checked = true; }); paintCount(); } }, t("review.all")),
      h("button", { onclick: () => { chosen.clear(); list.querySelectorAll("input").forEach((b) => { b.checked = false; }); paintCount(); } }, t("review.none")),
      count),
    h("div", { class: "changes" }, list, diff));
  root.dataset.planId = plan.planId;
  paintCount();
  paintDiff();
}
