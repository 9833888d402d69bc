"""The one retry policy of the product: Lark calls, Claude calls and a window run's own retries.

Every retry waits with full-jitter exponential backoff, uniform(0, min(cap, base * 2 **
(attempt - 1))), so that callers failing together do not come back together; a server's
`Retry-After` is obeyed but never beyond `max_retry_after`, because both SDKs would otherwise sleep
as long as the server asks (docs/configuration.md: `retryBackoffBase`, `retryBackoffCap`,
`maxRetryAfter`). The policy is one frozen value built from the settings once and handed down
whole, so a new caller cannot pick up three of the four bounds and invent the fourth.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt

from timeline_pipeline.settings import LarkTimelineSettings

__all__ = ["RetryPolicy"]

T = TypeVar("T")


def _no_hint(_error: BaseException) -> float | None:
    return None


def _quiet(_state: RetryCallState) -> None:
    return None


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Attempts and backoff bounds (seconds) of one kind of call."""

    attempts: int
    backoff_base: float
    backoff_cap: float
    max_retry_after: float

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        if min(self.backoff_base, self.backoff_cap, self.max_retry_after) < 0:
            raise ValueError("backoff settings must not be negative")

    # --- from the settings -------------------------------------------------------------------

    @classmethod
    def for_model_calls(cls, settings: LarkTimelineSettings) -> RetryPolicy:
        """Claude calls and a chunk's attempts in a run: `synthesisChunkMaxAttempts`."""
        return cls._from(settings, settings.synthesis_chunk_max_attempts)

    @classmethod
    def for_lark_calls(cls, settings: LarkTimelineSettings) -> RetryPolicy:
        """Lark OpenAPI calls: `larkMaxAttempts`."""
        return cls._from(settings, settings.lark_max_attempts)

    @classmethod
    def _from(cls, settings: LarkTimelineSettings, attempts: int) -> RetryPolicy:
        return cls(
            attempts=attempts,
            backoff_base=settings.retry_backoff_base.total_seconds(),
            backoff_cap=settings.retry_backoff_cap.total_seconds(),
            max_retry_after=settings.max_retry_after.total_seconds(),
        )

    # --- waits -------------------------------------------------------------------------------

    def ceiling(self, attempt: int) -> float:
        """The longest wait after the `attempt`-th failure (1 = the first): doubling, capped."""
        return float(min(self.backoff_cap, self.backoff_base * 2.0 ** max(0, attempt - 1)))

    def backoff(self, attempt: int, rng: Callable[[], float] = random.random) -> float:
        """Full jitter: uniform in [0, ceiling(attempt)], `rng` giving a number in [0, 1)."""
        return float(rng() * self.ceiling(attempt))

    def wait(
        self, attempt: int, hint: float | None, rng: Callable[[], float] = random.random
    ) -> float:
        """The server's hint when it gave one (capped at `max_retry_after`), else the backoff."""
        if hint is not None:
            return min(max(0.0, hint), self.max_retry_after)
        return self.backoff(attempt, rng)

    # --- tenacity ----------------------------------------------------------------------------

    def retrying(
        self,
        *,
        retry_on: Callable[[BaseException], bool],
        retry_after: Callable[[BaseException], float | None] = _no_hint,
        before_sleep: Callable[[RetryCallState], None] = _quiet,
        sleep: Callable[[float], None] = time.sleep,
    ) -> Retrying:
        """A tenacity `Retrying` under this policy: errors for which `retry_on` holds are tried
        again up to `attempts` in all, waiting `retry_after(error)` capped, or the backoff; the
        last error is re-raised as it was."""

        def wait(state: RetryCallState) -> float:
            error = state.outcome.exception() if state.outcome is not None else None
            hint = retry_after(error) if error is not None else None
            return self.wait(state.attempt_number, hint)

        return Retrying(
            stop=stop_after_attempt(self.attempts),
            wait=wait,
            retry=retry_if_exception(retry_on),
            before_sleep=before_sleep,
            sleep=sleep,
            reraise=True,
        )

    def call(
        self,
        fn: Callable[[], T],
        *,
        retry_on: Callable[[BaseException], bool],
        retry_after: Callable[[BaseException], float | None] = _no_hint,
        before_sleep: Callable[[RetryCallState], None] = _quiet,
        sleep: Callable[[float], None] = time.sleep,
    ) -> T:
        """Run `fn` under this policy (see `retrying`)."""
        retrying = self.retrying(
            retry_on=retry_on, retry_after=retry_after, before_sleep=before_sleep, sleep=sleep
        )
        return retrying(fn)
