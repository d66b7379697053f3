"""The page's operations: each one a thin call of the same ``PvfService`` method an MCP tool calls.

``OPS`` maps an operation name to a function of (service, JSON body). Arguments are checked
for type only (``Args``); every rule lives in the service. Lifecycle operations run as tasks in
the service; the page's call waits for the task (as the MCP tools do) and reports its error.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from moddesk.kit.errors import ServiceError
from moddesk.kit.ledger import LOCAL_SCOPE
from moddesk.pvf.scripting.service import ScriptService
from moddesk.pvf.service import PvfService
from moddesk.pvf.transfer.exports import ExportService, TaskKind
from moddesk.pvf.transfer.imports import ImportService
from moddesk.pvf.transfer.mods import ModService
from moddesk.pvf.transfer.sources import PERSON_EXPORT_LIMITS

LIFECYCLE_WAIT = 120.0
_INT_FIELDS = frozenset({"device", "inode", "size", "mtimeNs"})  # the integer fields of a FileIdentity
PLAN_KINDS = ("script", "import", "export", "mod")
# the person's calls share the local ledger scope with local tools (seed 001: one local user)
SCOPE = LOCAL_SCOPE


class Args:
    """Typed access to a JSON body; INVALID_ARGUMENT naming the field when a value has the wrong type."""

    def __init__(self, body: dict[str, Any]) -> None:
        self.body = body

    def _bad(self, name: str, what: str) -> ServiceError:
        return ServiceError("INVALID_ARGUMENT", f"{name} must be {what}", hint="Reload the page.", field=name)

    def text(self, name: str, default: str | None = None) -> str:
        value = self.body.get(name, default)
        if not isinstance(value, str):
            raise self._bad(name, "a string")
        return value

    def opt_text(self, name: str) -> str | None:
        value = self.body.get(name)
        if value is None or value == "":
            return None
        return self.text(name)

    def number(self, name: str, default: int | None = None) -> int:
        value = self.body.get(name, default)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self._bad(name, "a whole number")
        return value

    def opt_number(self, name: str) -> int | None:
        return None if self.body.get(name) is None else self.number(name)

    def flag(self, name: str, default: bool = False) -> bool:
        value = self.body.get(name, default)
        if not isinstance(value, bool):
            raise self._bad(name, "true or false")
        return value

    def texts(self, name: str) -> list[str]:
        value = self.body.get(name) or []
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self._bad(name, "a list of strings")
        return list(value)

    def opt_object(self, name: str) -> dict[str, Any] | None:
        value = self.body.get(name)
        if value is not None and not isinstance(value, dict):
            raise self._bad(name, "an object")
        return value

    def identity(self, name: str) -> dict[str, Any] | None:
        """A file identity as the service reported it: big integers came back as decimal strings."""
        value = self.opt_object(name)
        if value is None:
            return None
        return {
            k: int(v) if k in _INT_FIELDS and isinstance(v, str) and v.isdigit() else v
            for k, v in value.items()
        }


def wait_task(service: PvfService, handle: dict[str, Any]) -> dict[str, Any]:
    """Wait for a lifecycle task; its result, or its error raised with the taskId."""
    status = service.tasks.wait(handle["taskId"], LIFECYCLE_WAIT)
    error = status.get("error")
    if status["state"] in ("failed", "cancelled") and error:
        details = {k: v for k, v in error.items() if k not in ("ok", "error", "message", "hint")}
        raise ServiceError(
            error["error"], error["message"], error.get("hint"), taskId=status["taskId"], **details
        )
    return status


def _export_task(service: PvfService, kind: TaskKind, work: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """Start an export step as a task: the page follows its progress (op ``task``) to the result."""
    task_id = exports(service).start_task(kind, work)
    return {"ok": True, "taskId": task_id, "kind": kind, "state": "running"}


def scripts(service: PvfService) -> ScriptService:
    return service.shared("scripts", lambda: ScriptService(service))


def imports(service: PvfService) -> ImportService:
    return service.shared("imports", lambda: ImportService(service))


def exports(service: PvfService) -> ExportService:
    return service.shared("exports", lambda: ExportService(service))


def mods(service: PvfService) -> ModService:
    return service.shared("mods", lambda: ModService(service))


def resolutions(a: Args) -> dict[str, str]:
    """``{conflictId: "mine" | "theirs"}``; the service refuses unknown ids and missing answers."""
    value = a.opt_object("resolutions") or {}
    if not all(isinstance(v, str) for v in value.values()):
        raise a._bad("resolutions", 'an object of "mine" / "theirs" answers')
    return dict(value)


# ---------------------------------------------------------------------- archive and reading


def _open(service: PvfService, a: Args) -> dict[str, Any]:
    handle = service.open(
        a.text("path"),
        a.number("expectedWorkspaceEpoch"),
        a.opt_text("workspaceId"),
        a.opt_number("expectedRevision"),
        cast(Any, a.text("dirtyPolicy", "reject")),
        a.opt_text("requestId"),
        scope=SCOPE,
    )
    return wait_task(service, handle)


def _close(service: PvfService, a: Args) -> dict[str, Any]:
    handle = service.close(
        a.text("workspaceId"),
        a.number("expectedRevision"),
        cast(Any, a.text("dirtyPolicy", "reject")),
        a.opt_text("requestId"),
        scope=SCOPE,
    )
    return wait_task(service, handle)


def _save(service: PvfService, a: Args) -> dict[str, Any]:
    handle = service.save(
        a.text("workspaceId"), a.number("expectedRevision"), a.opt_text("requestId"), scope=SCOPE
    )
    return wait_task(service, handle)


def _save_as(service: PvfService, a: Args) -> dict[str, Any]:
    handle = service.save_as(
        a.text("workspaceId"),
        a.number("expectedRevision"),
        a.text("path"),
        a.flag("overwrite"),
        a.identity("targetIdentity"),
        a.opt_text("requestId"),
        scope=SCOPE,
    )
    return wait_task(service, handle)


def _search(service: PvfService, a: Args) -> dict[str, Any]:
    return service.search(
        a.text("workspaceId"),
        a.text("query"),
        cast(Any, a.text("mode", "content")),
        a.text("scope", ""),
        tuple(a.texts("extensions")),
        a.flag("caseSensitive"),
        a.opt_text("cursor"),
        a.number("limit", 50),
    )


def _explain(service: PvfService, a: Args) -> dict[str, Any]:
    return service.annotation_explain(
        a.text("workspaceId"),
        a.text("path"),
        a.opt_number("expectedRevision"),
        start_line=a.opt_number("startLine"),
        end_line=a.opt_number("endLine"),
        cursor=a.opt_text("cursor"),
        limit=a.number("limit", 100),
    )


def _activity(service: PvfService, a: Args) -> dict[str, Any]:
    """Recent tasks (with their last log lines) and the pending plans: the agent activity view."""
    tasks = []
    for task_id in service.tasks.recent(a.number("limit", 12)):
        try:
            status = service.tasks.status(task_id, log_limit=1000)
        except ServiceError:
            continue  # pruned between the two calls
        status["logs"] = status["logs"][-40:]
        tasks.append(status)
    plans = []
    for kind in PLAN_KINDS:
        plan = service.plans.pending(kind)
        if plan is not None:
            described = plan.describe()
            described.pop("expiresInSeconds", None)  # ticks every call: the stream would never settle
            plans.append(described)
    return {"ok": True, "tasks": tasks, "plans": plans}


OPS: dict[str, Callable[[PvfService, Args], Any]] = {
    "info": lambda s, a: s.info(),
    "open": _open,
    "close": _close,
    "save": _save,
    "saveAs": _save_as,
    "tree": lambda s, a: s.list_folder(
        a.text("workspaceId"),
        a.text("folder", ""),
        a.number("offset", 0),
        a.number("limit", 500),
        a.text("filter", ""),
    ),
    "locate": lambda s, a: s.locate(a.text("workspaceId"), a.text("path"), a.text("filter", "")),
    "read": lambda s, a: s.read_file(
        a.text("workspaceId"), a.text("path"), a.number("startLine", 1), a.number("lineCount", 2000)
    ),
    "explain": _explain,
    "search": _search,
    "applyDraft": lambda s, a: s.apply_changes(
        a.text("workspaceId"),
        a.number("expectedRevision"),
        {a.text("path"): a.text("text")},
        a.opt_text("requestId"),
        source="ui",
        scope=SCOPE,
    ),
    "task": lambda s, a: s.task_status(a.text("taskId"), a.opt_text("logCursor"), a.number("logLimit", 200)),
    "activity": _activity,
    # scripts
    "scriptHelp": lambda s, a: scripts(s).help(a.opt_text("topic"), a.text("lang", "en")),
    "scriptValidate": lambda s, a: scripts(s).validate(a.text("source")),
    "scriptRun": lambda s, a: scripts(s).run(
        a.text("workspaceId"),
        a.number("expectedRevision"),
        a.text("source"),
        a.text("label", ""),
        scope=SCOPE,
    ),
    "scriptStatus": lambda s, a: scripts(s).status(
        a.text("taskId"), a.opt_text("logCursor"), a.number("logLimit", 200)
    ),
    "scriptCancel": lambda s, a: scripts(s).cancel(a.text("taskId"), scope=SCOPE),
    "scriptPreview": lambda s, a: scripts(s).preview(
        a.text("planId"),
        a.text("pathFilter", ""),
        a.opt_text("kind"),
        a.opt_text("cursor"),
        a.number("limit", 50),
    ),
    "scriptApply": lambda s, a: scripts(s).apply(
        a.text("planId"),
        a.number("expectedRevision"),
        a.texts("changeKeys"),
        a.opt_text("requestId"),
        SCOPE,
        "ui",
    ),
    # the person's decisions on the page: the agent's status then says appliedByPerson / discardedByPerson
    "scriptDiscard": lambda s, a: scripts(s).discard(a.text("planId"), by="person"),
    # import / export
    "importPrepare": lambda s, a: imports(s).prepare(
        a.text("workspaceId"),
        a.texts("sourcePaths"),
        a.text("targetDir", ""),
        cast(Any, a.text("mode", "text")),
        scope=SCOPE,
        expected_revision=a.opt_number("expectedRevision"),
    ),
    "importPreview": lambda s, a: imports(s).preview(
        a.text("planId"), a.opt_text("cursor"), a.number("limit", 50)
    ),
    "importApply": lambda s, a: imports(s).apply(
        a.text("planId"),
        a.number("expectedRevision"),
        a.texts("selectedKeys"),
        a.texts("overwriteKeys"),
        scope=SCOPE,
        by="person",
    ),
    "importDiscard": lambda s, a: imports(s).discard(a.text("planId"), by="person"),
    "exportFormats": lambda s, a: exports(s).formats(),
    # a whole-folder export of a big archive takes minutes: prepare and execute answer with a task
    # the page follows ("task") and may cancel ("exportCancel")
    "exportPrepare": lambda s, a: _export_task(
        s,
        "export.prepare",
        lambda: exports(s).prepare(
            a.text("workspaceId"),
            a.number("expectedRevision"),
            a.text("source", "selection"),
            a.texts("paths"),
            a.opt_text("commitId"),
            cast(Any, a.text("mode", "direct")),
            a.opt_text("format"),
            a.text("name", ""),
            a.opt_text("version"),
            a.opt_text("modId"),
            a.flag("includeDependencies"),
            scope=SCOPE,
            limits=PERSON_EXPORT_LIMITS,  # the page is the person's: whole folders of big archives
        ),
    ),
    "exportPreview": lambda s, a: exports(s).preview(
        a.text("planId"), a.opt_text("cursor"), a.number("limit", 100)
    ),
    "exportExecute": lambda s, a: _export_task(
        s,
        "export.execute",
        lambda: exports(s).execute(
            a.text("planId"),
            a.text("outputParent"),
            a.opt_text("outputName"),
            a.texts("selectedEntryKeys") or None,
            a.texts("acknowledgedWarningIds"),
            scope=SCOPE,
            by="person",
        ),
    ),
    "exportCancel": lambda s, a: exports(s).cancel_task(a.text("taskId")),
    "exportDiscard": lambda s, a: exports(s).discard(a.text("planId"), by="person"),
    # someone's MOD applied to the open archive: the same prepare → preview → apply as pvf_mod_*
    "modInspect": lambda s, a: mods(s).inspect(a.text("modPath")),
    "modPrepare": lambda s, a: mods(s).prepare(
        a.text("workspaceId"), a.text("modPath"), a.opt_text("requestId"), scope=SCOPE
    ),
    "modPreview": lambda s, a: mods(s).preview(a.text("planId"), a.opt_text("cursor"), a.number("limit", 50)),
    "modApply": lambda s, a: mods(s).apply(
        a.text("planId"),
        a.number("expectedRevision"),
        resolutions(a),
        a.opt_text("requestId"),
        scope=SCOPE,
        by="person",
    ),
    "modDiscard": lambda s, a: mods(s).discard(a.text("planId"), by="person"),
    # history
    "historyInit": lambda s, a: s.history_init(a.text("workspaceId")),
    "historyCommit": lambda s, a: s.history_commit(a.text("workspaceId"), a.text("message")),
    "historyLog": lambda s, a: s.history_log(a.number("limit", 50), a.number("offset", 0)),
    "historyDiff": lambda s, a: s.history_diff(a.opt_text("from"), a.opt_text("to")),
    "historyCheckout": lambda s, a: s.history_checkout(
        a.text("workspaceId"), a.number("expectedRevision"), a.text("commitId")
    ),
    "historyUndo": lambda s, a: s.history_undo(
        a.text("workspaceId"), a.number("expectedRevision"), a.text("commitId")
    ),
}


def call(service: PvfService, name: str, body: dict[str, Any]) -> Any:
    """Run operation ``name``; NOT_FOUND for an unknown name."""
    op = OPS.get(name)
    if op is None:
        raise ServiceError("NOT_FOUND", f"no operation {name!r}", hint="Reload the page.")
    return op(service, Args(body))
