"""Pins from the chat in one process: real database, real local Lark, the real lark-oapi client
(the message lookup and the card sender), the real pin service and card worker. Reactions are
built by the simulator's own `reaction_event`, i.e. what `lark push-reaction` sends."""

from __future__ import annotations

import secrets
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from prometheus_client import CollectorRegistry
from sqlalchemy import Engine

from timeline_pipeline.domain.entries import EntryRow
from timeline_pipeline.ingest.writer import ingest
from timeline_pipeline.lark.card_sender import LarkCardSender
from timeline_pipeline.lark.normalize import normalize_list_item
from timeline_pipeline.lark.simulator.events import EventIdentity, reaction_event
from timeline_pipeline.lark.simulator.fixtures import message_item
from timeline_pipeline.lark.simulator.runner import SimulatorServer
from timeline_pipeline.lark.simulator.store import ChatStore
from timeline_pipeline.observability.metrics import PinMetrics, ReviewCardMetrics
from timeline_pipeline.pins.reactions import read_reaction
from timeline_pipeline.pins.service import PinResult, PinService, pin_fingerprint
from timeline_pipeline.review_cards.admission import CardCallbacks
from timeline_pipeline.review_cards.worker import CardWorker
from timeline_pipeline.settings import LarkTimelineSettings, load_timeline_settings
from timeline_pipeline.store import chat_pins, entries, workspaces
from timeline_pipeline.store import interaction_requests as cards
from timeline_pipeline_tests.review_cards.harness import lark_client

CHAT = "oc_pin_chat"
CURATOR = "ou_pin_curator"
EMOJI = "Pin"


@dataclass
class PinHarness:
    engine: Engine
    lark: SimulatorServer
    settings: LarkTimelineSettings
    app_id: str
    workspace_id: str
    registry: CollectorRegistry = field(default_factory=CollectorRegistry)
    service: PinService | None = None
    worker: CardWorker | None = None

    def __post_init__(self) -> None:
        self.metrics = PinMetrics(self.registry)
        self.card_metrics = ReviewCardMetrics(self.registry)
        self.restart()

    def restart(self) -> None:
        """A new process: a new service and a new worker (new owner), the same database."""
        if self.worker is not None:
            self.worker.close()
        client = lark_client(self.lark.base_url, self.app_id, self.lark.app_secret)
        self.service = PinService(
            self.engine, self.settings, self.metrics, lark=client, app_id=self.app_id
        )
        self.worker = CardWorker(
            self.engine,
            self.settings,
            LarkCardSender(client, self.app_id),
            self.card_metrics,
        )
        self.callbacks = CardCallbacks(self.engine, self.settings, self.card_metrics)

    def say(
        self,
        text: str,
        *,
        message_id: str | None = None,
        sender: str = "ou_responder",
        minutes_ago: int = 5,
        stored: bool = True,
        msg_type: str = "text",
        sender_type: str = "user",
    ) -> str:
        """A message in the chat (the local Lark); `stored` also collects it as evidence."""
        message_id = message_id or f"om_{secrets.token_hex(6)}"
        created = datetime.now(UTC) - timedelta(minutes=minutes_ago)
        item = message_item(
            msg_type,
            {"text": text} if msg_type == "text" else {"elements": []},
            message_id=message_id,
            chat_id=CHAT,
            create_time=str(int(created.timestamp() * 1000)),
            sender_id=sender,
            sender_type=sender_type,
            sender_id_type="app_id" if sender_type == "app" else "open_id",
        )
        self.lark.store.add_message(item)
        if stored:
            message = normalize_list_item(item, max_text_chars=4000, app_id=self.app_id)
            with self.engine.begin() as conn:
                bound = [b.workspace for b in workspaces.bindings_for_chat(conn, CHAT)]
                ingest(conn, [message], bound, self.settings, datetime.now(UTC), app_id=self.app_id)
        return message_id

    def event(
        self,
        message_id: str,
        *,
        operator: str = CURATOR,
        removed: bool = False,
        emoji: str = EMOJI,
        at: datetime | None = None,
        operator_type: str = "user",
    ) -> dict[str, Any]:
        moment = at or datetime.now(UTC)
        return reaction_event(
            EventIdentity(app_id=self.app_id),
            message_id=message_id,
            emoji_type=emoji,
            operator_open_id=operator,
            removed=removed,
            operator_type=operator_type,
            action_time_ms=int(moment.timestamp() * 1000),
            event_id=uuid.uuid4().hex,
        )

    def react(self, message_id: str, **kwargs: Any) -> PinResult:
        return self.deliver(self.event(message_id, **kwargs))

    def deliver(self, payload: dict[str, Any]) -> PinResult:
        """One reaction event as the receiver hands it to the service."""
        assert self.service is not None
        removed = payload["header"]["event_type"].endswith("deleted_v1")
        return self.service.handle(
            read_reaction(payload["event"], removed=removed, now=datetime.now(UTC))
        )

    def pin_entry(self, message_id: str, workspace_id: str | None = None) -> EntryRow | None:
        with self.engine.connect() as conn:
            return entries.get_by_fingerprint(
                conn, workspace_id or self.workspace_id, pin_fingerprint(message_id)
            )

    def pins(self, workspace_id: str | None = None) -> list[chat_pins.PinRow]:
        with self.engine.connect() as conn:
            return chat_pins.for_workspace(conn, workspace_id or self.workspace_id)

    def replies(self, workspace_id: str | None = None) -> list[cards.CardRow]:
        with self.engine.connect() as conn:
            return [
                c
                for c in cards.for_workspace(conn, workspace_id or self.workspace_id)
                if c.kind == "chat_pin"
            ]

    def sent(self) -> list[dict[str, Any]]:
        return [c for c in self.lark.store.card_log() if c["kind"] == "sent"]

    def drain(self) -> None:
        assert self.worker is not None
        self.worker.drain(max_seconds=20)

    def count(self, name: str, **labels: str) -> float:
        return self.registry.get_sample_value(name, labels) or 0.0

    def close(self) -> None:
        if self.worker is not None:
            self.worker.close()


@contextmanager
def pin_harness(
    engine: Engine,
    *,
    workspace_locale: str | None = None,
    workspace_zone: str | None = None,
    **overrides: Any,
) -> Iterator[PinHarness]:
    """A workspace with a bound chat and a curator (in the language and zone given, else the
    settings'), the local Lark, the pin service and the card worker; `overrides` are settings."""
    app_id = f"cli_pins_{secrets.token_hex(4)}"
    secret = secrets.token_urlsafe(12)
    workspace_id = f"INC-{secrets.token_hex(3)}"
    with engine.begin() as conn:
        workspaces.create(
            conn,
            workspace_id,
            created_at=datetime.now(UTC) - timedelta(hours=2),
            locale=workspace_locale,
            time_zone=workspace_zone,
        )
        workspaces.bind_chat(conn, workspace_id, CHAT)
        workspaces.add_curator(conn, workspace_id, CURATOR)
    settings = load_timeline_settings(
        **{"enabled": True, "pin_from_chat_enabled": True, "pin_emoji_type": EMOJI, **overrides}
    )
    with SimulatorServer(ChatStore(), app_id=app_id, app_secret=secret) as lark:
        made = PinHarness(engine, lark, settings, app_id, workspace_id)
        try:
            yield made
        finally:
            made.close()
