"""The statuses of the product's state rows, and the sets of them that rules are written in.

One definition for the schema's check constraint, the stores' transitions and the planners'
rules (docs/metrics.md: what each window status means). `StrEnum` members compare equal to
the strings stored in the database, so rows read back as plain strings still match.
"""

from __future__ import annotations

from enum import StrEnum


class WindowStatus(StrEnum):
    """A synthesis window's state: requested, running, or finished one way or another."""

    PENDING = "pending"
    PROCESSING = "processing"
    COMPLETED = "completed"
    IGNORED = "ignored"
    FAILED = "failed"


WINDOW_STATUSES: tuple[str, ...] = tuple(status.value for status in WindowStatus)
"""Every window status as stored text (the schema's check constraint, the health counts)."""


class CheckpointStatus(StrEnum):
    """A chat collection checkpoint: its last run completed or failed (pending before any)."""

    PENDING = "pending"
    COMPLETED = "completed"
    FAILED = "failed"


TERMINAL_WINDOW_STATUSES: tuple[WindowStatus, ...] = (WindowStatus.COMPLETED, WindowStatus.IGNORED)
"""Finished for good: a window in one of these is covered and never runs again by itself."""

BACKLOG_WINDOW_STATUSES: tuple[WindowStatus, ...] = (WindowStatus.PENDING, WindowStatus.PROCESSING)
"""Requested or running: what holds a backlog slot."""

UNCOVERING_WINDOW_STATUSES: tuple[WindowStatus, ...] = (
    *BACKLOG_WINDOW_STATUSES,
    WindowStatus.FAILED,
)
"""Not (yet) covering its evidence: the backlog, and failed windows awaiting a retry or replay."""
