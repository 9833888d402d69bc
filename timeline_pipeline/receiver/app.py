"""The receiver's HTTP surface: `POST /lark/events`, `GET /healthz`, `GET /metrics`.

Routes only translate between HTTP and the `EventService`. Verification and normalization are
short CPU work and run on the event loop (a thread hop per request cost more than the work);
a large body is handed to the thread pool instead so it cannot stall other requests. Database
writes go to the group-commit writer, and the answer is sent once the write is committed.

This is also the composition root of `serve`'s HTTP answers: every JSON body, the API's
included, is encoded by `SafeJSONResponse`, and the exception handlers installed here answer
with it too, so that no response can fail to encode.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from typing import Final

from fastapi import FastAPI, Request, Response
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.utils import is_body_allowed_for_status_code
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from sqlalchemy import Engine, text
from sqlalchemy.exc import TimeoutError as PoolTimeoutError
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect

from timeline_pipeline.api import api_router
from timeline_pipeline.db.engine import DatabaseUnavailable, connection
from timeline_pipeline.observability.logs import get_logger
from timeline_pipeline.observability.metrics import ReceiverMetrics
from timeline_pipeline.receiver.batching import WriteBatcher
from timeline_pipeline.receiver.bindings import BindingCache
from timeline_pipeline.receiver.body import BodyTooLarge, read_bounded_body
from timeline_pipeline.receiver.handlers import EventHandlers
from timeline_pipeline.receiver.outcomes import ACCEPTED, Reply
from timeline_pipeline.receiver.responses import SafeJSONResponse, encode_json
from timeline_pipeline.receiver.service import EventService
from timeline_pipeline.receiver.verification import CallbackVerifier, Credentials
from timeline_pipeline.receiver.wakeups import WakeupHub
from timeline_pipeline.settings import Settings
from timeline_pipeline.ui.routes import ui_router

EVENTS_PATH: Final = "/lark/events"
INLINE_BODY_BYTES: Final = 64 * 1024
"""Bodies up to this size are verified on the event loop; larger ones in the thread pool."""
_ACCEPTED_BODY: Final = encode_json(ACCEPTED.body)
"""The common answer, encoded once: the same bytes `SafeJSONResponse` would render."""

log = get_logger("timeline_pipeline.http")


def _utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class ReceiverState:
    """What the app exposes on `app.state.receiver`, e.g. for wakeup subscribers."""

    service: EventService
    metrics: ReceiverMetrics
    wakeups: WakeupHub
    bindings: BindingCache
    writer: WriteBatcher


def create_app(
    settings: Settings,
    engine: Engine,
    *,
    clock: Callable[[], datetime] = _utc_now,
    registry: CollectorRegistry | None = None,
    wakeups: WakeupHub | None = None,
    bindings: BindingCache | None = None,
) -> FastAPI:
    """Build the receiver; raises ValueError when LARK_VERIFICATION_TOKEN is not set."""
    timeline, runtime = settings.timeline, settings.runtime
    credentials = Credentials(
        verification_token=runtime.lark_verification_token.get_secret_value(),
        encrypt_key=runtime.lark_encrypt_key.get_secret_value(),
    )
    metrics = ReceiverMetrics(registry)
    hub = wakeups if wakeups is not None else WakeupHub()
    cache = bindings if bindings is not None else BindingCache(timeline.binding_cache_ttl)
    writer = WriteBatcher(engine)
    service = EventService(
        verifier=CallbackVerifier(credentials, max_skew=timeline.event_timestamp_skew, clock=clock),
        handlers=EventHandlers(timeline, cache, app_id=runtime.lark_app_id, clock=clock),
        writer=writer,
        metrics=metrics,
        wakeups=hub,
        ingestion_enabled=timeline.enabled and timeline.event_ingestion_enabled,
        clock=clock,
    )

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        yield
        # Runs after uvicorn has let in-flight requests finish: write what is queued, then stop.
        await run_in_threadpool(writer.close)

    app = FastAPI(
        title="timeline-pipeline receiver",
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
        lifespan=lifespan,
        default_response_class=SafeJSONResponse,
    )
    _install_exception_handlers(app)
    app.state.receiver = ReceiverState(service, metrics, hub, cache, writer)
    limit = timeline.event_max_body_bytes

    async def lark_events(request: Request) -> Response:
        reply = await _receive(request, service, limit)
        if reply is ACCEPTED:
            return Response(_ACCEPTED_BODY, media_type=SafeJSONResponse.media_type)
        return SafeJSONResponse(reply.body, status_code=reply.status)

    # A plain Starlette route: FastAPI's dependency solving would cost more than verification.
    app.add_route(EVENTS_PATH, lark_events, methods=["POST"], include_in_schema=False)

    @app.get("/healthz")
    def healthz() -> Response:
        try:
            with connection(engine) as conn:
                conn.execute(text("SELECT 1"))
        except (DatabaseUnavailable, PoolTimeoutError):
            return SafeJSONResponse({"status": "unavailable", "database": "down"}, status_code=503)
        return SafeJSONResponse({"status": "ok", "database": "ok"})

    @app.get("/metrics")
    def prometheus_metrics() -> Response:
        return Response(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)

    app.include_router(api_router(engine, settings))  # the timeline API, GET /api/openapi.json
    app.include_router(ui_router(engine, settings, clock=clock))  # the timeline page, /ui
    return app


def _install_exception_handlers(app: FastAPI) -> None:
    """FastAPI's default handlers, answering with the safe encoding; nothing here logs a body.

    A client that goes away in the middle of its body (anywhere but `/lark/events`, which counts
    it itself) is logged once, by route, and gets an answer it will never read.
    """

    async def http_error(_request: Request, exc: Exception) -> Response:
        assert isinstance(exc, StarletteHTTPException)
        headers = dict(exc.headers or {})
        if not is_body_allowed_for_status_code(exc.status_code):
            return Response(status_code=exc.status_code, headers=headers)
        return SafeJSONResponse({"detail": exc.detail}, exc.status_code, headers=headers)

    async def validation_error(_request: Request, exc: Exception) -> Response:
        assert isinstance(exc, RequestValidationError)
        return SafeJSONResponse({"detail": jsonable_encoder(exc.errors())}, 422)

    async def client_disconnected(request: Request, _exc: Exception) -> Response:
        route = getattr(request.scope.get("route"), "path", None)
        log.info("client_disconnected", method=request.method, route=route)
        return Response(status_code=400)

    app.add_exception_handler(StarletteHTTPException, http_error)
    app.add_exception_handler(RequestValidationError, validation_error)
    app.add_exception_handler(ClientDisconnect, client_disconnected)


async def _receive(request: Request, service: EventService, limit: int) -> Reply:
    try:
        body = await read_bounded_body(request, limit)
    except BodyTooLarge:
        return service.reject_oversized()
    except ClientDisconnect:
        return service.client_disconnected()
    headers = request.headers
    if len(body) <= INLINE_BODY_BYTES:
        step = service.begin(body, headers)
    else:
        step = await run_in_threadpool(partial(service.begin, body, headers))
    if isinstance(step, Reply):
        return step
    try:
        outcome = await asyncio.wrap_future(service.submit(step))
    except Exception as error:
        return service.fail(step, error)
    return service.finish(step, outcome)
