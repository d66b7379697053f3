"""MCP client config writers: merge one server entry into Claude Desktop, Claude Code, Cursor,
VS Code and Codex configs without touching anything else in the file.

A write is two steps: ``plan_config`` reads the file and computes the new text (nothing is
written; a file we cannot read safely is a ``ServiceError`` and stays untouched), then
``apply_config`` writes it atomically, after re-checking the file did not change meanwhile.
"""

from __future__ import annotations

import copy
import json
import re
import tomllib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import tomlkit
import tomlkit.exceptions
import tomlkit.items
from tomlkit.container import Container, OutOfOrderTableProxy

from moddesk.kit.agents import jsonc
from moddesk.kit.agents.locations import Locations, writing
from moddesk.kit.errors import ServiceError
from moddesk.kit.files import atomic_write_text

Scope = Literal["user", "project"]
ConfigFormat = Literal["json", "toml"]
ChangeStatus = Literal["create", "update", "unchanged"]

# keys that belong to one transport; switching an entry's transport removes the other's keys
_STDIO_KEYS = ("command", "args", "env", "envFile", "cwd")
_HTTP_KEYS = ("url", "headers", "bearer_token_env_var", "http_headers", "env_http_headers")
# what every client accepts as a server name (and a bare TOML key)
_SERVER_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


@dataclass(frozen=True)
class ServerSpec:
    """One MCP server as a client should start it: a command (stdio) or a URL (Streamable HTTP)."""

    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)  # e.g. the local service's bearer token

    def __post_init__(self) -> None:
        if (self.command is None) == (self.url is None):
            raise ValueError("a server has either a command (stdio) or a url (Streamable HTTP)")
        if not _SERVER_NAME.fullmatch(self.name):
            raise ServiceError(
                "INVALID_ARGUMENT",
                f"server name {self.name!r} is not usable as a config key",
                hint="Use letters, digits, '-' and '_' only (at most 64 characters).",
            )

    @property
    def transport(self) -> Literal["stdio", "http"]:
        """``stdio`` for a command, ``http`` for a Streamable HTTP URL."""
        return "stdio" if self.command is not None else "http"


@dataclass(frozen=True)
class Client:
    """An MCP client: its config file per scope, format, and the shape of a server entry."""

    id: str
    title: str
    format: ConfigFormat
    container: str  # the top-level key holding the servers
    scopes: tuple[Scope, ...]
    default_scope: Scope
    typed: bool  # entries carry "type": "stdio" | "http"
    supports_url: bool

    def path(self, scope: Scope, loc: Locations) -> Path:
        """The config file this client reads for ``scope``."""
        if scope not in self.scopes:
            raise ServiceError(
                "CONFIG_UNSUPPORTED",
                f"{self.title} has no {scope}-scope config file",
                hint=f"Use --scope {' or '.join(self.scopes)}.",
                client=self.id,
            )
        return _PATHS[(self.id, scope)](loc)

    def entry(self, spec: ServerSpec) -> dict[str, Any]:
        """The server entry as this client expects it."""
        entry: dict[str, Any] = {}
        if spec.url is not None:
            if not self.supports_url:
                raise ServiceError(
                    "CONFIG_UNSUPPORTED",
                    f"{self.title} cannot take a Streamable HTTP url in its config file",
                    hint="Use the stdio launcher (omit --url), or add the URL in the app's own settings.",
                    client=self.id,
                )
            if self.typed:
                entry["type"] = "http"
            entry["url"] = spec.url
            if spec.headers:
                # Codex names the table http_headers; the JSON clients call it headers
                entry["http_headers" if self.format == "toml" else "headers"] = dict(spec.headers)
            return entry
        if self.typed:
            entry["type"] = "stdio"
        entry["command"] = spec.command
        entry["args"] = list(spec.args)
        if spec.env:
            entry["env"] = dict(spec.env)
        return entry


