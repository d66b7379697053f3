"""Opaque, HMAC-signed pagination cursors bound to the query that issued them."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import secrets
from collections.abc import Mapping
from typing import Any

from moddesk.kit.errors import ServiceError

MAX_CURSOR_LENGTH = 4096
_SIG_BYTES = 16


def canonical_json(value: Any) -> str:
    """Deterministic JSON used to compare query identities and revisions."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _invalid(reason: str) -> ServiceError:
    return ServiceError(
        "INVALID_CURSOR",
        f"invalid cursor: {reason}",
        hint="Call again without a cursor to start from the first page.",
    )


class CursorCodec:
    """Encodes a page position with the query identity and revision it belongs to.

    The query identity is hashed into the token, so a cursor replayed against another query
    is rejected as ``INVALID_CURSOR``; a cursor whose query matches but whose revision moved is
    rejected with the caller's stale code, so the caller knows to restart rather than retry.
    """

    def __init__(self, secret: bytes | None = None) -> None:
        self._secret = secret if secret is not None else secrets.token_bytes(32)

    def _sign(self, body: bytes) -> bytes:
        return hmac.new(self._secret, body, hashlib.sha256).digest()[:_SIG_BYTES]

    @staticmethod
    def _query_hash(query: Mapping[str, Any]) -> str:
        return hashlib.sha256(canonical_json(dict(query)).encode()).hexdigest()[:24]

    def encode(self, query: Mapping[str, Any], position: Any, revision: Any = None) -> str:
        """Return the opaque token for ``position`` within ``query`` at ``revision``."""
        body = canonical_json({"q": self._query_hash(query), "r": canonical_json(revision), "p": position})
        raw = body.encode()
        return f"{_b64(raw)}.{_b64(self._sign(raw))}"

    def decode(
        self,
        token: str,
        query: Mapping[str, Any],
        revision: Any = None,
        stale_code: str = "STALE_CURSOR",
    ) -> Any:
        """Return the position stored in ``token``, or raise ``ServiceError``."""
        if not isinstance(token, str) or not token:
            raise _invalid("empty or not a string")
        if len(token) > MAX_CURSOR_LENGTH:
            raise _invalid("too long")
        body_part, sep, sig_part = token.partition(".")
        if not sep:
            raise _invalid("malformed")
        try:
            raw = _unb64(body_part)
            signature = _unb64(sig_part)
        except (binascii.Error, ValueError) as exc:
            raise _invalid("not base64") from exc
        if not hmac.compare_digest(signature, self._sign(raw)):
            raise _invalid("signature does not match (tampered, or issued by another server)")
        try:
            data = json.loads(raw)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:  # pragma: no cover - signed by us
            raise _invalid("unreadable") from exc
        if not isinstance(data, dict) or "p" not in data:
            raise _invalid("unreadable")
        if data.get("q") != self._query_hash(query):
            raise _invalid("it belongs to another query (filters, sort or scope differ)")
        if data.get("r") != canonical_json(revision):
            raise ServiceError(
                stale_code,
                "the data changed since this cursor was issued",
                hint="Start the listing again without a cursor.",
                cursorRevision=data.get("r"),
            )
        return data["p"]
