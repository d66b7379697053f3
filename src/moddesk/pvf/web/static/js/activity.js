// Agent activity, live: tasks (script runs with progress and logs, lifecycle, index builds) and
// pending plans; a pending plan opens in the review view.
import { op } from "./api.js";
import { errorText, t, word } from "./i18n.js";
import { $, attempt, h, on, refreshInfo } from "./main.js";
import { renderReview } from "./review.js";

const el = {};
let reviewing = null;

function task(s) {
  const p = s.progress || {};
  const bar = p.total ? h("progress", { max: p.total, value: p.done || 0 }) : null;
  return h("div", { class: "task", "data-task": s.taskId, "data-kind": s.kind, "data-state": s.state },
    h("div", { class: "head" }, h("b", {}, word(s.kind)), h("span", { class: `state-${s.state}` }, word(s.state)), s.phase !== s.state ? h("span", { class: "muted" }, word(s.phase)) : null, bar,
      p.message ? h("span", { class: "muted" }, word(p.message)) : null, h("span", { class: "muted" }, s.taskId),
      // the person may stop a script run; the service says TASK_NOT_OWNED for an agent's run
      s.kind === "script" && ["queued", "running"].includes(s.state)
        ? h("button", { class: "danger", onclick: () => attempt(() => op("scriptCancel", { taskId: s.taskId })) }, t("scripts.cancel")) : null),
    s.error ? h("div", { class: "state-failed" }, h("span", { class: "code" }, s.error.error), " ", errorText(s.error)) : null,
    s.logs && s.logs.length ? h("div", { class: "log" }, s.logs.join("\n")) : null);
}

async function paint(data) {
  el.tasks.replaceChildren(...(data.tasks.length ? data.tasks.map(task) : [h("div", { class: "muted" }, t("activity.none"))]));
  const plan = data.plans.find((p) => ["script", "import", "mod"].includes(p.kind));
  const badge = $('#views button[data-view="activity"]');
  badge.textContent = t("view.activity") + (data.plans.length ? ` (${data.plans.length})` : "");
  // any pending plan holds the workspace (PLAN_PENDING / EXPORT_PLAN_PENDING): the person can drop it
  const discardOp = { script: "scriptDiscard", import: "importDiscard", export: "exportDiscard", mod: "modDiscard" };
  el.plans.replaceChildren(...data.plans.map((p) => h("div", { class: "task", "data-plan": p.planId },
    h("b", {}, word(p.kind)), " ", word(p.source) || "", " ", h("span", { class: "muted" }, `${word(p.owner)} · ${p.planId}`), " ",
    discardOp[p.kind] ? h("button", { class: "danger", onclick: async () => { await attempt(() => op(discardOp[p.kind], { planId: p.planId })); await refreshInfo(); } }, t("review.discard")) : null)));
  if (!plan) { reviewing = null; el.review.hidden = true; el.review.replaceChildren(); return; }
  if (reviewing === plan.planId) return;
  reviewing = plan.planId;
  el.review.hidden = false;
  await attempt(() => renderReview(el.review, plan));
}

export function init() {
  const root = $("#main-activity");
  el.tasks = h("div", { id: "tasks" });
  el.plans = h("div", { id: "plans" });
  el.review = h("div", { id: "review", hidden: true });
  root.append(h("div", { class: "panel" }, h("h2", {}, t("activity.title")), el.review, h("h3", {}, t("activity.plans")), el.plans, h("h3", {}, t("activity.tasks")), el.tasks));
  on("activity", paint);
}
