"""Which time range one reconciliation run of a (workspace, chat) reads (docs/design.md §3). Pure.

The checkpoint holds two things with different lifetimes:

* the high-water mark `(create_time_ms, message_id)` in `last_seen_cursor`, which moves only when
  every page of a range has been committed (§8.2), and
* an in-progress marker in `metadata_json`, rewritten in the same transaction as every committed
  page, that says "everything this run listed up to `after` is committed".

The marker is what lets a run killed in the middle of a 72-hour backfill resume near where it
died instead of from the start, while the high-water mark keeps its §8.2 meaning. Resuming is
just an incremental run from the marker: it starts `overlap` before it, for the same reason a
normal run starts `overlap` before the high-water mark (late, out-of-order visibility in Lark).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from timeline_pipeline.domain.sync_states import (
    CHECKPOINT_MARKER_KEY,
    decode_message_cursor,
    encode_message_cursor,
)
from timeline_pipeline.settings import LarkTimelineSettings

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class Mode(enum.StrEnum):
    """What the caller asked for; the first run of a chat is a backfill whatever the mode."""

    INCREMENTAL = "incremental"
    REFRESH = "refresh"


class RangeKind(enum.StrEnum):
    BACKFILL = "backfill"
    INCREMENTAL = "incremental"
    REFRESH = "refresh"


@dataclass(frozen=True, order=True, slots=True)
class MessageKey:
    """Lark's total order of history: creation time in milliseconds, then message id."""

    create_time_ms: int
    message_id: str

    @property
    def created_at(self) -> datetime:
        return _EPOCH + timedelta(milliseconds=self.create_time_ms)

    def encode(self) -> str:
        """The checkpoint's cursor text, which sorts as the keys compare."""
        return encode_message_cursor(self.create_time_ms, self.message_id)

    @classmethod
    def decode(cls, cursor: str) -> MessageKey:
        return cls(*decode_message_cursor(cursor))

    @classmethod
    def of(cls, created_at: datetime, message_id: str) -> MessageKey:
        millis = (created_at - _EPOCH) // timedelta(milliseconds=1)
        return cls(millis, message_id)


@dataclass(frozen=True, slots=True)
class Progress:
    """The in-progress marker of a range whose pages are being committed one by one."""

    kind: RangeKind
    range_start: datetime
    range_end: datetime
    after: MessageKey | None
    pages: int
    started_at: datetime

    def advanced(self, after: MessageKey | None) -> Progress:
        """One more page committed; `after` never moves backwards."""
        keys = [key for key in (self.after, after) if key is not None]
        return replace(self, after=max(keys) if keys else None, pages=self.pages + 1)

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind.value,
            "range_start": self.range_start.isoformat(),
            "range_end": self.range_end.isoformat(),
            "after": self.after.encode() if self.after else None,
            "pages": self.pages,
            "started_at": self.started_at.isoformat(),
        }

    @classmethod
    def from_json(cls, raw: object) -> Progress | None:
        """A marker we cannot read is treated as absent: the run then re-reads, never skips."""
        if not isinstance(raw, dict):
            return None
        try:
            after = raw.get("after")
            return cls(
                kind=RangeKind(raw["kind"]),
                range_start=_aware(raw["range_start"]),
                range_end=_aware(raw["range_end"]),
                after=MessageKey.decode(after) if isinstance(after, str) else None,
                pages=int(raw.get("pages", 0)),
                started_at=_aware(raw["started_at"]),
            )
        except (KeyError, TypeError, ValueError):
            return None


def _aware(text: object) -> datetime:
    if not isinstance(text, str):
        raise TypeError("expected an ISO 8601 string")
    parsed = datetime.fromisoformat(text)
    if parsed.tzinfo is None:
        raise ValueError("naive timestamp in checkpoint metadata")
    return parsed.astimezone(UTC)


