"""Seed verification list against real processes (docs/review-cards.md): a pending card
still submits after `serve` restarts; two `serve` replicas answering the same click give one
effect; a worker killed with SIGKILL between admission and execution leaves work that another
worker recovers once. The local Lark runs in the test; the product runs as its own processes."""

from __future__ import annotations

import secrets
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry
from sqlalchemy import Engine, func, select

from timeline_pipeline.db.engine import make_engine
from timeline_pipeline.db.schema import interaction_admissions
from timeline_pipeline.lark.card_sender import LarkCardSender
from timeline_pipeline.lark.simulator.events import EventIdentity, card_action_event
from timeline_pipeline.lark.simulator.pusher import send_signed
from timeline_pipeline.lark.simulator.runner import SimulatorServer
from timeline_pipeline.lark.simulator.store import ChatStore
from timeline_pipeline.observability.metrics import ReviewCardMetrics
from timeline_pipeline.review_cards.admission import CardCallbacks
from timeline_pipeline.review_cards.worker import CardWorker
from timeline_pipeline.settings import load_timeline_settings
from timeline_pipeline.store import entries, workspaces
from timeline_pipeline.store import interaction_requests as cards
from timeline_pipeline_tests.review_cards.harness import (
    CHAT,
    CURATOR,
    T0,
    button,
    lark_client,
    plan_card,
    seed_entries,
)
from timeline_pipeline_tests.review_cards.processes import (
    ENCRYPT_KEY,
    TOKEN,
    env,
    serving,
    wait_for,
    worker,
)


@pytest.fixture
def lark() -> Iterator[SimulatorServer]:
    app_id = f"cli_proc_{secrets.token_hex(4)}"
    with SimulatorServer(ChatStore(), app_id=app_id, app_secret=secrets.token_urlsafe(12)) as sim:
        yield sim


def _workspace(engine: Engine) -> str:
    workspace_id = f"inc-{secrets.token_hex(3)}"
    with engine.begin() as conn:
        workspaces.create(conn, workspace_id, created_at=T0)
        workspaces.bind_chat(conn, workspace_id, CHAT)
        workspaces.add_curator(conn, workspace_id, CURATOR)
    return workspace_id


def _message(engine: Engine, card_id: int) -> str | None:
    with engine.connect() as conn:
        card = cards.get(conn, card_id)
    return card.message_id if card else None


def _click(
    lark: SimulatorServer, engine: Engine, card_id: int, entry_id: int, **kw: str
) -> dict[str, Any]:
    message_id = _message(engine, card_id)
    assert message_id is not None
    shown = lark.store.card_log(message_id)[-1]["card"]
    return card_action_event(
        EventIdentity(app_id=lark.app_id, verification_token=TOKEN),
        operator_open_id=CURATOR,
        open_message_id=message_id,
        open_chat_id=CHAT,
        action_value=button(shown, entry_id, "confirm"),
        event_id=kw.get("event_id") or uuid.uuid4().hex,
    )


def _status(engine: Engine, entry_id: int) -> str:
    with engine.connect() as conn:
        row = entries.get(conn, entry_id)
    assert row is not None
    return row.status


def _audits(engine: Engine, entry_id: int) -> int:
    from timeline_pipeline.db.schema import audit_events

    with engine.connect() as conn:
        return int(
            conn.execute(
                select(func.count()).where(
                    audit_events.c.subject_id == str(entry_id),
                    audit_events.c.action == "entry.confirm",
                )
            ).scalar_one()
        )


def test_a_pending_card_still_submits_after_serve_restarts(
    tmp_path: Path, lark: SimulatorServer
) -> None:
    url = f"sqlite:///{tmp_path / 'timeline.db'}"
    from timeline_pipeline.db.migrate import upgrade

    engine = make_engine(url)
    upgrade(engine)
    workspace_id = _workspace(engine)
    ids = seed_entries(engine, workspace_id, 1)
    card_id = plan_card(engine, workspace_id, ids, ttl=timedelta(hours=1))
    environ = env(url, lark.base_url, lark.app_id, lark.app_secret)
    with serving(tmp_path, "serve-1", environ):
        wait_for(lambda: _message(engine, card_id) is not None, timeout=60, what="the card posted")
    payload = _click(lark, engine, card_id, ids[0])
    with serving(tmp_path, "serve-2", environ) as events:
        answer = send_signed(events, payload, encrypt_key=ENCRYPT_KEY)
        assert answer.status == 200
        assert answer.body["toast"]["type"] == "success"
        wait_for(lambda: _status(engine, ids[0]) == "confirmed", timeout=60, what="the confirm")
    assert _audits(engine, ids[0]) == 1
    assert lark.store.card_log(_message(engine, card_id))[-1]["kind"] == "patched"
    engine.dispose()


