"""The timeline API, mounted by `serve` under `/api` (docs/http.md, "Timeline API").

One router per resource (`api/routers/`), in the order the OpenAPI document lists them. A new
resource is a module with a module-level `router = APIRouter(responses=ERROR_RESPONSES,
route_class=GatedRoute)` (the gate checks the token and caps the body before FastAPI parses
anything: api/gate.py), added to the tuple below (which includes it and gives each of its paths
a 405 that names the path's methods).
"""

from __future__ import annotations

from typing import Final

from fastapi import APIRouter, Request, Response
from fastapi.routing import APIRoute

from timeline_pipeline.api.errors import ProblemResponse, problem_body
from timeline_pipeline.api.params import API_PREFIX
from timeline_pipeline.api.routers import (
    contract,
    curators,
    entries,
    evidence,
    holds,
    report,
    summary,
    timeline,
)

__all__ = ["api_router"]

_HTTP_METHODS: Final = frozenset(
    {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE", "CONNECT", "QUERY"}
)


def _answer_other_methods(router: APIRouter) -> None:
    """A 405 naming every method of the resource, for any method it does not have.

    FastAPI makes one route per method, and Starlette's own 405 lists the methods of the first
    route whose path matched only. One more route per path takes every other method.
    """
    allowed: dict[str, set[str]] = {}
    for route in router.routes:
        if isinstance(route, APIRoute):
            allowed.setdefault(route.path, set()).update(route.methods or ())
    for path, methods in allowed.items():
        allow = ", ".join(sorted(methods))

        async def refuse(_request: Request, allow: str = allow) -> Response:
            body = problem_body("method_not_allowed", f"this resource allows {allow}")
            return ProblemResponse(body, 405, headers={"Allow": allow})

        others = sorted(_HTTP_METHODS - methods)
        router.add_route(path, refuse, methods=others, include_in_schema=False)


api_router = APIRouter(prefix=API_PREFIX)
for _resource in (timeline, evidence, entries, summary, report, curators, holds, contract):
    # Per resource router, before including it: FastAPI keeps an included router whole, and
    # each path belongs to one resource.
    _answer_other_methods(_resource.router)
    api_router.include_router(_resource.router)
