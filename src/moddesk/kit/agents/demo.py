"""End-to-end check of agent setup in a scratch home: merge configs, run the launcher, skill lifecycle."""

from __future__ import annotations

import json
import subprocess
import tempfile
import tomllib
from pathlib import Path

from rich.console import Console

from moddesk.kit.agents.clients import apply_config, get_client, plan_config, plan_remove
from moddesk.kit.agents.launcher import ensure_launcher
from moddesk.kit.agents.locations import Locations
from moddesk.kit.agents.skills import install_skill, load_skill, skill_dir, sync_skills, uninstall_skill
from moddesk.kit.agents.systems import system_server

_VSCODE = """{
  // shared with the team
  "servers": {
    "github": {"type": "http", "url": "https://api.githubcopilot.com/mcp/"}, // remote
  },
}
"""
_CODEX = """# my Codex settings
model = "gpt-5-codex"

[mcp_servers.filesystem]  # daily driver
command = "npx"
args = ["-y", "@modelcontextprotocol/server-filesystem", "/home/me"]
"""


def _check(condition: bool, what: str) -> None:
    if not condition:
        raise RuntimeError(f"agents demo: {what}")


def run(console: Console) -> None:
    """Run the agent-setup walkthrough in a temp dir; raises on any failure."""
    with tempfile.TemporaryDirectory(prefix="moddesk agents demo ") as scratch:
        root = Path(scratch)
        loc = Locations.under(root / "home", project=root / "my mod")
        launcher = ensure_launcher(loc)
        result = subprocess.run(
            [str(launcher.path), "--help"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=60,
        )
        _check(
            result.returncode == 0 and "Usage" in result.stdout, f"launcher --help failed: {result.stderr}"
        )
        console.print(f"launcher {launcher.path} runs `moddesk --help`", highlight=False)

        vscode = loc.project / ".vscode" / "mcp.json"
        codex = loc.codex_home / "config.toml"
        for path, text in ((vscode, _VSCODE), (codex, _CODEX)):
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        spec = system_server("xiangqi", launcher.path)
        for client_id, scope, path, original in (
            ("vscode", "project", vscode, _VSCODE),
            ("codex", "user", codex, _CODEX),
        ):
            client = get_client(client_id)
            change = plan_config(client, scope, spec, loc)  # type: ignore[arg-type]
            apply_config(change)
            text = path.read_text(encoding="utf-8")
            _check("moddesk-xiangqi" in text, f"{client_id}: entry missing")
            _check(
                all(line in text for line in original.splitlines() if "//" in line or "#" in line),
                "comment lost",
            )
            _check(plan_config(client, scope, spec, loc).status == "unchanged", "second run not idempotent")  # type: ignore[arg-type]
            console.print(f"{client.title}: merged {spec.name!r} into {path}, comments kept", highlight=False)
        _check(
            "filesystem" in tomllib.loads(codex.read_text(encoding="utf-8"))["mcp_servers"],
            "codex server lost",
        )
        apply_config(plan_remove(get_client("vscode"), "project", spec.name, loc))
        _check(vscode.read_text(encoding="utf-8") == _VSCODE, "remove did not restore the file")
        console.print("VS Code: removed it again; the file is byte-for-byte what it was", highlight=False)

        source = root / "skill source"
        (source / "references").mkdir(parents=True)
        (source / "SKILL.md").write_text(
            "---\nname: demo-skill\ndescription: demo\n---\nv1\n", encoding="utf-8"
        )
        (source / "references" / "guide.md").write_text("guide\n", encoding="utf-8")
        user, claude = skill_dir("demo-skill", loc), skill_dir("demo-skill", loc, "claude")
        for target in (user, claude):
            install_skill(load_skill(source), target, loc)
        (claude / "SKILL.md").write_text(
            "---\nname: demo-skill\ndescription: mine\n---\nmy notes\n", encoding="utf-8"
        )
        (source / "SKILL.md").write_text(
            "---\nname: demo-skill\ndescription: demo\n---\nv2\n", encoding="utf-8"
        )
        actions = {o.path: o.action for o in sync_skills(loc)}
        _check(actions == {user: "update", claude: "skip-modified"}, f"unexpected sync {actions}")
        _check(
            (claude / "SKILL.md").read_text(encoding="utf-8").endswith("my notes\n"),
            "edited skill overwritten",
        )
        console.print(
            "skill: synced the unedited copy, kept the user's edited one (reported)", highlight=False
        )
        _check(uninstall_skill(user, loc).action == "remove" and not user.exists(), "uninstall failed")
        _check(
            uninstall_skill(claude, loc).action == "skip-modified" and claude.exists(), "edited skill removed"
        )
        record = json.loads(loc.skill_record.read_text(encoding="utf-8"))
        _check([item["path"] for item in record["installs"]] == [str(claude)], "install record wrong")
        console.print(
            "skill: uninstalled the managed copy, refused the edited one without --force", highlight=False
        )
