"""Lark's reply envelope, shared so the messaging and the Docs routes of the local Lark agree.

Lark answers `{"code", "msg", "data"}`: code 0 and `data` on success, its error code, message
and HTTP status (with headers such as `Retry-After`) otherwise. A route raises `LarkError`
(`rate_limited`: the one every rate limit answers with); `handle_lark_errors` renders it on the
app. `json_object_body` reads a request's JSON object, refused with the route family's own
invalid-parameter code.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

CODE_RATE_LIMITED: Final = 99991400


class LarkError(Exception):
    """Raised inside a route; rendered as Lark's error envelope."""

    def __init__(
        self, code: int, msg: str, *, status: int = 400, headers: Mapping[str, str] | None = None
    ) -> None:
        super().__init__(msg)
        self.code = code
        self.msg = msg
        self.status = status
        self.headers = dict(headers or {})


def rate_limited(wait_seconds: int) -> LarkError:
    """Lark's answer over a rate limit: HTTP 429, code 99991400, and when to come back."""
    wait = str(wait_seconds)
    return LarkError(
        CODE_RATE_LIMITED,
        "request trigger frequency limit",
        status=429,
        headers={"Retry-After": wait, "x-ogw-ratelimit-reset": wait},
    )


def lark_reply(data: Mapping[str, Any] | None = None, **extra: Any) -> JSONResponse:
    """Lark's success envelope around `data`, with any `extra` top-level fields."""
    return JSONResponse({"code": 0, "msg": "success", "data": dict(data or {}), **extra})


def handle_lark_errors(app: FastAPI) -> None:
    """Render every `LarkError` a route of `app` raises as Lark's error envelope."""

    @app.exception_handler(LarkError)
    async def _lark_error(_: Request, exc: LarkError) -> JSONResponse:
        return JSONResponse(
            {"code": exc.code, "msg": exc.msg, "data": {}},
            status_code=exc.status,
            headers=exc.headers,
        )


async def json_object_body(request: Request, invalid_code: int) -> dict[str, Any]:
    """The request's JSON object (an empty body reads as `{}`); anything else is refused with
    `invalid_code`."""
    raw = await request.body()
    try:
        body = json.loads(raw or b"{}")
    except ValueError:
        raise LarkError(invalid_code, "request body is not JSON") from None
    if not isinstance(body, dict):
        raise LarkError(invalid_code, "request body is not an object")
    return body
