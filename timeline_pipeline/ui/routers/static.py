"""The page's own files under `/ui/static/` (docs/timeline-page.md), from the package: nothing
the page uses is fetched from anywhere else.

No `from __future__ import annotations`: FastAPI reads the handlers' annotations.
"""

from typing import Annotated

from fastapi import APIRouter, Path, Request, Response
from fastapi.responses import PlainTextResponse

from timeline_pipeline.ui.templating import static_file

__all__ = ["router"]

router = APIRouter()


@router.get("/static/{name}")
def static(name: Annotated[str, Path(max_length=64)], request: Request) -> Response:
    found = static_file(name)
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
