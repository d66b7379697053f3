"""moddesk: one shared, safe, revision-checked way for AI agents and people to work on game data."""

__version__ = "0.1.0"