_PATHS: dict[tuple[str, str], Callable[[Locations], Path]] = {
    ("claude-desktop", "user"): lambda loc: loc.app_config_dir("Claude") / "claude_desktop_config.json",
    ("claude-code", "user"): lambda loc: loc.claude_config_dir / ".claude.json",
    ("claude-code", "project"): lambda loc: loc.project / ".mcp.json",
    ("cursor", "user"): lambda loc: loc.home / ".cursor" / "mcp.json",
    ("cursor", "project"): lambda loc: loc.project / ".cursor" / "mcp.json",
    ("vscode", "user"): lambda loc: loc.app_config_dir("Code") / "User" / "mcp.json",
    ("vscode", "project"): lambda loc: loc.project / ".vscode" / "mcp.json",
    ("codex", "user"): lambda loc: loc.codex_home / "config.toml",
    ("codex", "project"): lambda loc: loc.project / ".codex" / "config.toml",
}

CLIENTS: dict[str, Client] = {
    client.id: client
    for client in (
        Client("claude-desktop", "Claude Desktop", "json", "mcpServers", ("user",), "user", False, False),
        Client("claude-code", "Claude Code", "json", "mcpServers", ("user", "project"), "user", True, True),
        Client("cursor", "Cursor", "json", "mcpServers", ("user", "project"), "user", False, True),
        Client("vscode", "VS Code", "json", "servers", ("user", "project"), "project", True, True),
        Client("codex", "Codex", "toml", "mcp_servers", ("user", "project"), "user", False, True),
    )
}


def get_client(client_id: str) -> Client:
    """The client named ``client_id`` (``claude-desktop``, ``claude-code``, ``cursor``, ``vscode``, ``codex``)."""
    client = CLIENTS.get(client_id)
    if client is None:
        raise ServiceError(
            "UNKNOWN_CLIENT",
            f"unknown MCP client {client_id!r}",
            hint=f"Choose one of: {', '.join(CLIENTS)} (or use --print for a generic JSON snippet).",
        )
    return client


def merge_entry(existing: Any, new: Mapping[str, Any]) -> dict[str, Any]:
    """``new`` laid over an existing entry: the user's other keys (timeouts, flags) survive.

    Keys of the other transport are removed so a stdio entry never keeps a stale ``url``.
    """
    if not isinstance(existing, dict):
        return dict(new)
    merged = copy.deepcopy(existing)
    stale = _HTTP_KEYS if "command" in new else _STDIO_KEYS
    for key in (*stale, "type"):
        if key not in new:
            merged.pop(key, None)
    merged.update(copy.deepcopy(dict(new)))
    return merged


@dataclass(frozen=True)
class ConfigChange:
    """What writing a server entry into one config file would do; ``before`` None = no file."""

    client: Client
    scope: Scope
    path: Path
    server: str
    before: str | None
    after: str
    entry: dict[str, Any] | None  # None: the change removes the server

    @property
    def status(self) -> ChangeStatus:
        """``create`` (new file), ``update`` (text changes) or ``unchanged``."""
        if self.before is None:
            return "unchanged" if self.entry is None else "create"
        return "unchanged" if self.before == self.after else "update"


def _read_text(path: Path) -> str | None:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        raise ServiceError(
            "CONFIG_INVALID", f"{path} is a directory, not a config file", path=str(path)
        ) from None
    except OSError as exc:  # permissions, a file where a folder should be, ...
        raise ServiceError(
            "CONFIG_INVALID", f"{path} cannot be read ({exc.strerror or exc})", path=str(path)
        ) from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ServiceError(
            "CONFIG_INVALID",
            f"{path} is not UTF-8 text ({exc.reason} at byte {exc.start}); it was left untouched",
            hint="Fix or move the file, or paste the printed snippet by hand.",
            path=str(path),
        ) from None


def _invalid(path: Path, problem: str) -> ServiceError:
    return ServiceError(
        "CONFIG_INVALID",
        f"{path} could not be read: {problem}; it was left untouched",
        hint="Fix the file (or move it away), then run the command again; or paste the snippet by hand.",
        path=str(path),
    )


