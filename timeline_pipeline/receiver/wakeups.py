"""Best-effort, in-memory wakeups: "workspace W's chat C has new evidence" (seed 000 section 11).

A wakeup is only a latency hint for the synthesis watcher, whose periodic scan is the durable
discovery path. So delivery never blocks the request that produced it: every subscriber has a
small bounded inbox, a key already pending there absorbs the new one (coalesced), and a full
inbox drops the wakeup and counts it. Losing one costs at most a scan interval of latency.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

DEFAULT_SUBSCRIBER_CAPACITY: Final = 1024


@dataclass(frozen=True, slots=True)
class Wakeup:
    workspace_id: str
    chat_id: str


@dataclass(frozen=True, slots=True)
class Delivery:
    """What one `notify` did, for the caller's metrics."""

    sent: int = 0
    coalesced: int = 0
    dropped: int = 0


class Subscription:
    """One consumer's bounded inbox, in arrival order, one entry per (workspace, chat)."""

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self._capacity = capacity
        self._pending: dict[Wakeup, None] = {}
        self._ready = threading.Condition()

    def offer(self, wakeup: Wakeup) -> str:
        """Never blocks; returns "sent", "coalesced" or "dropped"."""
        with self._ready:
            if wakeup in self._pending:
                return "coalesced"
            if len(self._pending) >= self._capacity:
                return "dropped"
            self._pending[wakeup] = None
            self._ready.notify_all()
            return "sent"

    def drain(self, timeout: float | None = 0.0) -> list[Wakeup]:
        """Everything pending (oldest first), waiting up to `timeout` seconds for the first."""
        with self._ready:
            if not self._pending and timeout != 0.0:
                self._ready.wait_for(lambda: bool(self._pending), timeout=timeout)
            taken = list(self._pending)
            self._pending.clear()
            return taken

    def __len__(self) -> int:
        with self._ready:
            return len(self._pending)


class WakeupHub:
    """Fans wakeups out to every subscription; safe to call from many request threads."""

    def __init__(self) -> None:
        self._subscriptions: list[Subscription] = []
        self._lock = threading.Lock()

    def subscribe(self, capacity: int = DEFAULT_SUBSCRIBER_CAPACITY) -> Subscription:
        subscription = Subscription(capacity)
        with self._lock:
            self._subscriptions.append(subscription)
        return subscription

    def unsubscribe(self, subscription: Subscription) -> None:
        with self._lock:
            if subscription in self._subscriptions:
                self._subscriptions.remove(subscription)

    def notify(self, wakeups: Iterable[Wakeup]) -> Delivery:
        with self._lock:
            subscriptions = list(self._subscriptions)
        counts = {"sent": 0, "coalesced": 0, "dropped": 0}
        for wakeup in wakeups:
            for subscription in subscriptions:
                counts[subscription.offer(wakeup)] += 1
        return Delivery(**counts)
