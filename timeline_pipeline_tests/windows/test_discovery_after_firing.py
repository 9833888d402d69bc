"""Windows of a workspace that leaves `firing` or ages past the lookback (docs/design.md
§6): eligibility decides what is ingested, not whether stored evidence is
synthesized, so every stored AI-eligible evidence row ends covered by a window in a terminal
status, and stale and failed windows are handled the same in every workspace.

Each test runs on SQLite and on PostgreSQL; runs are played by the real state transitions.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import Engine, false, select, true

from timeline_pipeline.db.schema import workspace_timeline_evidence as ev
from timeline_pipeline.domain.states import TERMINAL_WINDOW_STATUSES
from timeline_pipeline.domain.window_keys import window_start_of
from timeline_pipeline.settings import LarkTimelineSettings
from timeline_pipeline.store import checkpoints, workspaces
from timeline_pipeline.store import window_states as window_store
from timeline_pipeline.windows.planning import DiscoveryCursor
from timeline_pipeline_tests.windows.support import (
    MIN,
    T0,
    WINDOW,
    claim,
    finish,
    keys,
    post,
    settings,
    tick,
    window_states,
    workspace,
)

LOOKBACK = timedelta(hours=72)


def set_status(engine: Engine, status: str, workspace_id: str = "inc-1") -> None:
    with engine.begin() as conn:
        workspaces.set_status(conn, workspace_id, status, actor="cli:test")


def cover(engine: Engine, until: datetime, workspace_id: str = "inc-1") -> None:
    """Collection (reconciliation) has read the chat's history up to `until`."""
    with engine.begin() as conn:
        checkpoint = checkpoints.ensure_checkpoint(conn, workspace_id, "oc_chat")
        checkpoints.advance_checkpoint(
            conn, checkpoint, cursor=None, covered_until=until, metadata={}
        )


def drain(
    engine: Engine, config: LarkTimelineSettings, cursor: DiscoveryCursor, now: datetime
) -> DiscoveryCursor:
    """Tick and finish every requested window until the sensor has nothing left to request."""
    for _ in range(20):
        outcome = tick(engine, config, cursor, now)
        cursor = outcome.cursor
        if not outcome.requests:
            return cursor
        for request in outcome.requests:
            finish(engine, request.state, now)
    raise AssertionError("discovery kept requesting windows")


def uncovered_evidence(engine: Engine, config: LarkTimelineSettings) -> list[int]:
    """Stored AI-eligible evidence whose window has no state in a terminal status."""
    with engine.connect() as conn:
        rows = conn.execute(
            select(ev.c.id, ev.c.workspace_id, ev.c.scope_key, ev.c.occurred_at).where(
                ev.c.ai_eligible == true(), ev.c.deleted == false()
            )
        ).all()
    states = {
        (state.workspace_id, state.scope_key, state.window_start): state.status
        for ws in {row.workspace_id for row in rows}
        for state in window_states(engine, ws).values()
    }
    return [
        row.id
        for row in rows
        if states.get((row.workspace_id, row.scope_key, window_start_of(row.occurred_at, WINDOW)))
        not in TERMINAL_WINDOW_STATUSES
    ]


def test_the_last_message_before_a_workspace_is_set_recovered_gets_its_window(
    engine: Engine,
) -> None:
    # Reconciliation on: a window normally waits until collection has covered its end.
    config = settings(reconciliation_enabled=True)
    workspace(engine)
    post(engine, [T0 + 1 * MIN])
    cover(engine, T0 + 5 * MIN)
    cursor = tick(engine, config, DiscoveryCursor(), T0 + 4 * MIN).cursor  # window still open
    post(engine, [T0 + 2 * MIN], prefix="recovered")  # "service recovered" at 10:02
    set_status(engine, "recovered")  # 10:11: before the window closed plus grace (10:13)
    # Collection stopped with the incident, so its coverage (10:05) never reaches 10:10:
    # the window is taken on what is stored once it has closed.
    assert tick(engine, config, cursor, T0 + 12 * MIN).requests == []  # not closed yet
    outcome = tick(engine, config, cursor, T0 + 14 * MIN)
    assert keys(outcome) == ["inc-1:oc_chat:20261129T1000Z"]
    finish(engine, outcome.requests[0].state, T0 + 14 * MIN)
    assert uncovered_evidence(engine, config) == []