def _merged_json(path: Path, text: str, container: str, name: str, entry: dict[str, Any]) -> tuple[str, Any]:
    """The new text of a JSON/JSONC config with ``container.name`` merged, and the merged entry."""
    bom = "\ufeff" if text.startswith("\ufeff") else ""
    body = text[len(bom) :]
    try:
        doc = jsonc.parse(body)
    except jsonc.JsoncError as exc:
        raise _invalid(path, str(exc)) from None
    root = doc.root.value if doc.root is not None else None
    if doc.root is not None and not isinstance(root, dict):
        raise _invalid(path, "the top level is not a JSON object")
    servers = root.get(container) if root is not None else None
    if servers is not None and not isinstance(servers, dict):
        raise _invalid(path, f'"{container}" is not a JSON object')
    existing = servers.get(name) if servers is not None else None
    merged = merge_entry(existing, entry)
    if existing == merged:
        return text, merged
    try:
        new_body = jsonc.set_member(doc, (container, name), merged)
    except jsonc.CommentsInTheWay:
        raise ServiceError(
            "CONFIG_HAS_COMMENTS",
            f"the existing {name!r} entry in {path} contains comments that replacing it would drop",
            hint="Edit that entry by hand using the printed snippet, or remove its comments and run again.",
            path=str(path),
        ) from None
    # the splice must yield exactly the old document plus our entry, with every comment kept
    check = jsonc.parse(new_body)
    old_node = doc.root.member(container) if doc.root is not None else None
    replaced = None
    if old_node is not None and old_node.node.member(name) is not None:
        inner = old_node.node.member(name)
        assert inner is not None
        replaced = (inner.node.start, inner.node.end)
    same = check.root is not None and _is_old_plus(root, check.root.value, container, name, merged)
    if not same or check.comment_texts() != doc.comment_texts(replaced):
        raise ServiceError(
            "CONFIG_MERGE_FAILED",
            f"could not merge into {path} without changing other content; it was left untouched",
            hint="Paste the printed snippet by hand.",
            path=str(path),
        )
    return bom + new_body, merged


def _is_old_plus(old: Any, new: Any, container: str, name: str, entry: Any) -> bool:
    """True when ``new`` is ``old`` with ``old[container][name] = entry`` (no deep copies)."""
    old = old if isinstance(old, dict) else {}
    if not isinstance(new, dict) or new.keys() != old.keys() | {container}:
        return False
    if any(new[key] != value for key, value in old.items() if key != container):
        return False
    before, after = old.get(container) or {}, new[container]
    if not isinstance(after, dict) or after.keys() != before.keys() | {name}:
        return False
    return bool(after[name] == entry) and all(after[k] == v for k, v in before.items() if k != name)


def _toml_comment_lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip().startswith("#")]


def _merged_toml(path: Path, text: str, container: str, name: str, entry: dict[str, Any]) -> tuple[str, Any]:
    """The new text of a TOML config with ``[container.name]`` merged, and the merged entry."""
    try:
        # tomllib is the strict reader (Codex parses strictly too); tomlkit keeps the formatting
        plain = tomllib.loads(text)
        tomlkit.parse(text)
    except (tomllib.TOMLDecodeError, tomlkit.exceptions.TOMLKitError) as exc:
        raise _invalid(path, str(exc)) from None
    servers_plain = plain.get(container)
    if servers_plain is not None and not isinstance(servers_plain, dict):
        raise _invalid(path, f"{container} is not a table")
    existing = servers_plain.get(name) if servers_plain is not None else None
    merged = merge_entry(existing, entry)
    if existing == merged:
        return text, merged
    want = copy.deepcopy(plain)
    want.setdefault(container, {})[name] = merged
    comments = set(_toml_comment_lines(text))
    # a [table] header first; where that would capture keys that follow (a dotted-key parent),
    # an inline table; whatever we write must re-read as exactly the old document plus our entry
    for inline in (False, True):
        try:
            new_text = _set_toml_entry(tomlkit.parse(text), container, name, merged, inline)
            check = tomllib.loads(new_text)
        except (tomllib.TOMLDecodeError, tomlkit.exceptions.TOMLKitError, TypeError, ValueError, KeyError):
            continue
        if check == want and comments <= set(_toml_comment_lines(new_text)):
            return new_text, merged
    raise ServiceError(
        "CONFIG_MERGE_FAILED",
        f"could not merge into {path} without changing other content; it was left untouched",
        hint="Paste the printed snippet by hand.",
        path=str(path),
    )


