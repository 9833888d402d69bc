"""Bounded body reading (`web/body.py`): a declared length over the limit is refused before a
byte is read, a chunked body as soon as it passes the limit, and a body read once replays to
whoever reads the request next."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest
from starlette.requests import Request
from starlette.types import Message

from timeline_pipeline.web.body import BodyTooLarge, read_bounded_body, replaying


class _Client:
    """The client's side of one request: its body in chunks, then a disconnect."""

    def __init__(self, chunks: Sequence[bytes]) -> None:
        self.messages: list[Message] = [
            {"type": "http.request", "body": chunk, "more_body": i < len(chunks) - 1}
            for i, chunk in enumerate(chunks)
        ]
        self.read = 0

    async def receive(self) -> Message:
        if self.read < len(self.messages):
            self.read += 1
            return self.messages[self.read - 1]
        return {"type": "http.disconnect"}


def _request(client: _Client, content_length: int | None = None) -> Request:
    headers = [] if content_length is None else [(b"content-length", str(content_length).encode())]
    scope = {"type": "http", "method": "POST", "path": "/", "headers": headers}
    return Request(scope, client.receive)


def test_a_body_within_the_limit_is_read_whole() -> None:
    client = _Client([b"ab", b"cd", b"e"])

    assert asyncio.run(read_bounded_body(_request(client), 5)) == b"abcde"


def test_a_declared_length_over_the_limit_is_refused_before_reading() -> None:
    client = _Client([b"abcdef"])

    with pytest.raises(BodyTooLarge):
        asyncio.run(read_bounded_body(_request(client, content_length=6), 5))
    assert client.read == 0


def test_a_chunked_body_is_refused_as_soon_as_it_passes_the_limit() -> None:
    client = _Client([b"abc", b"def", b"ghi"])

    with pytest.raises(BodyTooLarge):
        asyncio.run(read_bounded_body(_request(client), 5))
    assert client.read == 2


def test_a_body_read_once_replays_then_the_client_speaks_again() -> None:
    client = _Client([b"abc"])

    async def read_twice() -> tuple[bytes, bytes, Message]:
        request = _request(client)
        body = await read_bounded_body(request, 10)
        receive = replaying(body, client.receive)
        again = await Request(request.scope, receive).body()
        return body, again, await receive()

    body, again, after = asyncio.run(read_twice())

    assert body == again == b"abc"
    assert after == {"type": "http.disconnect"}
