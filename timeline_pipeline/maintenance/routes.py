"""The maintenance listener's routes (docs/maintenance.md): never on the public router;
`maintenance.listener.create_maintenance_app` builds the separate app that serves them.

`POST /maintenance/jobs`, `GET /maintenance/jobs/{id}`,
`POST /maintenance/jobs/{id}/{action}` with `{"revision": N}` (configure also `options`).

| refusal                                   | status |
|-------------------------------------------|--------|
| malformed body, limits or parameters      | 400    |
| request from a non-loopback address       | 403    |
| `Host` not 127.0.0.1/localhost on its port | 403    |
| any `Origin` header (a browser page)      | 403    |
| unknown job                               | 404    |
| body over `MAX_BODY_BYTES`                | 413    |
| stale revision, action not allowed now    | 409 with `job` |
| batch in progress (busy)                  | 409 without `job` |
| idempotency key reused with other input, second open job | 409 |
| the job's delay has not passed            | 429 with `retry_after_ms` |
| database does not answer                  | 503    |

No `from __future__ import annotations`: FastAPI reads these annotations at route definition.
"""

import ipaddress
import math
import re
from collections.abc import Awaitable, Callable, Coroutine
from typing import Annotated, Any, Final

from fastapi import APIRouter, Depends, FastAPI, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from pydantic import BaseModel, ConfigDict, StrictBool, StrictInt
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect

from timeline_pipeline.db.engine import DatabaseUnavailable
from timeline_pipeline.domain.errors import InvalidInput, Refused
from timeline_pipeline.maintenance.endpoint import ACTOR_HEADER, ALLOWED_HOSTS, JOBS_PATH
from timeline_pipeline.maintenance.errors import TooEarly
from timeline_pipeline.maintenance.limits import parse_limits
from timeline_pipeline.maintenance.service import UNATTRIBUTED, JobService, job_json
from timeline_pipeline.observability.logs import get_logger
from timeline_pipeline.web.body import BodyTooLarge, read_bounded_body, replaying
from timeline_pipeline.web.responses import SafeJSONResponse

log = get_logger("timeline_pipeline.maintenance.routes")

MAX_BODY_BYTES: Final = 64 * 1024
"""The listener's body cap: a create carries a type, a key, a few parameters and four limits
(and docs/maintenance.md keeps content out of parameters), so any valid body is far below it;
no request costs more than this in memory."""


def is_loopback(host: str | None) -> bool:
    if host is None:
        return False
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


ACTOR_RE = re.compile(r"^[A-Za-z0-9._:@-]{1,128}$")


def host_allowed(host_header: str | None, port: int | None) -> bool:
    """Only `127.0.0.1` or `localhost`, with the listener's own port when one is given: a page
    that reached the listener by DNS rebinding carries its own name (docs/maintenance.md).
    The listener binds IPv4 loopback only, so `[::1]` is not among them."""
    if not host_header:
        return False
    name, sep, given = host_header.partition(":")
    if name.lower() not in ALLOWED_HOSTS:
        return False
    if not sep:
        return True
    return given.isdigit() and port is not None and int(given) == port


def request_actor(request: Request) -> str:
    """Who drives this request, from the driver's actor header (unattributed otherwise)."""
    given = request.headers.get(ACTOR_HEADER)
    return given if given and ACTOR_RE.match(given) else UNATTRIBUTED


def get_job_service(request: Request) -> JobService:
    service: JobService = request.app.state.maintenance
    return service


JobServiceDep = Annotated[JobService, Depends(get_job_service)]


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CreateBody(_Body):
    type: str
    idempotency_key: str
    apply: StrictBool = False
    parameters: dict[str, Any] = {}
    options: dict[str, Any] = {}


class ActionBody(_Body):
    revision: StrictInt
    options: dict[str, Any] | None = None


def refusal_status(exc: Refused) -> int:
    """The listener's status for a refusal: its own, except invalid input, which the listener
    answers with 400 like a body that does not validate (docs/maintenance.md)."""
    return 400 if isinstance(exc, InvalidInput) else exc.status


def refusal_body(exc: Refused) -> dict[str, Any]:
    """A refusal's answer: one-line reason, the job when the caller needs its revision, and the
    time left of the delay on a 429."""
    body: dict[str, Any] = {"detail": {"code": exc.code, "message": str(exc)}}
    if exc.current is not None:
        body["job"] = job_json(exc.current)
    if isinstance(exc, TooEarly):
        body["retry_after_ms"] = exc.retry_after_ms
    return body