def _set_toml_entry(
    doc: tomlkit.TOMLDocument, container: str, name: str, merged: dict[str, Any], inline: bool = False
) -> str:
    servers = doc.get(container)
    if servers is None:
        servers = tomlkit.table(is_super_table=True)
        doc.add(container, servers)
    if not isinstance(
        servers, tomlkit.items.Table | tomlkit.items.InlineTable | Container | OutOfOrderTableProxy
    ):
        raise TypeError(f"{container} is not a table")
    current = servers.get(name)
    if isinstance(current, tomlkit.items.Table | tomlkit.items.InlineTable):
        # edit in place so comments and key order inside the user's table survive
        for key in [k for k in current if k not in merged]:
            del current[key]
        for key, value in merged.items():
            if current.get(key) != value:
                current[key] = _toml_value(key, value)
    else:
        inline = inline or isinstance(servers, tomlkit.items.InlineTable)
        table: tomlkit.items.Table | tomlkit.items.InlineTable = (
            tomlkit.inline_table() if inline else tomlkit.table()
        )
        for key, value in merged.items():
            table[key] = _toml_value(key, value)
        if not inline:
            table.add(tomlkit.nl())  # a blank line before whatever table follows
        if name in servers:
            del servers[name]
        servers[name] = table
    return tomlkit.dumps(doc)


def _toml_value(key: str, value: Any) -> Any:
    if isinstance(value, dict):
        inline = tomlkit.inline_table()
        inline.update(value)
        return inline
    return value


def plan_config(client: Client, scope: Scope, spec: ServerSpec, loc: Locations) -> ConfigChange:
    """Read the client's config and compute the merged text; writes nothing."""
    path = client.path(scope, loc)
    entry = client.entry(spec)
    before = _read_text(path)
    merge = _merged_toml if client.format == "toml" else _merged_json
    after, merged = merge(path, before or "", client.container, spec.name, entry)
    return ConfigChange(client, scope, path, spec.name, before, after, merged)


def plan_remove(client: Client, scope: Scope, name: str, loc: Locations) -> ConfigChange:
    """Compute the client's config without the server ``name``; writes nothing."""
    path = client.path(scope, loc)
    before = _read_text(path)
    if before is None:
        return ConfigChange(client, scope, path, name, None, "", None)
    remove = _removed_toml if client.format == "toml" else _removed_json
    return ConfigChange(client, scope, path, name, before, remove(path, before, client.container, name), None)


def _merge_failed(path: Path) -> ServiceError:
    return ServiceError(
        "CONFIG_MERGE_FAILED",
        f"could not edit {path} without changing other content; it was left untouched",
        hint="Edit the file by hand.",
        path=str(path),
    )


def _removed_json(path: Path, text: str, container: str, name: str) -> str:
    bom = "\ufeff" if text.startswith("\ufeff") else ""
    try:
        doc = jsonc.parse(text[len(bom) :])
    except jsonc.JsoncError as exc:
        raise _invalid(path, str(exc)) from None
    root = doc.root.value if doc.root is not None else None
    if not isinstance(root, dict):
        return text
    servers = root.get(container)
    if not isinstance(servers, dict) or name not in servers:
        return text
    try:
        new_body = jsonc.remove_member(doc, (container, name))
    except jsonc.CommentsInTheWay:
        raise ServiceError(
            "CONFIG_HAS_COMMENTS",
            f"removing {name!r} from {path} would drop comments next to it",
            hint=f"Remove the {name!r} entry by hand.",
            path=str(path),
        ) from None
    want = copy.deepcopy(root)
    del want[container][name]
    check = jsonc.parse(new_body)
    if check.root is None or check.root.value != want or check.comment_texts() != doc.comment_texts():
        raise _merge_failed(path)
    return bom + new_body


