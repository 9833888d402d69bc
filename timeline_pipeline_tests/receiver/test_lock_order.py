"""The receiver's recall writes take their rows in message order, so that two replicas redacting
the same messages, or a replica redacting while reconciliation stores edits, wait instead of
deadlocking (docs/deployment-receivers.md). PostgreSQL only: SQLite has no row locks to order.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select

from timeline_pipeline.db.engine import make_engine, transaction
from timeline_pipeline.db.schema import workspace_timeline_evidence as ev
from timeline_pipeline.receiver.bindings import BindingCache
from timeline_pipeline.receiver.handlers import EventHandlers
from timeline_pipeline.receiver.outcomes import Pending
from timeline_pipeline.settings import LarkTimelineSettings
from timeline_pipeline.store import evidence, workspaces
from timeline_pipeline_tests.store.factories import edited, make_workspace, message
from timeline_pipeline_tests.support.lock_order import interleave

CHAT = "oc_chat"


@pytest.mark.postgres_only
def test_recalls_arriving_in_reverse_order_are_redacted_in_message_order(pg_url: str) -> None:
    engine = make_engine(pg_url)
    try:
        make_workspace(engine)
        a = message("the key was pasted here", message_id="om_a", chat_id=CHAT)
        b = message("and again here", message_id="om_b", chat_id=CHAT)
        with transaction(engine) as conn:
            workspaces.bind_chat(conn, "inc-1", CHAT)
            evidence.upsert_many(conn, [a, b])
        handlers = EventHandlers(
            LarkTimelineSettings(enabled=True, event_ingestion_enabled=True),
            BindingCache(timedelta(0)),
            app_id=None,
            clock=lambda: datetime.now(UTC),
        )
        now = datetime.now(UTC)
        recalls = [
            handlers.recall({"message_id": message_id, "chat_id": CHAT}, now)
            for message_id in ("om_b", "om_a")  # arrival order: B, then A
        ]
        assert all(isinstance(pending, Pending) for pending in recalls)
        pending = [p for p in recalls if isinstance(p, Pending)]

        failures = interleave(
            engine,
            first=lambda conn: evidence.upsert(conn, edited(a, "the key was pasted hre")),
            batch=lambda conn: pending[0].writer(conn, [p.item for p in pending]),
            second=lambda conn: evidence.upsert(conn, edited(b, "and again hre")),
        )

        assert failures == []
        with engine.connect() as conn:
            rows = conn.execute(select(ev.c.source_key, ev.c.deleted, ev.c.content)).all()
        assert sorted((r.source_key.rsplit("/", 1)[1], r.deleted, r.content) for r in rows) == [
            ("om_a", True, ""),
            ("om_b", True, ""),
        ]
    finally:
        engine.dispose()
