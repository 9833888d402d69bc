"""What `serve`'s app is built from, made once per app: the services every route goes through.

`build_resources` validates the configuration (a missing LARK_VERIFICATION_TOKEN is a
ValueError) before the app exists, so `serve` can refuse to start with one line; the app's
lifespan (http/app.py) tears the resources down after the last request.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from prometheus_client import CollectorRegistry
from sqlalchemy import Engine

from timeline_pipeline.curation.evidence import EvidenceService
from timeline_pipeline.curation.service import CurationService
from timeline_pipeline.observability.metrics import ReceiverMetrics
from timeline_pipeline.pins.runtime import build_pin_service
from timeline_pipeline.receiver.batching import WriteBatcher
from timeline_pipeline.receiver.bindings import BindingCache
from timeline_pipeline.receiver.handlers import EventHandlers, register_lark_handlers
from timeline_pipeline.receiver.pins import pin_reactions
from timeline_pipeline.receiver.registry import EventHandlerRegistry
from timeline_pipeline.receiver.service import EventService
from timeline_pipeline.receiver.verification import CallbackVerifier, Credentials
from timeline_pipeline.report.service import ReportService
from timeline_pipeline.review_cards.runtime import ReviewCards
from timeline_pipeline.settings import Settings
from timeline_pipeline.web.cursors import CursorCodec, cursor_secret

__all__ = ["ServeResources", "build_resources"]


@dataclass(frozen=True)
class ServeResources:
    """Everything the routes use, on `app.state.resources`; reach it through web/deps.py."""

    settings: Settings
    engine: Engine
    metrics: ReceiverMetrics
    bindings: BindingCache
    writer: WriteBatcher
    event_handlers: EventHandlerRegistry
    events: EventService
    curation: CurationService
    evidence: EvidenceService
    cursors: CursorCodec
    report: ReportService
    """The incident report's reads and curators' milestone times (the API and the page)."""
    review_cards: ReviewCards | None = None
    """Review cards' callback handler and worker, when `reviewCardsEnabled` is on."""

    def close(self) -> None:
        """Stop the card worker, write what is queued, then stop the writer (the engine
        belongs to the caller)."""
        if self.review_cards is not None:
            self.review_cards.stop_worker()
        self.writer.close()


def build_resources(
    settings: Settings,
    engine: Engine,
    *,
    clock: Callable[[], datetime],
    registry: CollectorRegistry | None = None,
    bindings: BindingCache | None = None,
    cursor_key: bytes | None = None,
) -> ServeResources:
    timeline, runtime = settings.timeline, settings.runtime
    credentials = Credentials(
        verification_token=runtime.lark_verification_token.get_secret_value(),
        encrypt_key=runtime.lark_encrypt_key.get_secret_value(),
    )
    metrics = ReceiverMetrics(registry)
    cache = bindings if bindings is not None else BindingCache(timeline.binding_cache_ttl)
    writer = WriteBatcher(engine)
    # A pin's reply goes out through the review cards' worker (docs/pins.md), so either
    # feature runs it.
    cards = (
        ReviewCards.build(settings, engine, metrics.registry)
        if timeline.review_cards_enabled or timeline.pin_from_chat_enabled
        else None
    )
    pins = build_pin_service(settings, engine, metrics.registry, clock=clock)
    handlers = register_lark_handlers(
        EventHandlerRegistry(),
        EventHandlers(timeline, cache, app_id=runtime.lark_app_id, clock=clock),
        ingestion_enabled=timeline.enabled and timeline.event_ingestion_enabled,
        clock=clock,
        card_actions=(lambda payload: cards.callbacks.handle(payload).body) if cards else None,
        reactions=pin_reactions(pins) if pins is not None else None,
    )
    events = EventService(
        verifier=CallbackVerifier(credentials, max_skew=timeline.event_timestamp_skew, clock=clock),
        registry=handlers,
        bindings=cache,
        writer=writer,
        metrics=metrics,
    )
    configured = runtime.api_cursor_secret.get_secret_value()
    return ServeResources(
        settings=settings,
        engine=engine,
        metrics=metrics,
        bindings=cache,
        writer=writer,
        event_handlers=handlers,
        events=events,
        curation=CurationService(engine, follow_up_tasks=settings.timeline.follow_up_tasks_enabled),
        evidence=EvidenceService(engine),
        cursors=CursorCodec(cursor_key or cursor_secret(configured)),
        report=ReportService(engine, timeline, clock=clock),
        review_cards=cards,
    )