def _removed_toml(path: Path, text: str, container: str, name: str) -> str:
    try:
        plain = tomllib.loads(text)
        doc = tomlkit.parse(text)
    except (tomllib.TOMLDecodeError, tomlkit.exceptions.TOMLKitError) as exc:
        raise _invalid(path, str(exc)) from None
    servers = plain.get(container)
    if not isinstance(servers, dict) or name not in servers:
        return text
    want = copy.deepcopy(plain)
    del want[container][name]
    try:
        del doc[container][name]
        new_text = tomlkit.dumps(doc)
        check = tomllib.loads(new_text)
    except (tomllib.TOMLDecodeError, tomlkit.exceptions.TOMLKitError, TypeError, ValueError, KeyError):
        raise _merge_failed(path) from None
    if not want[container] and container not in check:
        del want[container]  # tomlkit drops a super-table whose last sub-table went: same document
    if check != want:
        raise _merge_failed(path)
    if not set(_toml_comment_lines(text)) <= set(_toml_comment_lines(new_text)):
        raise ServiceError(
            "CONFIG_HAS_COMMENTS",
            f"removing [{container}.{name}] from {path} would drop comments inside it",
            hint=f"Remove the [{container}.{name}] table by hand.",
            path=str(path),
        )
    return new_text


def write_planned(path: Path, before: str | None, after: str) -> None:
    """Write a planned config edit atomically; ``CONFIG_CHANGED`` if the file moved since planning
    (``before`` None: it did not exist). Shared by client configs and editor configs."""
    if _read_text(path) != before:
        raise ServiceError(
            "CONFIG_CHANGED",
            f"{path} changed while moddesk was preparing its edit; nothing was written",
            hint="Run the command again.",
            path=str(path),
        )
    with writing(path):
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, after)


def apply_config(change: ConfigChange) -> None:
    """Write a planned change atomically; ``CONFIG_CHANGED`` if the file moved since planning."""
    if change.status != "unchanged":
        write_planned(change.path, change.before, change.after)


def snippet(client: Client | None, spec: ServerSpec) -> str:
    """A copy-paste config holding just this server, in the client's format (generic JSON for None)."""
    if client is None:
        generic = Client("json", "MCP client", "json", "mcpServers", ("user",), "user", False, True)
        return json.dumps({"mcpServers": {spec.name: generic.entry(spec)}}, indent=2, ensure_ascii=False)
    entry = client.entry(spec)
    if client.format == "toml":
        doc = tomlkit.document()
        _set_toml_entry(doc, client.container, spec.name, entry)
        return tomlkit.dumps(doc).strip()
    return json.dumps({client.container: {spec.name: entry}}, indent=2, ensure_ascii=False)


@dataclass(frozen=True)
class ConfiguredServer:
    """A server entry found in a client config (``problem`` set when the file could not be read)."""

    client: Client
    scope: Scope
    path: Path
    name: str | None
    entry: Any = None
    problem: str | None = None


def find_servers(loc: Locations, names: Iterable[str]) -> list[ConfiguredServer]:
    """Every entry named in ``names`` across all clients and scopes; reads only, never writes."""
    wanted = set(names)
    found: list[ConfiguredServer] = []
    for client in CLIENTS.values():
        for scope in client.scopes:
            path = client.path(scope, loc)
            try:
                text = _read_text(path)
                if text is None:
                    continue
                if client.format == "toml":
                    doc: Any = tomllib.loads(text)
                else:
                    root = jsonc.parse(text.lstrip("\ufeff")).root
                    doc = root.value if root is not None else {}
            except (ServiceError, jsonc.JsoncError, tomllib.TOMLDecodeError) as exc:
                found.append(ConfiguredServer(client, scope, path, None, problem=str(exc)))
                continue
            servers = doc.get(client.container) if isinstance(doc, dict) else None
            if isinstance(servers, dict):
                for name in sorted(wanted & set(servers)):
                    found.append(ConfiguredServer(client, scope, path, name, servers[name]))
    return found
