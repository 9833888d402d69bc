"""Pipeline health measured from a real database (docs/design.md §9, §12).

Each test runs on SQLite and on PostgreSQL; windows get their states through the real store
transitions (create, claim, finish, fail), as discovery and the synthesis runs make them.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Engine, event, text

from timeline_pipeline.domain.sync_states import SyncState
from timeline_pipeline.store import checkpoints, window_states
from timeline_pipeline.windows.health import measure_health
from timeline_pipeline.windows.health_model import PipelineHealth, WorkspaceHealth
from timeline_pipeline_tests.windows.support import (
    MIN,
    T0,
    WINDOW,
    claim,
    finish,
    post,
    settings,
    workspace,
)

NOW = T0 + timedelta(hours=2)


def window(
    engine: Engine, start: datetime, workspace_id: str = "inc-1", chat_id: str = "oc_chat"
) -> SyncState:
    """The window's state row, as discovery creates it (only over eligible evidence)."""
    with engine.begin() as conn:
        state = window_states.create_window_if_evidence(
            conn,
            workspace_id=workspace_id,
            chat_id=chat_id,
            window_start=start,
            window_end=start + WINDOW,
            now=start + WINDOW,
        )
    assert state is not None, "no eligible evidence in the window"
    return state


def fail(engine: Engine, state: SyncState, at: datetime) -> SyncState:
    """One attempt that claims the window and fails it."""
    claimed = claim(engine, state, at)
    with engine.begin() as conn:
        failed = window_states.fail_window(conn, claimed, error="chunk 1/1 failed", retry_at=at)
    assert failed is not None
    return failed


def by_id(health: PipelineHealth) -> dict[str, WorkspaceHealth]:
    return {w.workspace_id: w for w in health.workspaces}


def test_an_empty_database_has_no_windows_and_nothing_uncovered(engine: Engine) -> None:
    health = measure_health(engine, settings(), NOW)

    assert health.windows_by_status == {
        "pending": 0,
        "processing": 0,
        "completed": 0,
        "ignored": 0,
        "failed": 0,
    }
    assert (health.backlog, health.stale_processing, health.failed) == (0, 0, 0)
    assert health.oldest_uncovered is None and health.oldest_uncovered_age is None
    assert health.chats_followed == 0


def test_windows_are_counted_by_workspace_and_status_with_stale_failed_and_retried(
    engine: Engine,
) -> None:
    workspace(engine, "inc-1")
    workspace(engine, "inc-2", chats=["oc_other"])
    post(engine, [T0 + k * WINDOW + MIN for k in range(4)])
    post(engine, [T0 + 3 * WINDOW + MIN], workspace_id="inc-2", chat_id="oc_other")
    w0, w1, w2, _w3 = (window(engine, T0 + k * WINDOW) for k in range(4))
    window(engine, T0 + 3 * WINDOW, "inc-2", "oc_other")
    finish(engine, w0, T0 + 15 * MIN)
    claim(engine, w1, NOW - 20 * MIN)  # its run stopped reporting 20 minutes ago
    retried = claim(engine, fail(engine, w2, NOW - 30 * MIN), NOW - 25 * MIN)
    with engine.begin() as conn:  # the second attempt fails too: attempts spent
        assert window_states.fail_window(conn, retried, error="x", retry_at=None) is not None

    health = measure_health(engine, settings(synthesis_window_max_attempts=2), NOW)

    assert health.windows_by_status == {
        "pending": 2,
        "processing": 1,
        "completed": 1,
        "ignored": 0,
        "failed": 1,
    }
    assert health.backlog == 3
    assert (by_id(health)["inc-1"].backlog, by_id(health)["inc-2"].backlog) == (2, 1)
    assert health.stale_processing == 1
    assert (health.failed, health.failed_exhausted) == (1, 1)
    assert (health.retried_windows, health.window_retries) == (1, 1)
    assert [w.partition_key for w in health.stale_windows] == ["inc-1:oc_chat:20261129T1010Z"]
    assert [(w.partition_key, w.attempts) for w in health.failed_windows] == [
        ("inc-1:oc_chat:20261129T1020Z", 2)
    ]
    # 10:00 is completed; 10:10 (processing) holds the oldest evidence nothing covers yet.
    assert health.oldest_uncovered is not None
    assert (health.oldest_uncovered.chat_id, health.oldest_uncovered.at) == (
        "oc_chat",
        T0 + WINDOW + MIN,
    )
    assert health.oldest_uncovered_age == NOW - (T0 + WINDOW + MIN)


