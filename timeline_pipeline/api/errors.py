"""How refusals become HTTP answers, in one place: `{"detail": Problem}` bodies, except request
validation (422 from FastAPI's models), whose detail is a list of `{loc, msg, type}`.

| refusal                                  | status |
|------------------------------------------|--------|
| unknown entry / no summary               | 404    |
| stale revision or ETag                   | 409    |
| invalid status transition                | 409    |
| no revision and no If-Match on an entry  | 428    |
| invalid input (text, evidence, cursor)   | 400/422|
| body over the cap (after the token check) | 413    |
| database does not answer                 | 503    |
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from fastapi import HTTPException, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from sqlalchemy.exc import InterfaceError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeoutError
from starlette.exceptions import HTTPException as StarletteHTTPException

from timeline_pipeline.api.schemas import ErrorOut, UnprocessableOut
from timeline_pipeline.curation.errors import EntryNotFound, SummaryNotFound
from timeline_pipeline.db.engine import DatabaseUnavailable
from timeline_pipeline.domain.errors import InvalidInput, InvalidTransition, Refused, StaleRevision
from timeline_pipeline.store.workspaces import WorkspaceNotFound
from timeline_pipeline.web.responses import SafeJSONResponse

__all__ = [
    "ERROR_RESPONSES",
    "ApiRoute",
    "ProblemResponse",
    "curation_errors",
    "database_errors",
    "problem",
    "problem_body",
    "workspace_errors",
]


def problem(
    status_code: int, code: str, message: str, *, current_revision: int | None = None
) -> HTTPException:
    detail: dict[str, object] = {"code": code, "message": message}
    if current_revision is not None:
        detail["current_revision"] = current_revision
    return HTTPException(status_code, detail=detail)


def problem_body(code: str, message: str) -> dict[str, object]:
    """An `ErrorOut` body, for answers given outside FastAPI's exception handling."""
    return {"detail": {"code": code, "message": message}}


@contextmanager
def database_errors() -> Iterator[None]:
    try:
        yield
    except (DatabaseUnavailable, PoolTimeoutError, OperationalError, InterfaceError):
        raise problem(503, "database_unavailable", "the database did not answer") from None


@contextmanager
def workspace_errors(*refusals: type[Refused]) -> Iterator[None]:
    """The refusals of a workspace's resource outside curation's table: the database's, a
    missing workspace as 404 `workspace_not_found`, and each of `refusals` as its own status
    and code."""
    with database_errors():
        try:
            yield
        except WorkspaceNotFound as exc:
            raise problem(404, "workspace_not_found", str(exc)) from None
        except refusals as exc:
            raise problem(exc.status, exc.code, str(exc)) from None


@contextmanager
def curation_errors() -> Iterator[None]:
    with database_errors():
        try:
            yield
        except (EntryNotFound, SummaryNotFound, WorkspaceNotFound) as exc:
            raise problem(404, getattr(exc, "code", "not_found"), str(exc)) from None
        except StaleRevision as exc:
            raise problem(409, exc.code, str(exc), current_revision=exc.current_revision) from None
        except InvalidTransition as exc:
            raise problem(409, exc.code, str(exc)) from None
        except InvalidInput as exc:
            raise problem(422, exc.code, str(exc)) from None
        except Refused as exc:  # pragma: no cover - every refusal curation makes is listed above
            raise problem(400, exc.code, str(exc)) from None


def _doc(description: str) -> dict[str, Any]:
    return {"model": ErrorOut, "description": description}


ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    400: _doc("Malformed request: a body that is not UTF-8 JSON, a malformed If-Match or cursor."),
    401: _doc("No token, or an unknown or revoked one."),
    403: _doc("The token belongs to another workspace."),
    413: _doc("The body is over the API's size cap (checked after the token)."),
    422: {
        "model": UnprocessableOut,
        "description": "The body or a parameter does not match the schema (a list of issues), "
        "or breaks a curation rule the schema cannot state (`invalid_input`).",
    },
    503: _doc("The database did not answer."),
}

_STATUS_CODES = {400: "malformed_request", 404: "not_found", 405: "method_not_allowed"}


def _problem_detail(status_code: int, detail: Any) -> Any:
    """FastAPI's own refusals carry a bare string; every answer of this API is a `Problem`."""
    if isinstance(detail, str):
        return {"code": _STATUS_CODES.get(status_code, "refused"), "message": detail}
    return detail


class ProblemResponse(SafeJSONResponse):
    """An error answer: the app's one safe JSON encoding (web/responses.py), so a lone
    surrogate echoed from a client's input cannot turn a refusal into a 500."""


def _validation_detail(errors: Sequence[Any]) -> list[dict[str, Any]]:
    # Location, type and message only: echoing the input back serves no client and could
    # repeat a large or sensitive body.
    return [
        {
            "type": str(error.get("type", "invalid")),
            "loc": [p if isinstance(p, int) else str(p) for p in error.get("loc", ())],
            "msg": str(error.get("msg", "invalid value")),
        }
        for error in errors
        if isinstance(error, Mapping)
    ]


class ApiRoute(APIRoute):
    """Renders this API's refusals itself, so that their bodies are always encodable
    (`ProblemResponse`), whatever exception handlers the hosting app installs."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def guarded(request: Request) -> Response:
            try:
                return await handler(request)
            except RequestValidationError as exc:
                return ProblemResponse({"detail": _validation_detail(exc.errors())}, 422)
            except StarletteHTTPException as exc:
                return ProblemResponse(
                    {"detail": _problem_detail(exc.status_code, exc.detail)},
                    exc.status_code,
                    headers=dict(exc.headers or {}),
                )

        return guarded
