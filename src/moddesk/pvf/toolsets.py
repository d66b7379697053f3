"""The pvf MCP toolsets: the tool families a person enables, and which family each tool is in.

One registry for the server (which tools it keeps), the saved settings and the CLI help texts
(tests/pvf/test_cli.py checks the help against it). Imports only the kit's errors, so the CLI can
name the toolsets without loading the tools.
"""

from __future__ import annotations

from moddesk.kit.errors import ServiceError

# Toolsets the person enables (like the GitHub MCP server's --toolsets): every tool costs tokens in
# each conversation, so rarely used families stay off until asked for. "core" is always on.
TOOLSETS = ("core", "scripts", "export", "import", "annotations", "mods")
DEFAULT_TOOLSETS = ("core", "scripts", "export", "annotations")


def parse_toolsets(text: str | list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """``"scripts,import"``, a list of names, or ``"all"`` → the toolsets (core always included)."""
    names = [n.strip() for n in (text.split(",") if isinstance(text, str) else text) if n.strip()]
    if names == ["all"]:
        return TOOLSETS
    unknown = sorted(set(names) - set(TOOLSETS))
    if unknown:
        raise ServiceError(
            "INVALID_ARGUMENT",
            f"unknown toolsets: {', '.join(unknown)}",
            hint=f"Use some of {', '.join(TOOLSETS)} (comma-separated), or all.",
        )
    return tuple(t for t in TOOLSETS if t == "core" or t in names)


def toolset_of(tool: str) -> str:
    """The toolset a pvf tool belongs to (by its name)."""
    for family in ("script", "export", "import", "annotation", "mod"):
        if tool.startswith(f"pvf_{family}_"):
            return family if family in TOOLSETS else f"{family}s"
    return "mods" if tool in ("pvf_diff", "pvf_item_table") else "core"
