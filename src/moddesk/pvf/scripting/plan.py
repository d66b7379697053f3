"""Turn a run's change set into a reviewable plan: keys, kinds, diffs and dependencies.

A change that only makes sense with another (a ``.lst`` entry pointing at a file the same run
adds; a script using a string key the same run adds to a ``.str`` file) names it in
``dependsOn``: applying one without the other is refused with an error naming what is missing.
"""

from __future__ import annotations

import difflib
import hashlib
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from moddesk.kit.errors import ServiceError
from moddesk.pvf.listtext import list_entries, list_target_candidates, string_entries

ChangeKind = Literal["add", "modify", "delete"]
_LINK_KEY = re.compile(r"<\d+::([^`>]+)")


@dataclass
class PlannedChange:
    """One file the plan would add, modify or delete."""

    key: str
    path: str
    kind: ChangeKind
    file_type: int
    text: str | None  # new text for scripts and text files
    copy_from: str | None = None  # binary copies: the source path in the snapshot
    old_text: str | None = None
    depends_on: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        return {
            "changeKey": self.key,
            "path": self.path,
            "kind": self.kind,
            "dependsOn": list(self.depends_on),
            "warnings": list(self.warnings),
        }

    def diff(self, context: int = 3) -> list[str]:
        """A unified diff of the text (binary changes are described, not dumped)."""
        if self.text is None and self.kind != "delete":
            return [f"binary copy of {self.copy_from}"]
        old = (self.old_text or "").splitlines()
        new = (self.text or "").splitlines() if self.kind != "delete" else []
        return list(
            difflib.unified_diff(old, new, f"a/{self.path}", f"b/{self.path}", n=context, lineterm="")
        )


def change_key(path: str, kind: str, text: str | None, copy_from: str | None) -> str:
    """A stable key: the same change in the same run gets the same key."""
    digest = hashlib.sha256(f"{kind}\0{path}\0{text}\0{copy_from}".encode()).hexdigest()
    return f"c_{digest[:16]}"


def _lst_paths(text: str | None) -> dict[int, str]:
    return {i: p.lower() for i, p in list_entries(text).items()}


def build_plan(
    changes: dict[str, dict[str, Any]],
    original_text: Callable[[str], str | None],
) -> list[PlannedChange]:
    """Plan entries in path order, with dependencies between changes of the same run."""
    planned: dict[str, PlannedChange] = {}
    for path in sorted(changes):
        raw = changes[path]
        kind: ChangeKind = raw["kind"]
        text = raw.get("text")
        copy_from = raw.get("copyFrom")
        old = original_text(path) if kind != "add" else None
        planned[path] = PlannedChange(
            key=change_key(path, kind, text, copy_from),
            path=path,
            kind=kind,
            file_type=int(raw.get("type", 1)),
            text=text,
            copy_from=copy_from,
            old_text=old,
        )
    _link_lists(planned)
    _link_strings(planned)
    return list(planned.values())


def _link_lists(planned: dict[str, PlannedChange]) -> None:
    for change in planned.values():
        if not change.path.endswith(".lst") or change.kind == "delete":
            continue
        added = set(_lst_paths(change.text).values()) - set(_lst_paths(change.old_text).values())
        for entry in added:
            targets = [planned[t] for t in list_target_candidates(change.path, entry) if t in planned]
            if targets and targets[0].kind == "add":
                change.depends_on.append(targets[0].key)
                targets[0].depends_on.append(change.key)
            elif not targets and change.kind != "add":
                change.warnings.append(f"the list now points at {entry!r}, which this run did not create")
    for change in planned.values():
        if change.kind == "delete" and not change.path.endswith(".lst"):
            change.warnings.append("deleting a file does not remove list entries that point at it")


def _link_strings(planned: dict[str, PlannedChange]) -> None:
    new_keys: dict[str, PlannedChange] = {}
    for change in planned.values():
        if change.path.endswith(".str") and change.kind != "delete":
            for key in set(string_entries(change.text)) - set(string_entries(change.old_text)):
                new_keys[key] = change
    if not new_keys:
        return
    for change in planned.values():
        if change.path.endswith(".str") or change.text is None:
            continue
        for key in set(_LINK_KEY.findall(change.text)):
            source = new_keys.get(key)
            if source is not None and source.key not in change.depends_on:
                change.depends_on.append(source.key)


def select(plan: Iterable[PlannedChange], keys: list[str]) -> list[PlannedChange]:
    """The chosen changes; unknown keys and missing dependencies are errors naming them."""
    by_key = {c.key: c for c in plan}
    unknown = [k for k in keys if k not in by_key]
    if unknown:
        raise ServiceError(
            "INVALID_ARGUMENT",
            f"unknown changeKeys: {', '.join(unknown[:10])}",
            hint="Use the changeKeys listed by the preview of this plan.",
            unknownKeys=unknown,
        )
    chosen = {k: by_key[k] for k in dict.fromkeys(keys)}
    for change in chosen.values():
        missing = [d for d in change.depends_on if d not in chosen]
        if missing:
            names = ", ".join(f"{by_key[d].path} ({d})" for d in missing)
            raise ServiceError(
                "DEPENDENCY_MISSING",
                f"{change.path} ({change.key}) must be applied together with {names}",
                hint="Add the named changeKeys to the selection, or leave this change out.",
                changeKey=change.key,
                missing=missing,
            )
    return list(chosen.values())
