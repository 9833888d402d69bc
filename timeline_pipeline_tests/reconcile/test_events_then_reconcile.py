"""Events first, reconciliation second: the two paths meet in the same evidence rows.

The real receiver (`timeline-pipeline serve`'s app) runs on loopback and the simulator's pusher
delivers signed callbacks the way Lark does: duplicated, reordered, sometimes not at all.
Reconciliation must then add exactly what was lost and recognise everything else as duplicates,
which also proves that the event shape and the history shape normalize to the same evidence.
"""

from __future__ import annotations

from contextlib import ExitStack
from datetime import timedelta
from typing import Any

from timeline_pipeline.http.app import create_app
from timeline_pipeline.lark.simulator import (
    EventIdentity,
    EventPusher,
    LoopbackUvicorn,
    message_receive_event,
)
from timeline_pipeline.receiver.router import EVENTS_PATH
from timeline_pipeline.reconcile.planning import MessageKey
from timeline_pipeline.settings import RuntimeEnvironment, Settings
from timeline_pipeline_tests.reconcile.conftest import MakeHarness
from timeline_pipeline_tests.reconcile.harness import NOW, Harness, messages, reply_to

VERIFICATION_TOKEN = "reconcile-events-token"


def start_receiver(h: Harness, exits: ExitStack) -> str:
    runtime = RuntimeEnvironment.model_validate(
        {"LARK_VERIFICATION_TOKEN": VERIFICATION_TOKEN, "LARK_APP_ID": h.sim.app_id}
    )
    app = create_app(Settings(h.settings, runtime), h.engine)
    server = exits.enter_context(LoopbackUvicorn(app))
    return server.base_url + EVENTS_PATH


def events_for(h: Harness, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    identity = EventIdentity(app_id=h.sim.app_id, verification_token=VERIFICATION_TOKEN)
    return [message_receive_event(item, identity) for item in items]


def test_duplicate_and_out_of_order_events_leave_reconciliation_only_duplicates(
    make_harness: MakeHarness,
) -> None:
    items = messages(80, start=NOW - timedelta(hours=2), thread_every=10)
    h = make_harness(items, event_ingestion_enabled=True)
    h.workspace()
    pusher = EventPusher(start_receiver(h, h.exits), duplicate_fraction=0.5, shuffle=True, seed=11)

    delivery = pusher.push(events_for(h, items))

    assert delivery.all_accepted and delivery.duplicated and not delivery.dropped
    assert h.evidence_count() == 80
    chat = h.run().chats[0]
    assert chat.ok
    assert (chat.upserts.inserted, chat.upserts.updated, chat.upserts.duplicate) == (0, 0, 80)
    assert h.evidence_count() == 80


def test_an_event_dropped_on_the_way_is_recovered_by_the_next_reconciliation(
    make_harness: MakeHarness,
) -> None:
    items = messages(60, start=NOW - timedelta(hours=2))
    lost = {items[5]["message_id"], items[30]["message_id"], items[59]["message_id"]}
    h = make_harness(items, event_ingestion_enabled=True)
    h.workspace()
    pusher = EventPusher(start_receiver(h, h.exits), drop_ids=lost, shuffle=True, seed=3)

    delivery = pusher.push(events_for(h, items))

    assert len(delivery.dropped) == 3
    assert h.message_ids() == {i["message_id"] for i in items} - lost
    chat = h.run().chats[0]
    assert (chat.upserts.inserted, chat.upserts.duplicate) == (3, 57)
    assert h.message_ids() == {i["message_id"] for i in items}


def test_a_reply_event_dropped_in_a_long_quiet_thread_is_collected_by_the_next_incremental_run(
    make_harness: MakeHarness,
) -> None:
    """The chat moved on for hours after the thread went quiet, so the incremental range holds
    neither the thread's root nor any of its messages; the reply's event is lost on the way."""
    items = messages(40, start=NOW - timedelta(hours=4), thread_every=10)
    items += messages(10, start=NOW - timedelta(hours=1), seed=2, thread_every=0)
    root = items[0]
    h = make_harness(items, event_ingestion_enabled=True)
    h.workspace()
    h.run()  # the backfill
    later = messages(5, start=NOW + timedelta(minutes=1), seed=3, thread_every=0)
    reply = reply_to(root, "om_lost_reply", MessageKey.of(NOW, "").create_time_ms + 120_000)
    for item in [*later, reply]:
        h.sim.store.add_message(item)
    pusher = EventPusher(start_receiver(h, h.exits), drop_ids={"om_lost_reply"}, seed=5)

    delivery = pusher.push(events_for(h, [*later, reply]))

    assert len(delivery.dropped) == 1
    assert "om_lost_reply" not in h.message_ids()
    chat = h.run(now=NOW + timedelta(minutes=10)).chats[0]
    quiet_since = max(
        int(i["create_time"]) for i in items if i.get("thread_id") == root["thread_id"]
    )
    assert chat.range_start is not None
    assert MessageKey.of(chat.range_start, "").create_time_ms > quiet_since + 2 * 3_600_000
    assert chat.upserts.inserted == 1
    assert {i["message_id"] for i in [*items, *later, reply]} == h.message_ids()
