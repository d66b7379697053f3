"""The JSON-RPC protocol of the language server: every request gets a response.

pygls logs a request whose params do not deserialize (a position at ``line: -5``) and drops it:
the client waits for ever for its answer. Here such a request is answered at once with
``InvalidParams`` naming what was wrong, and the message goes on as a no-op notification.
"""

from __future__ import annotations

from typing import Any

from lsprotocol.types import ResponseError
from pygls.exceptions import JsonRpcException
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.json_rpc import JsonRPCNotification

ANSWERED = "$/moddesk/answered"  # what a refused request becomes once its error is sent


def _leaf_messages(error: BaseException) -> list[str]:
    """The innermost reasons of a (cattrs) validation error, e.g. 'Position.line should be …'."""
    inner = getattr(error, "exceptions", None)
    if isinstance(inner, (list, tuple)) and inner:
        return [text for sub in inner for text in _leaf_messages(sub)]
    return [str(error)]


class AnsweringProtocol(LanguageServerProtocol):
    """``LanguageServerProtocol`` that answers undecodable requests instead of dropping them."""

    def structure_message(self, data: dict[str, Any]) -> Any:
        try:
            return super().structure_message(data)
        except JsonRpcException as exc:
            if not ("jsonrpc" in data and "id" in data and "method" in data):
                raise  # a notification or a response: nothing waits for an answer
            cause = exc.__cause__
            reasons = "; ".join(_leaf_messages(cause))[:300] if cause is not None else exc.message
            method = str(data["method"])
            self._send_response(
                data["id"],
                error=ResponseError(code=exc.code, message=f"invalid params for {method}: {reasons}"),
            )
            return JsonRPCNotification(method=ANSWERED, params=None, jsonrpc="2.0")