def test_a_processing_window_within_the_stale_timeout_is_not_stale(engine: Engine) -> None:
    workspace(engine)
    post(engine, [T0 + MIN])
    claim(engine, window(engine, T0), NOW - 14 * MIN)

    health = measure_health(engine, settings(synthesis_stale_timeout="15m"), NOW)

    assert (health.windows_by_status["processing"], health.stale_processing) == (1, 0)


def test_the_oldest_uncovered_evidence_moves_forward_as_windows_finish(engine: Engine) -> None:
    workspace(engine)
    post(engine, [T0 + 2 * MIN, T0 + WINDOW + 4 * MIN, T0 + 2 * WINDOW + 30 * MIN])
    config = settings()

    def oldest() -> datetime | None:
        health = measure_health(engine, config, NOW)
        return health.oldest_uncovered.at if health.oldest_uncovered else None

    # No window yet: the chat's first evidence waits.
    assert oldest() == T0 + 2 * MIN
    finish(engine, window(engine, T0), NOW)
    # Covered up to 10:10; the next evidence waits for a window that does not exist yet.
    assert oldest() == T0 + WINDOW + 4 * MIN
    finish(engine, window(engine, T0 + WINDOW), NOW, status="ignored")
    assert oldest() == T0 + 2 * WINDOW + 30 * MIN
    finish(engine, window(engine, T0 + 2 * WINDOW + 30 * MIN), NOW)
    assert oldest() is None


def test_each_chat_is_measured_after_its_own_latest_window(engine: Engine) -> None:
    workspace(engine, chats=["oc_busy", "oc_new"])
    post(engine, [T0 + k * WINDOW + MIN for k in range(4)], chat_id="oc_busy")
    for k in range(4):
        finish(engine, window(engine, T0 + k * WINDOW, chat_id="oc_busy"), NOW)
    post(engine, [T0 + 5 * MIN], chat_id="oc_new")  # before oc_busy's latest window

    health = measure_health(engine, settings(), NOW)

    assert health.oldest_uncovered is not None
    assert (health.oldest_uncovered.chat_id, health.oldest_uncovered.at) == (
        "oc_new",
        T0 + 5 * MIN,
    )


def test_evidence_that_synthesis_may_not_touch_is_never_uncovered(engine: Engine) -> None:
    workspace(engine, "inc-live")
    # A bot's message and a recalled one are evidence, but never synthesis input.
    post(engine, [T0 + 2 * MIN], workspace_id="inc-live", ai_eligible=False)
    post(engine, [T0 + 3 * MIN], workspace_id="inc-live", deleted=True, prefix="gone")

    health = measure_health(engine, settings(), NOW)

    assert health.oldest_uncovered is None
    assert health.chats_followed == 1


def test_stored_evidence_of_a_recovered_or_aged_out_workspace_is_uncovered_until_synthesized(
    engine: Engine,
) -> None:
    workspace(engine, "inc-live")
    workspace(engine, "inc-recovered", chats=["oc_r"], status="recovered")
    workspace(engine, "inc-old", chats=["oc_o"], created_at=NOW - timedelta(hours=80))
    post(engine, [T0 + 2 * MIN], workspace_id="inc-recovered", chat_id="oc_r")
    post(engine, [T0 + MIN], workspace_id="inc-old", chat_id="oc_o")

    health = measure_health(engine, settings(), NOW)

    # Eligibility decided what was ingested; what was stored still waits for synthesis.
    assert health.oldest_uncovered is not None
    assert (health.oldest_uncovered.workspace_id, health.oldest_uncovered.at) == (
        "inc-old",
        T0 + MIN,
    )
    assert health.chats_followed == 1  # only inc-live's chat is still collected


