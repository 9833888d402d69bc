"""Evidence batch writes take their rows in key order, so that concurrent batches holding the
same messages in opposite orders (two receiver replicas, or a receiver and reconciliation) wait
for each other instead of deadlocking (docs/deployment-receivers.md).

PostgreSQL only: SQLite serializes writers (BEGIN IMMEDIATE) and has no row locks to order.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import pytest
from sqlalchemy import Engine, select

from timeline_pipeline.db.engine import make_engine
from timeline_pipeline.db.schema import workspace_timeline_evidence as ev
from timeline_pipeline.store import evidence
from timeline_pipeline_tests.store.factories import edited, make_workspace, message
from timeline_pipeline_tests.support.lock_order import interleave

pytestmark = pytest.mark.postgres_only


@pytest.fixture
def pg_engine(pg_url: str) -> Iterator[Engine]:
    made = make_engine(pg_url)
    make_workspace(made)
    try:
        yield made
    finally:
        made.dispose()


def _contents(engine: Engine) -> dict[str, str]:
    with engine.connect() as conn:
        rows = conn.execute(select(ev.c.source_key, ev.c.content).order_by(ev.c.source_key))
        return {row.source_key.rsplit("/", 1)[1]: row.content for row in rows}


def test_a_batch_upsert_of_new_messages_in_reverse_order_waits_instead_of_deadlocking(
    pg_engine: Engine,
) -> None:
    a = message("checkout is failing", message_id="om_a")
    b = message("rolled back the deploy", message_id="om_b")

    failures = interleave(
        pg_engine,
        first=lambda conn: evidence.upsert(conn, a),
        batch=lambda conn: evidence.upsert_many(conn, [b, a]),  # arrival order: B, then A
        second=lambda conn: evidence.upsert(conn, b),
    )

    assert failures == []
    assert _contents(pg_engine) == {"om_a": a.content, "om_b": b.content}


def test_a_batch_of_edits_in_reverse_order_waits_and_the_newest_edit_wins(
    pg_engine: Engine,
) -> None:
    a = message("checkout is failing", message_id="om_a")
    b = message("rolled back the deploy", message_id="om_b")
    with pg_engine.begin() as conn:
        evidence.upsert_many(conn, [a, b])
    a1, b1 = edited(a, "checkout fails for EU"), edited(b, "rolled back deploy 412")
    a2, b2 = edited(a1, "checkout fails for EU cards"), edited(b1, "rolled back deploy 4121")

    failures = interleave(
        pg_engine,
        first=lambda conn: evidence.upsert(conn, a1),
        batch=lambda conn: evidence.upsert_many(conn, [b2, a2]),
        second=lambda conn: evidence.upsert(conn, b1),
    )

    assert failures == []
    assert _contents(pg_engine) == {"om_a": a2.content, "om_b": b2.content}


def test_display_names_are_filled_in_actor_order_so_two_fills_do_not_deadlock(
    pg_engine: Engine,
) -> None:
    ann = replace(message("paging the db team", message_id="om_a"), actor_id="ou_ann")
    bob = replace(message("on it", message_id="om_b"), actor_id="ou_bob")
    with pg_engine.begin() as conn:
        evidence.upsert_many(conn, [ann, bob])

    failures = interleave(
        pg_engine,
        first=lambda conn: evidence.fill_display_names(conn, "inc-1", {"ou_ann": "Ann"}),
        # The contact lookup answers in its own order: Bob first.
        batch=lambda conn: evidence.fill_display_names(
            conn, "inc-1", {"ou_bob": "Bob", "ou_ann": "Ann"}
        ),
        second=lambda conn: evidence.fill_display_names(conn, "inc-1", {"ou_bob": "Bob"}),
    )

    assert failures == []
    with pg_engine.connect() as conn:
        names = dict(conn.execute(select(ev.c.actor_id, ev.c.actor_display_name)).all())
    assert names == {"ou_ann": "Ann", "ou_bob": "Bob"}
