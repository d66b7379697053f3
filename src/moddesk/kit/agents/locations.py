"""Where agent clients keep their configs and skills, and where moddesk keeps its own agent files.

Every path is derived from one ``Locations`` value, so tests (and cautious users) can point the
whole agent setup at a scratch directory with ``MODDESK_HOME`` and nothing touches the real home.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import platformdirs

from moddesk.kit.errors import ServiceError

Platform = Literal["linux", "macos", "windows"]

HOME_ENV = "MODDESK_HOME"  # stands in for the user's home directory for all agent paths
DATA_ENV = "MODDESK_DATA_DIR"  # moddesk's own data dir (launcher, skill install record)
PLATFORM_ENV = "MODDESK_AGENTS_PLATFORM"  # linux | macos | windows: which client paths to use


def current_platform() -> Platform:
    """The platform whose client config paths apply on this machine."""
    if sys.platform == "win32":
        return "windows"
    if sys.platform == "darwin":
        return "macos"
    return "linux"


@dataclass(frozen=True)
class Locations:
    """The directories agent setup reads and writes; build with ``from_env`` or directly."""

    home: Path
    data_dir: Path
    project: Path
    platform: Platform
    appdata: Path  # Windows %APPDATA% (Roaming)
    xdg_config: Path  # $XDG_CONFIG_HOME on Linux
    codex_home: Path  # $CODEX_HOME, default ~/.codex
    claude_config_dir: Path  # $CLAUDE_CONFIG_DIR, default ~ (Claude Code's .claude.json lives here)

    @classmethod
    def under(cls, home: Path, project: Path | None = None, platform: Platform | None = None) -> Locations:
        """Everything below ``home``: the layout a fresh account on ``platform`` would have."""
        chosen = platform or current_platform()
        if chosen == "windows":
            data = home / "AppData" / "Local" / "moddesk"
        elif chosen == "macos":
            data = home / "Library" / "Application Support" / "moddesk"
        else:
            data = home / ".local" / "share" / "moddesk"
        return cls(
            home=home,
            data_dir=data,
            project=project if project is not None else Path.cwd(),
            platform=chosen,
            appdata=home / "AppData" / "Roaming",
            xdg_config=home / ".config",
            codex_home=home / ".codex",
            claude_config_dir=home,
        )

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, project: Path | None = None) -> Locations:
        """The real locations, or all of them under ``MODDESK_HOME`` when that is set.

        With ``MODDESK_HOME`` set, ``APPDATA``, ``XDG_CONFIG_HOME``, ``CODEX_HOME`` and
        ``CLAUDE_CONFIG_DIR`` are ignored so nothing can escape the substitute home.
        """
        env = os.environ if environ is None else environ
        platform_name = env.get(PLATFORM_ENV) or None
        if platform_name is not None and platform_name not in ("linux", "macos", "windows"):
            raise ValueError(f"{PLATFORM_ENV} must be linux, macos or windows, not {platform_name!r}")
        chosen: Platform = platform_name or current_platform()  # type: ignore[assignment]
        override = env.get(HOME_ENV)
        if override:
            base = cls.under(Path(override), project, chosen)
        else:
            home = Path.home()
            base = cls(
                home=home,
                data_dir=Path(platformdirs.user_data_dir("moddesk", appauthor=False)),
                project=project if project is not None else Path.cwd(),
                platform=chosen,
                appdata=Path(env["APPDATA"]) if env.get("APPDATA") else home / "AppData" / "Roaming",
                xdg_config=Path(env["XDG_CONFIG_HOME"]) if env.get("XDG_CONFIG_HOME") else home / ".config",
                codex_home=Path(env["CODEX_HOME"]) if env.get("CODEX_HOME") else home / ".codex",
                claude_config_dir=Path(env["CLAUDE_CONFIG_DIR"]) if env.get("CLAUDE_CONFIG_DIR") else home,
            )
        data = env.get(DATA_ENV)
        if data:
            return cls(**{**base.__dict__, "data_dir": Path(data)})
        return base

    @property
    def windows(self) -> bool:
        """True when the launcher and client paths follow Windows conventions."""
        return self.platform == "windows"

    def app_config_dir(self, app: str) -> Path:
        """An Electron app's per-user config dir (Claude Desktop, VS Code) on this platform."""
        if self.platform == "windows":
            return self.appdata / app
        if self.platform == "macos":
            return self.home / "Library" / "Application Support" / app
        return self.xdg_config / app

    @property
    def skill_record(self) -> Path:
        """The JSON record of every skill moddesk installed."""
        return self.data_dir / "skill-installs.json"


@contextlib.contextmanager
def writing(path: Path) -> Iterator[None]:
    """Turn an OS failure while writing ``path`` into ``WRITE_FAILED`` naming the path."""
    try:
        yield
    except OSError as exc:
        raise ServiceError(
            "WRITE_FAILED",
            f"cannot write {path}: {exc.strerror or exc}",
            hint="Check the folder's permissions and free space (and that no file sits where a folder should be).",
            path=str(path),
        ) from None
