"""The event path end to end: signed callbacks in, evidence rows out (docs/design.md §2, §3, §11).

Every test runs on SQLite and PostgreSQL through the real app; a 200 must mean "committed", so
each test reads the database right after the answer.
"""

from __future__ import annotations

import json
from datetime import timedelta

from sqlalchemy import Engine

from timeline_pipeline.domain.evidence import EvidenceRow
from timeline_pipeline.store import workspaces
from timeline_pipeline_tests.receiver.conftest import Receiver, ReceiverFactory, add_workspace
from timeline_pipeline_tests.receiver.lark_events import (
    ALICE,
    APP_ID,
    CHAT,
    NOW,
    TOKEN,
    card_click,
    challenge,
    recall,
    receive,
)


def test_a_message_is_stored_before_the_ack_with_the_sender_open_id(receiver: Receiver) -> None:
    response = receiver.post(receive("om_1", "db primary is down"))

    assert response.status_code == 200
    assert response.json() == {"status": "accepted"}
    [row] = receiver.rows()
    assert row.workspace_id == "inc-1"
    assert row.source_key == f"chat/{CHAT}/message/om_1"
    assert row.content == "db primary is down"
    assert row.actor_id == ALICE
    assert row.actor_display_name is None  # names are filled later, never on the request path
    assert row.ai_eligible
    assert not row.deleted
    assert (
        receiver.metric("timeline_lark_events_accepted_total", event_type="im.message.receive_v1")
        == 1
    )
    assert receiver.metric("timeline_lark_evidence_writes_total", outcome="inserted") == 1


def test_duplicate_and_out_of_order_deliveries_leave_one_row_with_the_newest_edit(
    receiver: Receiver,
) -> None:
    at = NOW - timedelta(minutes=10)
    original = receive("om_1", "db primary is down", at=at, event_id="ev-1")
    edited = receive(
        "om_1", "db primary and replica down", at=at, updated=at + timedelta(minutes=2)
    )

    for payload in (edited, original, original, edited):  # the edit arrives first, then replays
        assert receiver.post(payload).status_code == 200

    [row] = receiver.rows()
    assert row.content == "db primary and replica down"
    assert row.source_updated_at == at + timedelta(minutes=2)
    assert receiver.metric("timeline_lark_evidence_writes_total", outcome="inserted") == 1
    assert receiver.metric("timeline_lark_evidence_writes_total", outcome="duplicate") == 3


def test_an_edit_updates_the_same_row_and_changes_its_hash(receiver: Receiver) -> None:
    at = NOW - timedelta(minutes=10)
    receiver.post(receive("om_1", "rollback started", at=at))
    [before] = receiver.rows()

    receiver.post(receive("om_1", "rollback finished", at=at, updated=at + timedelta(minutes=1)))

    [after] = receiver.rows()
    assert after.id == before.id
    assert after.content == "rollback finished"
    assert after.content_hash != before.content_hash
    assert after.revision == before.revision + 1
    assert receiver.metric("timeline_lark_evidence_writes_total", outcome="updated") == 1


def test_one_chat_bound_to_two_workspaces_gives_one_row_each(
    make_receiver: ReceiverFactory, engine: Engine
) -> None:
    add_workspace(engine, "inc-1")
    add_workspace(engine, "inc-2")
    receiver = make_receiver()

    assert receiver.post(receive("om_1")).status_code == 200

    rows = receiver.rows()
    assert [r.workspace_id for r in rows] == ["inc-1", "inc-2"]
    assert len({r.source_key for r in rows}) == 1
    assert rows[0].content_hash == rows[1].content_hash


def test_a_workspace_that_stopped_firing_gets_nothing_while_its_sibling_does(
    make_receiver: ReceiverFactory, engine: Engine
) -> None:
    add_workspace(engine, "inc-live")
    add_workspace(engine, "inc-over", status="recovered")
    receiver = make_receiver()

    assert receiver.post(receive("om_1")).json() == {"status": "accepted"}

    assert [r.workspace_id for r in receiver.rows()] == ["inc-live"]
    assert (
        receiver.metric("timeline_lark_evidence_skipped_total", reason="workspace_not_firing") == 1
    )


