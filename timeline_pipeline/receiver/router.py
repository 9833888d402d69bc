"""`POST /lark/events`: Lark's callbacks, answered by the `EventService`.

The route only translates between HTTP and the service. Verification and normalization are
short CPU work and run on the event loop (a thread hop per request cost more than the work);
a large body is handed to the thread pool instead so it cannot stall other requests. Database
writes go to the group-commit writer, and the answer is sent once the write is committed.

A plain Starlette route: FastAPI's dependency solving would cost more than verification, so
the service comes from `web.deps.resolve` (which honours `app.dependency_overrides`). Which
event type does what is the handler registry's business (receiver/registry.py), not this
route's.
"""

from __future__ import annotations

import asyncio
from functools import partial
from typing import Final, cast

from fastapi import APIRouter, Request, Response
from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect

from timeline_pipeline.receiver.outcomes import ACCEPTED, Reply
from timeline_pipeline.receiver.service import BlockingStep, EventService
from timeline_pipeline.web.body import BodyTooLarge, read_bounded_body
from timeline_pipeline.web.deps import get_settings, resolve
from timeline_pipeline.web.responses import SafeJSONResponse, encode_json

__all__ = ["EVENTS_PATH", "INLINE_BODY_BYTES", "get_event_service", "router"]

EVENTS_PATH: Final = "/lark/events"
INLINE_BODY_BYTES: Final = 64 * 1024
"""Bodies up to this size are verified on the event loop; larger ones in the thread pool."""
_ACCEPTED_BODY: Final = encode_json(ACCEPTED.body)
"""The common answer, encoded once: the same bytes `SafeJSONResponse` would render."""


def get_event_service(request: Request) -> EventService:
    """The app's Lark event service (`ServeResources.events`, http/resources.py); a test
    overrides it through `app.dependency_overrides` like any provider of web/deps.py."""
    return cast(EventService, request.app.state.resources.events)


async def lark_events(request: Request) -> Response:
    service = resolve(request, get_event_service)
    limit = resolve(request, get_settings).timeline.event_max_body_bytes
    reply = await _receive(request, service, limit)
    if reply is ACCEPTED:
        return Response(_ACCEPTED_BODY, media_type=SafeJSONResponse.media_type)
    return SafeJSONResponse(reply.body, status_code=reply.status)


router = APIRouter()
router.add_route(EVENTS_PATH, lark_events, methods=["POST"], include_in_schema=False)


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
    if isinstance(step, BlockingStep):
        return await run_in_threadpool(service.run_blocking, step)
    try:
        outcome = await asyncio.wrap_future(service.submit(step))
    except Exception as error:
        return service.fail(step, error)
    return service.finish(step, outcome)
