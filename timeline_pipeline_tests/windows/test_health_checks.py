"""The alert rules over a health measurement, as tables (no database, no Dagster)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from timeline_pipeline.windows.health_checks import (
    BACKLOG_CHECK,
    CHECK_NAMES,
    FAILED_CHECK,
    STALE_CHECK,
    UNCOVERED_CHECK,
    CheckOutcome,
    HealthLimits,
    Severity,
    evaluate,
    format_age,
)
from timeline_pipeline.windows.health_model import (
    ChatPosition,
    ListedWindow,
    PipelineHealth,
    WorkspaceHealth,
)

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
LIMITS = HealthLimits(
    backlog_windows=2,
    oldest_uncovered_age=timedelta(minutes=30),
    stale_timeout=timedelta(minutes=15),
    window_max_attempts=3,
)


def health(
    *,
    pending: int = 0,
    processing: int = 0,
    stale: int = 0,
    failed: int = 0,
    exhausted: int = 0,
    uncovered_age: timedelta | None = None,
    listed: int = 0,
) -> PipelineHealth:
    windows = {"pending": pending, "processing": processing, "failed": failed}
    listing = tuple(
        ListedWindow(f"inc-1:oc_chat:20261129T{10 + i:02d}00Z", "failed", 3, NOW)
        for i in range(listed)
    )
    return PipelineHealth(
        measured_at=NOW,
        horizon_start=NOW - timedelta(hours=73),
        workspaces=(
            WorkspaceHealth("inc-1", windows, stale_processing=stale, failed_exhausted=exhausted),
        ),
        oldest_uncovered=(
            ChatPosition("inc-1", "oc_chat", NOW - uncovered_age) if uncovered_age else None
        ),
        failed_windows=listing,
        stale_windows=listing if stale else (),
    )


def outcome(measured: PipelineHealth, name: str) -> CheckOutcome:
    (found,) = [o for o in evaluate(measured, LIMITS) if o.name == name]
    return found


def test_every_check_is_evaluated_once_in_a_fixed_order() -> None:
    assert [o.name for o in evaluate(health(), LIMITS)] == list(CHECK_NAMES)
    assert all(o.passed for o in evaluate(health(), LIMITS))


@pytest.mark.parametrize(
    ("pending", "processing", "passed"),
    [(0, 0, True), (1, 1, True), (2, 1, False), (0, 3, False)],
)
def test_the_backlog_check_fails_above_the_limit_and_names_figure_and_limit(
    pending: int, processing: int, passed: bool
) -> None:
    result = outcome(health(pending=pending, processing=processing), BACKLOG_CHECK)

    assert result.passed is passed and result.severity is Severity.ERROR
    total = pending + processing
    assert f"window backlog {total} ({pending} pending, {processing} processing)" in (
        result.description
    )
    assert "the limit of 2 (backlogAlertWindows)" in result.description
    assert result.metadata == {"backlog": total, "limit": 2}


@pytest.mark.parametrize(
    ("age", "passed", "words"),
    [
        (None, True, "no eligible evidence is waiting"),
        (timedelta(minutes=12), True, "12m00s old"),
        (timedelta(minutes=30), True, "30m00s old"),
        (timedelta(minutes=30, seconds=1), False, "30m01s old"),
        (timedelta(hours=2, minutes=5), False, "2h05m old"),
    ],
)
def test_the_uncovered_age_check_fails_past_the_limit(
    age: timedelta | None, passed: bool, words: str
) -> None:
    result = outcome(health(uncovered_age=age), UNCOVERED_CHECK)

    assert result.passed is passed and result.severity is Severity.ERROR
    assert words in result.description and "30m00s" in result.description
    assert result.metadata["limit_seconds"] == 1800.0
    if age is not None:
        assert result.metadata["age_seconds"] == age.total_seconds()
        assert "workspace inc-1, chat oc_chat" in result.description


def test_stale_and_failed_windows_warn_and_list_their_partitions() -> None:
    measured = health(processing=1, stale=1, failed=25, exhausted=20, listed=20)

    stale = outcome(measured, STALE_CHECK)
    assert (stale.passed, stale.severity) == (False, Severity.WARN)
    assert "1 window(s) processing longer than 15m00s" in stale.description

    failed = outcome(measured, FAILED_CHECK)
    assert (failed.passed, failed.severity) == (False, Severity.WARN)
    assert "25 failed window(s) in the horizon, 20 with no attempts left" in failed.description
    assert "synthesize_windows" in failed.description
    partitions = failed.metadata["partitions"]
    assert len(partitions) == 21 and partitions[-1] == "... 5 more"


@pytest.mark.parametrize(
    ("age", "text"),
    [
        (timedelta(0), "0s"),
        (timedelta(seconds=45), "45s"),
        (timedelta(minutes=12, seconds=30), "12m30s"),
        (timedelta(hours=26, minutes=1, seconds=59), "26h01m"),
        (timedelta(seconds=-5), "0s"),
    ],
)
def test_ages_read_as_the_two_largest_units(age: timedelta, text: str) -> None:
    assert format_age(age) == text
