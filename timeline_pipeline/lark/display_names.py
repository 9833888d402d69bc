"""Actor display names, filled in after the fact by batched contact lookups (docs/design.md §2).

Events carry the sender's open_id but no name, and a contact call per message would put Lark's
rate limit and latency on the ack path. So the receiver stores the open_id only; later (from
reconciliation) `fill_missing_display_names` finds the workspace's unnamed actors, asks the
contact API in batches of `display_name_batch_size`, and fills the rows. A bounded LRU+TTL cache
answers the names it already knows, and also remembers ids the lookup could not resolve, so a
departed user is not asked about on every pass.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Final

from sqlalchemy import Engine

from timeline_pipeline.db.engine import connection, transaction
from timeline_pipeline.settings import LarkTimelineSettings
from timeline_pipeline.store import evidence

NameLookup = Callable[[Sequence[str]], dict[str, str]]
"""`LarkClient.batch_user_names`: open_ids in, the names it could resolve out."""

MAX_NAME_CHARS: Final = 256
"""The width of `actor_display_name`; a longer name is cut rather than failing the batch."""

DEFAULT_MAX_ACTORS: Final = 1000
"""Unnamed actors handled per call; the rest wait for the next pass (bounded work)."""


class DisplayNameCache:
    """open_id -> name, or None for "asked, Lark did not know"; LRU-bounded, entries expire."""

    def __init__(
        self,
        max_entries: int,
        ttl: timedelta,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if max_entries < 0:
            raise ValueError("max_entries must not be negative")
        self._max_entries = max_entries
        self._ttl = ttl.total_seconds()
        self._clock = clock
        self._entries: OrderedDict[str, tuple[float, str | None]] = OrderedDict()
        self._lock = threading.Lock()

    @classmethod
    def from_settings(cls, settings: LarkTimelineSettings) -> DisplayNameCache:
        return cls(settings.display_name_cache_size, settings.display_name_cache_ttl)

    def lookup(self, open_ids: Sequence[str]) -> tuple[dict[str, str | None], list[str]]:
        """(answers the cache holds, ids it does not hold), the latter in the given order."""
        now = self._clock()
        known: dict[str, str | None] = {}
        unknown: list[str] = []
        with self._lock:
            for open_id in open_ids:
                entry = self._entries.get(open_id)
                if entry is not None and entry[0] > now:
                    self._entries.move_to_end(open_id)
                    known[open_id] = entry[1]
                else:
                    self._entries.pop(open_id, None)
                    unknown.append(open_id)
        return known, unknown

    def remember(self, asked: Sequence[str], names: dict[str, str]) -> None:
        """Store every asked id: its name, or None when the lookup did not return one."""
        if self._max_entries == 0:
            return
        expires = self._clock() + self._ttl
        with self._lock:
            for open_id in asked:
                self._entries[open_id] = (expires, names.get(open_id))
                self._entries.move_to_end(open_id)
            while len(self._entries) > self._max_entries:
                self._entries.popitem(last=False)

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)


@dataclass(frozen=True, slots=True)
class NameFill:
    actors: int
    """Unnamed actors found in the workspace's evidence (at most max_actors)."""
    looked_up: int
    """Ids sent to the lookup (cache misses)."""
    lookup_calls: int
    rows_updated: int


def fill_missing_display_names(
    engine: Engine,
    workspace_id: str,
    lookup: NameLookup,
    *,
    cache: DisplayNameCache,
    batch_size: int,
    max_actors: int = DEFAULT_MAX_ACTORS,
) -> NameFill:
    """Fill unnamed actors of one workspace; never runs on the event path.

    Each batch is looked up and written in its own transaction, so a lookup failing halfway
    (the exception propagates) keeps the names already resolved.
    """
    if batch_size < 1:
        raise ValueError("batch_size must be at least 1")
    with connection(engine) as conn:
        actors = evidence.unnamed_actors(conn, workspace_id, limit=max_actors)
    cached, missing = cache.lookup(actors)
    rows = _write(engine, workspace_id, {k: v for k, v in cached.items() if v is not None})
    calls = 0
    for start in range(0, len(missing), batch_size):
        batch = missing[start : start + batch_size]
        names = lookup(batch)
        calls += 1
        resolved = {
            open_id: names[open_id][:MAX_NAME_CHARS] for open_id in batch if names.get(open_id)
        }
        cache.remember(batch, resolved)
        rows += _write(engine, workspace_id, resolved)
    return NameFill(len(actors), len(missing), calls, rows)


def _write(engine: Engine, workspace_id: str, names: dict[str, str]) -> int:
    if not names:
        return 0
    with transaction(engine) as conn:
        return evidence.fill_display_names(conn, workspace_id, names)
