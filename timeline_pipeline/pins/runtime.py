"""Pins from the chat wired for `serve`: the service with its Lark client and metrics."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from prometheus_client import CollectorRegistry
from sqlalchemy import Engine

from timeline_pipeline.lark.client_factory import build_client
from timeline_pipeline.observability.metrics import PinMetrics
from timeline_pipeline.pins.service import MessageSource, PinService
from timeline_pipeline.settings import Settings


def message_source(settings: Settings) -> MessageSource | None:
    """The Lark client that reads a message not collected yet; None without app credentials
    (a pin of an uncollected message is then refused as `message_unavailable`)."""
    runtime = settings.runtime
    if not runtime.lark_app_id or not runtime.lark_app_secret.get_secret_value():
        return None
    return build_client(settings.timeline, runtime)


def build_pin_service(
    settings: Settings,
    engine: Engine,
    registry: CollectorRegistry | None,
    *,
    clock: Callable[[], datetime],
    lark: MessageSource | None = None,
) -> PinService | None:
    """None while `pinFromChatEnabled` is off: reactions are then ignored as `pins_disabled`."""
    if not settings.timeline.pin_from_chat_enabled:
        return None
    return PinService(
        engine,
        settings.timeline,
        PinMetrics(registry),
        lark=lark if lark is not None else message_source(settings),
        app_id=settings.runtime.lark_app_id,
        clock=clock,
    )
