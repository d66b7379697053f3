"""Agent setup: MCP client config writers, the stable launcher, and the Agent Skill installer."""

from moddesk.kit.errors import register_codes

register_codes(
    {
        "UNKNOWN_CLIENT": "The MCP client name is not one moddesk can configure.",
        "CONFIG_UNSUPPORTED": "The client has no config for this scope or transport.",
        "CONFIG_HAS_COMMENTS": "Replacing the entry would drop comments; edit it by hand with the snippet.",
        "CONFIG_MERGE_FAILED": "The merge would have changed other content; the file was left untouched.",
        "CONFIG_CHANGED": "The config file changed while the edit was prepared; nothing was written.",
        "LAUNCHER_TARGET_MISSING": "This interpreter cannot start moddesk, so no launcher can point at it.",
        "WRITE_FAILED": "A file could not be written (permissions, disk full, a file in the way).",
        "LAUNCHER_BUSY": "The launcher is running (Windows locks it); quit the MCP clients and retry.",
        "SKILL_SOURCE_MISSING": "The skill's source directory (with SKILL.md) does not exist.",
        "SKILL_INVALID": "SKILL.md lacks front matter with a valid `name` and a `description`.",
    }
)

from moddesk.kit.agents.clients import (  # noqa: E402  (codes must be registered first)
    CLIENTS,
    Client,
    ConfigChange,
    ConfiguredServer,
    ServerSpec,
    apply_config,
    find_servers,
    get_client,
    merge_entry,
    plan_config,
    plan_remove,
    snippet,
    write_planned,
)
from moddesk.kit.agents.launcher import (  # noqa: E402
    LauncherPlan,
    LauncherTarget,
    ensure_launcher,
    launcher_path,
    plan_launcher,
    render_launcher,
    write_launcher,
)
from moddesk.kit.agents.locations import Locations  # noqa: E402
from moddesk.kit.agents.skills import (  # noqa: E402
    SkillOutcome,
    SkillSource,
    install_skill,
    installs_of,
    list_installs,
    load_skill,
    skill_dir,
    skill_state,
    sync_skills,
    system_skill,
    uninstall_skill,
)
from moddesk.kit.agents.systems import SYSTEM_SERVERS, system_server  # noqa: E402

__all__ = [
    "CLIENTS",
    "SYSTEM_SERVERS",
    "Client",
    "ConfigChange",
    "ConfiguredServer",
    "LauncherPlan",
    "LauncherTarget",
    "Locations",
    "ServerSpec",
    "SkillOutcome",
    "SkillSource",
    "apply_config",
    "ensure_launcher",
    "find_servers",
    "get_client",
    "install_skill",
    "installs_of",
    "launcher_path",
    "list_installs",
    "load_skill",
    "merge_entry",
    "plan_config",
    "plan_launcher",
    "plan_remove",
    "render_launcher",
    "skill_dir",
    "skill_state",
    "snippet",
    "sync_skills",
    "system_server",
    "system_skill",
    "uninstall_skill",
    "write_launcher",
    "write_planned",
]