def test_evidence_from_a_manual_refresh_of_a_recovered_workspace_is_synthesized(
    engine: Engine,
) -> None:
    config = settings()
    workspace(engine, status="recovered")
    cursor = drain(engine, config, DiscoveryCursor(), T0 + 30 * MIN)
    post(engine, [T0 + 41 * MIN, T0 + 55 * MIN], prefix="refresh")  # a manual refresh stores
    cursor = drain(engine, config, cursor, T0 + 90 * MIN)
    assert sorted(window_states(engine)) == [
        "inc-1:oc_chat:20261129T1040Z",
        "inc-1:oc_chat:20261129T1050Z",
    ]
    assert uncovered_evidence(engine, config) == []
    # A cold start (cursor lost) finds nothing left to do either.
    assert tick(engine, config, DiscoveryCursor(), T0 + 95 * MIN).requests == []


def test_failed_and_stale_windows_of_a_recovered_workspace_are_retried_then_finished(
    engine: Engine,
) -> None:
    config = settings(synthesis_window_max_attempts=2)
    workspace(engine)
    post(engine, [T0 + 1 * MIN, T0 + 11 * MIN])
    now = T0 + 30 * MIN
    outcome = tick(engine, config, DiscoveryCursor(), now)
    failing, dying = (r.state for r in outcome.requests)
    with engine.begin() as conn:
        claimed = window_store.claim_window(
            conn, failing, owner="r1", max_attempts=2, stale_timeout=timedelta(minutes=15), now=now
        )
        assert claimed is not None
        assert window_store.fail_window(conn, claimed, error="chunk failed", retry_at=now)
    claim(engine, dying, now)  # its worker dies
    set_status(engine, "recovered")

    later = now + 16 * MIN  # past the stale timeout
    retried = tick(engine, config, outcome.cursor, later)
    assert sorted((r.ref.partition_key, r.reason) for r in retried.requests) == [
        ("inc-1:oc_chat:20261129T1000Z", "retry"),
        ("inc-1:oc_chat:20261129T1010Z", "stale"),
    ]
    # The dead run is named, so Dagster's queue slot it holds is released.
    assert retried.abandoned_owners == ["test-run"]
    assert retried.counts["ineligible"] == 0
    for request in retried.requests:
        finish(engine, request.state, later, max_attempts=2)
    assert {key: s.status for key, s in window_states(engine).items()} == {
        "inc-1:oc_chat:20261129T1000Z": "completed",
        "inc-1:oc_chat:20261129T1010Z": "completed",
    }
    assert tick(engine, config, retried.cursor, later + MIN).counts["in_flight"] == 0


def test_a_workspace_that_ages_out_while_windows_are_pending_still_gets_them_synthesized(
    engine: Engine,
) -> None:
    config = settings(synthesis_window_max_attempts=2)
    created = T0 - LOOKBACK + 30 * MIN  # ages out at 10:30
    workspace(engine, created_at=created)
    post(engine, [T0 + 1 * MIN, T0 + 11 * MIN, T0 + 21 * MIN])
    before = T0 + 26 * MIN  # two windows closed (plus grace), the workspace still in scope
    outcome = tick(engine, config, DiscoveryCursor(), before)
    first, _queued = (r.state for r in outcome.requests)
    with engine.begin() as conn:  # the first window's attempt fails, to be retried later
        claimed = window_store.claim_window(
            conn, first, owner="r1", max_attempts=2, stale_timeout=timedelta(minutes=15), now=before
        )
        assert claimed is not None
        assert window_store.fail_window(conn, claimed, error="x", retry_at=before + 10 * MIN)

    # Long after the workspace aged out (and after the first windows aged past the lookback
    # themselves): the retry, the still-queued request and the third window all go ahead.
    much_later = T0 + LOOKBACK + 2 * 60 * MIN

    def dagster_finished_without_claiming(run_keys: object) -> dict[str, bool]:
        return {key: True for key in run_keys}  # type: ignore[attr-defined]

    resumed = tick(engine, config, outcome.cursor, much_later, dagster_finished_without_claiming)
    assert sorted((r.ref.partition_key, r.reason) for r in resumed.requests) == [
        ("inc-1:oc_chat:20261129T1000Z", "retry"),
        ("inc-1:oc_chat:20261129T1010Z", "relaunch"),
        ("inc-1:oc_chat:20261129T1020Z", "new"),
    ]
    for request in resumed.requests:
        finish(engine, request.state, much_later, max_attempts=2)
    assert uncovered_evidence(engine, config) == []
    assert tick(engine, config, resumed.cursor, much_later + MIN).counts["in_flight"] == 0
