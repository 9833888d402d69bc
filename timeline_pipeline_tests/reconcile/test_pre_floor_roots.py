"""A thread rooted before the ingestion floor is found by paging back through the chat before
the floor, within `reconcilePreFloorScanLimit` messages (issue 35, item 6): an alert storm of
57 messages between the root and the floor no longer hides it. A scan that reaches its limit
gives up, says so in the chat's report (the collection asset's `per_chat` metadata) and in the
checkpoint's `last_run`. The real client against the local Lark, on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from timeline_pipeline.lark.simulator.server import ROUTE_LIST_MESSAGES
from timeline_pipeline.reconcile.planning import MessageKey
from timeline_pipeline_tests.reconcile.conftest import MakeHarness
from timeline_pipeline_tests.reconcile.harness import NOW, messages, reply_to

H = timedelta(hours=1)
CREATED = NOW - 3 * H
STORM = 57
"""Alerts between the root and the floor: more than one page of 50."""


def _storm_harness(make_harness: MakeHarness) -> Any:
    """The root 20 minutes before the workspace, 57 alerts after it and before the floor, and
    five replies in its thread an hour into the incident whose events were lost."""
    root = {
        **messages(1, start=CREATED - 20 * timedelta(minutes=1), seed=5)[0],
        "message_id": "om_alert_root",
        "thread_id": "omt_alert",
    }
    storm = messages(
        STORM, start=CREATED - 15 * timedelta(minutes=1), seed=7, interval_seconds=10.0
    )
    assert all(MessageKey(int(m["create_time"]), "").created_at < CREATED for m in storm)
    chatter = messages(10, start=CREATED + timedelta(minutes=1), seed=6)
    h = make_harness([root, *storm, *chatter])
    base = MessageKey.of(CREATED + H, "").create_time_ms
    for n in range(5):
        h.sim.store.add_message(reply_to(root, f"om_lost_{n}", base + n * 60_000))
    h.workspace(created_at=CREATED)
    return h


def test_a_root_behind_an_alert_storm_before_the_floor_is_found_by_paging(
    make_harness: MakeHarness,
) -> None:
    h = _storm_harness(make_harness)

    chat = h.run().chats[0]

    assert chat.ok and chat.threads_fetched == 1
    assert {f"om_lost_{n}" for n in range(5)} <= h.message_ids()
    assert "om_alert_root" not in h.message_ids()  # before the workspace: never evidence
    assert chat.pre_floor_messages_read == STORM + 1
    assert not chat.pre_floor_roots_given_up
    assert chat.covered_until == NOW


def test_a_scan_that_reaches_its_limit_gives_up_and_says_so(make_harness: MakeHarness) -> None:
    h = _storm_harness(make_harness)
    h.settings = h.settings.model_copy(update={"reconcile_pre_floor_scan_limit": 50})
    before = h.sim.request_counts[ROUTE_LIST_MESSAGES]

    chat = h.run().chats[0]

    assert chat.ok and chat.threads_fetched == 0
    assert chat.pre_floor_messages_read == 50
    assert chat.pre_floor_roots_given_up
    assert chat.as_dict()["pre_floor_roots_given_up"] is True
    assert h.checkpoint().metadata["last_run"]["pre_floor_roots_given_up"] is True
    assert h.sim.request_counts[ROUTE_LIST_MESSAGES] > before
