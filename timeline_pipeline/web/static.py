"""Files served from the package with a content-hash ETag: the page's `/ui/static/` files and
the API docs' `/api/docs/assets/` (docs/timeline-page.md, docs/http.md).

Both answer the same way: cacheable for good (their URLs carry the hash), `304` when the
browser already holds this version, a plain `404` for a name that is not one of the files.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from fastapi import Request
from fastapi.responses import PlainTextResponse, Response


@dataclass(frozen=True, slots=True)
class StaticFile:
    body: bytes
    media_type: str
    etag: str

    @classmethod
    def of(cls, body: bytes, media_type: str) -> StaticFile:
        """The file with its ETag, the first 16 hex digits of the body's SHA-256."""
        return cls(body, media_type, f'"{hashlib.sha256(body).hexdigest()[:16]}"')


def static_response(found: StaticFile | None, request: Request) -> Response:
    """The file (or `304` for the same ETag), else `404 not found`."""
    if found is None:
        return PlainTextResponse("not found", status_code=404)
    headers = {
        "ETag": found.etag,
        "Cache-Control": "public, max-age=31536000, immutable",
        "X-Content-Type-Options": "nosniff",
    }
    if request.headers.get("if-none-match") == found.etag:
        return Response(status_code=304, headers=headers)
    return Response(found.body, media_type=found.media_type, headers=headers)
