"""MCP client config writers merge into real-world-shaped files and never lose anything."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from moddesk.kit.agents import (
    Locations,
    ServerSpec,
    apply_config,
    get_client,
    jsonc,
    launcher_path,
    merge_entry,
    plan_config,
    plan_remove,
    snippet,
    system_server,
)
from moddesk.kit.errors import ServiceError

CLAUDE_DESKTOP = """{
  "mcpServers": {
    "filesystem": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-filesystem", "C:\\\\Users\\\\me\\\\Desktop"]
    },
    "github": {
      "command": "docker",
      "args": ["run", "-i", "--rm", "-e", "GITHUB_PERSONAL_ACCESS_TOKEN", "ghcr.io/github/github-mcp-server"],
      "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "<token>"}
    }
  },
  "globalShortcut": "Ctrl+Space"
}
"""

CLAUDE_CODE_USER = json.dumps(
    {
        "numStartups": 42,
        "installMethod": "npm-global",
        "autoUpdates": True,
        "projects": {
            "/home/me/game": {
                "allowedTools": [],
                "mcpServers": {"local-only": {"type": "stdio", "command": "uvx", "args": ["x"], "env": {}}},
                "hasTrustDialogAccepted": True,
            }
        },
        "mcpServers": {
            "context7": {
                "type": "stdio",
                "command": "npx",
                "args": ["-y", "@upstash/context7-mcp"],
                "env": {},
            }
        },
        "oauthAccount": {"emailAddress": "me@example.com", "organizationUuid": "00000000-0000"},
        "userID": "f00",
    },
    indent=2,
)

VSCODE_JSONC = """{
\t// Servers for this workspace (VS Code allows comments here)
\t"inputs": [
\t\t{"type": "promptString", "id": "token", "description": "API token", "password": true},
\t],
\t"servers": {
\t\t"github": {
\t\t\t"type": "http",
\t\t\t"url": "https://api.githubcopilot.com/mcp/" /* remote */
\t\t},
\t\t"fetch": {"type": "stdio", "command": "uvx", "args": ["mcp-server-fetch"]}, // trailing comma ok
\t},
}
"""

CURSOR = '{"mcpServers":{"linear":{"url":"https://mcp.linear.app/mcp","headers":{"X-Team":"a"}}}}'

CODEX = """# ~/.codex/config.toml
model = "gpt-5-codex"   # default model
approval_policy = "on-request"

[profiles.fast]
model = "o4-mini"

# filesystem server used every day
[mcp_servers.filesystem]
command = "npx"
args = ["-y", "@modelcontextprotocol/server-filesystem", "/home/me"]
startup_timeout_sec = 20

[mcp_servers.filesystem.env]
NODE_OPTIONS = "--max-old-space-size=256"

[tui]
notifications = true

