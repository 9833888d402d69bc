"""A review card end to end in one process: real database, real local Lark, real lark-oapi
client, the real admission handler and worker. Callbacks are built by the simulator's own
`card_action_event`, i.e. exactly what `lark push-card-action` sends."""

from __future__ import annotations

import secrets
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from prometheus_client import CollectorRegistry
from sqlalchemy import Engine, func, select

from timeline_pipeline.db.schema import audit_events, interaction_admissions
from timeline_pipeline.domain.card_requests import KIND_DRAFT_REVIEW, CardEntry, CardRequest
from timeline_pipeline.domain.entries import DraftWrite, EvidenceRef
from timeline_pipeline.lark.card_sender import LarkCardSender
from timeline_pipeline.lark.client import LarkClient, LarkClientConfig
from timeline_pipeline.lark.simulator.events import EventIdentity, card_action_event
from timeline_pipeline.lark.simulator.runner import SimulatorServer
from timeline_pipeline.lark.simulator.store import ChatStore
from timeline_pipeline.observability.metrics import ReviewCardMetrics
from timeline_pipeline.retry import RetryPolicy
from timeline_pipeline.review_cards.admission import CardAnswer, CardCallbacks
from timeline_pipeline.review_cards.worker import CardWorker
from timeline_pipeline.security.callback_tokens import card_uuid
from timeline_pipeline.settings import LarkTimelineSettings, load_timeline_settings
from timeline_pipeline.store import entries, evidence, workspaces
from timeline_pipeline.store import interaction_requests as cards
from timeline_pipeline.synthesis_run import draft_writes
from timeline_pipeline_tests.store.factories import message

CHAT = "oc_review_chat"
CURATOR = "ou_curator"
T0 = datetime(2026, 11, 29, 10, 0, tzinfo=UTC)


def lark_client(base_url: str, app_id: str, secret: str) -> LarkClient:
    return LarkClient(
        LarkClientConfig(
            app_id=app_id,
            app_secret=secret,
            base_url=base_url,
            retry=RetryPolicy(attempts=2, backoff_base=0.01, backoff_cap=0.02, max_retry_after=0.1),
        )
    )


def button(card: dict[str, Any], entry_id: int, action: str) -> dict[str, Any]:
    """The value of the control for `action` on `entry_id` in a drawn card."""
    for element in card["elements"]:
        controls = element.get("actions") or element.get("elements") or []
        for control in controls:
            value = control.get("value")
            if isinstance(value, dict) and value.get("e") == entry_id and value.get("a") == action:
                return dict(value)
    raise AssertionError(f"no {action} control for entry {entry_id}")


def card_texts(card: dict[str, Any]) -> list[str]:
    """Every text a person reads on a drawn card, in order (not the values its controls carry
    back)."""
    found: list[str] = []

    def walk(node: object) -> None:
        if isinstance(node, dict):
            if node.get("tag") in ("plain_text", "lark_md"):
                found.append(str(node["content"]))
            for key, value in node.items():
                if key != "value":
                    walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(card)
    return found


def seed_entries(
    engine: Engine,
    workspace_id: str,
    count: int,
    *,
    text: str = "fact {i}",
    start: datetime = T0,
) -> list[int]:
    """`count` drafts a minute apart from `start`, each bound to one message reading `text`."""
    ids: list[int] = []
    with engine.begin() as conn:
        for i in range(count):
            record = message(
                text.format(i=i),
                workspace_id=workspace_id,
                chat_id=CHAT,
                message_id=f"om_{workspace_id}_{secrets.token_hex(4)}",
            )
            evidence.upsert(conn, record)
            row = evidence.get_by_key(
                conn, workspace_id, record.source, record.source_type, record.source_key
            )
            assert row is not None
            written = draft_writes.upsert_draft(
                conn,
                DraftWrite(
                    workspace_id=workspace_id,
                    fingerprint=f"fp-{workspace_id}-{secrets.token_hex(6)}",
                    occurred_at=start + timedelta(minutes=i),
                    title=f"Draft {i}",
                    category="finding",
                    evidence=[EvidenceRef(row.id, row.content_hash)],
                ),
                window_state_id=None,
                now=T0,
            )
            assert written.entry_id is not None
            ids.append(written.entry_id)
    return ids


