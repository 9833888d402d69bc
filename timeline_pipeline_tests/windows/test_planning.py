"""Discovery rules without a database (docs/design.md §6, §9)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from timeline_pipeline.domain.sync_states import SyncState
from timeline_pipeline.domain.window_keys import WindowRef
from timeline_pipeline.settings import LarkTimelineSettings
from timeline_pipeline.windows.batches import run_tags
from timeline_pipeline.windows.planning import (
    COMMIT_MARGIN,
    Admission,
    DiscoveryCursor,
    DiscoveryLimits,
    StateAction,
    classify_state,
    collection_covers,
    is_closed,
    outage_backoff,
    run_key,
    run_priority,
)
from timeline_pipeline.windows.run_queue import lane_of
from timeline_pipeline_tests.support.windows import WINDOW

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
START = datetime(2026, 11, 29, 10, 20, tzinfo=UTC)
LIMITS = DiscoveryLimits.from_settings(LarkTimelineSettings())  # 3 attempts, 15m stale


def state(**changes: Any) -> SyncState:
    base = SyncState(
        id=7,
        workspace_id="inc-1",
        source="system",
        source_type="lark_timeline_window",
        source_key="chat/oc_1/window/2026-11-29T10:20:00Z",
        status="pending",
        attempt_count=0,
        revision=1,
        processing_started_at=None,
        last_seen_updated_at=None,
        last_seen_cursor=None,
        last_seen_content_hash=None,
        metadata={},
        scope_key="oc_1",
        processor_version=None,
        window_start=START,
        window_end=START + WINDOW,
        lease_owner=None,
        next_attempt_at=None,
        summary_attempted=False,
        last_error=None,
    )
    return replace(base, **changes)


FRESH = NOW - timedelta(minutes=1)
STALE = NOW - timedelta(minutes=16)


@pytest.mark.parametrize(
    ("row", "action"),
    [
        (state(status="completed"), StateAction.COVERED),
        (state(status="ignored"), StateAction.COVERED),
        (state(status="pending"), StateAction.REQUEST),  # made by the rerun job: needs a run
        (state(status="pending", next_attempt_at=NOW + timedelta(minutes=5)), StateAction.QUEUED),
        (state(status="pending", next_attempt_at=NOW - timedelta(minutes=5)), StateAction.QUEUED),
        (
            state(status="processing", attempt_count=1, processing_started_at=FRESH),
            StateAction.RUNNING,
        ),
        (
            state(status="processing", attempt_count=1, processing_started_at=STALE),
            StateAction.REQUEUE_STALE,
        ),
        (
            state(status="processing", attempt_count=3, processing_started_at=STALE),
            StateAction.FAIL_STALE,
        ),
        (
            state(status="processing", attempt_count=3, processing_started_at=FRESH),
            StateAction.RUNNING,
        ),
        (state(status="failed", attempt_count=1), StateAction.REQUEST),
        (
            state(status="failed", attempt_count=2, next_attempt_at=NOW - timedelta(seconds=1)),
            StateAction.REQUEST,
        ),
        (
            state(status="failed", attempt_count=2, next_attempt_at=NOW + timedelta(seconds=30)),
            StateAction.WAIT,
        ),
        (state(status="failed", attempt_count=3), StateAction.EXHAUSTED),
        (state(status="failed", attempt_count=5), StateAction.EXHAUSTED),
    ],
)
def test_what_each_window_state_calls_for(row: SyncState, action: StateAction) -> None:
    assert classify_state(row, NOW, LIMITS) is action


def test_only_queued_running_stale_and_deferred_windows_hold_a_backlog_slot() -> None:
    holding = {a for a in StateAction if a.in_flight}
    assert holding == {
        StateAction.RUNNING,
        StateAction.QUEUED,
        StateAction.REQUEUE_STALE,
        StateAction.DEFERRED,
        StateAction.RETRY_DEFERRED,
    }


@pytest.mark.parametrize(
    ("minutes_after_end", "closed"), [(-1, False), (0, False), (2.9, False), (3, True), (30, True)]
)
def test_a_window_closes_only_after_its_grace(minutes_after_end: float, closed: bool) -> None:
    end = START + WINDOW
    now = end + timedelta(minutes=minutes_after_end)
    assert is_closed(end, now, timedelta(minutes=3)) is closed


@pytest.mark.parametrize(
    ("covered_until", "reconciliation", "ok"),
    [
        (None, False, True),
        (None, True, False),
        (START + timedelta(minutes=9), True, False),
        (START + WINDOW, True, True),
        (START + timedelta(hours=1), True, True),
    ],
)
def test_with_reconciliation_on_a_window_waits_for_collection(
    covered_until: datetime | None, reconciliation: bool, ok: bool
) -> None:
    assert collection_covers(START + WINDOW, covered_until, reconciliation) is ok


def test_admission_enforces_per_workspace_and_global_backlog_limits() -> None:
    admission = Admission(per_workspace=2, global_limit=3, in_flight=["a"])
    assert admission.admit("a")
    assert not admission.admit("a")  # a holds 2
    assert admission.admit("b")
    assert admission.full
    assert not admission.admit("c")  # global 3 reached
    admission.release("b")
    assert admission.admit("c")


def test_run_keys_differ_for_every_attempt_even_after_an_operator_reset() -> None:
    ref = WindowRef("inc-1", "oc_1", START)
    first = run_key(ref, state(attempt_count=0, revision=2))
    retry = run_key(ref, state(attempt_count=1, revision=5))
    after_reset = run_key(ref, state(attempt_count=0, revision=9))
    assert first == "inc-1:oc_1:20261129T1020Z/attempt-1/rev-2"
    assert len({first, retry, after_reset}) == 3


def test_older_windows_get_higher_dagster_priority() -> None:
    assert run_priority(START) > run_priority(START + WINDOW)
    tags = run_tags(WindowRef("inc-1", "oc_1", START), state(attempt_count=1), 2)
    assert tags["timeline/workspace"] == "inc-1"
    assert tags["timeline/synthesis"] == "1"
    assert tags["timeline/lane"] == lane_of("inc-1", 2)
    assert tags["timeline/window_attempt"] == "2"
    assert int(tags["dagster/priority"]) == run_priority(START)


def test_the_cursor_survives_json_and_a_corrupt_cursor_means_a_cold_start() -> None:
    cursor = DiscoveryCursor(
        settled_id=10,
        scanned_id=25,
        marks=((NOW, 25),),
        last_tick=NOW,
        frontiers={("inc-1", "oc_1"): START, ("inc.2", "oc_2"): START + WINDOW},
        reissue_at=NOW + timedelta(minutes=15),
        bootstrapped=True,
    )
    assert DiscoveryCursor.from_json(cursor.to_json()) == cursor
    for junk in (None, "", "{", '{"v": 99}', '{"v": 1}', "[]"):
        assert DiscoveryCursor.from_json(junk) == DiscoveryCursor()


def test_new_ids_are_read_again_until_a_scan_ran_a_commit_margin_after_they_were_seen() -> None:
    # Tick 1 sees max id 100 but id 95 is still uncommitted; it commits a minute later.
    t1 = NOW
    cursor = DiscoveryCursor(settled_id=50, scanned_id=50, last_tick=t1 - timedelta(minutes=2))
    after, upto = cursor.scan_bounds(max_id=100, cap=1000)
    assert (after, upto) == (50, 100)
    cursor = cursor.advance(now=t1, settled=after, scanned_to=upto)
    # Tick 2, two minutes later: 95 is now visible and must still be in range.
    t2 = t1 + timedelta(minutes=2)
    after, upto = cursor.scan_bounds(max_id=120, cap=1000)
    assert after < 95 <= upto
    cursor = cursor.advance(now=t2, settled=after, scanned_to=upto)
    # Once a scan ran COMMIT_MARGIN after tick 1, ids up to 100 are settled.
    t3 = t1 + COMMIT_MARGIN + timedelta(minutes=2)
    after, _ = cursor.scan_bounds(max_id=120, cap=1000)
    cursor = cursor.advance(now=t3, settled=after, scanned_to=120)
    after, upto = cursor.scan_bounds(max_id=120, cap=1000)
    assert after >= 100


def test_an_idle_cursor_reads_no_ids() -> None:
    cursor = DiscoveryCursor(settled_id=500, scanned_id=500, last_tick=NOW, bootstrapped=True)
    assert cursor.scan_bounds(max_id=500, cap=1000) == (500, 500)


def test_a_burst_is_read_at_most_cap_ids_per_tick() -> None:
    cursor = DiscoveryCursor(settled_id=0, scanned_id=0, last_tick=NOW, bootstrapped=True)
    assert cursor.scan_bounds(max_id=1_000_000, cap=50_000) == (0, 50_000)


def test_a_deferred_window_waits_out_its_backoff_then_goes_again() -> None:
    waiting = state(deferred=True, next_attempt_at=NOW + timedelta(seconds=1))
    assert classify_state(waiting, NOW, LIMITS) is StateAction.DEFERRED
    due = state(deferred=True, next_attempt_at=NOW)
    assert classify_state(due, NOW, LIMITS) is StateAction.RETRY_DEFERRED
    # However many deferrals: they are not attempts, so they never exhaust the window.
    many = state(deferred=True, deferral_count=50, next_attempt_at=NOW)
    assert classify_state(many, NOW, LIMITS) is StateAction.RETRY_DEFERRED


@pytest.mark.parametrize(
    ("deferrals", "jitter", "retry_after", "expected"),
    [
        (1, 0.0, None, 30),  # the bottom of the equal jitter: half the ceiling
        (1, 1.0, None, 60),  # the top: the ceiling, base * 2^0
        (2, 1.0, None, 120),
        (3, 0.5, None, 180),  # ceiling 240s, three quarters of it
        (10, 1.0, None, 900),  # capped
        (10, 0.0, None, 450),
        (1, 0.0, 200.0, 200),  # the server's retry-after is a floor...
        (1, 0.0, 5000.0, 900),  # ...but never beyond the cap
    ],
)
def test_the_outage_backoff_doubles_with_jitter_and_is_capped(
    deferrals: int, jitter: float, retry_after: float | None, expected: int
) -> None:
    delay = outage_backoff(
        deferrals, timedelta(minutes=1), timedelta(minutes=15), lambda: jitter, retry_after
    )
    assert delay == timedelta(seconds=expected)
