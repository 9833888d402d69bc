"""The compare-and-set transition every state row goes through (SQLite and PostgreSQL): the
writer holding the current revision (and status) wins and gets the new row; a writer holding a
stale one gets None and changes nothing."""

from __future__ import annotations

import pytest
from sqlalchemy import Engine, select

from timeline_pipeline.db.cas import compare_and_set, compare_and_set_each, compare_and_set_from
from timeline_pipeline.db.schema import workspace_timeline_sync_states as ss
from timeline_pipeline.domain.states import CheckpointStatus
from timeline_pipeline.domain.sync_states import SyncState
from timeline_pipeline.store import checkpoints
from timeline_pipeline_tests.store.factories import make_workspace


def _checkpoint(engine: Engine) -> SyncState:
    make_workspace(engine)
    with engine.begin() as conn:
        return checkpoints.ensure_checkpoint(conn, "inc-1", "oc_chat")


def _stored(engine: Engine, state_id: int) -> tuple[str, int, str | None]:
    with engine.connect() as conn:
        row = conn.execute(select(ss).where(ss.c.id == state_id)).one()
    return row.status, row.revision, row.last_error


def test_the_current_revision_and_status_win_and_the_new_row_comes_back(engine: Engine) -> None:
    state = _checkpoint(engine)
    with engine.begin() as conn:
        row = compare_and_set(
            conn,
            ss,
            row_id=state.id,
            revision=state.revision,
            expected_status=CheckpointStatus.PENDING,
            values={"status": CheckpointStatus.FAILED, "last_error": "boom"},
        )
    assert row is not None
    assert (row.status, row.revision, row.last_error) == ("failed", state.revision + 1, "boom")
    assert _stored(engine, state.id) == ("failed", state.revision + 1, "boom")


def test_a_writer_holding_a_stale_revision_loses_and_changes_nothing(engine: Engine) -> None:
    state = _checkpoint(engine)
    moves = []
    for error in ("first", "second"):  # both read the same revision
        with engine.begin() as conn:
            moves.append(
                compare_and_set(
                    conn, ss, row_id=state.id, revision=state.revision, values={"last_error": error}
                )
            )
    assert moves[0] is not None and moves[1] is None
    assert _stored(engine, state.id) == ("pending", state.revision + 1, "first")


def test_a_row_no_longer_in_the_expected_status_or_guard_is_left_alone(engine: Engine) -> None:
    state = _checkpoint(engine)
    with engine.begin() as conn:
        wrong_status = compare_and_set(
            conn,
            ss,
            row_id=state.id,
            revision=state.revision,
            expected_status=CheckpointStatus.COMPLETED,
            values={"last_error": "x"},
        )
        failing_guard = compare_and_set(
            conn,
            ss,
            row_id=state.id,
            revision=state.revision,
            where=ss.c.attempt_count > 0,
            values={"last_error": "y"},
        )
    assert wrong_status is None and failing_guard is None
    assert _stored(engine, state.id) == ("pending", state.revision, None)


def test_the_revision_is_the_helpers_own(engine: Engine) -> None:
    state = _checkpoint(engine)
    with engine.begin() as conn, pytest.raises(ValueError, match="owns the revision"):
        compare_and_set(conn, ss, row_id=state.id, revision=state.revision, values={"revision": 99})
    assert _stored(engine, state.id) == ("pending", state.revision, None)


def test_a_batch_transition_returns_the_rows_it_won_and_skips_the_ones_moved_first(
    engine: Engine,
) -> None:
    make_workspace(engine)
    with engine.begin() as conn:
        first = checkpoints.ensure_checkpoint(conn, "inc-1", "oc_one")
        second = checkpoints.ensure_checkpoint(conn, "inc-1", "oc_two")
    with engine.connect() as conn:
        read = conn.execute(select(ss).where(ss.c.id.in_([first.id, second.id])).order_by(ss.c.id))
        rows = read.all()
    with engine.begin() as conn:  # another writer moves the second row after the batch read it
        compare_and_set(
            conn, ss, row_id=second.id, revision=second.revision, values={"last_error": "other"}
        )
    with engine.begin() as conn:
        won = compare_and_set_each(
            conn,
            ss,
            rows,
            values=lambda row: {"last_error": f"batch {row.id}", "attempt_count": 7},
            expected_status=CheckpointStatus.PENDING,
        )
    assert [(row.id, row.last_error, row.revision) for row in won] == [
        (first.id, f"batch {first.id}", first.revision + 1)
    ]
    assert _stored(engine, first.id)[2] == f"batch {first.id}"
    assert _stored(engine, second.id) == ("pending", second.revision + 1, "other")


def test_compare_and_set_from_moves_the_record_as_it_was_read(engine: Engine) -> None:
    state = _checkpoint(engine)
    with engine.begin() as conn:
        row = compare_and_set_from(conn, ss, state, values={"last_error": "first"})
        stale = compare_and_set_from(conn, ss, state, values={"last_error": "second"})
    assert row is not None and row.revision == state.revision + 1
    assert stale is None
    assert _stored(engine, state.id) == ("pending", state.revision + 1, "first")
