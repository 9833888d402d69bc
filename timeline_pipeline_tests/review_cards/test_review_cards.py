"""Review cards end to end in one process, on SQLite and PostgreSQL: a card is posted once,
a curator's click is admitted and applied once through the curation service, and every forged
or mismatched callback is refused with a toast and changes nothing (docs/review-cards.md)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import Engine

from timeline_pipeline.lark.simulator.fixtures import message_item
from timeline_pipeline.store import entries
from timeline_pipeline_tests.review_cards.harness import (
    CHAT,
    CURATOR,
    Harness,
    button,
    harness,
    plan_card,
    seed_entries,
)

SQLITE_ONLY = pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
"""Behaviour above the stores (the reconcile path, a count): the stores' SQL runs on both
databases in the other tests."""


def _ready(
    h: Harness, count: int = 2, ttl: timedelta = timedelta(hours=1)
) -> tuple[int, list[int]]:
    ids = seed_entries(h.engine, h.workspace_id, count)
    card_id = plan_card(h.engine, h.workspace_id, ids, ttl=ttl)
    h.drain()
    return card_id, ids


def _status(engine: Engine, entry_id: int) -> tuple[str, int]:
    with engine.connect() as conn:
        row = entries.get(conn, entry_id)
    assert row is not None
    return row.status, row.revision


def test_a_queued_card_is_posted_once_even_when_its_delivery_is_repeated(engine: Engine) -> None:
    with harness(engine) as h:
        card_id, ids = _ready(h)
        card = h.card(card_id)
        assert card.delivery_status == "sent"
        assert card.bot_app_id == h.app_id
        sent = [c for c in h.lark.store.card_log() if c["kind"] == "sent"]
        assert len(sent) == 1
        assert sent[0]["chat_id"] == CHAT
        # The same post again (a worker that crashed after sending) lands on the same message.
        assert h.worker is not None
        again = h.worker._sender.post(  # type: ignore[union-attr]
            CHAT, sent[0]["card"], uuid=card.idempotency_uuid, reply_to=None
        )
        assert again.message_id == card.message_id
        assert len([c for c in h.lark.store.card_log() if c["kind"] == "sent"]) == 1
        assert {button(h.shown(card_id), i, "confirm")["e"] for i in ids} == set(ids)


def test_the_card_of_one_threads_drafts_is_posted_as_a_reply_inside_that_thread(
    engine: Engine,
) -> None:
    with harness(engine) as h:
        root = h.lark.store.add_message(
            message_item(
                "text",
                {"text": "payments p99 at 7s since 12:30"},
                message_id="om_thread_root",
                chat_id=CHAT,
                create_time="1772528400000",
                sender_id="ou_reporter",
            )
        )
        ids = seed_entries(h.engine, h.workspace_id, 2)
        card_id = plan_card(
            h.engine, h.workspace_id, ids, ttl=timedelta(hours=1), reply_to="om_thread_root"
        )
        h.drain()
        posted = h.lark.store.get(h.card(card_id).message_id)
        assert posted is not None
        assert posted["root_id"] == root["message_id"]
        thread_id = h.lark.store.get("om_thread_root")["thread_id"]  # type: ignore[index]
        assert thread_id and posted["thread_id"] == thread_id


def test_a_curator_confirms_a_draft_once_with_an_audit_event_and_the_card_says_who(
    engine: Engine,
) -> None:
    with harness(engine) as h:
        card_id, ids = _ready(h)
        answer = h.click(card_id, ids[0], "confirm")
        assert answer.outcome == "admitted"
        assert answer.body["toast"]["type"] == "success"
        assert answer.body["card"]["type"] == "raw"
        assert f"<at id={CURATOR}></at>" in str(answer.body["card"]["data"])
        assert _status(engine, ids[0])[0] == "draft"  # applied by the worker, not the answer
        h.drain()
        assert _status(engine, ids[0]) == ("confirmed", 2)
        assert h.audits(ids[0], "entry.confirm") == 1
        shown = h.shown(card_id)
        assert "Confirmed by" in str(shown)
        assert h.lark.store.card_log(h.card(card_id).message_id)[-1]["kind"] == "patched"


def test_a_replayed_callback_resumes_processing_once(engine: Engine) -> None:
    with harness(engine) as h:
        card_id, ids = _ready(h)
        payload = h.payload(card_id, ids[0], "hide")
        assert h.callbacks is not None
        first = h.callbacks.handle(payload)
        second = h.callbacks.handle(payload)
        assert (first.outcome, second.outcome) == ("admitted", "duplicate")
        h.drain()
        third = h.callbacks.handle(payload)
        assert third.outcome == "duplicate"
        h.drain()
        assert _status(engine, ids[0]) == ("hidden", 2)
        assert h.audits(ids[0], "entry.hide") == 1
        assert h.admissions() == 1


def test_an_edit_then_a_category_then_a_confirm_apply_in_order_each_at_the_revision_seen(
    engine: Engine,
) -> None:
    with harness(engine) as h:
        card_id, ids = _ready(h, 1)
        # The clicker's card is the one each answer redraws (Lark shows it to them at once).
        edited = h.click(card_id, ids[0], "edit", title="Checkout recovered")
        assert edited.outcome == "admitted"
        card = edited.body["card"]["data"]
        assert button(card, ids[0], "category")["r"] == 2
        chosen = h.click(
            card_id,
            ids[0],
            "category",
            option="mitigation",
            value=button(card, ids[0], "category"),
        )
        assert chosen.outcome == "admitted"
        card = chosen.body["card"]["data"]
        confirmed = h.click(card_id, ids[0], "confirm", value=button(card, ids[0], "confirm"))
        assert confirmed.outcome == "admitted"
        h.drain()
        with engine.connect() as conn:
            row = entries.get(conn, ids[0])
        assert row is not None
        assert (row.title, row.category, row.status, row.human_edited) == (
            "Checkout recovered",
            "mitigation",
            "confirmed",
            True,
        )
        assert h.card(card_id).status == "submitted"


def test_a_card_stays_usable_until_its_persisted_expiry_while_other_cards_are_sent(
    engine: Engine,
) -> None:
    with harness(engine) as h:
        card_id, ids = _ready(h, 1, ttl=timedelta(seconds=60))
        first_value = button(h.shown(card_id), ids[0], "confirm")
        for _ in range(3):  # other cards come and go, each with tokens of its own
            _ready(h, 1)
        assert h.click(card_id, ids[0], "category", option="impact").outcome == "admitted"
        h.drain()
        # The first token still works after the card was redrawn with a new one (at the
        # revision the card now shows: the old drawing's revision is stale).
        current = button(h.shown(card_id), ids[0], "confirm")
        assert current["t"] != first_value["t"]
        answer = h.click(card_id, ids[0], "confirm", value={**first_value, "r": current["r"]})
        assert answer.outcome == "admitted"
        h.drain()
        ids2 = seed_entries(engine, h.workspace_id, 1)
        late = plan_card(engine, h.workspace_id, ids2, ttl=timedelta(milliseconds=300))
        h.drain()
        # The card as first posted: the worker may have redrawn it as expired already.
        message_id = h.card(late).message_id
        value = button(h.lark.store.card_log(message_id)[0]["card"], ids2[0], "confirm")
        import time

        time.sleep(0.4)
        refused = h.click(late, ids2[0], "confirm", value=value)
        assert (refused.outcome, refused.reason) == ("refused", "expired")
        h.drain()
        assert h.card(late).status == "expired"
        assert _status(engine, ids2[0]) == ("draft", 1)


@SQLITE_ONLY
def test_a_posted_card_is_never_stored_as_evidence_when_the_chat_is_reconciled(
    engine: Engine,
) -> None:
    from datetime import UTC, datetime

    from sqlalchemy import func, select

    from timeline_pipeline.db.schema import workspace_timeline_evidence as ev
    from timeline_pipeline.ingest.eligibility import MANUAL
    from timeline_pipeline.reconcile.planning import Mode
    from timeline_pipeline.reconcile.runner import Reconciler
    from timeline_pipeline.reconcile.targets import Target
    from timeline_pipeline.store import workspaces
    from timeline_pipeline_tests.review_cards.harness import lark_client

    with harness(engine, enabled=True, reconciliation_enabled=True) as h:
        card_id, _ = _ready(h, 1)
        message_id = h.card(card_id).message_id
        assert message_id is not None
        with engine.connect() as conn:
            before = conn.execute(select(func.count()).select_from(ev)).scalar_one()
            workspace = workspaces.require(conn, h.workspace_id)
        client = lark_client(h.lark.base_url, h.app_id, h.lark.app_secret)
        report = Reconciler(engine, client, h.settings, app_id=h.app_id).run(
            [Target(workspace, CHAT)], mode=Mode.INCREMENTAL, scope=MANUAL, now=datetime.now(UTC)
        )
        assert report.chats[0].messages >= 1  # the card was listed ...
        with engine.connect() as conn:
            after = conn.execute(select(func.count()).select_from(ev)).scalar_one()
            card_rows = conn.execute(
                select(func.count()).where(ev.c.source_key.like(f"%{message_id}"))
            ).scalar_one()
        assert (after, card_rows) == (before, 0)  # ... and never stored


@SQLITE_ONLY
def test_decisions_beyond_the_workspace_admission_limit_are_refused_until_the_worker_catches_up(
    engine: Engine,
) -> None:
    with harness(engine, review_card_admission_limit_per_workspace=1) as h:
        card_id, ids = _ready(h, 2)
        assert h.click(card_id, ids[0], "confirm").outcome == "admitted"
        refused = h.click(card_id, ids[1], "confirm")
        assert (refused.outcome, refused.reason) == ("refused", "admission_limit")
        assert h.admissions() == 1
        h.drain()
        assert h.click(card_id, ids[1], "confirm").outcome == "admitted"


def test_the_health_figures_count_pending_cards_and_the_callback_backlog(engine: Engine) -> None:
    from datetime import UTC, datetime

    from timeline_pipeline.review_cards.card_figures import review_card_figures

    with harness(engine) as h:
        card_id, ids = _ready(h, 2)
        assert h.click(card_id, ids[0], "confirm").outcome == "admitted"
        figures = review_card_figures(engine, datetime.now(UTC))
        assert (figures["review_cards_pending"], figures["review_card_backlog"]) == (1, 1)
        assert figures["review_cards_undelivered"] == 0
        h.drain()
        h.worker.refresh_gauges()  # type: ignore[union-attr]
        assert review_card_figures(engine, datetime.now(UTC))["review_card_backlog"] == 0
        gauge = h.metrics.registry.get_sample_value("timeline_review_cards_pending")
        assert gauge == 1
