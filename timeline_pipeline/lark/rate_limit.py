"""Client-side rate limiting for Lark's per-app quota (50 requests/s and 1,000/min)."""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

_RELEASE_POLL_SECONDS = 0.05


class RateLimiter:
    """A sliding-window limiter over several (limit, window) pairs, e.g. 50/s and 1000/min.

    A sliding log rather than a token bucket: a bucket refilled at limit/window admits up to twice
    the limit within one window after idling, which is exactly what Lark's per-minute quota
    punishes. The clock and sleep are injectable so that tests run without waiting.

    Lark counts requests when they arrive, somewhere between our admission and the response.
    `hold()` therefore keeps a request's slot from its admission until its response plus the
    window: however the network delays a request, no server-side window of that length sees
    more than the limit. `acquire()` stamps an instantaneous request at its admission.
    """

    def __init__(
        self,
        limits: Sequence[tuple[int, float]],
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if not limits or any(limit < 1 or window <= 0 for limit, window in limits):
            raise ValueError("each limit needs a count >= 1 and a positive window")
        self._windows = [(limit, window, deque[float]()) for limit, window in limits]
        self._smallest = min(limit for limit, _ in limits)
        self._clock = clock
        self._sleep = sleep
        self._released = threading.Condition()
        self._in_flight = 0

    @classmethod
    def per_second_and_minute(
        cls,
        per_second: float,
        per_minute: int,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> RateLimiter:
        """Express a possibly fractional per-second rate as a whole count over a window."""
        count = max(1, math.floor(per_second))
        return cls([(count, count / per_second), (per_minute, 60.0)], clock=clock, sleep=sleep)

    def acquire(self) -> float:
        """Block until one more request fits in every window; return the seconds waited."""
        waited = self._admit(1)
        self._finish(1)
        return waited

    @contextmanager
    def hold(self, requests: int = 1) -> Iterator[float]:
        """Admit `requests` requests made inside the block (a call and, say, the token fetch the
        SDK makes within it); their slots stay taken until the block ends plus the window."""
        count = max(1, min(requests, self._smallest))
        waited = self._admit(count)
        try:
            yield waited
        finally:
            self._finish(count)

    def _admit(self, count: int) -> float:
        waited = 0.0
        while True:
            with self._released:
                now = self._clock()
                delay, blocked = self._delay(now, count)
                if not blocked and delay <= 0:
                    self._in_flight += count
                    return waited
                if blocked:
                    # Only a response can free a slot: wait for one (bounded, then look again).
                    self._released.wait(_RELEASE_POLL_SECONDS)
                    waited += max(0.0, self._clock() - now)
                    continue
            self._sleep(delay)
            waited += delay

    def _delay(self, now: float, count: int) -> tuple[float, bool]:
        """Seconds until `count` more slots are free in every window; blocked when that needs a
        request in flight to finish first."""
        delay = 0.0
        for limit, window, stamps in self._windows:
            while stamps and stamps[0] <= now - window:
                stamps.popleft()
            excess = self._in_flight + len(stamps) + count - limit
            if excess <= 0:
                continue
            if excess > len(stamps):
                return 0.0, True
            delay = max(delay, stamps[excess - 1] + window - now)
        return delay, False

    def _finish(self, count: int) -> None:
        with self._released:
            self._in_flight -= count
            now = self._clock()
            for _, _, stamps in self._windows:
                stamps.extend([now] * count)
            self._released.notify_all()


_LIMITERS: dict[str, RateLimiter] = {}
_LIMITERS_LOCK = threading.Lock()


def shared_rate_limiter(app_id: str, per_second: float, per_minute: int) -> RateLimiter:
    """One limiter per app_id in the process, because Lark counts quota per app, not per client.

    The first client of an app fixes the limits; later clients share them.
    """
    with _LIMITERS_LOCK:
        limiter = _LIMITERS.get(app_id)
        if limiter is None:
            limiter = RateLimiter.per_second_and_minute(per_second, per_minute)
            _LIMITERS[app_id] = limiter
        return limiter