def test_a_recall_redacts_the_stored_row_and_keeps_its_identity(receiver: Receiver) -> None:
    receiver.post(receive("om_1", "customer ACME-42 cannot pay"))
    [before] = receiver.rows()

    response = receiver.post(recall("om_1"))

    assert response.json() == {"status": "accepted"}
    [after] = receiver.rows()
    assert (after.id, after.source_key, after.occurred_at) == (
        before.id,
        before.source_key,
        before.occurred_at,
    )
    assert after.content == ""
    assert after.deleted
    assert after.metadata["deleted"] is True
    assert after.content_hash != before.content_hash
    assert not after.ai_eligible
    assert after.actor_id == ALICE
    assert receiver.metric("timeline_lark_evidence_writes_total", outcome="redacted") == 1

    # A second recall, and a late redelivery of the original message, change nothing.
    receiver.post(recall("om_1"))
    receiver.post(receive("om_1", "customer ACME-42 cannot pay"))
    [final] = receiver.rows()
    assert final == after


def test_a_recall_reaches_every_bound_workspace_even_one_that_stopped_firing(
    make_receiver: ReceiverFactory, engine: Engine
) -> None:
    add_workspace(engine, "inc-1")
    add_workspace(engine, "inc-2")
    receiver = make_receiver()
    receiver.post(receive("om_1", "secret detail"))
    with engine.begin() as conn:
        workspaces.set_status(conn, "inc-2", "recovered", actor="cli:test")

    receiver.post(recall("om_1"))

    rows = receiver.rows()
    assert [(r.workspace_id, r.deleted, r.content) for r in rows] == [
        ("inc-1", True, ""),
        ("inc-2", True, ""),
    ]


def test_a_recall_of_an_unknown_message_is_acknowledged_and_counted(receiver: Receiver) -> None:
    response = receiver.post(recall("om_never_seen"))

    assert response.json() == {"status": "ignored", "reason": "message_not_found"}
    assert receiver.rows() == []
    recalls = {"event_type": "im.message.recalled_v1", "reason": "message_not_found"}
    assert receiver.metric("timeline_lark_events_ignored_total", **recalls) == 1
    assert receiver.metric("timeline_lark_evidence_writes_total", outcome="tombstoned") == 1


def test_a_message_arriving_after_its_recall_is_stored_redacted_as_if_recalled_after(
    receiver: Receiver,
) -> None:
    at = NOW - timedelta(minutes=5)
    recalled_at = NOW - timedelta(minutes=1)
    # The usual order, for reference: the message, then its recall.
    receiver.post(receive("om_first", "customer ACME-42 cannot pay", at=at))
    receiver.post(recall("om_first", at=recalled_at))

    # Out of order: the recall is acknowledged before anything of the message is stored...
    early = receiver.post(recall("om_late", at=recalled_at))
    assert early.json() == {"status": "ignored", "reason": "message_not_found"}
    # ...and the message that arrives after it (and its redelivery) is stored redacted.
    assert (
        receiver.post(receive("om_late", "customer ACME-42 cannot pay", at=at)).status_code == 200
    )
    receiver.post(receive("om_late", "customer ACME-42 cannot pay", at=at))

    rows = {row.source_key.rsplit("/", 1)[1]: row for row in receiver.rows()}
    usual, late = rows["om_first"], rows["om_late"]
    assert (late.content, late.deleted, late.ai_eligible) == ("", True, False)
    assert late.metadata["recalled_at"] == recalled_at.isoformat()

    def shown(row: EvidenceRow) -> tuple[object, ...]:
        return (
            row.occurred_at,
            row.source_updated_at,
            row.actor_id,
            row.content,
            row.content_hash,
            row.metadata,
            row.ai_eligible,
            row.deleted,
            row.held_content,
        )

    assert shown(late) == shown(usual)
    assert receiver.metric("timeline_lark_evidence_writes_total", outcome="tombstoned") == 1


def test_messages_from_the_app_itself_are_self_generated_not_stored_and_counted(
    receiver: Receiver,
) -> None:
    response = receiver.post(
        receive("om_bot", "Timeline draft ready", sender=APP_ID, sender_type="app")
    )

    assert response.json() == {"status": "ignored", "reason": "self_generated"}
    assert receiver.rows() == []
    assert receiver.metric("timeline_lark_messages_excluded_total", reason="self") == 1
    ignored = {"event_type": "im.message.receive_v1", "reason": "self_generated"}
    assert receiver.metric("timeline_lark_events_ignored_total", **ignored) == 1