@dataclass(frozen=True, slots=True)
class CheckpointView:
    """What planning needs from a chat checkpoint row, already decoded."""

    high_water: MessageKey | None = None
    covered_until: datetime | None = None
    progress: Progress | None = None

    @classmethod
    def from_row(
        cls, cursor: str | None, covered_until: datetime | None, metadata: dict[str, Any]
    ) -> CheckpointView:
        high_water = None
        if cursor:
            try:
                high_water = MessageKey.decode(cursor)
            except ValueError:
                high_water = None  # unreadable: fall back to the safer, longer range
        return cls(
            high_water, covered_until, Progress.from_json(metadata.get(CHECKPOINT_MARKER_KEY))
        )


@dataclass(frozen=True, slots=True)
class RangeBounds:
    """The three configurable durations of §8.2 and §14 that shape a range."""

    lookback: timedelta
    overlap: timedelta
    refresh_lookback: timedelta

    @classmethod
    def from_settings(cls, settings: LarkTimelineSettings) -> RangeBounds:
        return cls(
            settings.ingestion_lookback,
            settings.reconcile_overlap,
            settings.evidence_refresh_lookback,
        )


@dataclass(frozen=True, slots=True)
class ReconcileRange:
    kind: RangeKind
    start: datetime
    end: datetime
    floor: datetime
    """The earliest time this workspace may hold: max(created_at, now - lookback)."""
    resumed_from: MessageKey | None = None
    marker_start: datetime | None = None
    """Where the committed span that this run's marker extends begins: the interrupted range's
    start when resuming (so a run killed twice still resumes), else None for `start`."""

    @property
    def committed_from(self) -> datetime:
        return self.marker_start if self.marker_start is not None else self.start


def ingestion_floor(created_at: datetime, now: datetime, lookback: timedelta) -> datetime:
    """Never before the workspace existed, never older than the lookback (§6, §8.1)."""
    return max(created_at, now - lookback)


def plan_range(
    *,
    mode: Mode,
    workspace_created_at: datetime,
    checkpoint: CheckpointView,
    bounds: RangeBounds,
    now: datetime,
) -> ReconcileRange | None:
    """The range to list, or None when the workspace has nothing it may hold (created later).

    * no high-water mark and no completed range: the initial backfill, floor .. now (§8.1);
    * incremental: from the high-water mark minus the overlap (§8.2);
    * refresh: at least the refresh lookback, and never less than the incremental range, so a
      refresh also does an incremental run's job and the high-water mark stays contiguous;
    * an unfinished earlier range that already covers this run's start lets the run resume
      from its committed progress minus the overlap.

    Every start is capped below by the floor, which is what keeps an old chat from being read
    past the workspace's creation time or the 72-hour boundary.
    """
    floor = ingestion_floor(workspace_created_at, now, bounds.lookback)
    if floor >= now:
        return None
    mark = checkpoint.high_water.created_at if checkpoint.high_water else checkpoint.covered_until
    if mark is None:
        kind, start = RangeKind.BACKFILL, floor
    else:
        incremental_start = max(floor, mark - bounds.overlap)
        if mode is Mode.REFRESH:
            refresh_start = max(floor, now - bounds.refresh_lookback)
            kind, start = RangeKind.REFRESH, min(incremental_start, refresh_start)
        else:
            kind, start = RangeKind.INCREMENTAL, incremental_start
    start = min(start, now)
    progress = checkpoint.progress
    if progress is not None and progress.after is not None and progress.range_start <= start:
        resume_start = max(floor, progress.after.created_at - bounds.overlap)
        if resume_start > start:
            return ReconcileRange(
                kind, min(resume_start, now), now, floor, progress.after, progress.range_start
            )
    return ReconcileRange(kind, start, now, floor)


def newest_within(keys: Iterable[MessageKey], end: datetime) -> MessageKey | None:
    """The newest key not after `end`, the only kind a high-water mark may be built from.

    A message stamped after the range end (a Lark clock ahead of ours) does not count: the
    listing did not cover the time before it, so trusting it could skip messages next time.
    """
    return max((key for key in keys if key.created_at <= end), default=None)


def next_high_water(current: MessageKey | None, candidate: MessageKey | None) -> MessageKey | None:
    """The mark only moves forward (the store enforces the same on the cursor text)."""
    keys = [key for key in (current, candidate) if key is not None]
    return max(keys) if keys else None
