"""Read a request body up to a limit, refusing as early as possible.

A declared Content-Length above the limit is refused before one byte is read; a body without
one (chunked) is read chunk by chunk and refused as soon as it passes the limit, so an oversized
callback never costs more than `limit` bytes of memory.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.types import Message, Receive


class BodyTooLarge(Exception):
    pass


async def read_bounded_body(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise BodyTooLarge
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge
        chunks.append(chunk)
    return b"".join(chunks)


def replaying(body: bytes, receive: Receive) -> Receive:
    """A receive channel that gives a body already read (by `read_bounded_body`), then the
    client's own messages (a disconnect), so a request built on it reads like the original."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay
