"""The one dialect switch for INSERT ... ON CONFLICT, on SQLite and PostgreSQL."""

from __future__ import annotations

from sqlalchemy import Engine, func, select

from timeline_pipeline.db.schema import workspace_timeline_reconcile_threads as rt
from timeline_pipeline.db.upsert import insert_for
from timeline_pipeline_tests.store.factories import T0, make_workspace


def test_a_conflicting_insert_updates_the_one_row_on_either_dialect(engine: Engine) -> None:
    make_workspace(engine)
    with engine.begin() as conn:
        for at in (T0, T0.replace(hour=11)):
            stmt = insert_for(conn, rt).values(
                workspace_id="inc-1", chat_id="oc_chat", thread_id="omt_1", last_listed_at=at
            )
            conn.execute(
                stmt.on_conflict_do_update(
                    index_elements=[rt.c.workspace_id, rt.c.chat_id, rt.c.thread_id],
                    set_={"last_listed_at": stmt.excluded.last_listed_at},
                )
            )
        rows = conn.execute(select(func.count(), func.max(rt.c.last_listed_at))).one()
    assert rows[0] == 1
    assert rows[1].replace(tzinfo=None) == T0.replace(hour=11, tzinfo=None)


def test_a_conflicting_insert_can_be_skipped_on_either_dialect(engine: Engine) -> None:
    make_workspace(engine)
    with engine.begin() as conn:
        for at in (T0, T0.replace(hour=11)):
            conn.execute(
                insert_for(conn, rt)
                .values(
                    workspace_id="inc-1", chat_id="oc_chat", thread_id="omt_1", last_listed_at=at
                )
                .on_conflict_do_nothing()
            )
        stored = conn.execute(select(rt.c.last_listed_at)).scalar_one()
    assert stored.replace(tzinfo=None) == T0.replace(tzinfo=None)
