"""The xiangqi service on 127.0.0.1: ``/mcp`` for the model, the panel and its RPC for the person.

One place builds the listener for ``serve``, the stdio ``mcp`` command's panel, the demo and the
tests, so every one of them has the same two principals (``xiangqi.access``): the agent's bearer
token opens ``/mcp`` only; the person's login session (or person key) opens the panel and RPC.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

from starlette.applications import Starlette

from moddesk.kit import local_service
from moddesk.kit.http import LoopbackServer, guard
from moddesk.kit.mcp import serve_http
from moddesk.kit.person import PERSON_SCHEME, PersonGate, publish_person, withdraw_person
from moddesk.xiangqi.access import XIANGQI_ACCESS
from moddesk.xiangqi.game import GameService
from moddesk.xiangqi.rpc import MAX_LOAD_BODY, PANEL_PATH, rpc_routes

# the RPC routes cap their own bodies (and say so in the person's words: a record file's limit);
# the guard's cap is the backstop for everything else (/mcp), well above the routes' own
BACKSTOP_BODY = 4 * MAX_LOAD_BODY


class XiangqiHttp:
    """The game service's HTTP listener; ``mcp=False`` serves the person's panel alone (the stdio
    ``xiangqi mcp`` command talks to the model over stdio)."""

    def __init__(
        self,
        service: GameService,
        port: int = 0,
        *,
        mcp: bool = True,
        token: str | None = None,
        person: PersonGate | None = None,
    ):
        from moddesk.xiangqi.mcp import build_server

        self.token = token or local_service.new_token()  # the agent's: opens /mcp only
        self.person = person or PersonGate(system="xiangqi")  # the person's: links, sessions, CSRF
        self.has_mcp = mcp
        if mcp:
            self.server = serve_http(
                build_server(service, self.panel_url),
                port,
                extra_routes=rpc_routes(service),
                bearer_token=self.token,
                max_body=BACKSTOP_BODY,
                policy=XIANGQI_ACCESS,
                person=self.person,
            )
        else:
            self.server = LoopbackServer(
                lambda bound: guard(
                    Starlette(routes=rpc_routes(service)),
                    bound,
                    max_body=BACKSTOP_BODY,
                    policy=XIANGQI_ACCESS,
                    person=self.person,
                ),
                port,
            )
        self._endpoint: Path | None = None

    @property
    def url(self) -> str:
        return self.server.url

    @property
    def port(self) -> int:
        return self.server.port

    @property
    def mcp_url(self) -> str:
        return f"{self.server.url}/mcp"

    def panel_url(self, session: str | None = None) -> str:
        """Where the person's panel is (no secret in it: safe to tell the model)."""
        return f"{self.server.url}{PANEL_PATH}" + (f"?session={session}" if session else "")

    def login_link(self, session: str | None = None) -> str:
        """A one-time login link for the person (for their terminal only, never the model)."""
        return self.person.login_link(
            self.server.url, PANEL_PATH + (f"?session={session}" if session else "")
        )

    def person_headers(self) -> dict[str, str]:
        """What the person's CLI sends (the key it reads from the 0600 person file)."""
        return {"Authorization": f"{PERSON_SCHEME} {self.person.key}"}

    def client(self) -> contextlib.AbstractAsyncContextManager[Any]:
        """An SDK Client for ``/mcp`` with the agent's bearer token."""
        return local_service.http_client(self.mcp_url, self.token)

    def publish(self, endpoint: Path) -> None:
        """Write the endpoint file (url + agent token) and the person file beside it (both 0600)."""
        local_service.publish(endpoint, self.server.url, self.token, has_mcp=self.has_mcp)
        publish_person(endpoint, self.server.url, self.person.key)
        self._endpoint = endpoint

    def withdraw(self) -> None:
        if self._endpoint is not None:
            local_service.withdraw(self._endpoint, self.token)
            withdraw_person(self._endpoint, self.person.key)
            self._endpoint = None

    def start(self) -> XiangqiHttp:
        self.server.start()
        return self

    def stop(self) -> None:
        self.withdraw()
        self.server.stop()

    def serve_forever(self) -> None:
        self.server.serve_forever()

    def __enter__(self) -> XiangqiHttp:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