def _refusal(exc: Refused) -> Response:
    headers: dict[str, str] = {}
    if isinstance(exc, TooEarly):
        headers["Retry-After"] = str(max(1, math.ceil(exc.retry_after_ms / 1000)))
    return SafeJSONResponse(refusal_body(exc), status_code=refusal_status(exc), headers=headers)


def _problem(status: int, code: str, message: str) -> Response:
    return SafeJSONResponse({"detail": {"code": code, "message": message}}, status_code=status)


def install(app: FastAPI) -> None:
    """The listener's loopback check and its refusal answers, on the listener's app only."""

    @app.middleware("http")
    async def loopback_only(
        request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        peer = request.client.host if request.client else None
        if not is_loopback(peer):
            log.warning("maintenance.refused_peer", reason="not_loopback")
            return _problem(403, "not_loopback", "the maintenance listener serves loopback only")
        if "origin" in request.headers:
            log.warning("maintenance.refused_peer", reason="origin")
            return _problem(
                403, "origin_refused", "the maintenance listener refuses browser requests (Origin)"
            )
        server_port = request.scope.get("server", (None, None))[1]
        if not host_allowed(request.headers.get("host"), server_port):
            log.warning("maintenance.refused_peer", reason="host")
            return _problem(
                403, "host_refused", "the maintenance listener answers Host 127.0.0.1 or localhost"
            )
        return await call_next(request)

    @app.exception_handler(Refused)
    async def maintenance_error(_request: Request, exc: Refused) -> Response:
        return _refusal(exc)

    @app.exception_handler(RequestValidationError)
    async def invalid_body(_request: Request, exc: RequestValidationError) -> Response:
        first = exc.errors()[0] if exc.errors() else {}
        where = ".".join(str(part) for part in first.get("loc", ()) if part != "body")
        message = f"{where or 'body'}: {first.get('msg', 'invalid')}"
        return _problem(400, "invalid_input", message)

    @app.exception_handler(DatabaseUnavailable)
    async def database_down(_request: Request, _exc: DatabaseUnavailable) -> Response:
        return _problem(503, "database_unavailable", "the database did not answer")

    @app.exception_handler(StarletteHTTPException)
    async def http_error(_request: Request, exc: StarletteHTTPException) -> Response:
        return _problem(
            exc.status_code, "not_found" if exc.status_code == 404 else "refused", str(exc.detail)
        )


class BoundedRoute(APIRoute):
    """A route whose body is read up to `MAX_BODY_BYTES` before FastAPI parses it, as the API's
    routes are (`api.gate`; `web.body`): a declared Content-Length over the cap is refused
    before one byte is read, a chunked body as soon as it passes the cap (413)."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def bounded_handler(request: Request) -> Response:
            try:
                body = await read_bounded_body(request, MAX_BODY_BYTES)
            except BodyTooLarge:
                log.warning("maintenance.refused_body", reason="too_large")
                return _problem(413, "body_too_large", f"the body is over {MAX_BODY_BYTES} bytes")
            except ClientDisconnect:
                return _problem(400, "client_disconnected", "the body was cut off")
            return await handler(Request(request.scope, replaying(body, request.receive)))

        return bounded_handler


router = APIRouter(route_class=BoundedRoute)


@router.post(JOBS_PATH)
def create_job(body: CreateBody, request: Request, service: JobServiceDep) -> Response:
    job, created = service.create(
        actor=request_actor(request),
        job_type=body.type,
        idempotency_key=body.idempotency_key,
        parameters=body.parameters,
        limits=parse_limits(body.options),
        apply=body.apply,
    )
    return SafeJSONResponse(job_json(job), status_code=201 if created else 200)


@router.get(JOBS_PATH + "/{job_id}")
def get_job(job_id: str, service: JobServiceDep) -> Response:
    return SafeJSONResponse(service.view(job_id))


@router.post(JOBS_PATH + "/{job_id}/{action}")
def act(
    job_id: str, action: str, body: ActionBody, request: Request, service: JobServiceDep
) -> Response:
    limits = parse_limits(body.options) if body.options is not None else None
    job = service.act(
        job_id, action, revision=body.revision, limits=limits, actor=request_actor(request)
    )
    return SafeJSONResponse(service.present(job))
