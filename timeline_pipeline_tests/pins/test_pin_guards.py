"""Who a pin reaction may act for, and in which order reactions count (docs/pins.md, "What a
reaction does", "A removal before its creation", "A removed curator"), on SQLite and PostgreSQL
with the local Lark:

- unpinning needs a current curator of a workspace the chat is still bound to, and a removed
  curator's leftover pin no longer keeps the entry pinned (issue 34, item 4);
- a removal that arrives before its creation leaves a durable tombstone that the older creation
  honours (item 7);
- a message is read from Lark only for, and stored only in, a workspace whose curator asked
  (item 10)."""

from __future__ import annotations

import secrets
from datetime import UTC, datetime, timedelta

from sqlalchemy import Engine, delete, func, select

from timeline_pipeline.db.schema import timeline_pin_tombstones
from timeline_pipeline.db.schema import workspace_collaboration_resources as bindings
from timeline_pipeline.domain.keys import SOURCE_LARK, SOURCE_TYPE_LARK_MESSAGE, message_source_key
from timeline_pipeline.lark.simulator.fixtures import message_item
from timeline_pipeline.lark.simulator.server import ROUTE_GET_MESSAGE
from timeline_pipeline.store import evidence, workspaces
from timeline_pipeline_tests.pins.harness import CHAT, CURATOR, PinHarness, pin_harness

SECOND = "ou_pin_second"


def _stored(h: PinHarness, workspace_id: str, chat_id: str, message_id: str) -> bool:
    with h.engine.connect() as conn:
        row = evidence.get_by_key(
            conn,
            workspace_id,
            SOURCE_LARK,
            SOURCE_TYPE_LARK_MESSAGE,
            message_source_key(chat_id, message_id),
        )
    return row is not None


def _other_workspace(h: PinHarness, chat_id: str, curator: str) -> str:
    other = f"{h.workspace_id}-b"
    with h.engine.begin() as conn:
        workspaces.create(conn, other, created_at=datetime.now(UTC) - timedelta(hours=1))
        workspaces.bind_chat(conn, other, chat_id)
        workspaces.add_curator(conn, other, curator)
    return other


def _status(h: PinHarness, message_id: str) -> str:
    entry = h.pin_entry(message_id)
    assert entry is not None
    return entry.status


# --- item 4: unpin needs a current curator of a still-bound workspace -------------------------


def test_a_removed_curators_removal_does_not_hide_the_entry(engine: Engine) -> None:
    with pin_harness(engine) as h:
        message_id = h.say("the leak is in the session cache")
        at = datetime.now(UTC)
        assert h.react(message_id, at=at).pinned == (h.workspace_id,)
        with engine.begin() as conn:
            workspaces.remove_curator(conn, h.workspace_id, CURATOR)
        result = h.react(message_id, removed=True, at=at + timedelta(seconds=5))
        assert result.unpinned == () and result.reason == "not_curator"
        assert _status(h, message_id) == "confirmed"
        assert h.count("timeline_pins_removed_total") == 0


def test_a_removal_after_the_chat_was_unbound_does_not_hide_the_entry(engine: Engine) -> None:
    with pin_harness(engine) as h:
        message_id = h.say("rolled the canary back")
        at = datetime.now(UTC)
        h.react(message_id, at=at)
        with engine.begin() as conn:
            conn.execute(
                delete(bindings).where(
                    bindings.c.workspace_id == h.workspace_id, bindings.c.resource_key == CHAT
                )
            )
        result = h.react(message_id, removed=True, at=at + timedelta(seconds=5))
        assert result.unpinned == () and result.reason == "unbound_chat"
        assert _status(h, message_id) == "confirmed"


def test_a_removed_curators_leftover_pin_does_not_keep_the_entry_pinned(engine: Engine) -> None:
    with pin_harness(engine) as h:
        with engine.begin() as conn:
            workspaces.add_curator(conn, h.workspace_id, SECOND)
        message_id = h.say("queue depth back under 1k")
        at = datetime.now(UTC)
        h.react(message_id, at=at)
        h.react(message_id, operator=SECOND, at=at + timedelta(seconds=1))
        with engine.begin() as conn:
            workspaces.remove_curator(conn, h.workspace_id, CURATOR)
        # The remaining curator takes their pin back: no current curator pins it any more.
        result = h.react(message_id, operator=SECOND, removed=True, at=at + timedelta(seconds=9))
        assert result.unpinned == (h.workspace_id,)
        assert _status(h, message_id) == "hidden"