@pytest.mark.postgres_only
def test_two_serve_replicas_answering_the_same_click_concurrently_give_one_effect(
    tmp_path: Path, lark: SimulatorServer, pg_url: str
) -> None:
    engine = make_engine(pg_url)
    workspace_id = _workspace(engine)
    ids = seed_entries(engine, workspace_id, 1)
    card_id = plan_card(engine, workspace_id, ids, ttl=timedelta(hours=1))
    environ = env(pg_url, lark.base_url, lark.app_id, lark.app_secret)
    with serving(tmp_path, "replica-a", environ) as a, serving(tmp_path, "replica-b", environ) as b:
        wait_for(lambda: _message(engine, card_id) is not None, timeout=60, what="the card posted")
        same = _click(lark, engine, card_id, ids[0])
        # Lark's redelivery (same event id) to both replicas, and a second click of the same
        # button (a new event id), all at once.
        other = {**same, "header": {**same["header"], "event_id": uuid.uuid4().hex}}
        sends = [(a, same), (b, same), (a, other), (b, other)] * 3
        with ThreadPoolExecutor(max_workers=len(sends)) as pool:
            answers = list(
                pool.map(lambda pair: send_signed(pair[0], pair[1], encrypt_key=ENCRYPT_KEY), sends)
            )
        assert {x.status for x in answers} == {200}
        kinds = [x.body["toast"]["type"] for x in answers]
        assert kinds.count("success") == 1, kinds
        wait_for(lambda: _status(engine, ids[0]) == "confirmed", timeout=60, what="the confirm")
    with engine.connect() as conn:
        assert (
            conn.execute(select(func.count()).select_from(interaction_admissions)).scalar_one() == 1
        )
    assert _audits(engine, ids[0]) == 1
    engine.dispose()


@pytest.mark.postgres_only
def test_a_worker_killed_between_admission_and_execution_leaves_work_recovered_once(
    tmp_path: Path, pg_url: str
) -> None:
    app_id = f"cli_kill_{secrets.token_hex(4)}"
    secret = secrets.token_urlsafe(12)
    with SimulatorServer(ChatStore(), app_id=app_id, app_secret=secret) as sim:
        engine = make_engine(pg_url)
        workspace_id = _workspace(engine)
        ids = seed_entries(engine, workspace_id, 4)
        card_ids = [plan_card(engine, workspace_id, [i], ttl=timedelta(hours=1)) for i in ids]
        settings = load_timeline_settings(review_cards_enabled=True)
        metrics = ReviewCardMetrics(CollectorRegistry())
        sender = LarkCardSender(lark_client(sim.base_url, app_id, secret), app_id)
        posting = CardWorker(engine, settings, sender, metrics)
        posting.drain(max_seconds=30)  # the cards are posted; nothing is admitted yet
        posting.close()
        callbacks = CardCallbacks(engine, settings, metrics)
        for card_id, entry_id in zip(card_ids, ids, strict=True):
            assert callbacks.handle(_click(sim, engine, card_id, entry_id)).outcome == "admitted"
        # Every Lark call now takes a while, so the kill lands with decisions leased: some not
        # applied yet, some applied and waiting for their redraw.
        sim.faults.latency_ms = 400
        environ = env(
            pg_url,
            sim.base_url,
            app_id,
            secret,
            TIMELINE_LARK_REVIEW_CARD_LEASE="2s",
            TIMELINE_LARK_REVIEW_CARD_WORKER_CONCURRENCY="4",
        )
        first = worker(tmp_path, "worker-1", environ)

        def leased() -> bool:
            with engine.connect() as conn:
                return bool(
                    conn.execute(
                        select(func.count()).where(
                            interaction_admissions.c.lease_owner.is_not(None)
                        )
                    ).scalar_one()
                )

        wait_for(leased, timeout=120, what="the worker to lease decisions")
        first.kill()
        with engine.connect() as conn:
            statuses = [r.status for r in conn.execute(select(interaction_admissions.c.status))]
        assert statuses.count("done") < len(ids), statuses  # killed with work left
        second = worker(tmp_path, "worker-2", environ)
        try:

            def finished() -> bool:
                with engine.connect() as conn:
                    found = {
                        r.status for r in conn.execute(select(interaction_admissions.c.status))
                    }
                return found == {"done"}

            wait_for(finished, timeout=90, what="every admission done")
        finally:
            second.stop()
        assert all(_status(engine, i) == "confirmed" for i in ids)
        assert [_audits(engine, i) for i in ids] == [1] * len(ids)
        for card_id in card_ids:
            assert "Confirmed by" in str(sim.store.card_log(_message(engine, card_id))[-1]["card"])
        engine.dispose()