def test_messages_from_other_bots_are_stored_but_never_reach_synthesis(
    receiver: Receiver,
) -> None:
    response = receiver.post(
        receive("om_bot", "CPU alert fired", sender="cli_monitoring", sender_type="app")
    )

    assert response.json() == {"status": "accepted"}
    [row] = receiver.rows()
    assert (row.actor_id, row.ai_eligible) == ("cli_monitoring", False)
    assert receiver.metric("timeline_lark_messages_excluded_total", reason="bot") == 1


def test_a_message_event_without_a_chat_type_is_unknown_acknowledged_and_counted(
    receiver: Receiver,
) -> None:
    payload = receive("om_1")
    del payload["event"]["message"]["chat_type"]

    response = receiver.post(payload)

    assert response.status_code == 200
    assert response.json() == {"status": "ignored", "reason": "unknown_chat_type"}
    assert receiver.rows() == []
    ignored = {"event_type": "im.message.receive_v1", "reason": "unknown_chat_type"}
    assert receiver.metric("timeline_lark_events_ignored_total", **ignored) == 1


def test_url_verification_answers_the_challenge(receiver: Receiver) -> None:
    response = receiver.post(challenge("c-42"))

    assert response.status_code == 200
    assert response.json() == {"challenge": "c-42"}


def test_a_challenge_with_a_lone_surrogate_is_answered_not_a_500(receiver: Receiver) -> None:
    # Lark's JSON may escape any code unit; Python reads "\\ud800" as a lone surrogate, which
    # UTF-8 cannot encode. The answer escapes it, so the client reads back what it sent.
    payload = {"type": "url_verification", "token": TOKEN, "challenge": "c-\ud800"}
    body = json.dumps(payload)  # ASCII: the surrogate is sent escaped, as "\\ud800"

    response = receiver.post_raw(body.encode(), {"Content-Type": "application/json"})

    assert response.status_code == 200
    assert response.content == b'{"challenge":"c-\\ud800"}'
    assert response.json() == {"challenge": "c-\ud800"}


def test_card_actions_are_acknowledged_as_ignored_while_review_cards_are_off(
    receiver: Receiver,
) -> None:
    response = receiver.post(card_click())

    assert response.json() == {"status": "ignored", "reason": "review_cards_disabled"}
    assert (
        receiver.metric(
            "timeline_lark_events_ignored_total",
            event_type="card.action.trigger",
            reason="review_cards_disabled",
        )
        == 1
    )


def test_with_ingestion_disabled_messages_are_acknowledged_and_not_stored(
    make_receiver: ReceiverFactory, engine: Engine
) -> None:
    add_workspace(engine)
    receiver = make_receiver(event_ingestion_enabled=False)

    response = receiver.post(receive("om_1"))

    assert response.json() == {"status": "ignored", "reason": "ingestion_disabled"}
    assert receiver.rows() == []


def test_a_chat_bound_after_start_is_ingested_without_a_restart(
    make_receiver: ReceiverFactory, engine: Engine
) -> None:
    receiver = make_receiver(binding_cache_ttl="0s")
    assert receiver.post(receive("om_1")).json()["reason"] == "unbound_chat"

    add_workspace(engine)

    assert receiver.post(receive("om_2")).json() == {"status": "accepted"}
    assert [r.source_key for r in receiver.rows()] == [f"chat/{CHAT}/message/om_2"]


def test_healthz_and_metrics(receiver: Receiver) -> None:
    receiver.post(receive("om_1"))

    health = receiver.client.get("/healthz")
    metrics = receiver.client.get("/metrics")

    assert health.status_code == 200
    assert health.json() == {"status": "ok", "database": "ok"}
    assert metrics.headers["content-type"].startswith("text/plain")
    assert "timeline_lark_events_received_total 1.0" in metrics.text
    assert 'timeline_lark_evidence_writes_total{outcome="inserted"} 1.0' in metrics.text
