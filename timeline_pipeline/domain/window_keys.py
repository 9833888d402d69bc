"""Window identities: fixed UTC buckets, sync-state keys and Dagster partition keys. Pure.

One synthesis window is identified by (workspace, chat, window start, processor namespace).
The same identity appears in three spellings, all built here so they cannot drift apart:

* the sync-state key of docs/design.md §5, `chat/<chat_id>/window/<start>` or, for an
  explicit full rerun, `chat/<chat_id>/processor/<version>/window/<start>`
  (`window_source_key`; the start written `YYYY-MM-DDTHH:MM:SSZ` by `format_window_start`,
  which also spells a window's bounds in state metadata);
* the Dagster dynamic partition key, `<workspace_id>:<chat_id>:<start>[:<version>]`, for example
  `inc-1:oc_abc:20261129T1020Z` and `inc-1:oc_abc:20261129T1020Z:v2`. `:` is the separator
  because none of the parts may contain it (workspace ids, Lark ids and versions are checked
  by `domain.keys`), which makes the key reversible; `|` would collide with Dagster's
  multi-partition separator and `...` is refused by Dagster, and neither can occur here. The
  start is written `YYYYMMDDTHHMMZ` (seconds are added only for sub-minute windows) so keys sort
  by time within a chat and stay short in the UI;
* the `WindowRef` value used by discovery and synthesis.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from timeline_pipeline.domain.keys import (
    InvalidKey,
    check_lark_id,
    check_processor_version,
    check_workspace_id,
)

__all__ = [
    "InvalidPartitionKey",
    "WindowRef",
    "decode_window_cursor",
    "encode_window_cursor",
    "format_partition_start",
    "format_window_start",
    "parse_partition_key",
    "parse_partition_start",
    "parse_window_start",
    "window_source_key",
    "window_start_of",
]

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
PARTITION_SEPARATOR = ":"
_PARTITION_START = re.compile(r"^(\d{8})T(\d{4})(\d{2})?Z$")


class InvalidPartitionKey(ValueError):
    """A string that is not a window partition key; the message says which part is wrong."""


def _utc(moment: datetime, what: str) -> datetime:
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ValueError(f"{what} must be timezone-aware")
    return moment.astimezone(UTC)


def window_start_of(occurred_at: datetime, size: timedelta) -> datetime:
    """`floor(occurred_at / size) * size` in UTC (docs/design.md §5).

    Counted from the Unix epoch, so that with a size dividing an hour (which the settings
    enforce) buckets start on the hour, whatever the host's time zone.
    """
    if size <= timedelta(0):
        raise ValueError("window size must be positive")
    moment = _utc(occurred_at, "occurred_at")
    return EPOCH + ((moment - EPOCH) // size) * size


def format_partition_start(window_start: datetime) -> str:
    """`20261129T1020Z`; `20261129T102030Z` only when the start has seconds."""
    start = _utc(window_start, "window start")
    if start.microsecond:
        raise ValueError("a window start has no fractional seconds")
    if start.second:
        return start.strftime("%Y%m%dT%H%M%SZ")
    return start.strftime("%Y%m%dT%H%MZ")


def parse_partition_start(text: str) -> datetime:
    match = _PARTITION_START.match(text)
    if match is None:
        raise InvalidPartitionKey(
            f"invalid window start {text!r}: expected YYYYMMDDTHHMMZ, e.g. 20261129T1020Z"
        )
    date, hours_minutes, seconds = match.groups()
    if seconds == "00":
        # One spelling per instant, or one window could have two partitions.
        raise InvalidPartitionKey(f"invalid window start {text!r}: write :00 seconds as HHMMZ")
    try:
        return datetime.strptime(date + hours_minutes + (seconds or "00"), "%Y%m%d%H%M%S").replace(
            tzinfo=UTC
        )
    except ValueError:
        raise InvalidPartitionKey(f"invalid window start {text!r}: no such date or time") from None


@dataclass(frozen=True, slots=True)
class WindowRef:
    """One window of one chat in one workspace, in the default or a versioned namespace."""

    workspace_id: str
    chat_id: str
    window_start: datetime
    processor_version: str | None = None

    def __post_init__(self) -> None:
        check_workspace_id(self.workspace_id)
        check_lark_id(self.chat_id)
        if self.processor_version is not None:
            check_processor_version(self.processor_version)
        start = _utc(self.window_start, "window start")
        if start.microsecond:
            raise ValueError("a window start has no fractional seconds")
        object.__setattr__(self, "window_start", start)

    def window_end(self, size: timedelta) -> datetime:
        return self.window_start + size

    @property
    def source_key(self) -> str:
        """The sync-state key of docs/design.md §5."""
        return window_source_key(self.chat_id, self.window_start, self.processor_version)

    @property
    def partition_key(self) -> str:
        parts = [self.workspace_id, self.chat_id, format_partition_start(self.window_start)]
        if self.processor_version is not None:
            parts.append(self.processor_version)
        return PARTITION_SEPARATOR.join(parts)

    @property
    def chat_key(self) -> tuple[str, str]:
        return (self.workspace_id, self.chat_id)

    def sort_key(self) -> tuple[datetime, str, str, str]:
        """Oldest first; ties broken by identity so that orderings are deterministic."""
        return (self.window_start, self.workspace_id, self.chat_id, self.processor_version or "")


def parse_partition_key(key: str) -> WindowRef:
    """The inverse of `WindowRef.partition_key`; refuses anything it would not produce."""
    parts = key.split(PARTITION_SEPARATOR)
    if len(parts) not in (3, 4):
        raise InvalidPartitionKey(
            f"invalid window partition key {key!r}: expected "
            "<workspace>:<chat>:<YYYYMMDDTHHMMZ>[:<processor version>]"
        )
    workspace_id, chat_id, start_text = parts[:3]
    version = parts[3] if len(parts) == 4 else None
    start = parse_partition_start(start_text)
    try:
        ref = WindowRef(workspace_id, chat_id, start, version)
    except InvalidKey as exc:
        raise InvalidPartitionKey(f"invalid window partition key {key!r}: {exc}") from None
    return ref


# --- the sync-state key (docs/design.md §5) ---


def format_window_start(window_start: datetime) -> str:
    """The start as written in sync-state keys and metadata: `2026-11-29T10:20:00Z`."""
    if window_start.tzinfo is None:
        raise ValueError("naive window start")
    return window_start.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_window_start(text: str) -> datetime:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)


def window_source_key(chat_id: str, window_start: datetime, processor_version: str | None) -> str:
    """`chat/<chat_id>/window/<start>`, or the versioned rerun namespace
    `chat/<chat_id>/processor/<version>/window/<start>` (docs/design.md §5)."""
    start = format_window_start(window_start)
    if processor_version is None:
        return f"chat/{chat_id}/window/{start}"
    return f"chat/{chat_id}/processor/{processor_version}/window/{start}"


# --- the window cursor (docs/design.md §5: "the last committed occurred_at + evidence_id") ---


def encode_window_cursor(occurred_at: datetime, evidence_id: int) -> str:
    """A keyset position inside a window, microsecond-exact so that resuming skips nothing."""
    moment = _utc(occurred_at, "occurred_at")
    if evidence_id < 1:
        raise ValueError("evidence ids are positive")
    return f"{moment.strftime('%Y-%m-%dT%H:%M:%S.%fZ')}/{evidence_id}"


def decode_window_cursor(cursor: str) -> tuple[datetime, int]:
    stamp, sep, raw_id = cursor.partition("/")
    if not sep or not raw_id.isdigit():
        raise ValueError(f"malformed window cursor {cursor!r}")
    try:
        moment = datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
    except ValueError:
        raise ValueError(f"malformed window cursor {cursor!r}") from None
    return moment, int(raw_id)
