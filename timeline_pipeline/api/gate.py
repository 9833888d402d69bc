"""The API's door: the bearer token is checked, then the body is read up to a cap, before
FastAPI parses anything.

FastAPI reads and parses a request body before any dependency runs, so a token dependency
alone lets an anonymous client make the server buffer and parse whatever it sends. Every route
of the API is built with the route class made here: it answers 401/403 from the headers alone,
then reads the body chunk by chunk and refuses it with 413 as soon as it passes the cap (a
declared Content-Length over the cap is refused before one byte is read), and only then hands
the request, with the body already read, to FastAPI. FastAPI's own `max_body_size` is not used:
its limiter turns any answer to a request that declares an oversized body, a 401 included,
into a plain-text 413.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any, Final

from fastapi import Request, Response
from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect

from timeline_pipeline.api.auth import (
    AUTHORIZED_STATE,
    SCOPES_STATE,
    TOKEN_STATE,
    check_token_grant,
)
from timeline_pipeline.api.errors import ApiRoute, ProblemResponse, problem_body
from timeline_pipeline.curation.rules import DETAIL_MAX_CHARS, SUMMARY_MAX_CHARS, TITLE_MAX_CHARS
from timeline_pipeline.web.body import BodyTooLarge, read_bounded_body, replaying
from timeline_pipeline.web.deps import get_engine, resolve

__all__ = ["MAX_BODY_BYTES", "GatedRoute"]

MAX_BODY_BYTES: Final = max(SUMMARY_MAX_CHARS, TITLE_MAX_CHARS + DETAIL_MAX_CHARS) * 6 + 16 * 1024
"""The largest valid body with every character JSON-escaped (`\\uXXXX`), plus room for the
other fields: no valid request is refused, and no request costs more than this in memory."""


class GatedRoute(ApiRoute):
    """An `ApiRoute` that authorizes from the headers and caps the body before FastAPI runs.

    Every router of the API is built with `route_class=GatedRoute`. The token is checked on the
    app's engine (`web.deps.get_engine`, overridable like any dependency)."""

    max_body_bytes: int = MAX_BODY_BYTES

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()
        max_body_bytes = self.max_body_bytes

        async def gated(request: Request) -> Response:
            workspace_id = request.path_params.get("workspace_id")
            if workspace_id is not None:
                engine = resolve(request, get_engine)
                refusal, grant = await run_in_threadpool(
                    check_token_grant, engine, request.headers.get("authorization"), workspace_id
                )
                if refusal is not None or grant is None:
                    assert refusal is not None
                    return ProblemResponse(
                        {"detail": refusal.detail},
                        refusal.status_code,
                        headers=dict(refusal.headers or {}),
                    )
                setattr(request.state, AUTHORIZED_STATE, workspace_id)
                setattr(request.state, SCOPES_STATE, grant.scopes)
                setattr(request.state, TOKEN_STATE, grant.token_id)
            try:
                body = await read_bounded_body(request, max_body_bytes)
            except BodyTooLarge:
                return ProblemResponse(
                    problem_body("body_too_large", f"the body is over {max_body_bytes} bytes"),
                    413,
                )
            except ClientDisconnect:
                # Nobody is left to read an answer; this one only ends the request.
                return ProblemResponse(
                    problem_body("client_disconnected", "the body was cut off"), 400
                )
            return await handler(Request(request.scope, replaying(body, request.receive)))

        return gated
