"""Who owns which route: the agent (``/mcp``), the person (everything else), or anyone (login).

Each system declares one ``AccessPolicy``: its person-only actions, listed in one place, and
the page paths a browser navigates to. The HTTP guard (``kit.http``) asks the policy for every
request, so a route a system adds later is the person's unless the policy says otherwise: a new
route can never open to the agent by accident.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from moddesk.kit.errors import ServiceError
from moddesk.kit.person import LOGIN_PATH, PERSON_SCRIPT_PATH


def _under(path: str, prefix: str) -> bool:
    """``path`` is ``prefix`` itself or below it (``/`` means the root page only)."""
    if prefix == "/":
        return path == "/"
    return path == prefix.rstrip("/") or path.startswith(prefix.rstrip("/") + "/")


class Principal(StrEnum):
    """Who may call a route."""

    AGENT = "agent"  # the bearer token of the endpoint file
    PERSON = "person"  # the login session (+ CSRF token), or the person key of the local CLI
    ANYONE = "anyone"  # the login route itself and harmless assets


@dataclass(frozen=True)
class PersonAction:
    """An action only the person may take, the routes that perform it, and how MCP refuses it."""

    name: str
    zh: str
    en: str
    routes: tuple[str, ...]  # "METHOD /path" as the app's route table spells it
    agent_side: str  # why the agent cannot do it over MCP (no tool / which tool refuses, with what)


def _payload(error: ServiceError) -> dict[str, Any]:
    return error.to_payload()


@dataclass(frozen=True)
class AccessPolicy:
    """The access table of one system's HTTP listener."""

    system: str
    person_actions: tuple[PersonAction, ...]
    # GET/HEAD under these prefixes are browser navigations (the page, its static files): they
    # need the session cookie only, since a navigation cannot carry the CSRF header
    page_prefixes: tuple[str, ...]
    agent_paths: tuple[str, ...] = ("/mcp",)
    open_paths: tuple[str, ...] = (LOGIN_PATH, PERSON_SCRIPT_PATH, "/favicon.ico")
    # the JSON error shape of this system's person routes
    error_body: Callable[[ServiceError], dict[str, Any]] = field(default=_payload)

    def principal(self, path: str) -> Principal:
        """The owner of ``path``: the agent's paths, the open ones, else the person."""
        if any(path == p or path.startswith(p + "/") for p in self.agent_paths):
            return Principal.AGENT
        if path in self.open_paths:
            return Principal.ANYONE
        return Principal.PERSON

    def is_navigation(self, method: str, path: str) -> bool:
        """A page load the browser makes by itself (session cookie only, no CSRF token)."""
        if method not in ("GET", "HEAD"):
            return False
        return any(_under(path, prefix) for prefix in self.page_prefixes)

    def action(self, name: str) -> PersonAction:
        for action in self.person_actions:
            if action.name == name:
                return action
        raise KeyError(name)

    def person_routes(self) -> set[str]:
        """Every "METHOD /path" some person-only action is performed with."""
        return {route for action in self.person_actions for route in action.routes}
