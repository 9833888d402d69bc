"""The maintenance listener: a separate FastAPI app on its own uvicorn server, bound to
127.0.0.1 only (README, "Maintenance jobs").

`serve` starts it only when MAINTENANCE_PORT is set; an invalid port or a failed bind disables
this listener alone, with a logged error, and the receiver runs on. There is deliberately no
application authentication: access relies on being inside the container's network namespace,
so the address is fixed to loopback and not configurable, every request from a non-loopback
peer is refused, and none of these routes is mounted on the public router. On shutdown the
listener is drained (its in-flight batches commit) before the database pool closes.

Routes: `POST /maintenance/jobs`, `GET /maintenance/jobs/{id}`,
`POST /maintenance/jobs/{id}/{action}` with `{"revision": N}` (configure also `options`).

| refusal                                   | status |
|-------------------------------------------|--------|
| malformed body, limits or parameters      | 400    |
| request from a non-loopback address       | 403    |
| unknown job                               | 404    |
| stale revision, action not allowed now    | 409 with `job` |
| batch in progress (busy)                  | 409 without `job` |
| idempotency key reused with other input, second open job | 409 |
| the job's delay has not passed            | 429 with `retry_after_ms` |
| database does not answer                  | 503    |
"""

from __future__ import annotations

import ipaddress
import math
import socket
import threading
from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import FastAPI, Request, Response
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, ConfigDict, StrictBool, StrictInt
from starlette.exceptions import HTTPException as StarletteHTTPException

from timeline_pipeline.db.engine import DatabaseUnavailable
from timeline_pipeline.maintenance.endpoint import (
    JOBS_PATH,
    LOOPBACK_HOST,
    ListenerRefused,
    parse_port,
)
from timeline_pipeline.maintenance.errors import MaintenanceError, TooEarly
from timeline_pipeline.maintenance.limits import parse_limits
from timeline_pipeline.maintenance.service import JobService, job_json
from timeline_pipeline.observability.logs import get_logger
from timeline_pipeline.receiver.responses import SafeJSONResponse

log = get_logger("timeline_pipeline.maintenance.listener")


def is_loopback(host: str | None) -> bool:
    if host is None:
        return False
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def loopback_socket(port: int, host: str = LOOPBACK_HOST) -> socket.socket:
    """A listening socket on loopback; any other address is refused before binding."""
    if host != LOOPBACK_HOST:
        raise ListenerRefused(f"the maintenance listener binds {LOOPBACK_HOST} only")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(64)
    except OSError as exc:
        sock.close()
        raise ListenerRefused(
            f"cannot bind {host}:{port}: {exc.strerror or type(exc).__name__}"
        ) from None
    sock.set_inheritable(True)
    return sock


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


def refusal_body(exc: MaintenanceError) -> dict[str, Any]:
    """A refusal's answer: one-line reason, the job when the caller needs its revision, and the
    time left of the delay on a 429."""
    body: dict[str, Any] = {"detail": {"code": exc.code, "message": str(exc)}}
    if exc.job is not None:
        body["job"] = job_json(exc.job)
    if isinstance(exc, TooEarly):
        body["retry_after_ms"] = exc.retry_after_ms
    return body


def _refusal(exc: MaintenanceError) -> Response:
    headers: dict[str, str] = {}
    if isinstance(exc, TooEarly):
        headers["Retry-After"] = str(max(1, math.ceil(exc.retry_after_ms / 1000)))
    return SafeJSONResponse(refusal_body(exc), status_code=exc.status, headers=headers)


def _problem(status: int, code: str, message: str) -> Response:
    return SafeJSONResponse({"detail": {"code": code, "message": message}}, status_code=status)


def create_maintenance_app(service: JobService) -> FastAPI:
    app = FastAPI(
        title="timeline-pipeline maintenance",
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
        default_response_class=SafeJSONResponse,
    )

    @app.middleware("http")
    async def loopback_only(
        request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        peer = request.client.host if request.client else None
        if not is_loopback(peer):
            log.warning("maintenance.refused_peer", reason="not_loopback")
            return _problem(403, "not_loopback", "the maintenance listener serves loopback only")
        return await call_next(request)

    @app.exception_handler(MaintenanceError)
    async def maintenance_error(_request: Request, exc: MaintenanceError) -> Response:
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

    @app.post(JOBS_PATH)
    def create_job(body: CreateBody) -> Response:
        job, created = service.create(
            job_type=body.type,
            idempotency_key=body.idempotency_key,
            parameters=body.parameters,
            limits=parse_limits(body.options),
            apply=body.apply,
        )
        return SafeJSONResponse(job_json(job), status_code=201 if created else 200)

    @app.get(JOBS_PATH + "/{job_id}")
    def get_job(job_id: str) -> Response:
        return SafeJSONResponse(job_json(service.get(job_id)))

    @app.post(JOBS_PATH + "/{job_id}/{action}")
    def act(job_id: str, action: str, body: ActionBody) -> Response:
        limits = parse_limits(body.options) if body.options is not None else None
        job = service.act(job_id, action, revision=body.revision, limits=limits)
        return SafeJSONResponse(job_json(job))

    return app


class MaintenanceListener:
    """The listener's uvicorn server on its own thread and event loop.

    Signals stay with the receiver's server on the main thread; `serve` stops this one after
    the receiver has drained, and closes the database pool only after `stop` returns.
    """

    def __init__(self, app: FastAPI, sock: socket.socket, *, graceful_timeout: float) -> None:
        import uvicorn

        self._sock = sock
        self._graceful_timeout = graceful_timeout
        self.server = uvicorn.Server(
            uvicorn.Config(
                app,
                log_config=None,
                access_log=False,
                server_header=False,
                lifespan="off",
                timeout_graceful_shutdown=math.ceil(graceful_timeout),
            )
        )
        self._thread = threading.Thread(target=self._run, name="maintenance-listener", daemon=True)

    @property
    def port(self) -> int:
        return int(self._sock.getsockname()[1])

    def _run(self) -> None:
        self.server.run(sockets=[self._sock])

    def start(self, *, ready_timeout: float = 10.0) -> None:
        self._thread.start()
        deadline = threading.Event()
        for _ in range(int(ready_timeout * 100)):
            if self.server.started or not self._thread.is_alive():
                break
            deadline.wait(0.01)
        if not self.server.started:
            raise ListenerRefused("the maintenance listener did not start")
        log.info("maintenance.listener_started", host=LOOPBACK_HOST, port=self.port)

    def stop(self) -> None:
        """Stop accepting, let in-flight requests finish, and return when the server is down."""
        port = self.port
        self.server.should_exit = True
        self._thread.join(self._graceful_timeout + 5)
        self._sock.close()
        log.info("maintenance.listener_stopped", port=port)


def start_listener(
    service: JobService, raw_port: str | None, *, graceful_timeout: float = 30.0
) -> MaintenanceListener | None:
    """The running listener, or None when it is disabled (unset, invalid, or cannot bind);
    a failure is logged and disables this listener only."""
    try:
        port = parse_port(raw_port)
        if port is None:
            return None
        listener = MaintenanceListener(
            create_maintenance_app(service),
            loopback_socket(port),
            graceful_timeout=graceful_timeout,
        )
        listener.start()
    except ListenerRefused as exc:
        log.error("maintenance.listener_disabled", reason=str(exc))
        return None
    return listener
