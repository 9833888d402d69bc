"""Which threads one run lists under `reconcileMaxThreads`, and how far coverage may go. Pure.

Lark's chat listing shows thread roots only, so a reply whose event was lost is invisible to the
chat range: it is found only by listing its thread. A run therefore lists every thread it knows
within the ingestion lookback (from our evidence and from the roots it just listed), not only
the threads active inside its range. When there are more threads than the budget, the threads
served longest ago go first (never served before any), so each of n threads is listed at least
once every ceil(n / budget) runs instead of the same ones every time.

A thread left out may hold an unseen reply anywhere after it was last listed (after its first
known message if it never was), so the chat's coverage, which tells window discovery that a
range is collected, stops there until the thread's turn comes (docs/runbooks.md, "Lark page
fetch failure").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta


@dataclass(frozen=True, slots=True)
class KnownThread:
    thread_id: str
    first_seen_at: datetime
    """The earliest message of the thread known within the lookback (its root, when stored)."""
    last_listed_at: datetime | None
    """When a run last listed the thread's replies, or None if no run has within the lookback."""

    @property
    def unlisted_since(self) -> datetime:
        """From when a reply to this thread may be missing from our evidence."""
        return self.last_listed_at if self.last_listed_at is not None else self.first_seen_at

    def fetch_from(self, *, range_start: datetime, floor: datetime, overlap: timedelta) -> datetime:
        """How far back to read: the range start, and back to `overlap` before the last listing
        (or the floor, never listed) so the replies of the turns it missed are read too."""
        since = floor if self.last_listed_at is None else self.last_listed_at - overlap
        return max(floor, min(range_start, since))


@dataclass(frozen=True, slots=True)
class ThreadPlan:
    serve: tuple[KnownThread, ...]
    skipped: tuple[KnownThread, ...]
    holds_coverage: bool = True
    """False when the budget is 0: thread listing is switched off, coverage follows the chat."""

    def coverage(self, end: datetime) -> datetime:
        """The range end, or the earliest moment a skipped thread may hide a reply from."""
        if not self.holds_coverage:
            return end
        return min([end, *(thread.unlisted_since for thread in self.skipped)])


def known_threads(
    from_evidence: Mapping[str, datetime],
    from_listing: Mapping[str, datetime],
    last_listed: Mapping[str, datetime],
) -> list[KnownThread]:
    """Merge the thread sources: earliest message seen per thread, and its last listing."""
    first: dict[str, datetime] = dict(from_evidence)
    for thread_id, seen in from_listing.items():
        first[thread_id] = min(seen, first.get(thread_id, seen))
    return [
        KnownThread(thread_id, seen, last_listed.get(thread_id))
        for thread_id, seen in first.items()
    ]


def plan_threads(threads: list[KnownThread], budget: int) -> ThreadPlan:
    """The `budget` threads served longest ago (never served first), the rest skipped."""
    ordered = sorted(
        threads,
        key=lambda t: (
            t.last_listed_at is not None,
            t.last_listed_at or t.first_seen_at,
            t.first_seen_at,
            t.thread_id,
        ),
    )
    cut = max(0, budget)
    return ThreadPlan(tuple(ordered[:cut]), tuple(ordered[cut:]), holds_coverage=budget > 0)
