"""The page's own files under `/ui/static/` (docs/timeline-page.md), from the package: nothing
the page uses is fetched from anywhere else.

No `from __future__ import annotations`: FastAPI reads the handlers' annotations.
"""

from typing import Annotated

from fastapi import APIRouter, Path, Request, Response

from timeline_pipeline.ui.templating import static_file
from timeline_pipeline.web.static import static_response

__all__ = ["router"]

router = APIRouter()


@router.get("/static/{name}")
def static(name: Annotated[str, Path(max_length=64)], request: Request) -> Response:
    return static_response(static_file(name), request)