[mcp_servers.notion]
url = "https://mcp.notion.com/mcp"
bearer_token_env_var = "NOTION_TOKEN"
"""


@pytest.fixture
def loc(tmp_path: Path) -> Locations:
    return Locations.under(tmp_path / "home dir", project=tmp_path / "my project", platform="linux")


def _spec(loc: Locations) -> ServerSpec:
    return system_server("ra3", launcher_path(loc), ["--project", "D:\\Mods\\corona mod"])


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8", newline="")


def _json(path: Path) -> dict[str, object]:
    doc = jsonc.parse(path.read_text(encoding="utf-8"))
    assert doc.root is not None
    value: dict[str, object] = doc.root.value
    return value


@pytest.mark.parametrize(
    ("client_id", "scope", "relpath", "original"),
    [
        ("claude-desktop", "user", "home dir/.config/Claude/claude_desktop_config.json", CLAUDE_DESKTOP),
        ("claude-code", "user", "home dir/.claude.json", CLAUDE_CODE_USER),
        ("vscode", "project", "my project/.vscode/mcp.json", VSCODE_JSONC),
        ("cursor", "user", "home dir/.cursor/mcp.json", CURSOR),
    ],
)
def test_json_merge_keeps_everything(
    loc: Locations, tmp_path: Path, client_id: str, scope: str, relpath: str, original: str
) -> None:
    client = get_client(client_id)
    path = tmp_path / relpath
    _write(path, original)
    before = _json(path)
    change = plan_config(client, scope, _spec(loc), loc)  # type: ignore[arg-type]
    assert change.path == path and change.status == "update"
    assert path.read_text(encoding="utf-8") == original  # planning writes nothing
    apply_config(change)
    after = _json(path)
    servers_key = client.container
    expected = json.loads(json.dumps(before))
    expected[servers_key]["ra3-mod-xml"] = client.entry(_spec(loc))
    assert after == expected
    text = path.read_text(encoding="utf-8")
    for comment in jsonc.parse(original).comment_texts():
        assert comment in text
    assert text.startswith(original[: original.index(servers_key)])  # untouched up to the servers
    # idempotent: a second run changes nothing and writes nothing
    again = plan_config(client, scope, _spec(loc), loc)  # type: ignore[arg-type]
    assert again.status == "unchanged"


def test_typed_entries_for_vscode_and_claude_code(loc: Locations) -> None:
    spec = _spec(loc)
    assert get_client("vscode").entry(spec)["type"] == "stdio"
    assert get_client("claude-code").entry(spec)["type"] == "stdio"
    assert "type" not in get_client("cursor").entry(spec)
    http = ServerSpec("x", url="http://127.0.0.1:8765/mcp")
    assert get_client("vscode").entry(http) == {"type": "http", "url": "http://127.0.0.1:8765/mcp"}
    assert get_client("cursor").entry(http) == {"url": "http://127.0.0.1:8765/mcp"}
    with pytest.raises(ServiceError) as info:
        get_client("claude-desktop").entry(http)
    assert info.value.code == "CONFIG_UNSUPPORTED"


def test_codex_toml_merge_keeps_comments_and_other_tables(loc: Locations) -> None:
    path = loc.codex_home / "config.toml"
    _write(path, CODEX)
    change = plan_config(get_client("codex"), "user", _spec(loc), loc)
    apply_config(change)
    text = path.read_text(encoding="utf-8")
    for line in CODEX.splitlines():
        assert line in text.splitlines()  # every original line, comments included, is still there
    data = tomllib.loads(text)
    before = tomllib.loads(CODEX)
    assert data["mcp_servers"]["ra3-mod-xml"] == {
        "command": str(launcher_path(loc)),
        "args": ["ra3", "mcp", "--project", "D:\\Mods\\corona mod"],
    }
    del data["mcp_servers"]["ra3-mod-xml"]
    assert data == before
    assert plan_config(get_client("codex"), "user", _spec(loc), loc).status == "unchanged"


def test_codex_switch_to_url_keeps_user_keys_in_place(loc: Locations) -> None:
    path = loc.codex_home / "config.toml"
    _write(path, '[mcp_servers.ra3-mod-xml]\n# mine\ncommand = "old"\nargs = []\nstartup_timeout_sec = 30\n')
    spec = system_server("ra3", launcher_path(loc), url="http://127.0.0.1:9000/mcp")
    apply_config(plan_config(get_client("codex"), "user", spec, loc))
    text = path.read_text(encoding="utf-8")
    assert "# mine" in text
    assert tomllib.loads(text)["mcp_servers"]["ra3-mod-xml"] == {
        "url": "http://127.0.0.1:9000/mcp",
        "startup_timeout_sec": 30,
    }


def test_codex_project_scope_and_codex_home(loc: Locations) -> None:
    change = plan_config(get_client("codex"), "project", _spec(loc), loc)
    assert change.path == loc.project / ".codex" / "config.toml" and change.status == "create"
    apply_config(change)
    assert "ra3-mod-xml" in tomllib.loads(change.path.read_text(encoding="utf-8"))["mcp_servers"]


def test_merge_entry_keeps_user_keys_and_drops_other_transport() -> None:
    existing = {"type": "http", "url": "http://old", "headers": {"a": "b"}, "disabled": False, "timeout": 5}
    merged = merge_entry(existing, {"type": "stdio", "command": "c", "args": []})
    assert merged == {"type": "stdio", "command": "c", "args": [], "disabled": False, "timeout": 5}
    assert merge_entry("garbage", {"url": "u"}) == {"url": "u"}


def test_updating_an_entry_with_comments_is_refused(loc: Locations) -> None:
    path = loc.project / ".vscode" / "mcp.json"
    text = '{"servers": {"ra3-mod-xml": {"type": "stdio", "command": "old" // pinned by me\n}}}\n'
    _write(path, text)
    with pytest.raises(ServiceError) as info:
        plan_config(get_client("vscode"), "project", _spec(loc), loc)
    assert info.value.code == "CONFIG_HAS_COMMENTS"
    assert path.read_text(encoding="utf-8") == text


def test_bom_kept_and_scope_errors(loc: Locations) -> None:
    path = loc.home / ".cursor" / "mcp.json"
    _write(path, '\ufeff{"mcpServers": {}}')
    apply_config(plan_config(get_client("cursor"), "user", _spec(loc), loc))
    assert path.read_text(encoding="utf-8").startswith('\ufeff{"mcpServers": {')
    with pytest.raises(ServiceError) as info:
        get_client("claude-desktop").path("project", loc)
    assert info.value.code == "CONFIG_UNSUPPORTED"
    with pytest.raises(ServiceError) as info:
        get_client("zed")
    assert info.value.code == "UNKNOWN_CLIENT"


def test_platform_paths(tmp_path: Path) -> None:
    win = Locations.under(tmp_path, platform="windows")
    mac = Locations.under(tmp_path, platform="macos")
    desktop = get_client("claude-desktop")
    assert desktop.path("user", win) == tmp_path / "AppData/Roaming/Claude/claude_desktop_config.json"
    assert (
        desktop.path("user", mac)
        == tmp_path / "Library/Application Support/Claude/claude_desktop_config.json"
    )
    assert get_client("vscode").path("user", win) == tmp_path / "AppData/Roaming/Code/User/mcp.json"
    assert launcher_path(win).name == "moddesk-mcp.cmd"


def test_env_overrides(tmp_path: Path) -> None:
    env = {"MODDESK_HOME": str(tmp_path / "h"), "CODEX_HOME": "/real/codex", "APPDATA": "/real/appdata"}
    loc = Locations.from_env(env, project=tmp_path)
    assert loc.codex_home == tmp_path / "h" / ".codex"  # nothing escapes the substitute home
    assert loc.appdata == tmp_path / "h" / "AppData" / "Roaming"
    loc = Locations.from_env({**env, "MODDESK_DATA_DIR": str(tmp_path / "d")}, project=tmp_path)
    assert loc.data_dir == tmp_path / "d" and loc.skill_record == tmp_path / "d" / "skill-installs.json"
    real = Locations.from_env({"CODEX_HOME": str(tmp_path / "c"), "XDG_CONFIG_HOME": str(tmp_path / "x")})
    assert real.codex_home == tmp_path / "c" and real.xdg_config == tmp_path / "x"


def test_snippets_are_valid_configs(loc: Locations) -> None:
    spec = _spec(loc)
    assert json.loads(snippet(None, spec))["mcpServers"]["ra3-mod-xml"]["args"][0] == "ra3"
    assert json.loads(snippet(get_client("vscode"), spec))["servers"]["ra3-mod-xml"]["type"] == "stdio"
    toml = tomllib.loads(snippet(get_client("codex"), spec))
    assert toml["mcp_servers"]["ra3-mod-xml"]["command"] == str(launcher_path(loc))


def test_pvf_stdio_goes_through_the_bridge_and_http_carries_the_token(loc: Locations) -> None:
    bridge = system_server("pvf", launcher_path(loc))
    assert bridge.args == ("pvf", "connect")  # stdio clients reach the running serve through it
    auth = {"Authorization": "Bearer t0k"}
    spec = system_server("pvf", launcher_path(loc), url="http://127.0.0.1:7/mcp", headers=auth)
    assert json.loads(snippet(get_client("claude-code"), spec))["mcpServers"]["moddesk-pvf"] == {
        "type": "http",
        "url": "http://127.0.0.1:7/mcp",
        "headers": auth,
    }
    assert json.loads(snippet(get_client("cursor"), spec))["mcpServers"]["moddesk-pvf"]["headers"] == auth
    assert json.loads(snippet(get_client("vscode"), spec))["servers"]["moddesk-pvf"]["headers"] == auth
    codex = tomllib.loads(snippet(get_client("codex"), spec))["mcp_servers"]["moddesk-pvf"]
    assert codex["http_headers"] == auth and codex["url"] == "http://127.0.0.1:7/mcp"
    with pytest.raises(ServiceError) as info:
        get_client("claude-desktop").entry(spec)
    assert info.value.code == "CONFIG_UNSUPPORTED"


# -- fuzz: arbitrary existing files -> a clean merge or a ServiceError, never a crash or a clobber


_READ_ERRORS = {"CONFIG_INVALID", "CONFIG_HAS_COMMENTS", "CONFIG_MERGE_FAILED"}
_json_like = st.text(alphabet='{}[]:,"/*\n \tabcmpSrvesu01-.etruflsn\\\ufeff', max_size=120)
_toml_like = st.text(alphabet="[]=\"#.\n ,{}abcmp_srvetu01-'", max_size=120)
_TOML_LINES = [
    "# a comment",
    'model = "o3"  # trailing',
    "[mcp_servers]",
    "[mcp_servers.other]",
    "[mcp_servers.ra3-mod-xml]",
    '[mcp_servers."quoted name"]',
    'command = "x"',
    'args = ["a", "b"]',
    'url = "http://127.0.0.1:1/mcp"',
    "startup_timeout_sec = 5",
    "[mcp_servers.other.env]",
    'A = "b"',
    "[tui]",
    "notifications = true",
    "mcp_servers = 3",
    'mcp_servers.dotted = { command = "y" }',
    'mcp_servers = { inline = { url = "u" } }',
    "[[profiles]]",
    "",
]
_servers_toml = st.lists(st.sampled_from(_TOML_LINES), max_size=12).map("\n".join)
_servers_json = st.dictionaries(
    st.sampled_from(["mcpServers", "servers", "x"]),
    st.dictionaries(
        st.sampled_from(["ra3-mod-xml", "other"]), st.dictionaries(st.text(max_size=4), st.integers())
    ),
    max_size=3,
).map(json.dumps)


def _fuzz_one(tmp: Path, client_id: str, data: bytes) -> None:
    loc = Locations.under(tmp / "home", project=tmp / "proj", platform="linux")
    client = get_client(client_id)
    scope = "project" if client_id == "vscode" else "user"
    path = client.path(scope, loc)  # type: ignore[arg-type]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    spec = _spec(loc)
    try:
        change = plan_config(client, scope, spec, loc)  # type: ignore[arg-type]
    except ServiceError as exc:
        assert exc.code in _READ_ERRORS
        event(exc.code)
        assert path.read_bytes() == data  # never a clobber
        return
    apply_config(change)
    event("merged")
    new = path.read_text(encoding="utf-8")
    if client.format == "toml":
        merged = tomllib.loads(new)
        old = tomllib.loads(data.decode("utf-8"))
    else:
        merged = jsonc.parse(new.lstrip("\ufeff")).root.value  # type: ignore[union-attr]
        old_root = jsonc.parse(data.decode("utf-8").lstrip("\ufeff")).root
        old = old_root.value if old_root is not None else {}
    servers = merged[client.container]
    assert servers["ra3-mod-xml"] == merge_entry(
        old.get(client.container, {}).get("ra3-mod-xml"), client.entry(spec)
    )
    del servers["ra3-mod-xml"]
    old.get(client.container, {}).pop("ra3-mod-xml", None)
    if not servers and client.container not in old:
        del merged[client.container]
    assert merged == old  # everything else survived

    # and removing it again gives back the same document
    try:
        removal = plan_remove(client, scope, "ra3-mod-xml", loc)  # type: ignore[arg-type]
    except ServiceError as exc:
        assert exc.code in ("CONFIG_HAS_COMMENTS", "CONFIG_MERGE_FAILED")
        event(f"remove {exc.code}")
        return
    apply_config(removal)
    event("removed")
    restored = _load(client.format, path.read_text(encoding="utf-8"))
    for doc in (restored, old):  # an empty servers table and no table at all read the same
        if doc.get(client.container) == {}:
            del doc[client.container]
    assert restored == old


def _load(fmt: str, text: str) -> dict[str, Any]:
    if fmt == "toml":
        return tomllib.loads(text)
    root = jsonc.parse(text.lstrip("\ufeff")).root
    return root.value if root is not None else {}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.sampled_from(["cursor", "vscode", "claude-code"]),
    st.one_of(st.binary(max_size=100), _json_like.map(str.encode), _servers_json.map(str.encode)),
)
def test_fuzz_json_config_readers(
    tmp_path_factory: pytest.TempPathFactory, client_id: str, data: bytes
) -> None:
    _fuzz_one(tmp_path_factory.mktemp("fz"), client_id, data)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.one_of(st.binary(max_size=100), _toml_like.map(str.encode), _servers_toml.map(str.encode)))
def test_fuzz_toml_config_reader(tmp_path_factory: pytest.TempPathFactory, data: bytes) -> None:
    _fuzz_one(tmp_path_factory.mktemp("fz"), "codex", data)


@pytest.mark.parametrize(
    ("client_id", "scope", "original"),
    [
        ("vscode", "project", VSCODE_JSONC),
        ("claude-code", "user", CLAUDE_CODE_USER),
        ("codex", "user", CODEX),
    ],
)
def test_remove_restores_the_original_file(loc: Locations, client_id: str, scope: str, original: str) -> None:
    client = get_client(client_id)
    path = client.path(scope, loc)  # type: ignore[arg-type]
    _write(path, original)
    apply_config(plan_config(client, scope, _spec(loc), loc))  # type: ignore[arg-type]
    assert path.read_text(encoding="utf-8") != original
    removal = plan_remove(client, scope, "ra3-mod-xml", loc)  # type: ignore[arg-type]
    assert removal.status == "update"
    apply_config(removal)
    restored = path.read_text(encoding="utf-8")
    if client.format == "toml":
        assert tomllib.loads(restored) == tomllib.loads(original)
        assert [line for line in original.splitlines() if line] == [
            line for line in restored.splitlines() if line
        ]
    else:
        assert restored == original  # byte for byte
    assert plan_remove(client, scope, "ra3-mod-xml", loc).status == "unchanged"  # type: ignore[arg-type]
    assert plan_remove(client, scope, "filesystem", loc).entry is None  # type: ignore[arg-type]


def test_remove_refuses_to_drop_comments(loc: Locations) -> None:
    path = loc.codex_home / "config.toml"
    text = '[mcp_servers.ra3-mod-xml]\n# why I pinned this\ncommand = "x"\nargs = []\n'
    _write(path, text)
    with pytest.raises(ServiceError) as info:
        plan_remove(get_client("codex"), "user", "ra3-mod-xml", loc)
    assert info.value.code == "CONFIG_HAS_COMMENTS"
    assert plan_remove(get_client("cursor"), "user", "ra3-mod-xml", loc).status == "unchanged"  # no file


def test_unreadable_config_location_is_config_invalid(loc: Locations) -> None:
    loc.home.mkdir(parents=True)
    (loc.home / ".cursor").write_text("a file where the folder should be", encoding="utf-8")
    with pytest.raises(ServiceError) as info:
        plan_config(get_client("cursor"), "user", _spec(loc), loc)
    assert info.value.code == "CONFIG_INVALID"
