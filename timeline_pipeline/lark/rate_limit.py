"""Client-side rate limiting for Lark's per-app quota (50 requests/s and 1,000/min)."""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence


class RateLimiter:
    """A sliding-window limiter over several (limit, window) pairs, e.g. 50/s and 1000/min.

    A sliding log rather than a token bucket: a bucket refilled at limit/window admits up to twice
    the limit within one window after idling, which is exactly what Lark's per-minute quota
    punishes. The clock and sleep are injectable so that tests run without waiting.
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
        self._clock = clock
        self._sleep = sleep
        self._lock = threading.Lock()

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
        waited = 0.0
        while True:
            with self._lock:
                now = self._clock()
                delay = 0.0
                for limit, window, stamps in self._windows:
                    while stamps and stamps[0] <= now - window:
                        stamps.popleft()
                    if len(stamps) >= limit:
                        delay = max(delay, stamps[0] + window - now)
                if delay <= 0:
                    for _, _, stamps in self._windows:
                        stamps.append(now)
                    return waited
            self._sleep(delay)
            waited += delay


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