def test_nothing_is_uncovered_while_the_timeline_is_disabled(engine: Engine) -> None:
    workspace(engine)
    post(engine, [T0 + MIN])
    window(engine, T0)

    health = measure_health(engine, settings(enabled=False), NOW)

    assert health.oldest_uncovered is None
    assert health.backlog == 1  # the window counts still tell what is there


def test_the_summary_lag_is_the_oldest_finished_window_awaiting_its_decision(
    engine: Engine,
) -> None:
    workspace(engine)
    post(engine, [T0 + MIN, T0 + WINDOW + MIN])
    first = finish(engine, window(engine, T0), NOW - 40 * MIN)
    finish(engine, window(engine, T0 + WINDOW), NOW - 10 * MIN)
    on = settings(summary_enabled=True)

    health = measure_health(engine, on, NOW)
    assert health.summary_measured
    assert (health.summary_pending_windows, health.summary_lag) == (2, 40 * MIN)

    with engine.begin() as conn:
        assert window_states.mark_summary_attempted(conn, first.id)
    health = measure_health(engine, on, NOW)
    assert (health.summary_pending_windows, health.summary_lag) == (1, 10 * MIN)

    off = measure_health(engine, settings(), NOW)
    assert not off.summary_measured and off.summary_lag is None


def test_collection_lag_is_the_furthest_behind_checkpoint_of_the_followed_chats(
    engine: Engine,
) -> None:
    workspace(engine, "inc-1", chats=["oc_a", "oc_b", "oc_c"])
    with engine.begin() as conn:
        for chat, covered in (("oc_a", NOW - 7 * MIN), ("oc_b", NOW - 2 * MIN)):
            state = checkpoints.ensure_checkpoint(conn, "inc-1", chat)
            assert checkpoints.advance_checkpoint(
                conn, state, cursor=None, covered_until=covered, metadata={}, now=NOW
            )

    health = measure_health(engine, settings(reconciliation_enabled=True), NOW)

    assert health.collection_measured and health.chats_followed == 3
    assert health.oldest_collected is not None
    assert (health.oldest_collected.chat_id, health.collection_lag) == ("oc_a", 7 * MIN)
    assert health.chats_never_collected == 1  # oc_c was never reconciled
    assert not measure_health(engine, settings(), NOW).collection_measured


def test_finished_windows_older_than_the_horizon_are_not_counted(engine: Engine) -> None:
    workspace(engine, created_at=T0 - timedelta(hours=1))
    post(engine, [T0 + MIN])
    finish(engine, window(engine, T0), T0 + WINDOW)

    soon = measure_health(engine, settings(), NOW)
    later = measure_health(engine, settings(), T0 + timedelta(hours=73))

    assert soon.windows_by_status["completed"] == 1
    assert later.windows_by_status["completed"] == 0


