"""The alert rules over a health measurement (docs/design.md §9: backlog limits with metrics
and alerts). Pure.

Two rules are errors, because they mean evidence is not reaching the timeline in time: the
backlog above `backlogAlertWindows`, and the oldest uncovered evidence older than
`backlogAlertOldestUncoveredAge`. Two are warnings, because the pipeline heals them itself or
an operator decides later: stale `processing` windows (discovery re-queues them) and `failed`
windows (retried until their attempts are spent, then they wait for a replay). Every outcome
states the figure and the limit, so the alert says what to look at without opening anything.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from enum import StrEnum
from typing import Any

from timeline_pipeline.settings import LarkTimelineSettings
from timeline_pipeline.windows.health_model import ListedWindow, PipelineHealth

__all__ = [
    "BACKLOG_CHECK",
    "CHECK_NAMES",
    "FAILED_CHECK",
    "STALE_CHECK",
    "UNCOVERED_CHECK",
    "CheckOutcome",
    "HealthLimits",
    "Severity",
    "evaluate",
    "format_age",
]

BACKLOG_CHECK = "window_backlog_within_limit"
UNCOVERED_CHECK = "oldest_uncovered_age_within_limit"
STALE_CHECK = "no_stale_processing_windows"
FAILED_CHECK = "no_failed_windows"
CHECK_NAMES = (BACKLOG_CHECK, UNCOVERED_CHECK, STALE_CHECK, FAILED_CHECK)


class Severity(StrEnum):
    ERROR = "error"
    WARN = "warn"


@dataclass(frozen=True, slots=True)
class HealthLimits:
    backlog_windows: int
    oldest_uncovered_age: timedelta
    stale_timeout: timedelta
    window_max_attempts: int

    @classmethod
    def from_settings(cls, settings: LarkTimelineSettings) -> HealthLimits:
        return cls(
            backlog_windows=settings.backlog_alert_windows,
            oldest_uncovered_age=settings.backlog_alert_oldest_uncovered_age,
            stale_timeout=settings.synthesis_stale_timeout,
            window_max_attempts=settings.synthesis_window_max_attempts,
        )


@dataclass(frozen=True)
class CheckOutcome:
    name: str
    passed: bool
    severity: Severity
    description: str
    metadata: dict[str, Any] = field(default_factory=dict)


def format_age(age: timedelta) -> str:
    """`1h05m`, `12m30s`, `45s`: whole seconds, the two largest units."""
    seconds = max(0, int(age.total_seconds()))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m"
    if minutes:
        return f"{minutes}m{secs:02d}s"
    return f"{secs}s"


def _keys(windows: Sequence[ListedWindow], total: int) -> list[str]:
    listed = [w.partition_key for w in windows]
    return listed if len(listed) == total else [*listed, f"... {total - len(listed)} more"]


def _against_limit(
    name: str, passed: bool, describe: Callable[[str], str], metadata: dict[str, Any]
) -> CheckOutcome:
    """The outcome of an error rule that holds a figure to its limit: `describe` words it with
    the verdict, `within` or `above` the limit."""
    return CheckOutcome(
        name, passed, Severity.ERROR, describe("within" if passed else "above"), metadata
    )


def _backlog(health: PipelineHealth, limits: HealthLimits) -> CheckOutcome:
    backlog, limit = health.backlog, limits.backlog_windows
    by_status = health.windows_by_status
    figures = f"{by_status['pending']} pending, {by_status['processing']} processing"
    return _against_limit(
        BACKLOG_CHECK,
        backlog <= limit,
        lambda verdict: (
            f"window backlog {backlog} ({figures}) is {verdict} the limit of {limit} "
            "(backlogAlertWindows)"
        ),
        {"backlog": backlog, "limit": limit},
    )


def _uncovered(health: PipelineHealth, limits: HealthLimits) -> CheckOutcome:
    limit = limits.oldest_uncovered_age
    age = health.oldest_uncovered_age
    position = health.oldest_uncovered
    metadata: dict[str, Any] = {"limit_seconds": limit.total_seconds()}
    if age is None or position is None:
        return CheckOutcome(
            UNCOVERED_CHECK,
            True,
            Severity.ERROR,
            "no eligible evidence is waiting for a window "
            f"(limit {format_age(limit)}, backlogAlertOldestUncoveredAge)",
            {**metadata, "age_seconds": 0.0},
        )
    return _against_limit(
        UNCOVERED_CHECK,
        age <= limit,
        lambda verdict: (
            f"the oldest uncovered evidence is {format_age(age)} old (workspace "
            f"{position.workspace_id}, chat {position.chat_id}, at {position.at.isoformat()}), "
            f"{verdict} the limit of {format_age(limit)} (backlogAlertOldestUncoveredAge)"
        ),
        {
            **metadata,
            "age_seconds": age.total_seconds(),
            "workspace_id": position.workspace_id,
            "chat_id": position.chat_id,
        },
    )


def _stale(health: PipelineHealth, limits: HealthLimits) -> CheckOutcome:
    count = health.stale_processing
    timeout = format_age(limits.stale_timeout)
    if not count:
        description = f"no window has been processing longer than {timeout} (synthesisStaleTimeout)"
    else:
        description = (
            f"{count} window(s) processing longer than {timeout} (synthesisStaleTimeout): their "
            "runs stopped reporting; discovery retries them as a whole while attempts remain"
        )
    return CheckOutcome(
        STALE_CHECK,
        count == 0,
        Severity.WARN,
        description,
        {"stale": count, "limit": 0, "partitions": _keys(health.stale_windows, count)},
    )


def _failed(health: PipelineHealth, limits: HealthLimits) -> CheckOutcome:
    count, exhausted = health.failed, health.failed_exhausted
    if not count:
        description = "no failed window in the horizon"
    else:
        description = (
            f"{count} failed window(s) in the horizon, {exhausted} with no attempts left "
            f"(synthesisWindowMaxAttempts {limits.window_max_attempts}): replay those by "
            "launching job synthesize_windows for their partitions"
        )
    return CheckOutcome(
        FAILED_CHECK,
        count == 0,
        Severity.WARN,
        description,
        {
            "failed": count,
            "exhausted": exhausted,
            "limit": 0,
            "partitions": _keys(health.failed_windows, count),
        },
    )


def evaluate(health: PipelineHealth, limits: HealthLimits) -> list[CheckOutcome]:
    """Every rule, in `CHECK_NAMES` order."""
    return [
        _backlog(health, limits),
        _uncovered(health, limits),
        _stale(health, limits),
        _failed(health, limits),
    ]
