"""Opaque cursors: bound to their query and revision; tampering is refused."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from moddesk.kit.cursor import CursorCodec
from moddesk.kit.errors import ServiceError

QUERY = {"q": "sword", "scope": "equipment/", "sort": "path"}


def test_round_trip() -> None:
    codec = CursorCodec()
    token = codec.encode(QUERY, {"offset": 40, "after": "a/b.equ"}, revision=7)
    assert codec.decode(token, dict(reversed(list(QUERY.items()))), revision=7) == {
        "offset": 40,
        "after": "a/b.equ",
    }


def test_tampered_cursor_is_invalid() -> None:
    codec = CursorCodec()
    token = codec.encode(QUERY, 40, revision=1)
    body, sig = token.split(".")
    flipped = body[:-2] + ("A" if body[-2] != "A" else "B") + body[-1]
    for bad in (f"{flipped}.{sig}", f"{body}.{sig[:-1]}", token + "x", "garbage", ""):
        with pytest.raises(ServiceError) as caught:
            codec.decode(bad, QUERY, revision=1)
        assert caught.value.code == "INVALID_CURSOR"


def test_cursor_of_another_query_or_server_is_invalid() -> None:
    codec = CursorCodec()
    token = codec.encode(QUERY, 40, revision=1)
    with pytest.raises(ServiceError) as caught:
        codec.decode(token, {**QUERY, "q": "shield"}, revision=1)
    assert caught.value.code == "INVALID_CURSOR"
    with pytest.raises(ServiceError) as caught:
        CursorCodec().decode(token, QUERY, revision=1)  # another process's secret
    assert caught.value.code == "INVALID_CURSOR"


def test_moved_revision_gives_the_callers_stale_code() -> None:
    codec = CursorCodec()
    token = codec.encode(QUERY, 40, revision={"workspace": "w1", "revision": 3})
    with pytest.raises(ServiceError) as caught:
        codec.decode(token, QUERY, revision={"workspace": "w1", "revision": 4}, stale_code="STALE_SEARCH")
    assert caught.value.code == "STALE_SEARCH"
    assert caught.value.hint


@given(st.text(max_size=300))
def test_decode_never_raises_anything_but_service_error(token: str) -> None:
    codec = CursorCodec(secret=b"k" * 32)
    try:
        codec.decode(token, QUERY, revision=1)
    except ServiceError as exc:
        assert exc.code == "INVALID_CURSOR"


@given(st.binary(max_size=200), st.binary(max_size=40))
def test_decode_of_signed_garbage_body(body: bytes, sig: bytes) -> None:
    import base64

    codec = CursorCodec(secret=b"k" * 32)
    token = base64.urlsafe_b64encode(body).decode() + "." + base64.urlsafe_b64encode(sig).decode()
    with pytest.raises(ServiceError):
        codec.decode(token, QUERY, revision=1)
