"""The demo's chat, moved in time so that it ends just now. Pure.

The bundled chat was written at fixed times; the pipeline only ingests messages inside a firing
workspace's lookback and only synthesizes closed windows, so the demo shifts every timestamp by
one offset (keeping gaps, order and the edit's delay) to end a little more than one window plus
its close grace before now.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

TIME_FIELDS = ("create_time", "update_time")


@dataclass(frozen=True)
class Scenario:
    messages: list[dict[str, Any]]
    first_at: datetime
    last_at: datetime

    @property
    def workspace_created_at(self) -> datetime:
        """The incident was declared a few minutes before its chat started."""
        return self.first_at - timedelta(minutes=5)


def _millis(item: Mapping[str, Any], field: str) -> int | None:
    value = item.get(field)
    return int(value) if isinstance(value, str | int) and str(value).isdigit() else None


def shifted(messages: Sequence[Mapping[str, Any]], end_at: datetime) -> Scenario:
    """Every message moved by the same offset so that the newest one lands on `end_at`."""
    creates = [ms for m in messages if (ms := _millis(m, "create_time")) is not None]
    if not creates:
        raise ValueError("the demo chat has no timestamps")
    offset = int(end_at.timestamp() * 1000) - max(creates)
    moved: list[dict[str, Any]] = []
    for item in messages:
        copy_ = copy.deepcopy(dict(item))
        for field in TIME_FIELDS:
            value = _millis(copy_, field)
            if value is not None:
                copy_[field] = str(value + offset)
        moved.append(copy_)
    first = datetime.fromtimestamp((min(creates) + offset) / 1000, tz=UTC)
    return Scenario(moved, first, end_at)


def demo_end(now: datetime, window: timedelta, grace: timedelta) -> datetime:
    """Late enough to look live, early enough that every window of the chat is closed."""
    return now - window - grace - timedelta(minutes=1)
