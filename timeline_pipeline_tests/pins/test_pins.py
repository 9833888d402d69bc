"""Pins from the chat on SQLite and PostgreSQL (docs/pins.md): a curator's pin reaction makes
the message a human, confirmed entry bound to its evidence and queues one reply in its thread;
a repeat or a redelivery changes nothing; taking the reaction back hides the entry; anyone
else's reaction, another emoji, a card or the product's own message changes nothing and is
counted; every workspace the chat is bound to decides with its own curators."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

from sqlalchemy import Engine, func, select

from timeline_pipeline.db.schema import audit_events
from timeline_pipeline.domain.card_requests import PinNote
from timeline_pipeline.domain.keys import SOURCE_LARK, SOURCE_TYPE_LARK_MESSAGE, message_source_key
from timeline_pipeline.lark.simulator.server import ROUTE_GET_MESSAGE
from timeline_pipeline.review_cards.drawing import headline
from timeline_pipeline.store import evidence, workspaces
from timeline_pipeline_tests.pins.harness import CHAT, CURATOR, PinHarness, pin_harness
from timeline_pipeline_tests.review_cards.harness import button


def _entries_of(h: PinHarness, workspace_id: str) -> int:
    with h.engine.connect() as conn:
        from timeline_pipeline.store import entries

        return len(entries.list_for_workspace(conn, workspace_id, limit=100))


def test_a_curators_pin_makes_a_human_confirmed_entry_bound_to_the_messages_evidence(
    engine: Engine,
) -> None:
    with pin_harness(engine) as h:
        message_id = h.say("the retry storm comes from the payments sidecar, not the gateway")
        result = h.react(message_id)
        assert result.pinned == (h.workspace_id,)
        entry = h.pin_entry(message_id)
        assert entry is not None
        assert (entry.source, entry.status, entry.category) == ("human", "confirmed", "finding")
        assert entry.title == "the retry storm comes from the payments sidecar, not the gateway"
        with engine.connect() as conn:
            row = evidence.get_by_key(
                conn,
                h.workspace_id,
                SOURCE_LARK,
                SOURCE_TYPE_LARK_MESSAGE,
                message_source_key(CHAT, message_id),
            )
            audited = (
                conn.execute(
                    select(audit_events.c.actor).where(
                        audit_events.c.subject_id == str(entry.id),
                        audit_events.c.action == "entry.add",
                    )
                )
                .scalars()
                .all()
            )
        assert row is not None and entry.evidence_ids == (row.id,)
        assert entry.occurred_at == row.occurred_at
        assert audited == [f"lark:{CURATOR}"]  # the curator's own act, audited as theirs
        assert h.count("timeline_pins_created_total") == 1
        # The reply is queued with the pin, in the message's thread, and posted by the worker.
        [reply] = h.replies()
        assert reply.reply_to_message_id == message_id and reply.chat_id == CHAT
        h.drain()
        [sent] = h.sent()
        assert sent["card"]["header"]["title"]["content"] == (
            f"Pinned to the timeline of {h.workspace_id} as finding"
        )
        posted = h.lark.store.get(sent["message_id"])
        assert posted is not None and posted["parent_id"] == message_id


def test_a_reaction_by_someone_who_is_not_a_curator_is_counted_and_changes_nothing(
    engine: Engine,
) -> None:
    with pin_harness(engine) as h:
        message_id = h.say("db primary failed over at 12:41")
        result = h.react(message_id, operator="ou_bystander")
        assert not result.changed and result.reason == "not_curator"
        assert h.pin_entry(message_id) is None and h.pins() == [] and h.replies() == []
        assert h.count("timeline_pins_refused_total", reason="not_curator") == 1
        assert h.count("timeline_pins_created_total") == 0


def test_another_emoji_or_an_apps_reaction_is_ignored(engine: Engine) -> None:
    with pin_harness(engine) as h:
        message_id = h.say("rolled back the gateway config")
        assert h.react(message_id, emoji="THUMBSUP").reason == "other_emoji"
        assert h.react(message_id, operator=h.app_id, operator_type="app").reason == (
            "not_a_person"
        )
        assert h.pin_entry(message_id) is None
        assert h.count("timeline_pins_refused_total", reason="other_emoji") == 1


def test_the_same_reaction_again_and_a_redelivery_change_nothing(engine: Engine) -> None:
    with pin_harness(engine) as h:
        message_id = h.say("error budget for checkout is exhausted")
        at = datetime.now(UTC)
        first = h.event(message_id, at=at)
        assert h.deliver(first).pinned == (h.workspace_id,)
        # A redelivery (same event), and the same reaction again under a new event id.
        assert h.deliver(first).reason == "duplicate"
        assert h.react(message_id, at=at + timedelta(seconds=3)).reason == "duplicate"
        assert len(h.pins()) == 1 and len(h.replies()) == 1
        assert _entries_of(h, h.workspace_id) == 1
        entry = h.pin_entry(message_id)
        assert entry is not None and entry.revision == 1
        assert h.count("timeline_pins_created_total") == 1
        assert h.count("timeline_pins_refused_total", reason="duplicate") == 2
        h.drain()
        h.drain()
        assert len(h.sent()) == 1


def test_removing_the_reaction_hides_the_entry_and_old_events_do_not_bring_it_back(
    engine: Engine,
) -> None:
    with pin_harness(engine) as h:
        message_id = h.say("customers see 502 on checkout in eu-west")
        at = datetime.now(UTC)
        pinned = h.event(message_id, at=at)
        h.deliver(pinned)
        removed = h.event(message_id, removed=True, at=at + timedelta(seconds=10))
        assert h.deliver(removed).unpinned == (h.workspace_id,)
        entry = h.pin_entry(message_id)
        assert entry is not None and entry.status == "hidden"  # kept for traceability
        assert h.count("timeline_pins_removed_total") == 1
        # The removal redelivered, and the pin's own event delivered late: nothing changes.
        assert h.deliver(removed).reason == "duplicate"
        assert h.deliver(pinned).reason == "duplicate"
        again = h.pin_entry(message_id)
        assert again is not None and again.status == "hidden"
        # A new pin by the curator shows it again; still one entry, one reply.
        assert h.react(message_id, at=at + timedelta(seconds=20)).pinned == (h.workspace_id,)
        shown = h.pin_entry(message_id)
        assert shown is not None and (shown.id, shown.status) == (entry.id, "confirmed")
        assert len(h.replies()) == 1
        # Someone else taking back a reaction they never pinned with changes nothing.
        assert h.react(message_id, operator="ou_other", removed=True).reason == "not_pinned"


def test_a_message_not_collected_yet_is_read_from_lark_and_stored_first(engine: Engine) -> None:
    with pin_harness(engine) as h:
        message_id = h.say("cache hit ratio dropped to 20% after the deploy", stored=False)
        before = h.lark.request_counts[ROUTE_GET_MESSAGE]
        result = h.react(message_id)
        assert result.pinned == (h.workspace_id,) and result.chat_id == CHAT
        assert h.lark.request_counts[ROUTE_GET_MESSAGE] == before + 1
        entry = h.pin_entry(message_id)
        assert entry is not None and entry.status == "confirmed" and entry.evidence_ids
        with engine.connect() as conn:
            [row] = evidence.get_many(conn, h.workspace_id, list(entry.evidence_ids))
        assert row.source_key == f"chat/{CHAT}/message/{message_id}"
        assert row.content == "cache hit ratio dropped to 20% after the deploy"
        # Stored now: a second curator's pin finds it without asking Lark again.
        with engine.begin() as conn:
            workspaces.add_curator(conn, h.workspace_id, "ou_second")
        assert h.react(message_id, operator="ou_second").pinned == (h.workspace_id,)
        assert h.lark.request_counts[ROUTE_GET_MESSAGE] == before + 1
        assert _entries_of(h, h.workspace_id) == 1  # one entry per message, two pins
        # The entry stays until the last curator takes their pin back.
        h.react(message_id, removed=True)
        still = h.pin_entry(message_id)
        assert still is not None and still.status == "confirmed"
        h.react(message_id, operator="ou_second", removed=True)
        gone = h.pin_entry(message_id)
        assert gone is not None and gone.status == "hidden"


def test_a_message_lark_does_not_know_is_refused(engine: Engine) -> None:
    with pin_harness(engine) as h:
        assert h.react("om_never_sent").reason == "message_unavailable"
        assert h.count("timeline_pins_refused_total", reason="message_unavailable") == 1


def test_a_chat_bound_to_two_workspaces_pins_in_each_with_its_own_curators(
    engine: Engine,
) -> None:
    with pin_harness(engine) as h:
        other = f"{h.workspace_id}-b"
        with engine.begin() as conn:
            workspaces.create(conn, other, created_at=datetime.now(UTC) - timedelta(hours=1))
            workspaces.bind_chat(conn, other, CHAT)
            workspaces.add_curator(conn, other, "ou_other_curator")
        message_id = h.say("we are failing over to the standby region")
        # The first workspace's curator pins in the first workspace only.
        result = h.react(message_id)
        assert result.pinned == (h.workspace_id,)
        assert result.reasons["not_curator"] == 1
        assert h.pin_entry(message_id, other) is None
        # The other workspace's curator pins there, with its own entry and reply.
        assert h.react(message_id, operator="ou_other_curator").pinned == (other,)
        mine, theirs = h.pin_entry(message_id), h.pin_entry(message_id, other)
        assert mine is not None and theirs is not None and mine.id != theirs.id
        assert theirs.source == "human" and theirs.status == "confirmed"
        assert len(h.replies()) == 1 and len(h.replies(other)) == 1
        h.drain()
        titles = sorted(c["card"]["header"]["title"]["content"] for c in h.sent())
        assert titles == sorted(
            headline(PinNote(w, ""), "finding") for w in (h.workspace_id, other)
        )
        # Taking the first pin back hides only the first workspace's entry.
        h.react(message_id, removed=True)
        hidden, kept = h.pin_entry(message_id), h.pin_entry(message_id, other)
        assert hidden is not None and hidden.status == "hidden"
        assert kept is not None and kept.status == "confirmed"


def test_a_workspace_out_of_scope_or_a_message_too_old_is_not_pinned(engine: Engine) -> None:
    with pin_harness(engine) as h:
        message_id = h.say("the incident is mitigated")
        with engine.begin() as conn:
            workspaces.set_status(conn, h.workspace_id, "archived", actor="cli:test")
        assert h.react(message_id).reason == "not_eligible"
        with engine.begin() as conn:
            workspaces.set_status(conn, h.workspace_id, "firing", actor="cli:test")
        old = h.say("an old remark", stored=False, minutes_ago=60 * 24 * 5)
        assert h.react(old).reason == "not_eligible"
        assert h.pin_entry(message_id) is None and h.pin_entry(old) is None


def test_a_reaction_on_a_card_or_on_the_products_own_message_is_refused(engine: Engine) -> None:
    with pin_harness(engine) as h:
        message_id = h.say("payments p99 at 7s")
        h.react(message_id)
        h.drain()
        [reply] = h.sent()
        assert h.react(reply["message_id"]).reason == "own_message"
        other_bot = h.say("", msg_type="interactive", sender="cli_alerts", sender_type="app",
                          stored=False)  # fmt: skip
        assert h.react(other_bot).reason == "card"
        assert h.count("timeline_pins_refused_total", reason="own_message") == 1
        assert h.count("timeline_pins_refused_total", reason="card") == 1
        assert len(h.pins()) == 1


def test_the_thread_reply_is_sent_once_across_a_restart(engine: Engine) -> None:
    with pin_harness(engine, review_card_lease="1s") as h:
        message_id = h.say("root cause: a config push disabled connection reuse")
        h.react(message_id)
        assert h.worker is not None
        # The first process takes the delivery and posts, then dies before recording it.
        [card] = h.replies()
        with engine.begin() as conn:
            from timeline_pipeline.store import interaction_requests as cards

            [taken] = cards.claim_deliveries(
                conn,
                owner=h.worker.owner,
                now=datetime.now(UTC),
                lease=timedelta(seconds=1),
                limit=8,
            )
        assert taken.id == card.id
        sender = h.worker._sender
        assert sender is not None
        sender.post(CHAT, {"header": {}}, uuid=card.idempotency_uuid, reply_to=message_id)
        h.restart()
        # The redelivered reaction after the restart queues nothing new.
        assert h.react(message_id).reason == "duplicate"
        deadline = datetime.now(UTC) + timedelta(seconds=10)
        while datetime.now(UTC) < deadline and not h.replies()[0].message_id:
            h.drain()
            time.sleep(0.1)
        [done] = h.replies()
        assert done.delivery_status == "sent" and done.message_id
        # Lark deduplicated the second post by its uuid: one reply in the chat.
        replies = [m for m in h.lark.store.messages(CHAT) if m.get("parent_id") == message_id]
        assert len(replies) == 1 and replies[0]["message_id"] == done.message_id


def test_the_curator_changes_the_category_from_the_reply_card(engine: Engine) -> None:
    with pin_harness(engine) as h:
        message_id = h.say("flipped the feature flag off, errors are dropping")
        h.react(message_id)
        h.drain()
        [reply] = h.replies()
        entry = h.pin_entry(message_id)
        assert entry is not None and reply.message_id is not None
        shown = h.lark.store.card_log(reply.message_id)[-1]["card"]
        value = button(shown, entry.id, "category")
        from timeline_pipeline.lark.simulator.events import EventIdentity, card_action_event

        payload = card_action_event(
            EventIdentity(app_id=h.app_id),
            operator_open_id=CURATOR,
            open_message_id=reply.message_id,
            open_chat_id=CHAT,
            action_value=value,
        )
        payload["event"]["action"]["option"] = "mitigation"
        answer = h.callbacks.handle(payload)
        assert answer.outcome == "admitted"
        # A button the pin's card does not offer is refused, whatever its value says.
        confirm = dict(value, a="confirm")
        forged = card_action_event(
            EventIdentity(app_id=h.app_id),
            operator_open_id=CURATOR,
            open_message_id=reply.message_id,
            open_chat_id=CHAT,
            action_value=confirm,
        )
        assert h.callbacks.handle(forged).reason == "action_not_offered"
        h.drain()
        changed = h.pin_entry(message_id)
        assert changed is not None and changed.category == "mitigation"
        assert changed.status == "confirmed" and changed.source == "human"
        redrawn = h.lark.store.card_log(reply.message_id)[-1]
        assert redrawn["kind"] == "patched"
        assert redrawn["card"]["header"]["title"]["content"].endswith("as mitigation")


def test_pins_are_off_by_default(engine: Engine) -> None:
    with pin_harness(engine, pin_from_chat_enabled=False) as h:
        message_id = h.say("noted")
        assert h.react(message_id).reason == "pins_disabled"
        with engine.connect() as conn:
            assert conn.execute(select(func.count()).select_from(audit_events)).scalar_one() == 0
