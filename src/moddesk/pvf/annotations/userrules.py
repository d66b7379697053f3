"""The user's annotation rule folder: each ``*.json`` loaded on its own, reloaded on change.

A bad file (JSON syntax, schema, or a conflict with the builtin rules or an earlier user file) is
reported with its JSON-path issues and skipped; the others serve. On a reload, a file that was
good before and is bad now keeps its last good version (seed 000: a change that does not load
never replaces the active snapshot), so ``rulesRevision`` moves only when what is active changes.
A ``watchfiles`` thread reloads the folder when its files change.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import watchfiles

from moddesk.pvf.annotations.docs import AnnotationDocs
from moddesk.pvf.annotations.loader import parse_document_text
from moddesk.pvf.annotations.model import RuleDocument, RuleIssue, RuleValidationError
from moddesk.pvf.annotations.snapshot import Layer, activate

logger = logging.getLogger("moddesk.pvf.annotations")
MAX_RULE_FILE_BYTES = 4 << 20


@dataclass
class FileState:
    """What is known about one rule file: its last good document and its current problems."""

    digest: str = ""
    good: RuleDocument | None = None
    issues: list[RuleIssue] = field(default_factory=list)


def _read(path: Path) -> tuple[str | None, str, list[RuleIssue]]:
    """(text, digest, issues) of one file; text is None when it cannot be read as UTF-8 JSON text."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        return None, "", [RuleIssue("$", f"cannot read the file: {exc.strerror or exc}")]
    digest = hashlib.sha256(data).hexdigest()
    if len(data) > MAX_RULE_FILE_BYTES:
        return None, digest, [RuleIssue("$", f"the file is over {MAX_RULE_FILE_BYTES} bytes")]
    try:
        return data.decode("utf-8-sig"), digest, []
    except UnicodeDecodeError as exc:
        return None, digest, [RuleIssue("$", f"not UTF-8 text (byte {exc.start})")]


class UserRules:
    """Loads a rule folder into an ``AnnotationDocs`` file by file and keeps it current."""

    def __init__(self, folder: Path, docs: AnnotationDocs) -> None:
        self.folder = folder
        self.docs = docs
        self._files: dict[str, FileState] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.reloads = 0  # how many reloads ran (tests and status wait on it)

    def _conflicts(self, accepted: list[RuleDocument], candidate: RuleDocument) -> list[RuleIssue]:
        try:
            activate([Layer("builtin", self.docs.builtin), Layer("user", (*accepted, candidate))])
        except RuleValidationError as exc:
            return list(exc.issues)
        return []

    def _scan(self) -> list[tuple[str, Path]]:
        if not self.folder.is_dir():
            return []
        return [(f"user:{p.name}", p) for p in sorted(self.folder.glob("*.json")) if p.is_file()]

    def _refresh(self, label: str, path: Path, state: FileState) -> RuleDocument | None:
        """Parse a changed file; returns the document to try, or None (bad: last good stays)."""
        text, digest, issues = _read(path)
        if digest and digest == state.digest and not issues:
            return None  # unchanged since the last look
        state.digest = digest
        state.issues = issues
        if text is None:
            return None
        try:
            return parse_document_text(text, label)
        except RuleValidationError as exc:
            state.issues = list(exc.issues)
            return None

    def load(self) -> dict[str, Any]:
        """Read the folder and activate every usable file; returns the revision and the problems."""
        with self._lock:
            present = self._scan()
            files = {label: self._files.get(label) or FileState() for label, _ in present}
            accepted: list[RuleDocument] = []
            for label, path in present:
                state = files[label]
                fresh = self._refresh(label, path, state)
                for candidate in (fresh, state.good):
                    if candidate is None:
                        continue
                    issues = self._conflicts(accepted, candidate)
                    if not issues:
                        accepted.append(candidate)
                        if candidate is fresh:
                            state.good, state.issues = fresh, []
                        break
                    if candidate is fresh:
                        state.issues = issues  # the last good version (if any) is tried next
            self._files = files
            result = self.docs.reload(accepted)
            self.reloads += 1
        result["problems"] = self.problems()
        return result

    def problems(self) -> list[dict[str, Any]]:
        """Files that are not (fully) active now, each with its JSON-path issues."""
        out = []
        for label, state in sorted(self._files.items()):
            if state.issues:
                out.append(
                    {
                        "file": label.removeprefix("user:"),
                        "serving": "last good version" if state.good is not None else "skipped",
                        "issues": [i.to_dict() for i in state.issues[:20]],
                    }
                )
        return out

    def status(self) -> str:
        """One line for the workspace info, which the agent reads: file names, never the machine's
        folders (the person finds the folder with ``moddesk doctor``)."""
        bad = self.problems()
        active = sum(1 for s in self._files.values() if s.good is not None)
        line = f"builtin + user rules: {active} file(s) active"
        if bad:
            line += "; problems: " + "; ".join(
                f"{p['file']} ({p['serving']}: {p['issues'][0]['path']}: {p['issues'][0]['message']})"
                for p in bad[:5]
            )
        return line

    # -- watching ---------------------------------------------------------------------------

    def start_watch(self) -> None:
        """Reload whenever a file of the folder changes (a background thread)."""
        if self._thread is not None:
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        self._thread = threading.Thread(target=self._watch, name="pvf-user-rules", daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        try:
            for _changes in watchfiles.watch(
                self.folder, stop_event=self._stop, debounce=200, step=50, raise_interrupt=False
            ):
                try:
                    self.load()
                except Exception:  # a reload must never end the watch; the last good rules stay
                    logger.exception("reloading the user annotation rules failed")
        except Exception:
            logger.exception("watching %s stopped", self.folder)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5.0)
            self._thread = None
