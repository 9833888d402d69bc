"""Chat -> bound workspaces, read from the database through a small TTL cache (docs/design.md §1).

Bindings must come from persisted state, never from startup-time registration, or a chat bound
a minute ago loses its messages until a restart. A lookup per event would put one extra query on
every message, so answers (including "not bound") are kept for `binding_cache_ttl`: a binding
made now is seen at the latest one TTL later, and a TTL of zero reads the database every time.
The cache is bounded (least recently used entries go first) because chat ids come from outside.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from datetime import timedelta
from typing import Final

from sqlalchemy import Connection

from timeline_pipeline.domain.workspaces import Workspace
from timeline_pipeline.store.workspaces import bindings_for_chat

DEFAULT_MAX_ENTRIES: Final = 10_000


class BindingCache:
    """Thread-safe; a miss is read outside the lock, so a slow read never blocks cache hits."""

    def __init__(
        self,
        ttl: timedelta,
        *,
        max_entries: int = DEFAULT_MAX_ENTRIES,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if max_entries < 1:
            raise ValueError("max_entries must be at least 1")
        self._ttl = ttl.total_seconds()
        self._max_entries = max_entries
        self._clock = clock
        self._entries: OrderedDict[str, tuple[float, tuple[Workspace, ...]]] = OrderedDict()
        self._lock = threading.Lock()

    def cached(self, chat_id: str) -> tuple[Workspace, ...] | None:
        """The remembered answer, `()` meaning "not bound", or None when it must be read."""
        now = self._clock()
        with self._lock:
            entry = self._entries.get(chat_id)
            if entry is None or entry[0] <= now:
                return None
            self._entries.move_to_end(chat_id)
            return entry[1]

    def resolve(self, conn: Connection, chat_id: str) -> tuple[Workspace, ...]:
        """Every workspace the chat is bound to, whatever its status (eligibility decides).

        Reads on the caller's connection (the write transaction) when the cache has no answer.
        """
        found = self.cached(chat_id)
        if found is not None:
            return found
        expires = self._clock() + self._ttl
        found = tuple(binding.workspace for binding in bindings_for_chat(conn, chat_id))
        if self._ttl > 0:
            self._remember(chat_id, expires, found)
        return found

    def invalidate(self, chat_id: str) -> None:
        """Forget one chat, e.g. after a write found that a cached workspace is gone."""
        with self._lock:
            self._entries.pop(chat_id, None)

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def _remember(self, chat_id: str, expires: float, found: tuple[Workspace, ...]) -> None:
        with self._lock:
            self._entries[chat_id] = (expires, found)
            self._entries.move_to_end(chat_id)
            while len(self._entries) > self._max_entries:
                self._entries.popitem(last=False)