@contextmanager
def statements(engine: Engine) -> Iterator[list[tuple[str, Any]]]:
    seen: list[tuple[str, Any]] = []

    def record(_conn: Any, _cursor: Any, statement: str, parameters: Any, *_rest: Any) -> None:
        if statement.lstrip().upper().startswith("SELECT"):
            seen.append((statement, parameters))

    event.listen(engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        event.remove(engine, "before_cursor_execute", record)


def test_the_measurement_seeks_evidence_by_index_on_postgresql(pg_url: str) -> None:
    """With a long chat history (60,000 earlier rows), PostgreSQL's planner reads evidence only
    through its indexes: the measurement does not grow with the history."""
    from timeline_pipeline.db.engine import make_engine

    engine = make_engine(pg_url)
    try:
        workspace(engine, chats=["oc_chat", "oc_quiet"])
        post(engine, [T0 + MIN, T0 + 2 * WINDOW + 5 * MIN])
        finish(engine, window(engine, T0), T0 + WINDOW)
        fail(engine, window(engine, T0 + 2 * WINDOW), T0 + 3 * WINDOW)
        with engine.begin() as conn:  # 50 minutes of earlier history, one row every 50 ms
            conn.execute(
                text(
                    """
                    INSERT INTO workspace_timeline_evidence (workspace_id, source, source_type,
                        source_key, occurred_at, source_updated_at, observed_at, content,
                        content_hash, metadata_json, scope_key, ai_eligible, deleted, revision,
                        updated_at)
                    SELECT 'inc-1', 'lark', 'lark_message', 'chat/oc_chat/message/bulk_' || n,
                        t, t, t, 'x', 'h', '{}'::jsonb, 'oc_chat', true, false, 1, t
                    FROM generate_series(1, 60000) AS n,
                        LATERAL (SELECT CAST(:start AS timestamptz)
                                 + make_interval(secs => n * 0.05::float8) AS t) AS s
                    """
                ),
                {"start": T0 - 50 * MIN},
            )
            conn.execute(text("ANALYZE"))
        config = settings(reconciliation_enabled=True, summary_enabled=True)
        with statements(engine) as seen:
            health = measure_health(engine, config, NOW)
        # The failed 10:20 window holds the only uncovered evidence.
        assert health.oldest_uncovered is not None
        assert health.oldest_uncovered.at == T0 + 2 * WINDOW + 5 * MIN
        plans: list[str] = []
        with engine.connect() as conn:
            for statement, parameters in seen:
                rows = conn.exec_driver_sql("EXPLAIN " + statement, parameters)
                plans.append("\n".join(row[0] for row in rows))
        assert plans, "no statement recorded"
        reads_evidence = [plan for plan in plans if "workspace_timeline_evidence" in plan]
        assert len(reads_evidence) == 2  # the unfinished windows and the followed chats
        for plan in reads_evidence:
            assert "Seq Scan on workspace_timeline_evidence" not in plan, plan
    finally:
        engine.dispose()


def test_a_failed_window_whose_evidence_was_all_recalled_leaves_nothing_uncovered(
    engine: Engine,
) -> None:
    workspace(engine)
    post(engine, [T0 + MIN])
    fail(engine, window(engine, T0), NOW)
    # The same message, recalled: redacted in place, no longer synthesis input.
    post(engine, [T0 + MIN], text="", deleted=True, ai_eligible=False, content_hash="recalled")

    health = measure_health(engine, settings(), NOW)

    assert health.failed == 1 and health.oldest_uncovered is None


def test_evidence_a_finished_window_reported_late_is_counted_per_workspace(
    engine: Engine,
) -> None:
    # A run records evidence it saw arrive but did not process as `late_evidence`; health
    # counts those windows and rows, so late evidence is visible and never passes as covered.
    workspace(engine, "inc-1")
    workspace(engine, "inc-2", chats=["oc_other"])
    post(engine, [T0 + k * WINDOW + MIN for k in range(3)])
    post(engine, [T0 + MIN], workspace_id="inc-2", chat_id="oc_other")
    reported = {0: 2, 1: 0, 2: None}
    for k, late in reported.items():
        claimed = claim(engine, window(engine, T0 + k * WINDOW), T0 + 40 * MIN)
        with engine.begin() as conn:
            metadata: dict[str, Any] = {} if late is None else {"late_evidence": late}
            assert window_states.finish_window(
                conn, claimed, status="completed", aggregate_hash="h", metadata=metadata
            )
    other = claim(engine, window(engine, T0, "inc-2", "oc_other"), T0 + 40 * MIN)
    with engine.begin() as conn:
        assert window_states.finish_window(
            conn, other, status="ignored", aggregate_hash="h", metadata={"late_evidence": 1}
        )

    health = measure_health(engine, settings(), NOW)

    assert (health.late_evidence_windows, health.late_evidence) == (2, 3)
    ws = by_id(health)
    assert (ws["inc-1"].late_evidence_windows, ws["inc-1"].late_evidence) == (1, 2)
    assert (ws["inc-2"].late_evidence_windows, ws["inc-2"].late_evidence) == (1, 1)
