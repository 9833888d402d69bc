"""A recall and its message arriving at the same moment on two receiver replicas (or a replica
and reconciliation) never leave the message stored in clear (docs/design.md §4, "A recall
before its message"; store/recall_tombstones.py).

Each side checks the other's table in its own transaction, so without an order between them
both could miss the other. `interleave` makes the race deterministic: one transaction is left
open half-way, the other must wait for it rather than run past it. PostgreSQL only: SQLite runs
one writer at a time.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest
from sqlalchemy import Connection, select

from timeline_pipeline.db.engine import make_engine
from timeline_pipeline.db.schema import workspace_timeline_evidence as ev
from timeline_pipeline.db.schema import workspace_timeline_recall_tombstones as rt
from timeline_pipeline.receiver.batching import lock_order
from timeline_pipeline.receiver.bindings import BindingCache
from timeline_pipeline.receiver.handlers import EventHandlers
from timeline_pipeline.receiver.outcomes import Pending
from timeline_pipeline.settings import LarkTimelineSettings
from timeline_pipeline_tests.receiver.conftest import add_workspace
from timeline_pipeline_tests.receiver.lark_events import CHAT, NOW, receive
from timeline_pipeline_tests.support.lock_order import interleave

TEXT = "customer ACME-42 cannot pay"


def _handlers() -> EventHandlers:
    return EventHandlers(
        LarkTimelineSettings(enabled=True, event_ingestion_enabled=True),
        BindingCache(timedelta(0)),
        app_id=None,
        clock=lambda: NOW,
    )


def _write(pending: object) -> Callable[[Connection], object]:
    assert isinstance(pending, Pending)
    return lambda conn: pending.writer(conn, [pending.item])


def _message() -> Callable[[Connection], object]:
    event = receive("om_1", TEXT, at=NOW - timedelta(minutes=5))["event"]
    return _write(_handlers().message(event))


def _recall() -> Callable[[Connection], object]:
    return _write(_handlers().recall({"message_id": "om_1", "chat_id": CHAT}, NOW))


def _stored(pg_url: str) -> list[tuple[str, bool]]:
    engine = make_engine(pg_url)
    try:
        with engine.connect() as conn:
            return [(r.content, bool(r.deleted)) for r in conn.execute(select(ev))]
    finally:
        engine.dispose()


@pytest.mark.postgres_only
def test_a_recall_waits_for_a_write_of_its_message_under_way_and_redacts_it(pg_url: str) -> None:
    engine = make_engine(pg_url)
    try:
        add_workspace(engine)
        failures = interleave(engine, first=_message(), batch=_recall(), second=lambda conn: None)
        assert failures == []
        with engine.connect() as conn:
            assert conn.execute(select(rt)).all() == []  # found after all: no tombstone
    finally:
        engine.dispose()
    assert _stored(pg_url) == [("", True)]


@pytest.mark.postgres_only
def test_a_write_of_the_message_waits_for_a_recall_under_way_and_honours_it(pg_url: str) -> None:
    engine = make_engine(pg_url)
    try:
        add_workspace(engine)
        failures = interleave(engine, first=_recall(), batch=_message(), second=lambda conn: None)
        assert failures == []
        with engine.connect() as conn:
            assert [r.message_id for r in conn.execute(select(rt))] == ["om_1"]
    finally:
        engine.dispose()
    assert _stored(pg_url) == [("", True)]


def test_a_batch_takes_its_chats_in_chat_order_and_a_chats_recalls_before_its_messages() -> None:
    """The one order of the chats' locks in every transaction (receiver/handlers.py): a recall
    that takes a chat's lock alone never does so while its own batch shares it, and two batches
    never hold one chat each while waiting for the other's."""
    handlers = _handlers()
    pending = [
        handlers.message(receive("om_1", TEXT, chat_id="oc_b")["event"]),
        handlers.recall({"message_id": "om_2", "chat_id": "oc_b"}, NOW),
        handlers.message(receive("om_3", TEXT, chat_id="oc_a")["event"]),
        handlers.recall({"message_id": "om_4", "chat_id": "oc_a"}, NOW),
    ]
    groups = [p for p in pending if isinstance(p, Pending)]
    assert len(groups) == 4

    ordered = sorted(groups, key=lambda p: lock_order(p.group))

    assert [(p.chat_id, p.message_id) for p in ordered] == [
        ("oc_a", "om_4"),
        ("oc_a", "om_3"),
        ("oc_b", "om_2"),
        ("oc_b", "om_1"),
    ]
