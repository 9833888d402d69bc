"""Discovery decisions that need no database: what a window state calls for, whether a window
may be synthesized yet, backlog admission, run identity and the sensor cursor. Pure.

The discovery sensor (`windows.discovery`) reads rows and asks these functions what to do, so
the rules of docs/design.md §6, §9 can be tested as tables without a database or Dagster.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any

from timeline_pipeline.domain.states import TERMINAL_WINDOW_STATUSES, WindowStatus
from timeline_pipeline.domain.sync_states import SyncState
from timeline_pipeline.domain.window_keys import WindowRef
from timeline_pipeline.durations import format_duration
from timeline_pipeline.settings import LarkTimelineSettings

__all__ = [
    "COMMIT_MARGIN",
    "PRIORITY_EPOCH",
    "Admission",
    "DiscoveryCursor",
    "DiscoveryLimits",
    "StateAction",
    "classify_state",
    "collection_covers",
    "is_closed",
    "outage_backoff",
    "run_key",
    "run_priority",
    "window_size_conflict",
]

COMMIT_MARGIN = timedelta(minutes=2)
"""Longest time an evidence transaction may stay open between taking its id and committing.

Ids come from a sequence and commit out of order, so a row with a smaller id can appear after a
larger one was seen. The sensor re-scans ids seen during the last margin before it treats them
as settled (see `DiscoveryCursor.advance`); the receiver and reconciliation commit in well under
a second, so two minutes is a wide safety margin at the cost of re-reading recent rows once.
"""

PRIORITY_EPOCH = datetime(2020, 1, 1, tzinfo=UTC)
MAX_MARKS = 64


@dataclass(frozen=True, slots=True)
class DiscoveryLimits:
    """The settings discovery obeys (docs/design.md §9), read once per tick."""

    window: timedelta
    close_grace: timedelta
    stale_timeout: timedelta
    max_attempts: int
    per_workspace: int
    global_limit: int
    reconciliation_enabled: bool
    lookback: timedelta
    reissue_after: timedelta
    lanes: int = 1
    """Run lanes (`maxConcurrentSynthesis`): a request's lane and group depend on it."""

    @classmethod
    def from_settings(cls, settings: LarkTimelineSettings) -> DiscoveryLimits:
        return cls(
            window=settings.synthesis_window,
            close_grace=settings.synthesis_window_close_grace,
            stale_timeout=settings.synthesis_stale_timeout,
            max_attempts=settings.synthesis_window_max_attempts,
            per_workspace=settings.window_backlog_limit_per_workspace,
            global_limit=settings.window_backlog_limit_global,
            reconciliation_enabled=settings.reconciliation_enabled,
            lookback=settings.ingestion_lookback,
            # A queued run waits at most for the runs ahead of it; a request not seen as a run
            # after a stale timeout is checked (and re-issued if Dagster never got it).
            reissue_after=settings.synthesis_stale_timeout,
            lanes=settings.max_concurrent_synthesis,
        )


class StateAction(StrEnum):
    """What an existing window state calls for in this tick."""

    COVERED = "covered"  # completed or ignored: never reopened automatically
    EXHAUSTED = "exhausted"  # failed with no attempts left: stays failed for an operator
    RUNNING = "running"  # processing within the stale timeout: in flight
    QUEUED = "queued"  # pending and already requested: in flight
    REQUEUE_STALE = "requeue_stale"  # a worker died: retry the window, keeping its backlog slot
    FAIL_STALE = "fail_stale"  # a worker died on the last attempt: mark the window failed
    REQUEST = "request"  # pending but never requested, or failed and due: needs a slot
    WAIT = "wait"  # failed with attempts left, backoff not over yet
    DEFERRED = "deferred"  # the model was unavailable: waiting out the window-level backoff
    RETRY_DEFERRED = "retry_deferred"  # deferred and due: request again, keeping its slot

    @property
    def in_flight(self) -> bool:
        """Holds a backlog slot. A deferred window keeps its slot through an outage, so the
        backlog resumes with the oldest windows instead of letting newer ones in to defer too."""
        return self in (
            StateAction.RUNNING,
            StateAction.QUEUED,
            StateAction.REQUEUE_STALE,
            StateAction.DEFERRED,
            StateAction.RETRY_DEFERRED,
        )


