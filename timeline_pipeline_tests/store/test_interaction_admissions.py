"""The admission queue's store on SQLite and PostgreSQL: the workspace's admission limit holds
under concurrent transactions, a repeat is told from a limit, and a failed decision's key is
freed for the same decision made again (docs/review-cards.md)."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import Engine, func, select

from timeline_pipeline.db.schema import interaction_admissions
from timeline_pipeline.domain.card_requests import KIND_DRAFT_REVIEW, CardEntry, CardRequest
from timeline_pipeline.domain.interactions import CardAction
from timeline_pipeline.store import interaction_admissions as admissions
from timeline_pipeline.store import interaction_requests as cards
from timeline_pipeline.store import workspaces
from timeline_pipeline.store.interaction_admissions import AdmissionLimitReached

NOW = datetime(2026, 11, 29, 10, 0, tzinfo=UTC)


def _card(engine: Engine, workspace_id: str = "inc-1") -> int:
    with engine.begin() as conn:
        workspaces.create(conn, workspace_id, created_at=NOW)
        card = cards.create(
            conn,
            workspace_id=workspace_id,
            kind=KIND_DRAFT_REVIEW,
            window_state_id=None,
            processor_version="v1",
            idempotency_uuid=f"rc-{workspace_id}",
            chat_id="oc_1",
            reply_to_message_id=None,
            request=CardRequest(
                tuple(CardEntry(i, 1, NOW, f"Draft {i}", "finding") for i in range(1, 9)),
                ("finding", "impact"),
                512,
            ),
            expires_at=NOW + timedelta(hours=1),
            now=NOW,
        )
    assert card is not None
    return card.id


def _admit(conn: object, card_id: int, n: int, *, limit: int, key: str | None = None) -> int | None:
    return admissions.admit(
        conn,  # type: ignore[arg-type]
        request_id=card_id,
        workspace_id="inc-1",
        event_id=f"ev-{n}",
        decision_key=key or f"{card_id}:{n}:confirm:1:-",
        entry_id=n,
        entry_revision=1,
        action=CardAction.CONFIRM,
        value=None,
        actor_open_id="ou_1",
        now=NOW,
        limit=limit,
    )


def _rows(engine: Engine) -> int:
    with engine.connect() as conn:
        return int(
            conn.execute(select(func.count()).select_from(interaction_admissions)).scalar_one()
        )


def test_a_second_admission_waits_for_the_first_and_counts_it(engine: Engine) -> None:
    card_id = _card(engine)
    first_in = threading.Event()
    outcome: dict[str, object] = {}

    def first() -> None:
        with engine.begin() as conn:
            outcome["first"] = _admit(conn, card_id, 1, limit=1)
            first_in.set()
            time.sleep(0.5)  # still open while the second one tries

    def second() -> None:
        first_in.wait(10)
        try:
            with engine.begin() as conn:
                outcome["second"] = _admit(conn, card_id, 2, limit=1)
        except AdmissionLimitReached:
            outcome["second"] = "limit"

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(20)
    assert isinstance(outcome["first"], int)
    assert outcome["second"] == "limit"
    assert _rows(engine) == 1


def test_concurrent_admissions_never_pass_the_limit(engine: Engine) -> None:
    card_id = _card(engine)
    start = threading.Barrier(6)
    results: list[object] = []
    lock = threading.Lock()

    def click(n: int) -> None:
        start.wait(10)
        try:
            with engine.begin() as conn:
                got: object = _admit(conn, card_id, n, limit=3)
                time.sleep(0.05)
        except AdmissionLimitReached:
            got = "limit"
        with lock:
            results.append(got)

    threads = [threading.Thread(target=click, args=(n,)) for n in range(1, 7)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert len(results) == 6
    assert results.count("limit") == 3
    assert _rows(engine) == 3


def test_a_repeat_is_none_and_a_full_workspace_is_the_limit(engine: Engine) -> None:
    card_id = _card(engine)
    with engine.begin() as conn:
        assert _admit(conn, card_id, 1, limit=1) is not None
        assert _admit(conn, card_id, 1, limit=1) is None  # the same event again
        with pytest.raises(AdmissionLimitReached):
            _admit(conn, card_id, 2, limit=1)
    assert _rows(engine) == 1


def test_a_retired_key_lets_the_same_decision_in_again(engine: Engine) -> None:
    card_id = _card(engine)
    with engine.begin() as conn:
        first = _admit(conn, card_id, 1, limit=5, key="k")
        assert first is not None
        assert _admit(conn, card_id, 2, limit=5, key="k") is None
        admissions.retire_key(conn, first)
        admissions.retire_key(conn, first)  # twice is once
        assert _admit(conn, card_id, 3, limit=5, key="k") is not None
        found = admissions.by_decision_key(conn, "k")
        assert found is not None and found.event_id == "ev-3"
