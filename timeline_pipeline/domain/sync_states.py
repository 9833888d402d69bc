"""A sync-state row as the planners see it, and the checkpoint cursor's text form.

Values only: the stores read and write them (`store/sync_states.py`, `store/checkpoints.py`,
`store/window_states.py`), the pure planners
(`windows/planning.py`, `reconcile/planning.py`) decide on them without importing a store
(README, "Package layout").
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from timeline_pipeline.domain.states import WindowStatus

__all__ = [
    "CHECKPOINT_MARKER_KEY",
    "CHECKPOINT_METADATA_VERSION",
    "LEGACY_WINDOW_SECONDS",
    "SyncState",
    "decode_message_cursor",
    "encode_message_cursor",
]

CHECKPOINT_MARKER_KEY = "in_progress"
"""Where a chat checkpoint's `metadata_json` keeps reconciliation's in-progress marker
(docs/design.md §3); the reconcile store and the planner both read and write it."""
CHECKPOINT_METADATA_VERSION = 1

LEGACY_WINDOW_SECONDS = 600
"""The size of a window state that records none: rows made before window sizes were recorded
(migration 0014_window_size), when every deployment ran 10-minute windows."""


@dataclass(frozen=True, slots=True)
class SyncState:
    id: int
    workspace_id: str
    source: str
    source_type: str
    source_key: str
    status: str
    attempt_count: int
    revision: int
    processing_started_at: datetime | None
    last_seen_updated_at: datetime | None
    last_seen_cursor: str | None
    last_seen_content_hash: str | None
    metadata: dict[str, Any]
    scope_key: str | None
    processor_version: str | None
    window_start: datetime | None
    window_end: datetime | None
    lease_owner: str | None
    next_attempt_at: datetime | None
    summary_attempted: bool
    last_error: str | None
    deferral_count: int = 0
    """Consecutive deferrals while the model service was unavailable (not attempts)."""
    deferred: bool = False
    """Waiting out a window-level backoff: `pending` until `next_attempt_at`."""
    unclaimed_runs: int = 0
    """Requested runs that finished without claiming the window."""
    window_seconds: int | None = None
    """The window's size as recorded when its row was made; None on rows from before sizes
    were recorded (`LEGACY_WINDOW_SECONDS`) and on rows that are not windows."""

    @property
    def recorded_window(self) -> timedelta | None:
        """The size this window was made with (docs/design.md §5); None for a non-window row."""
        if self.window_start is None:
            return None
        return timedelta(seconds=self.window_seconds or LEGACY_WINDOW_SECONDS)

    def is_exhausted(self, max_attempts: int) -> bool:
        return self.status == WindowStatus.FAILED and self.attempt_count >= max_attempts

    def is_stale(self, now: datetime, stale_timeout: timedelta) -> bool:
        return (
            self.status == WindowStatus.PROCESSING
            and self.processing_started_at is not None
            and self.processing_started_at <= now - stale_timeout
        )


def encode_message_cursor(create_time_ms: int, message_id: str) -> str:
    """A durable high-water mark that sorts as text in (create_time_ms, message_id) order."""
    if create_time_ms < 0:
        raise ValueError("negative create time")
    return f"{create_time_ms:015d}/{message_id}"


def decode_message_cursor(cursor: str) -> tuple[int, str]:
    millis, sep, message_id = cursor.partition("/")
    if not sep or not millis.isdigit() or not message_id:
        raise ValueError(f"malformed checkpoint cursor {cursor!r}")
    return int(millis), message_id
