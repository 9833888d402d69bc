"""Turn a configured interval (`reconcileInterval: 5m`) into a schedule. Pure.

Dagster schedules are cron-based, and cron cannot say "every 7 minutes" or "every 90 seconds".
Intervals cron can express exactly become that cron; any other interval ticks at the finer cron
and only every N-th minute (counted from the epoch) is due, so runs are never more frequent than
configured. Sub-minute intervals round up to one minute, the finest a schedule ticks.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta

_MINUTES_PER_HOUR = 60
_MINUTES_PER_DAY = 24 * 60


@dataclass(frozen=True, slots=True)
class Cadence:
    cron: str
    every_minutes: int
    exact: bool
    """True when the cron alone fires at the interval; otherwise `is_due` filters ticks."""

    def is_due(self, tick: datetime) -> bool:
        if self.exact:
            return True
        return int(tick.timestamp() // 60) % self.every_minutes == 0


def cadence_for(interval: timedelta) -> Cadence:
    if interval <= timedelta(0):
        raise ValueError("a schedule interval must be positive")
    minutes = max(1, math.ceil(interval.total_seconds() / 60))
    if minutes == 1:
        return Cadence("* * * * *", 1, True)
    if minutes < _MINUTES_PER_HOUR and _MINUTES_PER_HOUR % minutes == 0:
        return Cadence(f"*/{minutes} * * * *", minutes, True)
    if minutes == _MINUTES_PER_HOUR:
        return Cadence("0 * * * *", minutes, True)
    if minutes % _MINUTES_PER_HOUR == 0:
        hours = minutes // _MINUTES_PER_HOUR
        if hours < 24 and 24 % hours == 0:
            return Cadence(f"0 */{hours} * * *", minutes, True)
        if minutes == _MINUTES_PER_DAY:
            return Cadence("0 0 * * *", minutes, True)
        return Cadence("0 * * * *", minutes, False)
    return Cadence("* * * * *", minutes, False)