# --- item 7: a removal before its creation ----------------------------------------------------


def test_a_removal_that_arrives_before_its_creation_keeps_the_message_unpinned(
    engine: Engine,
) -> None:
    with pin_harness(engine) as h:
        message_id = h.say("disk on db-3 is at 97%")
        at = datetime.now(UTC)
        created = h.event(message_id, at=at)
        removed = h.event(message_id, removed=True, at=at + timedelta(seconds=4))
        assert h.deliver(removed).reason == "not_pinned"
        h.restart()  # durable: a new process still knows of the removal
        result = h.deliver(created)
        assert result.pinned == () and result.reason == "superseded"
        assert h.pin_entry(message_id) is None and h.pins() == [] and h.replies() == []
        assert h.count("timeline_pins_refused_total", reason="superseded") == 1
        with engine.connect() as conn:
            [tombstone] = conn.execute(select(timeline_pin_tombstones)).all()
        assert (tombstone.workspace_id, tombstone.message_id) == (h.workspace_id, message_id)
        assert (tombstone.operator_open_id, tombstone.emoji_type) == (CURATOR, "Pin")
        # A newer pin (a new reaction after the removal) pins as usual.
        later = h.react(message_id, at=at + timedelta(seconds=8))
        assert later.pinned == (h.workspace_id,)
        assert _status(h, message_id) == "confirmed"


def test_an_older_removal_delivered_late_does_not_move_the_tombstone_back(
    engine: Engine,
) -> None:
    with pin_harness(engine) as h:
        message_id = h.say("paging the storage on-call")
        at = datetime.now(UTC)
        h.react(message_id, removed=True, at=at + timedelta(seconds=10))
        h.react(message_id, removed=True, at=at + timedelta(seconds=2))
        assert h.react(message_id, at=at + timedelta(seconds=5)).reason == "superseded"
        assert h.pin_entry(message_id) is None


def test_a_removal_by_someone_who_curates_nothing_leaves_no_tombstone(engine: Engine) -> None:
    with pin_harness(engine) as h:
        message_id = h.say("status page updated")
        assert h.react(message_id, operator="ou_nobody", removed=True).reason == "not_pinned"
        with engine.connect() as conn:
            count = conn.execute(
                select(func.count()).select_from(timeline_pin_tombstones)
            ).scalar_one()
        assert count == 0


# --- item 10: a message read from Lark only for a workspace whose curator asked ---------------


def test_a_message_read_from_lark_is_stored_only_where_the_curator_curates(
    engine: Engine,
) -> None:
    with pin_harness(engine) as h:
        other = _other_workspace(h, CHAT, "ou_other_curator")
        message_id = h.say("latency is back to baseline", stored=False)
        result = h.react(message_id)
        assert result.pinned == (h.workspace_id,) and result.reasons["not_curator"] == 1
        assert _stored(h, h.workspace_id, CHAT, message_id)
        assert not _stored(h, other, CHAT, message_id)


def test_a_message_of_a_chat_the_curator_does_not_curate_is_stored_nowhere(
    engine: Engine,
) -> None:
    with pin_harness(engine) as h:
        foreign_chat = f"oc_foreign_{secrets.token_hex(3)}"
        other = _other_workspace(h, foreign_chat, "ou_other_curator")
        message_id = f"om_{secrets.token_hex(6)}"
        created = datetime.now(UTC) - timedelta(minutes=3)
        h.lark.store.add_message(
            message_item(
                "text",
                {"text": "foreign words"},
                message_id=message_id,
                chat_id=foreign_chat,
                create_time=str(int(created.timestamp() * 1000)),
                sender_id="ou_someone",
            )
        )
        result = h.react(message_id)
        assert result.pinned == () and result.reason == "not_curator"
        assert not _stored(h, other, foreign_chat, message_id)


def test_lark_is_not_asked_when_no_workspace_of_the_curator_could_take_the_message(
    engine: Engine,
) -> None:
    with pin_harness(engine) as h:
        message_id = h.say("we are still investigating", stored=False)
        with engine.begin() as conn:
            workspaces.set_status(conn, h.workspace_id, "archived", actor="cli:test")
        before = h.lark.request_counts[ROUTE_GET_MESSAGE]
        assert h.react(message_id).reason == "not_eligible"
        assert h.lark.request_counts[ROUTE_GET_MESSAGE] == before