def plan_card(
    engine: Engine,
    workspace_id: str,
    entry_ids: list[int],
    *,
    ttl: timedelta,
    chat: str = CHAT,
    reply_to: str | None = None,
) -> int:
    now = datetime.now(UTC)
    with engine.begin() as conn:
        rows = [entries.get(conn, i) for i in entry_ids]
        request = CardRequest(
            tuple(
                CardEntry(r.id, r.revision, r.occurred_at, r.title, r.category)
                for r in rows
                if r is not None
            ),
            ("impact", "finding", "mitigation"),
            512,
        )
        card = cards.create(
            conn,
            workspace_id=workspace_id,
            kind=KIND_DRAFT_REVIEW,
            window_state_id=None,
            processor_version="v1",
            idempotency_uuid=card_uuid(secrets.randbelow(2**40), "v1"),
            chat_id=chat,
            reply_to_message_id=reply_to,
            request=request,
            expires_at=now + ttl,
            now=now,
        )
    assert card is not None
    return card.id


@dataclass
class Harness:
    engine: Engine
    lark: SimulatorServer
    settings: LarkTimelineSettings
    app_id: str
    workspace_id: str
    metrics: ReviewCardMetrics = field(
        default_factory=lambda: ReviewCardMetrics(CollectorRegistry())
    )
    worker: CardWorker | None = None
    callbacks: CardCallbacks | None = None

    def __post_init__(self) -> None:
        sender = LarkCardSender(
            lark_client(self.lark.base_url, self.app_id, self.lark.app_secret), self.app_id
        )
        self.worker = CardWorker(self.engine, self.settings, sender, self.metrics)
        self.callbacks = CardCallbacks(self.engine, self.settings, self.metrics)

    def card(self, card_id: int) -> cards.CardRow:
        with self.engine.connect() as conn:
            found = cards.get(conn, card_id)
        assert found is not None
        return found

    def shown(self, card_id: int) -> dict[str, Any]:
        """The card as the chat shows it now (the last send or patch)."""
        message_id = self.card(card_id).message_id
        assert message_id is not None
        log = self.lark.store.card_log(message_id)
        assert log, "the card was never sent"
        return dict(log[-1]["card"])

    def payload(
        self,
        card_id: int,
        entry_id: int,
        action: str,
        *,
        value: dict[str, Any] | None = None,
        operator: str = CURATOR,
        message_id: str | None = None,
        chat_id: str = CHAT,
        option: str | None = None,
        title: str | None = None,
        event_id: str | None = None,
        app_id: str | None = None,
    ) -> dict[str, Any]:
        chosen = value if value is not None else button(self.shown(card_id), entry_id, action)
        payload = card_action_event(
            EventIdentity(app_id=app_id or self.app_id),
            operator_open_id=operator,
            open_message_id=message_id or self.card(card_id).message_id or "",
            open_chat_id=chat_id,
            action_value=chosen,
            event_id=event_id or uuid.uuid4().hex,
        )
        if option is not None:
            payload["event"]["action"]["option"] = option
        if title is not None:
            payload["event"]["action"]["form_value"] = {"title": title}
        return payload

    def click(self, card_id: int, entry_id: int, action: str, **kwargs: Any) -> CardAnswer:
        assert self.callbacks is not None
        return self.callbacks.handle(self.payload(card_id, entry_id, action, **kwargs))

    def drain(self) -> None:
        assert self.worker is not None
        self.worker.drain(max_seconds=20)

    def audits(self, entry_id: int, action: str) -> int:
        with self.engine.connect() as conn:
            return int(
                conn.execute(
                    select(func.count()).where(
                        audit_events.c.subject_id == str(entry_id),
                        audit_events.c.action == action,
                    )
                ).scalar_one()
            )

    def admissions(self) -> int:
        with self.engine.connect() as conn:
            return int(
                conn.execute(select(func.count()).select_from(interaction_admissions)).scalar_one()
            )

    def close(self) -> None:
        if self.worker is not None:
            self.worker.close()


@contextmanager
def harness(
    engine: Engine,
    *,
    workspace_locale: str | None = None,
    workspace_zone: str | None = None,
    **overrides: Any,
) -> Iterator[Harness]:
    """A workspace with a bound chat and a curator (in the language and zone given, else the
    settings'), the local Lark, and the product's handler and worker; `overrides` are settings."""
    app_id = f"cli_cards_{secrets.token_hex(4)}"
    secret = secrets.token_urlsafe(12)
    workspace_id = f"inc-{secrets.token_hex(3)}"
    with engine.begin() as conn:
        workspaces.create(
            conn,
            workspace_id,
            created_at=T0,
            locale=workspace_locale,
            time_zone=workspace_zone,
        )
        workspaces.bind_chat(conn, workspace_id, CHAT)
        workspaces.add_curator(conn, workspace_id, CURATOR)
    settings = load_timeline_settings(
        review_cards_enabled=True, review_card_worker_concurrency=2, **overrides
    )
    with SimulatorServer(ChatStore(), app_id=app_id, app_secret=secret) as lark:
        made = Harness(engine, lark, settings, app_id, workspace_id)
        try:
            yield made
        finally:
            made.close()