def classify_state(state: SyncState, now: datetime, limits: DiscoveryLimits) -> StateAction:
    """docs/design.md §6 steps 3 and 6, and the stale-worker rule, for one state row.

    A pending row whose `next_attempt_at` is set has been requested (the sensor stamps the time
    at which an unanswered request is checked again); a pending row without it was created by
    someone else (the rerun job) and still needs a run. A `deferred` pending row waits out an
    outage backoff until `next_attempt_at`, holding its backlog slot.
    """
    if state.status in TERMINAL_WINDOW_STATUSES:
        return StateAction.COVERED
    if state.status == WindowStatus.FAILED:
        if state.attempt_count >= limits.max_attempts:
            return StateAction.EXHAUSTED
        if state.next_attempt_at is not None and state.next_attempt_at > now:
            return StateAction.WAIT
        return StateAction.REQUEST
    if state.status == WindowStatus.PROCESSING:
        if not state.is_stale(now, limits.stale_timeout):
            return StateAction.RUNNING
        if state.attempt_count >= limits.max_attempts:
            return StateAction.FAIL_STALE
        return StateAction.REQUEUE_STALE
    if state.deferred:
        if state.next_attempt_at is not None and state.next_attempt_at > now:
            return StateAction.DEFERRED
        return StateAction.RETRY_DEFERRED
    if state.next_attempt_at is None:
        return StateAction.REQUEST
    return StateAction.QUEUED


def is_closed(window_end: datetime, now: datetime, close_grace: timedelta) -> bool:
    """Late delivery lands before `window_end + grace`; synthesizing earlier would miss it."""
    return window_end + close_grace <= now


def outage_backoff(
    deferrals: int,
    base: timedelta,
    cap: timedelta,
    rng: Callable[[], float],
    retry_after: float | None = None,
) -> timedelta:
    """How long a window waits after its `deferrals`-th consecutive deferral (1 = the first).

    Exponential (base * 2^(n-1)), capped, with "equal jitter": uniform in [ceiling/2, ceiling],
    so windows deferred together do not all come back at once and none comes back at once. A
    server's retry-after is honoured as a floor, but never beyond the cap: the window must
    resume by itself soon after the model answers again.
    """
    ceiling: timedelta = min(cap, base * 2 ** max(0, deferrals - 1))
    delay = ceiling / 2 + (ceiling / 2) * min(1.0, max(0.0, rng()))
    if retry_after is not None and retry_after > 0:
        delay = max(delay, min(cap, timedelta(seconds=retry_after)))
    return delay


def collection_covers(
    window_end: datetime, covered_until: datetime | None, reconciliation_enabled: bool
) -> bool:
    """With reconciliation on, wait until the chat's history was collected past the window."""
    if not reconciliation_enabled:
        return True
    return covered_until is not None and covered_until >= window_end


class Admission:
    """Per-workspace and global backlog slots (docs/design.md §9), oldest window first.

    A slot is a window that was requested and has not finished: queued or running. New
    windows and due retries take a slot; the caller offers them in window-start order, so the
    oldest uncovered windows are admitted first and continuous traffic cannot starve them.
    """

    def __init__(self, per_workspace: int, global_limit: int, in_flight: Iterable[str]) -> None:
        self.per_workspace = per_workspace
        self.global_limit = global_limit
        self.used: Counter[str] = Counter(in_flight)
        self.total = sum(self.used.values())

    @property
    def full(self) -> bool:
        return self.total >= self.global_limit

    def has_room(self, workspace_id: str) -> bool:
        return not self.full and self.used[workspace_id] < self.per_workspace

    def admit(self, workspace_id: str) -> bool:
        if not self.has_room(workspace_id):
            return False
        self.used[workspace_id] += 1
        self.total += 1
        return True

    def release(self, workspace_id: str) -> None:
        if self.used[workspace_id] > 0:
            self.used[workspace_id] -= 1
            self.total -= 1


def window_size_conflict(
    window: timedelta,
    unfinished: Sequence[SyncState],
    latest: tuple[timedelta, datetime] | None,
    now: datetime,
    lookback: timedelta,
) -> str | None:
    """Why discovery must make no window of the configured size now, or None (docs/changing.md,
    "A 15-minute window").

    A window's key holds only its start: a run reads a made window by its recorded size, but
    windows of a new size next to unfinished or recent ones of the old size overlap them and
    read their messages again. So a change of `synthesisWindow` is refused
    while a window of another size is unfinished (`unfinished`: set it back to drain them), or
    while the last-made window of the default namespace (`latest`: its size and end) has
    another size and ends within `lookback`, where evidence can still arrive. One line, naming
    both sizes and what to do.
    """
    configured = format_duration(window)
    others = [
        state.recorded_window
        for state in unfinished
        if state.recorded_window is not None and state.recorded_window != window
    ]
    if others:
        old = format_duration(Counter(others).most_common(1)[0][0])
        return (
            f"synthesisWindow is {configured} but {len(others)} unfinished window(s) were made "
            f"at {old}: no {configured} window is made until they finish; set synthesisWindow "
            f"back to {old} to drain them (docs/changing.md, 'A 15-minute window')"
        )
    if latest is None:
        return None
    size, end = latest
    if size == window or end <= now - lookback:
        return None
    old = format_duration(size)
    return (
        f"synthesisWindow is {configured} but the latest window was made at {old} and ends "
        f"{_iso(end)}, within ingestionLookback ({format_duration(lookback)}): a {configured} "
        f"window would overlap it; set synthesisWindow back to {old}, or windows of "
        f"{configured} start after {_iso(end + lookback)} (docs/changing.md, "
        "'A 15-minute window')"
    )


