"""Window discovery against a real database (docs/design.md §5, §6, §9, §11, §1).

Each test runs on SQLite and on PostgreSQL. "Runs" are played by the real state transitions
(claim, finish, fail), so what is asserted is what the sensor would request of Dagster.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import Engine, event

from timeline_pipeline.store import checkpoints
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

AFTER_ALL = T0 + timedelta(hours=2)


@contextmanager
def statements(engine: Engine) -> Iterator[list[str]]:
    """Record the SQL statements (not BEGIN/COMMIT) that the engine sends."""
    seen: list[str] = []

    def record(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        verb = statement.lstrip().split(None, 1)[0].upper()
        if verb in {"SELECT", "INSERT", "UPDATE", "DELETE", "WITH"}:
            seen.append(statement)

    event.listen(engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        event.remove(engine, "before_cursor_execute", record)


def warm(engine: Engine, now: Any, **config: Any) -> DiscoveryCursor:
    """A cursor after a first (cold) tick at `now`."""
    return tick(engine, settings(**config), DiscoveryCursor(), now).cursor


def test_an_empty_period_creates_no_state_and_no_request(engine: Engine) -> None:
    workspace(engine)
    # 10:00 and 10:20 have messages; 10:10-10:20 is silent.
    post(engine, [T0 + 2 * MIN, T0 + 25 * MIN])
    outcome = tick(engine, settings(), DiscoveryCursor(), AFTER_ALL)
    assert keys(outcome) == ["inc-1:oc_chat:20261129T1000Z", "inc-1:oc_chat:20261129T1020Z"]
    states = window_states(engine)
    assert sorted(states) == keys(outcome)
    assert "inc-1:oc_chat:20261129T1010Z" not in states
    assert all(s.status == "pending" and s.next_attempt_at is not None for s in states.values())


def test_requests_carry_the_partition_run_key_and_concurrency_tags(engine: Engine) -> None:
    workspace(engine)
    post(engine, [T0 + MIN])
    (request,) = tick(engine, settings(), DiscoveryCursor(), AFTER_ALL).requests
    assert request.ref.partition_key == "inc-1:oc_chat:20261129T1000Z"
    assert request.run_key.startswith("inc-1:oc_chat:20261129T1000Z/attempt-1/rev-")
    assert request.tags["timeline/workspace"] == "inc-1"
    assert request.tags["timeline/synthesis"] == "1"
    assert request.reason == "new"


def test_a_window_waits_for_its_close_grace(engine: Engine) -> None:
    workspace(engine)
    post(engine, [T0 + 9 * MIN])
    config = settings(synthesis_window_close_grace="3m")
    cursor = DiscoveryCursor()
    outcome = tick(engine, config, cursor, T0 + 12 * MIN)  # end 10:10 + 3m > 10:12
    assert outcome.requests == [] and window_states(engine) == {}
    outcome = tick(engine, config, outcome.cursor, T0 + 13 * MIN)
    assert keys(outcome) == ["inc-1:oc_chat:20261129T1000Z"]


def test_with_reconciliation_on_a_window_waits_until_collection_covers_it(engine: Engine) -> None:
    workspace(engine)
    post(engine, [T0 + MIN])
    config = settings(reconciliation_enabled=True)
    outcome = tick(engine, config, DiscoveryCursor(), AFTER_ALL)
    assert outcome.requests == []  # no checkpoint yet: history not collected
    with engine.begin() as conn:
        checkpoint = checkpoints.ensure_checkpoint(conn, "inc-1", "oc_chat")
        checkpoints.advance_checkpoint(
            conn, checkpoint, cursor=None, covered_until=T0 + 5 * MIN, metadata={}
        )
    outcome = tick(engine, config, outcome.cursor, AFTER_ALL)
    assert outcome.requests == []  # covered only to 10:05, the window ends 10:10
    with engine.begin() as conn:
        checkpoint = checkpoints.ensure_checkpoint(conn, "inc-1", "oc_chat")
        checkpoints.advance_checkpoint(
            conn, checkpoint, cursor=None, covered_until=T0 + 11 * MIN, metadata={}
        )
    outcome = tick(engine, config, outcome.cursor, AFTER_ALL)
    assert keys(outcome) == ["inc-1:oc_chat:20261129T1000Z"]


def test_oldest_uncovered_window_goes_first_across_workspaces(engine: Engine) -> None:
    workspace(engine, "inc-a")
    workspace(engine, "inc-b")
    post(engine, [T0 + 31 * MIN, T0 + MIN], workspace_id="inc-a")
    post(engine, [T0 + 12 * MIN], workspace_id="inc-b")
    config = settings(window_backlog_limit_global=2, window_backlog_limit_per_workspace=2)
    first = tick(engine, config, DiscoveryCursor(), AFTER_ALL)
    assert keys(first) == ["inc-a:oc_chat:20261129T1000Z", "inc-b:oc_chat:20261129T1010Z"]
    assert first.counts["held_backlog"] >= 1
    assert "inc-a:oc_chat:20261129T1030Z" not in window_states(engine, "inc-a")
    for request in first.requests:
        finish(engine, request.state, AFTER_ALL)
    second = tick(engine, config, first.cursor, AFTER_ALL + MIN)
    assert keys(second) == ["inc-a:oc_chat:20261129T1030Z"]


def test_one_tick_queues_every_closed_window_up_to_the_backlog_limits(engine: Engine) -> None:
    workspace(engine, "inc-a")
    workspace(engine, "inc-b")
    post(engine, [T0 + i * WINDOW + MIN for i in range(6)], workspace_id="inc-a")
    post(engine, [T0 + i * WINDOW + 2 * MIN for i in range(4)], workspace_id="inc-b")
    config = settings(window_backlog_limit_per_workspace=4, window_backlog_limit_global=7)
    outcome = tick(engine, config, DiscoveryCursor(), AFTER_ALL)
    requested = keys(outcome)
    assert len(requested) == 7
    assert sum(k.startswith("inc-a") for k in requested) == 4  # per-workspace limit
    starts = [r.ref.window_start for r in outcome.requests]
    assert starts == sorted(starts)  # oldest first across workspaces
    # Nothing finishes: the next tick adds nothing (the backlog is full), and re-requests nothing.
    again = tick(engine, config, outcome.cursor, AFTER_ALL + MIN)
    assert again.requests == []
    assert again.counts["in_flight"] == 7


def test_continuous_traffic_never_starves_the_oldest_window(engine: Engine) -> None:
    """A message every minute for two hours, one window per run at a time (limit 1): every
    window is requested in order, each as soon as it closes or the previous one finishes."""
    workspace(engine)
    config = settings(window_backlog_limit_per_workspace=1)
    cursor = DiscoveryCursor()
    requested: list[str] = []
    posted = T0
    now = T0
    while now < T0 + timedelta(hours=2):
        now += 2 * MIN
        post(engine, [at for at in (posted + i * MIN for i in range(2)) if at < now])
        posted += 2 * MIN
        outcome = tick(engine, config, cursor, now)
        cursor = outcome.cursor
        assert len(outcome.requests) <= 1
        for request in outcome.requests:
            requested.append(request.ref.partition_key)
            finish(engine, request.state, now)
    expected = [
        f"inc-1:oc_chat:20261129T{10 + m // 60:02d}{m % 60:02d}Z" for m in range(0, 110, 10)
    ]
    assert requested == expected


def test_a_stale_window_is_retried_and_one_out_of_attempts_is_failed(engine: Engine) -> None:
    workspace(engine)
    post(engine, [T0 + MIN, T0 + 11 * MIN])
    config = settings(synthesis_window_max_attempts=2)
    outcome = tick(engine, config, DiscoveryCursor(), AFTER_ALL)
    first, second = (r.state for r in outcome.requests)
    claim(engine, first, AFTER_ALL)  # attempt 1 of 2, its worker then dies
    exhausted = claim(engine, second, AFTER_ALL)
    with engine.begin() as conn:  # the second window already failed once before
        failed = window_store.fail_window(conn, exhausted, error="x", retry_at=None)
        assert failed is not None
        retaken = window_store.claim_window(
            conn,
            failed,
            owner="w",
            max_attempts=2,
            stale_timeout=timedelta(minutes=15),
            now=AFTER_ALL,
        )
        assert retaken is not None and retaken.attempt_count == 2  # its last attempt, then dies
    quiet = tick(engine, config, outcome.cursor, AFTER_ALL + 10 * MIN)
    assert quiet.requests == [] and quiet.counts["in_flight"] == 2
    later = tick(engine, config, quiet.cursor, AFTER_ALL + 16 * MIN)
    assert [(r.ref.partition_key, r.reason) for r in later.requests] == [
        ("inc-1:oc_chat:20261129T1000Z", "stale")
    ]
    assert later.counts["failed_stale"] == 1
    # Both dead workers are named, so the orchestrator can release what it holds for them.
    assert sorted(later.abandoned_owners) == ["test-run", "w"]
    states = window_states(engine)
    assert states["inc-1:oc_chat:20261129T1000Z"].status == "pending"
    assert states["inc-1:oc_chat:20261129T1000Z"].attempt_count == 1  # kept; the claim counts
    dead = states["inc-1:oc_chat:20261129T1010Z"]
    assert (dead.status, dead.attempt_count) == ("failed", 2)
    assert dead.last_error is not None and "stale" in dead.last_error
    # Exhausted windows stay failed: no later tick requests them.
    much_later = tick(engine, config, later.cursor, AFTER_ALL + 60 * MIN)
    assert "inc-1:oc_chat:20261129T1010Z" not in keys(much_later)


def test_a_failed_window_is_retried_after_its_backoff_under_a_new_run_key(engine: Engine) -> None:
    workspace(engine)
    post(engine, [T0 + MIN])
    config = settings()
    outcome = tick(engine, config, DiscoveryCursor(), AFTER_ALL)
    (request,) = outcome.requests
    claimed = claim(engine, request.state, AFTER_ALL)
    with engine.begin() as conn:
        failed = window_store.fail_window(
            conn, claimed, error="chunk 1/1 failed", retry_at=AFTER_ALL + 5 * MIN
        )
    assert failed is not None
    waiting = tick(engine, config, outcome.cursor, AFTER_ALL + 2 * MIN)
    assert waiting.requests == [] and waiting.counts["waiting_retry"] == 1
    due = tick(engine, config, waiting.cursor, AFTER_ALL + 6 * MIN)
    (retry,) = due.requests
    assert retry.reason == "retry"
    assert retry.run_key != request.run_key
    assert "/attempt-2/" in retry.run_key


def test_late_evidence_into_an_old_empty_window_is_found_without_rescanning(
    engine: Engine,
) -> None:
    workspace(engine)
    post(engine, [T0 + i * WINDOW + MIN for i in range(8)])
    config = settings()
    outcome = tick(engine, config, DiscoveryCursor(), AFTER_ALL)
    for request in outcome.requests:
        finish(engine, request.state, AFTER_ALL)
    cursor = tick(engine, config, outcome.cursor, AFTER_ALL + MIN).cursor
    # Reconciliation recovers a message from 10:85 (an empty window so far) much later.
    post(engine, [T0 + 85 * MIN], prefix="late")
    late = tick(engine, config, cursor, AFTER_ALL + 2 * MIN)
    assert keys(late) == ["inc-1:oc_chat:20261129T1120Z"]
    assert late.counts["seeks"] == 0  # found from the new rows themselves


def test_an_idle_tick_is_one_statement_with_or_without_runs_in_flight(engine: Engine) -> None:
    workspace(engine)
    post(engine, [T0 + i * MIN for i in range(30)])
    config = settings()
    first = tick(engine, config, DiscoveryCursor(), AFTER_ALL)
    cursor = first.cursor
    for minutes in (1, 2, 5):  # let the commit margin pass so that every id is settled
        cursor = tick(engine, config, cursor, AFTER_ALL + minutes * MIN).cursor
    with statements(engine) as seen:
        queued = tick(engine, config, cursor, AFTER_ALL + 6 * MIN)
    assert queued.requests == [] and queued.counts["in_flight"] == 3
    assert len(seen) == 1, seen
    for request in first.requests:
        finish(engine, request.state, AFTER_ALL + 7 * MIN)
    with statements(engine) as seen:
        idle = tick(engine, config, queued.cursor, AFTER_ALL + 8 * MIN)
    assert idle.requests == [] and idle.counts["in_flight"] == 0
    assert len(seen) == 1, seen


def test_a_cold_start_resumes_after_each_chats_latest_window(engine: Engine) -> None:
    workspace(engine)
    post(engine, [T0 + i * WINDOW + MIN for i in range(12)])
    config = settings()
    first = tick(engine, config, DiscoveryCursor(), T0 + 150 * MIN)
    assert len(first.requests) == 12
    for request in first.requests:
        finish(engine, request.state, T0 + 150 * MIN)
    post(engine, [T0 + 155 * MIN], prefix="new")
    # The cursor is lost (sensor reset): the history is not walked again.
    cold = tick(engine, config, DiscoveryCursor(), T0 + 3 * 60 * MIN)
    assert keys(cold) == ["inc-1:oc_chat:20261129T1230Z"]
    assert cold.counts["seeks"] <= 2


def test_stored_evidence_is_scheduled_whatever_the_workspaces_status_or_age(
    engine: Engine,
) -> None:
    workspace(engine, "inc-firing")
    workspace(engine, "inc-recovered", status="recovered")
    workspace(engine, "inc-old", created_at=T0 - timedelta(hours=80))
    for ws in ("inc-firing", "inc-recovered", "inc-old"):
        post(engine, [T0 + MIN], workspace_id=ws)
    outcome = tick(engine, settings(), DiscoveryCursor(), AFTER_ALL)
    # Eligibility decided what was ingested; what was stored is synthesized.
    assert keys(outcome) == [
        "inc-firing:oc_chat:20261129T1000Z",
        "inc-old:oc_chat:20261129T1000Z",
        "inc-recovered:oc_chat:20261129T1000Z",
    ]
    assert tick(engine, settings(enabled=False), DiscoveryCursor(), AFTER_ALL).skip_reason


@pytest.mark.parametrize(
    ("dagster_has", "reason"),
    [
        (None, "reissue"),  # the tick's requests never reached Dagster
        (True, "relaunch"),  # every run of the request ended without claiming the windows
        (False, None),  # a run of the request is still queued or running: wait for it
    ],
)
def test_a_request_without_a_live_run_is_reissued_or_relaunched_by_its_group(
    engine: Engine, dagster_has: bool | None, reason: str | None
) -> None:
    workspace(engine)
    post(engine, [T0 + MIN, T0 + 11 * MIN])
    config = settings()
    outcome = tick(engine, config, DiscoveryCursor(), AFTER_ALL)
    first, second = outcome.requests
    assert first.group == second.group, "one tick, one workspace: one request group"
    seen: list[Sequence[str]] = []

    def dagster_knows(groups: Sequence[str]) -> dict[str, bool]:
        seen.append(list(groups))
        return {} if dagster_has is None else {first.group: dagster_has}

    later = tick(engine, config, outcome.cursor, AFTER_ALL + 16 * MIN, dagster_knows)
    assert seen == [[first.group]]
    if reason is None:
        assert later.requests == []
    else:
        assert [r.reason for r in later.requests] == [reason, reason]
        assert [r.ref for r in later.requests] == [first.ref, second.ref]
    if reason == "reissue":  # the same request again: same run keys, same group
        assert [r.run_key for r in later.requests] == [first.run_key, second.run_key]
        assert {r.group for r in later.requests} == {first.group}
    if reason == "relaunch":  # a new attempt, under this tick's group
        assert all(
            r.run_key != first.run_key and r.run_key != second.run_key for r in later.requests
        )
        assert {r.group for r in later.requests} != {first.group}
    # Checked once per stale timeout, not on every tick.
    assert tick(engine, config, later.cursor, AFTER_ALL + 18 * MIN, dagster_knows).requests == []
    assert len(seen) == 1


def test_a_versioned_rerun_window_is_requested_even_for_a_recovered_workspace(
    engine: Engine,
) -> None:
    workspace(engine, status="recovered")
    post(engine, [T0 + MIN])
    with engine.begin() as conn:
        created = window_store.create_window_if_evidence(
            conn,
            workspace_id="inc-1",
            chat_id="oc_chat",
            window_start=T0,
            window_end=T0 + WINDOW,
            processor_version="v2",
        )
    assert created is not None
    outcome = tick(engine, settings(), DiscoveryCursor(), AFTER_ALL)
    assert sorted((k, r.reason) for k, r in zip(keys(outcome), outcome.requests, strict=True)) == [
        ("inc-1:oc_chat:20261129T1000Z", "new"),  # stored evidence: synthesized in any status
        ("inc-1:oc_chat:20261129T1000Z:v2", "pending"),
    ]
