"""`GET /api/openapi.json` (and `/api/docs`): the schema of the API's routes, the contract.

The schema is the whole app's, narrowed to `/api/...`: the paths as actually mounted. It is
built on the first request and kept on the app's state.

`/api/docs` is Swagger UI served by `serve` itself: its script and stylesheet are the files the
pinned `fastapi-offline` package ships, and the page starts it from a file of this package, so
the page loads nothing from anywhere else and its Content-Security-Policy allows scripts from
this origin only (docs/http.md; docs/exposure.md says who should reach it at all).
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import Annotated, Any, Final

from fastapi import APIRouter, Path, Request
from fastapi.openapi.utils import get_openapi
from fastapi.responses import HTMLResponse, JSONResponse, Response

from timeline_pipeline.api.errors import ERROR_RESPONSES
from timeline_pipeline.api.gate import GatedRoute
from timeline_pipeline.api.params import API_PREFIX, API_VERSION, OPENAPI_PATH
from timeline_pipeline.web.static import StaticFile, static_response

router = APIRouter(responses=ERROR_RESPONSES, route_class=GatedRoute)

_SCHEMA_STATE: Final = "api_openapi_schema"
DOCS_ASSETS: Final = f"{API_PREFIX}/docs/assets"
DOCS_CSP: Final = (
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; connect-src 'self'; font-src 'self'; form-action 'none'; "
    "frame-ancestors 'none'; base-uri 'none'"
)
"""Scripts from this origin only. Swagger UI sets style attributes and draws its icons as
`data:` images, which is all the policy allows beyond that."""
_DOCS_HEADERS: Final = {
    "Content-Security-Policy": DOCS_CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
}
_ASSETS: Final = {
    # name served -> (package, file in it, media type)
    "swagger-ui-bundle.js": (
        "fastapi_offline",
        "static/swagger-ui-bundle.js",
        "text/javascript; charset=utf-8",
    ),
    "swagger-ui.css": ("fastapi_offline", "static/swagger-ui.css", "text/css; charset=utf-8"),
    "favicon.png": ("fastapi_offline", "static/favicon.png", "image/png"),
    "docs-init.js": (
        "timeline_pipeline.api",
        "docs_static/docs-init.js",
        "text/javascript; charset=utf-8",
    ),
}


@cache
def _asset(name: str) -> StaticFile | None:
    found = _ASSETS.get(name)
    if found is None:
        return None
    package, path, media_type = found
    return StaticFile.of(resources.files(package).joinpath(path).read_bytes(), media_type)


def _asset_url(name: str) -> str:
    asset = _asset(name)
    version = asset.etag.strip('"') if asset else "0"
    return f"{DOCS_ASSETS}/{name}?v={version}"


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
    page = f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="referrer" content="no-referrer">
<title>timeline-pipeline API</title>
<link rel="icon" type="image/png" href="{_asset_url("favicon.png")}">
<link rel="stylesheet" href="{_asset_url("swagger-ui.css")}">
<script src="{_asset_url("swagger-ui-bundle.js")}" defer></script>
<script src="{_asset_url("docs-init.js")}" defer></script>
</head>
<body>
<div id="swagger-ui" data-openapi="{OPENAPI_PATH}"></div>
</body>
</html>
"""
    return HTMLResponse(page, headers={**_DOCS_HEADERS, "Cache-Control": "no-store"})


@router.get("/docs/assets/{name}", include_in_schema=False)
def docs_asset(name: Annotated[str, Path(max_length=64)], request: Request) -> Response:
    return static_response(_asset(name), request)