def run_key(ref: WindowRef, state: SyncState) -> str:
    """Partition plus attempt, and the state's revision, which no later request can repeat.

    Dagster launches a run key at most once. The attempt counter alone is not enough: an
    operator's replay resets it to zero, and attempt 1 after a replay must still run.
    """
    return f"{ref.partition_key}/attempt-{state.attempt_count + 1}/rev-{state.revision}"


def run_priority(window_start: datetime) -> int:
    """`dagster/priority`: higher runs first, so older windows get larger numbers."""
    return -int((window_start - PRIORITY_EPOCH) // timedelta(minutes=1))


# --- the sensor cursor -----------------------------------------------------------------------


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat()


def _from_iso(text: str) -> datetime:
    parsed = datetime.fromisoformat(text)
    if parsed.tzinfo is None:
        raise ValueError("naive time in cursor")
    return parsed.astimezone(UTC)


ChatKey = tuple[str, str]


@dataclass(frozen=True)
class DiscoveryCursor:
    """What the sensor remembers between ticks, so that a tick costs O(uncovered windows).

    * `settled_id`: every evidence id up to here was read after it committed; ids above it
      are read (again) by the next tick. `scanned_id` is the highest id read so far, and
      `marks` remember which id was highest at each recent tick, to settle ids only once a
      scan ran `COMMIT_MARGIN` after they were seen.
    * `frontiers`: per chat with uncovered windows not yet turned into state rows (open, waiting
      for collection, or held back by a backlog limit), the window start from which to look for
      them again. A chat with nothing uncovered is absent, so a quiet chat costs nothing.
    * `reissue_at`: when to check again that requested runs really exist in Dagster.

    An empty cursor means a cold start: each eligible chat resumes after its latest window.
    """

    settled_id: int = 0
    scanned_id: int = 0
    marks: tuple[tuple[datetime, int], ...] = ()
    last_tick: datetime | None = None
    frontiers: Mapping[ChatKey, datetime] = field(default_factory=dict)
    reissue_at: datetime | None = None
    bootstrapped: bool = False

    def scan_bounds(self, max_id: int, cap: int) -> tuple[int, int]:
        """Ids to read this tick: (after, up to]. Bounded by `cap` past what was read before."""
        settled = self.settled_after_margin()
        upper = min(max_id, max(self.scanned_id, settled) + cap)
        return settled, max(upper, settled)

    def settled_after_margin(self) -> int:
        """Marks whose ids were all committed before the previous tick scanned them."""
        settled = self.settled_id
        if self.last_tick is None:
            return settled
        limit = self.last_tick - COMMIT_MARGIN
        for stamp, mark_id in self.marks:
            if stamp <= limit:
                settled = max(settled, mark_id)
        return min(settled, self.scanned_id)

    def advance(self, *, now: datetime, settled: int, scanned_to: int) -> DiscoveryCursor:
        scanned = max(self.scanned_id, scanned_to)
        marks = [(stamp, mark_id) for stamp, mark_id in self.marks if mark_id > settled]
        marks.append((now, scanned))
        return replace(
            self,
            settled_id=settled,
            scanned_id=scanned,
            marks=tuple(marks[-MAX_MARKS:]),
            last_tick=now,
        )

    def to_json(self) -> str:
        payload: dict[str, Any] = {
            "v": 1,
            "settled": self.settled_id,
            "scanned": self.scanned_id,
            "marks": [[_iso(stamp), mark_id] for stamp, mark_id in self.marks],
            "last": _iso(self.last_tick) if self.last_tick else None,
            "frontiers": {
                f"{ws}:{chat}": _iso(start) for (ws, chat), start in sorted(self.frontiers.items())
            },
            "reissue": _iso(self.reissue_at) if self.reissue_at else None,
            "boot": self.bootstrapped,
        }
        return json.dumps(payload, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str | None) -> DiscoveryCursor:
        """An unreadable cursor is a cold start, never a crash: discovery rebuilds from rows."""
        if not text:
            return cls()
        try:
            raw = json.loads(text)
            if raw.get("v") != 1:
                return cls()
            frontiers: dict[ChatKey, datetime] = {}
            for key, start in raw["frontiers"].items():
                ws, sep, chat = key.partition(":")
                if not sep:
                    raise ValueError("bad frontier key")
                frontiers[(ws, chat)] = _from_iso(start)
            return cls(
                settled_id=int(raw["settled"]),
                scanned_id=int(raw["scanned"]),
                marks=tuple((_from_iso(stamp), int(mark_id)) for stamp, mark_id in raw["marks"]),
                last_tick=_from_iso(raw["last"]) if raw["last"] else None,
                frontiers=frontiers,
                reissue_at=_from_iso(raw["reissue"]) if raw["reissue"] else None,
                bootstrapped=bool(raw["boot"]),
            )
        except (ValueError, KeyError, TypeError, AttributeError):
            return cls()
