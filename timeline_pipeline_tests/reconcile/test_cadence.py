"""Configured intervals become Dagster cron schedules that never run more often than asked."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

import pytest

from timeline_pipeline.reconcile.cadence import Cadence, cadence_for


@pytest.mark.parametrize(
    ("interval", "expected"),
    [
        (timedelta(seconds=20), Cadence("* * * * *", 1, True)),
        (timedelta(minutes=1), Cadence("* * * * *", 1, True)),
        (timedelta(minutes=5), Cadence("*/5 * * * *", 5, True)),
        (timedelta(seconds=290), Cadence("*/5 * * * *", 5, True)),
        (timedelta(minutes=30), Cadence("*/30 * * * *", 30, True)),
        (timedelta(hours=1), Cadence("0 * * * *", 60, True)),
        (timedelta(hours=6), Cadence("0 */6 * * *", 360, True)),
        (timedelta(hours=24), Cadence("0 0 * * *", 1440, True)),
        (timedelta(minutes=7), Cadence("* * * * *", 7, False)),
        (timedelta(minutes=90), Cadence("* * * * *", 90, False)),
        (timedelta(hours=5), Cadence("0 * * * *", 300, False)),
    ],
)
def test_interval_to_cadence(interval: timedelta, expected: Cadence) -> None:
    assert cadence_for(interval) == expected


def test_an_inexact_cadence_is_due_once_per_interval() -> None:
    cadence = cadence_for(timedelta(minutes=7))
    start = datetime(2026, 11, 29, 0, 0, tzinfo=UTC)
    due = [minute for minute in range(7 * 10) if cadence.is_due(start + timedelta(minutes=minute))]
    assert len(due) == 10
    assert all(b - a == 7 for a, b in itertools.pairwise(due))


def test_an_exact_cadence_is_always_due_when_cron_fires() -> None:
    assert cadence_for(timedelta(minutes=5)).is_due(datetime(2026, 1, 1, 0, 3, tzinfo=UTC))


def test_a_non_positive_interval_is_refused() -> None:
    with pytest.raises(ValueError, match="positive"):
        cadence_for(timedelta(0))
