"""Operational limits of a job: batch size, delay and the two SQL timeouts. Pure.

The ranges are docs/maintenance.md's ( "Pause, tune, resume"): batch 1-5000 rows,
delay 1-60000 ms, and 1 <= lock timeout <= statement timeout <= 5000 ms. The raw HTTP API
normalizes an omitted or zero limit to its default; the packaged driver always sends all four.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from timeline_pipeline.domain.errors import InvalidInput

BATCH_SIZE_RANGE: Final = (1, 5000)
DELAY_MS_RANGE: Final = (1, 60000)
TIMEOUT_MS_MAX: Final = 5000
DEFAULTS: Final = {
    "batch_size": 500,
    "delay_ms": 100,
    "lock_timeout_ms": 500,
    "statement_timeout_ms": 3000,
}
LIMIT_KEYS: Final = tuple(DEFAULTS)


@dataclass(frozen=True)
class Limits:
    batch_size: int
    delay_ms: int
    lock_timeout_ms: int
    statement_timeout_ms: int

    def as_dict(self) -> dict[str, int]:
        return {key: getattr(self, key) for key in LIMIT_KEYS}


def parse_limits(raw: Mapping[str, Any]) -> Limits:
    """Validated limits from a request; an omitted, null or zero value takes its default.

    Unknown keys are refused, so a misspelt limit never silently falls back to a default.
    """
    unknown = sorted(set(raw) - set(LIMIT_KEYS))
    if unknown:
        raise InvalidInput(f"unknown option(s): {', '.join(unknown)}")
    values: dict[str, int] = {}
    for key in LIMIT_KEYS:
        value = raw.get(key)
        if value is None or value == 0:
            values[key] = DEFAULTS[key]
            continue
        if isinstance(value, bool) or not isinstance(value, int):
            raise InvalidInput(f"{key} must be an integer")
        values[key] = value
    return check_limits(Limits(**values))


def check_limits(limits: Limits) -> Limits:
    low, high = BATCH_SIZE_RANGE
    if not low <= limits.batch_size <= high:
        raise InvalidInput(f"batch_size must be between {low} and {high}")
    low, high = DELAY_MS_RANGE
    if not low <= limits.delay_ms <= high:
        raise InvalidInput(f"delay_ms must be between {low} and {high}")
    if not 1 <= limits.lock_timeout_ms <= limits.statement_timeout_ms <= TIMEOUT_MS_MAX:
        raise InvalidInput(
            "timeouts must satisfy 1 <= lock_timeout_ms <= statement_timeout_ms "
            f"<= {TIMEOUT_MS_MAX}"
        )
    return limits
