"""`GET /api/openapi.json` (and `/api/docs`): the schema of the API's routes, the contract.

The schema is the whole app's, narrowed to `/api/...`: the paths as actually mounted. It is
built on the first request and kept on the app's state.
"""

from __future__ import annotations

from typing import Any, Final

from fastapi import APIRouter, Request
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.openapi.utils import get_openapi
from fastapi.responses import HTMLResponse, JSONResponse

from timeline_pipeline.api.errors import ERROR_RESPONSES
from timeline_pipeline.api.gate import GatedRoute
from timeline_pipeline.api.params import API_PREFIX, API_VERSION, OPENAPI_PATH

router = APIRouter(responses=ERROR_RESPONSES, route_class=GatedRoute)

_SCHEMA_STATE: Final = "api_openapi_schema"


@router.get("/openapi.json", include_in_schema=False)
def openapi(request: Request) -> JSONResponse:
    schema: dict[str, Any] | None = getattr(request.app.state, _SCHEMA_STATE, None)
    if schema is None:
        schema = get_openapi(
            title="timeline-pipeline API",
            version=API_VERSION,
            description="The curated incident timeline of a workspace, with its evidence.",
            routes=request.app.routes,
        )
        schema["paths"] = {
            path: item
            for path, item in schema.get("paths", {}).items()
            if path.startswith(API_PREFIX + "/")
        }
        setattr(request.app.state, _SCHEMA_STATE, schema)
    return JSONResponse(schema)


@router.get("/docs", include_in_schema=False)
def docs() -> HTMLResponse:
    return get_swagger_ui_html(openapi_url=OPENAPI_PATH, title="timeline-pipeline API")
