"""Choosing the threads one run lists, and how far that lets coverage go."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

from timeline_pipeline.reconcile.threads import KnownThread, known_threads, plan_threads

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
M = timedelta(minutes=1)


def test_never_listed_threads_go_first_then_the_ones_listed_longest_ago() -> None:
    threads = [
        KnownThread("omt_recent", T0, T0 + 30 * M),
        KnownThread("omt_new", T0 + 20 * M, None),
        KnownThread("omt_stale", T0, T0 + 5 * M),
        KnownThread("omt_older_new", T0 + 10 * M, None),
    ]

    plan = plan_threads(threads, 3)

    assert [t.thread_id for t in plan.serve] == ["omt_older_new", "omt_new", "omt_stale"]
    assert [t.thread_id for t in plan.skipped] == ["omt_recent"]


def test_coverage_stops_where_a_skipped_thread_was_last_listed_or_first_seen() -> None:
    end = T0 + 60 * M
    listed = KnownThread("omt_a", T0, T0 + 40 * M)
    never = KnownThread("omt_b", T0 + 25 * M, None)

    assert plan_threads([listed, never], 2).coverage(end) == end
    assert plan_threads([listed, never], 1).coverage(end) == T0 + 40 * M  # omt_b served
    assert plan_threads([listed], 0).coverage(end) == end  # listing off: chat listing only


def test_rotation_serves_every_thread_within_ceil_n_over_budget_runs() -> None:
    listed: dict[str, datetime] = {}
    evidence = {f"omt_{n:02d}": T0 + n * M for n in range(11)}
    budget, first_served = 4, {}
    for run in range(math.ceil(len(evidence) / budget)):
        now = T0 + timedelta(hours=1, minutes=5 * run)
        plan = plan_threads(known_threads(evidence, {}, listed), budget)
        for thread in plan.serve:
            listed[thread.thread_id] = now
            first_served.setdefault(thread.thread_id, run)
    assert set(first_served) == set(evidence)


def test_a_served_thread_is_read_back_to_its_last_listing_never_past_the_floor() -> None:
    floor, start = T0, T0 + 50 * M
    overlap = 10 * M
    assert (
        KnownThread("a", T0, T0 + 20 * M).fetch_from(
            range_start=start, floor=floor, overlap=overlap
        )
        == T0 + 10 * M
    )
    assert (
        KnownThread("b", T0, None).fetch_from(range_start=start, floor=floor, overlap=overlap)
        == floor
    )
    assert (
        KnownThread("c", T0, T0 + 65 * M).fetch_from(
            range_start=start, floor=floor, overlap=overlap
        )
        == start
    )


def test_known_threads_merge_evidence_and_listed_roots_with_the_earliest_message() -> None:
    merged = known_threads(
        {"omt_a": T0 + 5 * M, "omt_b": T0},
        {"omt_a": T0 + 2 * M, "omt_c": T0 + 9 * M},
        {"omt_b": T0 + 30 * M},
    )

    assert sorted(merged, key=lambda t: t.thread_id) == [
        KnownThread("omt_a", T0 + 2 * M, None),
        KnownThread("omt_b", T0, T0 + 30 * M),
        KnownThread("omt_c", T0 + 9 * M, None),
    ]
