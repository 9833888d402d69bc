"""Retention arithmetic and the cursor safety margin (pure: no I/O).

A run evaluates every retention at one instant, `as_of`: a descriptor's cutoff is
`as_of - retention days`, where the days are the descriptor's default or the operator's
override, which must lie within the descriptor's bounds (the error names the bound).

The safety margin: PostgreSQL keeps timestamps to the microsecond, a client type may keep less.
A cursor value read back from the database and reused as a bound of a later query is padded in
the direction that can only include more rows: a lower bound (`>=`) moves down, an upper bound
(`<=`) moves up. Rows a padded bound re-includes are rows already handled (deleted, or excluded
again by the same conditions), so the padding costs nothing and a boundary row can never fall
through a rounding gap (docs/lifecycle.md, "Purge runbook").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Final

from timeline_pipeline.domain.errors import InvalidInput
from timeline_pipeline.domain.lifecycle import LifecycleDescriptor
from timeline_pipeline.lifecycle.errors import RetentionOverrideOutOfRange

CURSOR_SAFETY_MARGIN: Final = timedelta(milliseconds=1)


def pad_lower_bound(value: datetime, margin: timedelta = CURSOR_SAFETY_MARGIN) -> datetime:
    """A read-back value reused as `cursor >= bound`: moved down by the margin."""
    return value - margin


def pad_upper_bound(value: datetime, margin: timedelta = CURSOR_SAFETY_MARGIN) -> datetime:
    """A read-back value reused as `cursor <= bound`: moved up by the margin."""
    return value + margin


def retention_days(d: LifecycleDescriptor, override: int | None) -> int:
    if override is None:
        return d.default_retention_days
    if override < d.retention_min_days:
        raise RetentionOverrideOutOfRange(
            f"--retention-days-override {override} is below the minimum "
            f"retention_min_days={d.retention_min_days} of {d.key}"
        )
    if override > d.retention_max_days:
        raise RetentionOverrideOutOfRange(
            f"--retention-days-override {override} is above the maximum "
            f"retention_max_days={d.retention_max_days} of {d.key}"
        )
    return override


@dataclass(frozen=True)
class RetentionPlan:
    as_of: datetime
    days: Mapping[str, int]

    def cutoff(self, key: str) -> datetime:
        """Rows whose cursor is strictly before this instant have aged out."""
        return self.as_of - timedelta(days=self.days[key])


def build_plan(
    all_descriptors: Iterable[LifecycleDescriptor],
    selected: Iterable[str],
    *,
    as_of: datetime | None,
    override: int | None,
) -> RetentionPlan:
    """The override applies to the selected descriptors; the others (parents a selected chain
    link consults) keep their defaults."""
    moment = as_of or datetime.now(UTC)
    if moment.tzinfo is None:
        raise InvalidInput("--as-of: give a timezone")
    chosen = set(selected)
    days = {
        d.key: retention_days(d, override if d.key in chosen else None) for d in all_descriptors
    }
    return RetentionPlan(moment.astimezone(UTC), days)
