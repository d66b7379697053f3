"""The pvf workbench's error codes, each with a one-line meaning and a recovery hint."""

from __future__ import annotations

from typing import Any

from moddesk.kit.errors import ServiceError, register_codes

# code -> (what it means, what the caller should do next)
PVF_ERRORS: dict[str, tuple[str, str]] = {
    "TEXT_INVALID": (
        "The text would not compile into the archive (script syntax, or a character its encoding lacks).",
        "Fix the text at the line the message names, or import the file in raw mode.",
    ),
    "NO_WORKSPACE": (
        "No archive is open.",
        "Open an archive first, using the workspaceEpoch from the workspace info.",
    ),
    "NOT_READY": (
        "The search index for this workspace is still being built.",
        "Poll the task named in indexTaskId until it finishes, then search again.",
    ),
    "STALE_WORKSPACE": (
        "The workspaceId, workspaceEpoch or revision you sent is no longer current.",
        "Read the workspace info again and retry with the current workspaceId, epoch and revision.",
    ),
    "UNSAVED_CHANGES": (
        "The open archive has unsaved changes and dirtyPolicy is reject.",
        "Save first, or retry with dirtyPolicy save or discard.",
    ),
    "UI_DRAFT_PENDING": (
        "An editor window holds an uncommitted draft.",
        "Ask the user to commit or drop the draft in the editor, then retry.",
    ),
    "UI_NOT_READY": (
        "An editor window did not answer the prepare request in time.",
        "Retry shortly; if it persists, ask the user to check the open editor windows.",
    ),
    "TASK_BUSY": (
        "A task that writes to the workspace is running.",
        "Wait for it to finish or cancel it, then retry.",
    ),
    "LIFECYCLE_BUSY": (
        "Another open, close, save or save-as is running.",
        "Poll that task until it finishes, then retry.",
    ),
    "EXPORT_PLAN_PENDING": (
        "An export plan is pending.",
        "Execute or discard the pending export plan, then retry.",
    ),
    "STALE_PLAN": (
        "The workspace moved since the plan was made.",
        "Discard the plan and prepare it again on the current revision.",
    ),
    "STALE_EXPORT": (
        "The workspace moved since the export was prepared.",
        "Discard the export plan and prepare it again.",
    ),
    "SAVE_AS_REQUIRED": (
        "The workspace has no source file to save to.",
        "Save a copy to an explicit path instead.",
    ),
    "SOURCE_CHANGED": (
        "The archive file on disk changed since it was opened or last saved.",
        "Do not overwrite it: save a copy elsewhere, or reopen the archive (dirtyPolicy discard) to load the new file.",
    ),
    "SAME_AS_SOURCE": (
        "The save-as target is the source archive itself (same path, symlink or hard link).",
        "Use save to write the source archive.",
    ),
    "TARGET_CHANGED": (
        "The file to overwrite is not the one you observed (targetIdentity differs).",
        "Read the target's current identity from this error and retry if overwriting it is still intended.",
    ),
    "SAVE_FAILED": (
        "Writing the archive failed; the file on disk was not replaced.",
        "Check free space and permissions, then retry.",
    ),
    "OPEN_FAILED": (
        "The file could not be opened as a PVF archive; the previous workspace is kept.",
        "Check the path and that the file is a Script.pvf archive.",
    ),
    "INVALID_PATH": (
        "A local path is not absolute, its parent does not exist, or it names a directory.",
        "Pass an absolute path to a file whose parent directory exists.",
    ),
    "INVALID_PATTERN": (
        "The glob or regular expression is malformed, too long or too costly.",
        "Simplify the pattern (no nested repetition, at most 512 characters).",
    ),
    "UNSUPPORTED_CHANGE": (
        "The change cannot be applied through this entry point.",
        "Use the user interface for this kind of change.",
    ),
    "MCP_DISABLED": (
        "The MCP endpoint is switched off in the settings.",
        "Enable it with `moddesk pvf mcp --enable`.",
    ),
    "HISTORY_NOT_ENABLED": (
        "Version history is not enabled for this archive.",
        "Enable it with `moddesk pvf history init ARCHIVE`.",
    ),
    "HISTORY_EXISTS": (
        "Version history already exists next to this archive.",
        "Use the existing history; remove the .moddesk folder by hand to start over.",
    ),
    "HISTORY_DETACHED": (
        "The history does not describe the archive on disk (it changed outside moddesk).",
        "Move the .moddesk folder away and run `moddesk pvf history init` again.",
    ),
    "COMMIT_NOT_FOUND": (
        "No commit with this id exists in the history.",
        "List the commits with history log and use one of their ids.",
    ),
}

register_codes({code: meaning for code, (meaning, _hint) in PVF_ERRORS.items()})

# Hints for the kit's shared codes when the pvf service raises them.
SHARED_HINTS: dict[str, str] = {
    "TARGET_EXISTS": "Choose another path, or pass overwrite=true with the targetIdentity from this error.",
    "INVALID_ARGUMENT": "Fix the argument named in the message and call again.",
    "NOT_FOUND": "Search by path to find the exact archive path.",
}


def hint_for(code: str) -> str | None:
    """The recovery hint for a code the pvf service raises."""
    entry = PVF_ERRORS.get(code)
    return entry[1] if entry else SHARED_HINTS.get(code)


def pvf_error(code: str, message: str, **details: Any) -> ServiceError:
    """A ``ServiceError`` carrying the standard hint of ``code``."""
    return ServiceError(code, message, hint=hint_for(code), **details)
