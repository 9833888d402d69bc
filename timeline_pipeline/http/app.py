"""The composition root of `timeline-pipeline serve`: one FastAPI app, its resources, its routers.

    app = create_app(settings, engine)

`create_app` builds the resources (http/resources.py: the evidence writer, the binding cache,
the Lark event service and its handler registry, the curation and evidence services, the cursor
codec), puts them on `app.state.resources` for the dependencies in web/deps.py, and hands them
to the lifespan, which tears them down once uvicorn has let in-flight requests finish.

Adding a router is one line in `_include_routers`: write a module with a module-level
`router = APIRouter(...)` whose routes ask for what they need through web/deps.py
(`Annotated[..., Depends(...)]` aliases; add a provider there for a new resource), then
`app.include_router(module.router)`. A router under `/api` goes into api/router.py instead, so
that it is gated and documented with the API. A new Lark callback type is not a router: it is a
handler registered in receiver/handlers.py (see receiver/registry.py). A separate app (the
maintenance listener's, maintenance/listener.py) is built by its own package from the web core
(web/), including only its routers.

Every JSON body, the API's included, is encoded by `SafeJSONResponse`, and the exception
handlers installed here answer with it too, so that no response can fail to encode. A path that
differs from a route only by a trailing slash is redirected with a relative `Location` (the
path alone), never one built from the request's `Host` header, which the client writes.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from datetime import UTC, datetime

from fastapi import FastAPI, Request, Response
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import RedirectResponse
from fastapi.utils import is_body_allowed_for_status_code
from prometheus_client import CollectorRegistry
from sqlalchemy import Engine
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect
from starlette.routing import Match

from timeline_pipeline.api.router import api_router
from timeline_pipeline.http import healthz
from timeline_pipeline.http.resources import ServeResources, build_resources
from timeline_pipeline.observability.logs import get_logger
from timeline_pipeline.receiver import router as lark_events
from timeline_pipeline.receiver.bindings import BindingCache
from timeline_pipeline.settings import Settings
from timeline_pipeline.ui.router import ui_router
from timeline_pipeline.web.responses import SafeJSONResponse

__all__ = ["create_app"]

log = get_logger("timeline_pipeline.http")


def _utc_now() -> datetime:
    return datetime.now(UTC)


def create_app(
    settings: Settings,
    engine: Engine,
    *,
    clock: Callable[[], datetime] = _utc_now,
    registry: CollectorRegistry | None = None,
    bindings: BindingCache | None = None,
    cursor_secret: bytes | None = None,
    card_worker: bool = True,
) -> FastAPI:
    """Build `serve`'s app; raises ValueError when LARK_VERIFICATION_TOKEN is not set.

    `registry` receives the app's Prometheus metrics (a fresh one by default); `cursor_secret`
    signs paging cursors (by default TIMELINE_API_CURSOR_SECRET or a random key per process,
    see web/cursors.py).
    """
    resources = build_resources(
        settings,
        engine,
        clock=clock,
        registry=registry,
        bindings=bindings,
        cursor_key=cursor_secret,
    )
    app = FastAPI(
        title="timeline-pipeline receiver",
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
        lifespan=_lifespan(resources, card_worker=card_worker),
        default_response_class=SafeJSONResponse,
    )
    app.state.resources = resources
    app.router.redirect_slashes = False  # Starlette's own builds Location from Host
    _install_exception_handlers(app)
    _include_routers(app)
    return app


def _include_routers(app: FastAPI) -> None:
    app.include_router(lark_events.router)  # POST /lark/events
    app.include_router(healthz.router)  # GET /healthz, GET /metrics
    app.include_router(api_router)  # the timeline API, GET /api/openapi.json
    app.include_router(ui_router)  # the timeline page, /ui


def _lifespan(
    resources: ServeResources, *, card_worker: bool
) -> Callable[[FastAPI], AbstractAsyncContextManager[None]]:
    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        # The review-card worker runs with the server (docs/review-cards.md), unless the
        # deployment runs `review-cards work` apart (`serve --no-card-worker`).
        if card_worker and resources.review_cards is not None:
            resources.review_cards.start_worker()
        yield
        # Runs after uvicorn has let in-flight requests finish: write what is queued, then stop.
        await run_in_threadpool(resources.close)

    return lifespan


def _install_exception_handlers(app: FastAPI) -> None:
    """FastAPI's default handlers, answering with the safe encoding; nothing here logs a body.

    A client that goes away in the middle of its body (anywhere but `/lark/events`, which counts
    it itself) is logged once, by route, and gets an answer it will never read.
    """

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, StarletteHTTPException)
        if exc.status_code == 404:
            moved = _slash_redirect(request)
            if moved is not None:
                return moved
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


def _slash_redirect(request: Request) -> Response | None:
    """A relative redirect to the route this path names but for a trailing slash, else None.

    What Starlette's `redirect_slashes` does, without the absolute URL it builds from `Host`.
    A path that would begin with `//` is not redirected: as a `Location` it names another host.
    """
    path = request.scope.get("path", "")
    if request.scope.get("type") != "http" or path == "/" or path.startswith("//"):
        return None
    other = path.rstrip("/") if path.endswith("/") else path + "/"
    if not other or other.startswith("//"):
        return None
    probe = {**request.scope, "path": other}
    for route in request.app.router.routes:
        match, _child = route.matches(probe)
        if match is not Match.NONE:
            query = request.scope.get("query_string", b"").decode("latin-1")
            return RedirectResponse(other + (f"?{query}" if query else ""), status_code=307)
    return None
