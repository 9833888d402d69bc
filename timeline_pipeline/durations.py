"""Durations written the way the design writes them (`30s`, `2m`, `72h`, `1h30m`).

Operators copy values from the design document into YAML and environment variables; accepting
that spelling (and printing it back the same way) keeps the configuration readable and diffable.
"""

from __future__ import annotations

import re
from datetime import timedelta

_UNIT_SECONDS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}
_PART = re.compile(r"(\d+)(ms|s|m|h|d)")
_WHOLE = re.compile(r"^(?:\d+(?:ms|s|m|h|d))+$")


class DurationError(ValueError):
    """A duration string that does not follow the `<number><unit>` spelling."""


def parse_duration(text: str) -> timedelta:
    """Parse `90s`, `2m`, `72h`, `1h30m` or `250ms`; a bare `0` means zero."""
    raw = text.strip().lower()
    if raw == "0":
        return timedelta(0)
    if not _WHOLE.match(raw):
        raise DurationError(
            f"invalid duration {text!r}: use a number and a unit, e.g. 30s, 2m, 72h"
        )
    total = sum(int(n) * _UNIT_SECONDS[unit] for n, unit in _PART.findall(raw))
    return timedelta(seconds=total)


def format_duration(value: timedelta) -> str:
    """Render the shortest exact spelling, so that parse(format(x)) == x."""
    millis = round(value.total_seconds() * 1000)
    if millis == 0:
        return "0s"
    if millis % 1000:
        return f"{millis}ms"
    seconds = millis // 1000
    parts: list[str] = []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        count, seconds = divmod(seconds, size)
        if count:
            parts.append(f"{count}{unit}")
    return "".join(parts)
