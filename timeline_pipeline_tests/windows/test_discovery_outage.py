"""Discovery during and after an AI outage, and runs that end without claiming their window
(docs/runbooks.md, "AI call failure or outage" and "A run ends without claiming its window").

Each test runs on SQLite and on PostgreSQL; runs are played by the real state transitions.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from sqlalchemy import Engine

from timeline_pipeline.domain.sync_states import SyncState
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

NOW = T0 + timedelta(hours=2)


def defer(engine: Engine, state: SyncState, now: datetime, until: datetime) -> SyncState:
    """What a run does when the model is unavailable: claim, then defer."""
    claimed = claim(engine, state, now)
    with engine.begin() as conn:
        deferred = window_store.defer_window(
            conn, claimed, error="model unavailable: overloaded", retry_at=until, now=now
        )
    assert deferred is not None
    return deferred


def test_deferred_windows_keep_their_slots_and_resume_oldest_first(engine: Engine) -> None:
    workspace(engine)
    post(engine, [T0 + n * WINDOW + MIN for n in range(4)])
    config = settings(window_backlog_limit_per_workspace=2, window_backlog_limit_global=2)
    outcome = tick(engine, config, DiscoveryCursor(), NOW)
    assert keys(outcome) == ["inc-1:oc_chat:20261129T1000Z", "inc-1:oc_chat:20261129T1010Z"]
    older, newer = (r.state for r in outcome.requests)
    # Jittered backoffs: the newer window's ends first.
    defer(engine, older, NOW, NOW + 5 * MIN)
    defer(engine, newer, NOW, NOW + 3 * MIN)

    waiting = tick(engine, config, outcome.cursor, NOW + 2 * MIN)
    # Through the outage, the deferred windows hold the slots: no newer window piles in.
    assert waiting.requests == []
    assert (waiting.counts["waiting_outage"], waiting.counts["in_flight"]) == (2, 2)

    resumed = tick(engine, config, waiting.cursor, NOW + 4 * MIN)
    # One backoff ended: both go again, in window order, without taking another slot.
    assert [(r.ref.partition_key, r.reason) for r in resumed.requests] == [
        ("inc-1:oc_chat:20261129T1000Z", "deferred"),
        ("inc-1:oc_chat:20261129T1010Z", "deferred"),
    ]
    assert resumed.requests[0].run_key != outcome.requests[0].run_key
    assert "/attempt-1/" in resumed.requests[0].run_key  # the outage used no attempt
    for request in resumed.requests:
        finish(engine, request.state, NOW + 4 * MIN)
    after = tick(engine, config, resumed.cursor, NOW + 5 * MIN)
    assert keys(after) == ["inc-1:oc_chat:20261129T1020Z", "inc-1:oc_chat:20261129T1030Z"]


def test_a_run_that_ends_without_claiming_is_counted_and_bounded(engine: Engine) -> None:
    workspace(engine)
    post(engine, [T0 + MIN])
    config = settings(synthesis_window_max_attempts=2)
    outcome = tick(engine, config, DiscoveryCursor(), NOW)
    asked: list[Sequence[str]] = []

    def every_run_finished(run_keys: Sequence[str]) -> dict[str, bool]:
        asked.append(list(run_keys))
        return dict.fromkeys(run_keys, True)  # each run failed before claiming the window

    cursor = outcome.cursor
    reasons: list[list[str]] = []
    now = NOW
    for _ in range(4):
        now += 16 * MIN  # past the stale timeout: the sensor checks its requests again
        later = tick(engine, config, cursor, now, every_run_finished)
        cursor = later.cursor
        reasons.append([r.reason for r in later.requests])
    # Relaunched once (attempt 1 used), then out of attempts: failed, never relaunched again.
    assert reasons == [["relaunch"], [], [], []]
    (state,) = window_states(engine).values()
    assert (state.status, state.attempt_count, state.unclaimed_runs) == ("failed", 2, 2)
    assert state.last_error == window_store.UNCLAIMED_ERROR
    assert len(asked) == 2  # no more questions once the window is failed
