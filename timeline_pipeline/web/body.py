"""Read a request body up to a limit, refusing as early as possible.

A declared Content-Length above the limit is refused before one byte is read; a body without
one (chunked) is read chunk by chunk and refused as soon as it passes the limit, so an oversized
callback never costs more than `limit` bytes of memory.
"""

from __future__ import annotations

from starlette.requests import Request


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
