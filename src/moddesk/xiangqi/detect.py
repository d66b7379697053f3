"""Find the xiangqi engines installed on this machine and pick the strongest for hints and review.

Only engines known to play xiangqi are looked for (by their program names on PATH and in ``/usr/games``,
where Debian installs ``fairy-stockfish``): running unknown programs to ask them would be unsafe. Their
order is their playing strength (Pikafish, then Fairy-Stockfish); the builtin engine is always there.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass

# program name -> (display name, strength order: higher is stronger)
KNOWN_ENGINES: dict[str, tuple[str, int]] = {
    "pikafish": ("Pikafish", 3),
    "fairy-stockfish": ("Fairy-Stockfish", 2),
    "fairystockfish": ("Fairy-Stockfish", 2),
}
EXTRA_DIRS = ("/usr/games", "/usr/local/games")


@dataclass(frozen=True)
class FoundEngine:
    """An installed engine: its display name, path and strength order."""

    name: str
    path: str
    strength: int

    @property
    def spec(self) -> str:
        # the command line is split like a shell would: a path with spaces is quoted
        return f'uci:"{self.path}"' if any(c.isspace() for c in self.path) else f"uci:{self.path}"


def find_engines(path: str | None = None) -> list[FoundEngine]:
    """Installed xiangqi engines, strongest first (``path`` overrides the PATH variable)."""
    search_path = os.pathsep.join([path if path is not None else os.environ.get("PATH", ""), *EXTRA_DIRS])
    found: dict[str, FoundEngine] = {}
    for program, (name, strength) in KNOWN_ENGINES.items():
        where = shutil.which(program, path=search_path)
        if where and os.path.realpath(where) not in found:
            found[os.path.realpath(where)] = FoundEngine(name, where, strength)
    return sorted(found.values(), key=lambda e: -e.strength)


def engine_summary(path: str | None = None) -> str:
    """The ``xiangqi engine`` row of ``moddesk doctor``: the strongest engine hints and reviews use
    (``engine = "auto"``) and which built-in engine answers without one."""
    from moddesk.kit.errors import ServiceError
    from moddesk.xiangqi.core.engine import engine_name

    try:
        builtin = engine_name()
    except ServiceError as exc:
        builtin = exc.code
    builtin_text = {"native": "native (Rust, moddesk_native)", "reference": "reference (pure Python)"}.get(
        builtin, builtin
    )
    engines = find_engines(path)
    if engines:
        return f"{engines[0].name} ({engines[0].path}), the strongest found; built-in: {builtin_text}"
    return f"{builtin_text}, the strongest found (no Pikafish or Fairy-Stockfish installed)"


def resolve_engine(spec: str, path: str | None = None) -> str:
    """``auto`` → the strongest installed engine's ``uci:PATH`` (or ``builtin``); other specs unchanged."""
    if spec != "auto":
        return spec
    engines = find_engines(path)
    return engines[0].spec if engines else "builtin"
