"""Window states, docs/design.md §5, §6, §1 (repository tests of `store/window_states.py`)."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from sqlalchemy import Engine, func, select

from timeline_pipeline.db.engine import make_engine
from timeline_pipeline.db.schema import workspace_timeline_sync_states
from timeline_pipeline.domain.sync_states import (
    SyncState,
)
from timeline_pipeline.store import evidence, sync_states, window_states
from timeline_pipeline_tests.store.factories import T0, make_workspace, message
from timeline_pipeline_tests.support.windows import WINDOW

W0 = T0  # a window [10:00, 10:10)
W1 = T0 + WINDOW
STALE = timedelta(minutes=15)


def _state_rows(engine: Engine) -> int:
    with engine.connect() as conn:
        return int(
            conn.execute(
                select(func.count()).select_from(workspace_timeline_sync_states)
            ).scalar_one()
        )


def _window(engine: Engine, start=W0, version: str | None = None) -> SyncState | None:  # type: ignore[no-untyped-def]
    with engine.begin() as conn:
        return window_states.create_window_if_evidence(
            conn,
            workspace_id="inc-1",
            chat_id="oc_chat",
            window_start=start,
            window_end=start + WINDOW,
            processor_version=version,
            now=T0,
        )


def _with_evidence(engine: Engine, at=W0 + timedelta(minutes=1)) -> None:  # type: ignore[no-untyped-def]
    make_workspace(engine)
    with engine.begin() as conn:
        evidence.upsert(conn, message(at=at))


def _claim(engine: Engine, state: SyncState, now=T0, owner="run-a") -> SyncState | None:  # type: ignore[no-untyped-def]
    with engine.begin() as conn:
        return window_states.claim_window(
            conn, state, owner=owner, max_attempts=3, stale_timeout=STALE, now=now
        )


def test_no_state_row_for_a_window_without_evidence(engine: Engine) -> None:
    _with_evidence(engine)
    assert _window(engine, start=W1) is None
    assert _state_rows(engine) == 0


def test_a_window_of_only_ineligible_evidence_gets_no_row(engine: Engine) -> None:
    make_workspace(engine)
    with engine.begin() as conn:
        evidence.upsert(conn, message(at=W0, ai_eligible=False))
    assert _window(engine) is None
    assert _state_rows(engine) == 0


def test_a_non_empty_window_gets_exactly_one_row_per_namespace(engine: Engine) -> None:
    _with_evidence(engine)
    first = _window(engine)
    again = _window(engine)
    assert first is not None and again is not None
    assert first.id == again.id
    assert first.status == "pending"
    assert first.source_key == "chat/oc_chat/window/2026-11-29T10:00:00Z"
    assert first.window_start == W0
    rerun = _window(engine, version="v2")
    assert rerun is not None and rerun.id != first.id
    assert rerun.source_key == "chat/oc_chat/processor/v2/window/2026-11-29T10:00:00Z"
    assert _state_rows(engine) == 2


def test_claim_is_compare_and_set_on_revision(engine: Engine) -> None:
    _with_evidence(engine)
    state = _window(engine)
    assert state is not None
    won = _claim(engine, state)
    assert won is not None
    assert (won.status, won.attempt_count, won.revision) == ("processing", 1, state.revision + 1)
    assert _claim(engine, state, owner="run-b") is None  # stale revision: loses
    assert _claim(engine, won, owner="run-b") is None  # fresh revision but processing, not stale


def test_a_stale_processing_window_becomes_claimable_again(engine: Engine) -> None:
    _with_evidence(engine)
    state = _window(engine)
    assert state is not None
    held = _claim(engine, state, now=T0)
    assert held is not None
    with engine.connect() as conn:
        assert (
            window_states.stale_processing(conn, stale_timeout=STALE, now=T0 + timedelta(minutes=5))
            == []
        )
        stale = window_states.stale_processing(
            conn, stale_timeout=STALE, now=T0 + timedelta(minutes=16)
        )
    assert [s.id for s in stale] == [state.id]
    assert held.is_stale(T0 + timedelta(minutes=16), STALE)
    retaken = _claim(engine, held, now=T0 + timedelta(minutes=16), owner="run-b")
    assert retaken is not None
    assert (retaken.attempt_count, retaken.lease_owner) == (2, "run-b")


def test_a_committed_chunk_renews_the_lease_so_a_long_window_is_not_stale(
    engine: Engine,
) -> None:
    _with_evidence(engine)
    held = _claim(engine, _window(engine), now=T0)  # type: ignore[arg-type]
    assert held is not None
    with engine.begin() as conn:
        advanced = window_states.advance_window_cursor(
            conn, held, cursor="a", metadata={}, now=T0 + timedelta(minutes=14)
        )
    assert advanced is not None
    later = T0 + timedelta(minutes=20)  # 20 min after the claim, 6 after the last chunk
    assert not advanced.is_stale(later, STALE)
    with engine.connect() as conn:
        assert window_states.stale_processing(conn, stale_timeout=STALE, now=later) == []
    assert _claim(engine, advanced, now=later, owner="run-b") is None
    assert advanced.is_stale(T0 + timedelta(minutes=30), STALE)


def test_attempts_are_bounded_then_the_window_stays_failed(engine: Engine) -> None:
    _with_evidence(engine)
    state = _window(engine)
    assert state is not None
    for attempt in range(1, 4):
        claimed = _claim(engine, state)
        assert claimed is not None and claimed.attempt_count == attempt
        with engine.begin() as conn:
            failed = window_states.fail_window(
                conn, claimed, error="model overloaded", retry_at=None
            )
        assert failed is not None and failed.status == "failed"
        state = failed
    assert state.is_exhausted(3)
    assert _claim(engine, state) is None


def test_chunks_advance_one_cursor_then_the_window_completes(engine: Engine) -> None:
    _with_evidence(engine)
    state = _claim(engine, _window(engine))  # type: ignore[arg-type]
    assert state is not None
    with engine.begin() as conn:
        state = window_states.advance_window_cursor(
            conn, state, cursor="a", metadata={"chunk_count": 1}
        )
        assert state is not None
        state = window_states.advance_window_cursor(
            conn, state, cursor="b", metadata={"chunk_count": 2}
        )
        assert state is not None
        done = window_states.finish_window(
            conn, state, status="completed", aggregate_hash="h", metadata={"evidence_count": 41}
        )
    assert done is not None
    assert (done.status, done.last_seen_cursor, done.last_seen_content_hash) == (
        "completed",
        "b",
        "h",
    )
    assert done.metadata["chunk_count"] == 2 and done.metadata["evidence_count"] == 41
    assert _claim(engine, done) is None  # terminal
    with pytest.raises(ValueError, match="terminal"), engine.begin() as conn:
        window_states.finish_window(conn, done, status="failed", aggregate_hash="h", metadata={})


def test_summary_is_attempted_at_most_once_per_finished_window(engine: Engine) -> None:
    _with_evidence(engine)
    state = _window(engine)
    assert state is not None
    with engine.begin() as conn:
        # Not finished (e.g. just reset by a replay): not flagged, its revision left alone.
        assert window_states.mark_summary_attempted(conn, state.id) is False
    claimed = _claim(engine, state)
    assert claimed is not None
    with engine.begin() as conn:
        done = window_states.finish_window(
            conn, claimed, status="completed", aggregate_hash="h", metadata={}
        )
        assert done is not None
        assert window_states.mark_summary_attempted(conn, state.id) is True
        assert window_states.mark_summary_attempted(conn, state.id) is False


def test_concurrent_claims_have_exactly_one_winner(db_url: str) -> None:
    engine = make_engine(db_url, pool_size=8)
    try:
        _with_evidence(engine)
        state = _window(engine)
        assert state is not None
        barrier = threading.Barrier(8)
        winners: list[str] = []

        def contend(owner: str) -> None:
            with engine.connect() as conn:
                barrier.wait()
                with conn.begin():
                    if window_states.claim_window(
                        conn, state, owner=owner, max_attempts=3, stale_timeout=STALE
                    ):
                        winners.append(owner)

        threads = [threading.Thread(target=contend, args=(f"w{i}",)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(winners) == 1
        with engine.connect() as conn:
            final = sync_states.get(conn, state.id)
        assert final is not None and final.lease_owner == winners[0] and final.attempt_count == 1
    finally:
        engine.dispose()


def test_concurrent_window_creation_makes_one_row(db_url: str) -> None:
    engine = make_engine(db_url, pool_size=8)
    try:
        _with_evidence(engine)
        barrier = threading.Barrier(6)
        ids: list[int] = []

        def create() -> None:
            barrier.wait()
            made = _window(engine)
            assert made is not None
            ids.append(made.id)

        threads = [threading.Thread(target=create) for _ in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(ids) == 6 and len(set(ids)) == 1
        assert _state_rows(engine) == 1
    finally:
        engine.dispose()


def test_a_deferral_gives_the_attempt_back_and_keeps_the_cursor(engine: Engine) -> None:
    _with_evidence(engine)
    state = _window(engine)
    assert state is not None
    claimed = _claim(engine, state)
    assert claimed is not None and claimed.attempt_count == 1
    with engine.begin() as conn:
        advanced = window_states.advance_window_cursor(
            conn, claimed, cursor="c1", metadata={}, now=T0
        )
        assert advanced is not None
        deferred = window_states.defer_window(
            conn, advanced, error="model unavailable", retry_at=T0 + STALE, now=T0
        )
        assert deferred is not None
        # A second writer with the old revision loses the compare-and-set.
        assert window_states.defer_window(conn, claimed, error="x", retry_at=T0) is None
    assert (deferred.status, deferred.attempt_count) == ("pending", 0)
    assert (deferred.deferred, deferred.deferral_count) == (True, 1)
    assert deferred.next_attempt_at == T0 + STALE and deferred.lease_owner is None
    assert deferred.last_seen_cursor == "c1"
    again = _claim(engine, deferred, now=T0 + STALE, owner="run-b")
    assert again is not None and (again.attempt_count, again.deferred) == (1, False)
    with engine.begin() as conn:
        done = window_states.finish_window(
            conn, again, status="completed", aggregate_hash="h", metadata={}
        )
    assert done is not None and done.deferral_count == 0


def test_runs_ending_without_claiming_are_counted_until_the_window_fails(
    engine: Engine,
) -> None:
    _with_evidence(engine)
    state = _window(engine)
    assert state is not None
    seen = []
    for _ in range(3):
        with engine.begin() as conn:
            relaunched = window_states.relaunch_unclaimed(
                conn, state, max_attempts=3, reissue_at=T0 + STALE, now=T0
            )
        assert relaunched is not None
        seen.append((relaunched.status, relaunched.attempt_count, relaunched.unclaimed_runs))
        state = relaunched
    assert seen == [("pending", 1, 1), ("pending", 2, 2), ("failed", 3, 3)]
    assert state.last_error == window_states.UNCLAIMED_ERROR
    assert state.is_exhausted(3)
