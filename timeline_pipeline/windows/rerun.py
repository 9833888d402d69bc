"""An explicit full regeneration under a versioned namespace (docs/design.md §5, §11).

After a prompt or schema upgrade an operator reruns a workspace's windows as
`chat/<chat_id>/processor/<version>/window/<start>`: new state rows beside the old ones, so the
default namespace keeps its history and the rerun is bounded, resumable and auditable. This
module finds the non-empty windows (one index seek per window, never a scan of the messages),
decides which of them discovery would take now (`held_back`, pure), and creates their versioned
state rows (`create_versioned_rerun`, the only function here that writes); the discovery
sensor then requests their runs, oldest first and within the backlog limits, like any other
window.

A state row created here is requested by the sensor as soon as there is room, so only windows
that discovery itself would take get one: closed (`window_end + synthesisWindowCloseGrace`) and,
with reconciliation on, collected past their end. The rules are discovery's own
(`windows.planning.is_closed`, `collection_covers`); the windows they hold back are counted in
the result, and running the rerun again later adds them (existing rows are kept).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import Engine

from timeline_pipeline.domain.keys import (
    SOURCE_SYSTEM,
    SOURCE_TYPE_WINDOW,
    check_processor_version,
)
from timeline_pipeline.settings import LarkTimelineSettings
from timeline_pipeline.store import evidence, sync_states, workspaces
from timeline_pipeline.windows.keys import WindowRef, window_start_of
from timeline_pipeline.windows.planning import DiscoveryLimits, collection_covers, is_closed

__all__ = [
    "Held",
    "RerunRefused",
    "RerunResult",
    "create_versioned_rerun",
    "find_rerun_windows",
    "held_back",
]


class RerunRefused(ValueError):
    """The rerun cannot start as asked; the message names what to change."""


class Held(enum.Enum):
    """Why discovery would not take a window yet, so the rerun leaves it for a later call."""

    OPEN = "open"
    """Not closed yet: its end plus the close grace is still ahead."""
    COLLECTING = "collecting"
    """Closed, but its chat history is not collected past its end yet."""


@dataclass
class RerunResult:
    """What one call of `create_versioned_rerun` did."""

    workspace_id: str
    processor_version: str
    windows: list[WindowRef] = field(default_factory=list)
    """Windows whose versioned state row this call created."""
    already_present: int = 0
    truncated: bool = False
    held_open: int = 0
    """Windows not closed yet (their end plus the close grace is still ahead)."""
    held_collecting: int = 0
    """Closed windows whose chat history is not collected past their end yet."""

    @property
    def held(self) -> int:
        """Windows left for a later run of the rerun: discovery would not take them yet."""
        return self.held_open + self.held_collecting

    @property
    def partition_keys(self) -> list[str]:
        return [ref.partition_key for ref in self.windows]


def held_back(
    ref: WindowRef, covered_until: datetime | None, limits: DiscoveryLimits, now: datetime
) -> Held | None:
    """Pure: whether discovery would hold this window back now (its own rules), and why."""
    end = ref.window_end(limits.window)
    if not is_closed(end, now, limits.close_grace):
        return Held.OPEN
    if not collection_covers(end, covered_until, limits.reconciliation_enabled):
        return Held.COLLECTING
    return None


@dataclass(frozen=True)
class RerunWindows:
    """The non-empty windows of a rerun's range, oldest first, and their chats' coverage."""

    windows: list[WindowRef]
    coverage: dict[tuple[str, str], datetime | None]


def find_rerun_windows(
    engine: Engine,
    *,
    workspace_id: str,
    processor_version: str,
    limits: DiscoveryLimits,
    now: datetime,
    chat_id: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
) -> RerunWindows:
    """Read only: the non-empty windows of a workspace (or one chat) in the range.

    `since` defaults to the workspace's creation, `until` to now.
    """
    window = limits.window
    check_processor_version(processor_version)
    with engine.begin() as conn:
        workspace = workspaces.get(conn, workspace_id)
        if workspace is None:
            raise RerunRefused(f"workspace {workspace_id!r} does not exist")
        bound = workspaces.chats_of(conn, workspace_id)
    if chat_id is not None and chat_id not in bound:
        raise RerunRefused(f"chat {chat_id!r} is not bound to workspace {workspace_id!r}")
    chats = [chat_id] if chat_id is not None else bound
    start = window_start_of(since or workspace.created_at, window)
    end = until or now
    if end <= start:
        raise RerunRefused("the rerun range is empty: `until` must be after `since`")
    found: list[WindowRef] = []
    for chat in chats:
        at = start
        with engine.connect() as conn:
            while at < end:
                occurred = evidence.first_eligible_at_or_after(conn, workspace_id, chat, at)
                if occurred is None or occurred >= end:
                    break
                bucket = window_start_of(occurred, window)
                found.append(WindowRef(workspace_id, chat, bucket, processor_version))
                at = bucket + window
    found.sort(key=WindowRef.sort_key)
    coverage: dict[tuple[str, str], datetime | None] = {}
    if limits.reconciliation_enabled and found:
        with engine.connect() as conn:
            coverage = sync_states.checkpoint_coverage(conn, sorted({r.chat_key for r in found}))
    return RerunWindows(found, coverage)


def create_versioned_rerun(
    engine: Engine,
    *,
    workspace_id: str,
    processor_version: str,
    settings: LarkTimelineSettings,
    now: datetime,
    chat_id: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    max_windows: int = 500,
) -> RerunResult:
    """Create versioned state rows for the non-empty windows of a workspace (or one chat).

    `since` defaults to the workspace's creation, `until` to now. At most `max_windows` rows
    are created per call, oldest first; calling again continues, since existing rows are kept.
    Windows discovery would not take yet (open, or not collected) get no row: see `held`.
    """
    limits = DiscoveryLimits.from_settings(settings)
    window = limits.window
    check_processor_version(processor_version)
    if max_windows < 1:
        raise RerunRefused("max_windows must be at least 1")
    found = find_rerun_windows(
        engine,
        workspace_id=workspace_id,
        processor_version=processor_version,
        limits=limits,
        now=now,
        chat_id=chat_id,
        since=since,
        until=until,
    )
    result = RerunResult(workspace_id, processor_version)
    for ref in found.windows:
        held = held_back(ref, found.coverage.get(ref.chat_key), limits, now)
        if held is Held.OPEN:
            result.held_open += 1
            continue
        if held is Held.COLLECTING:
            result.held_collecting += 1
            continue
        if len(result.windows) >= max_windows:
            result.truncated = True
            break
        with engine.begin() as conn:
            existing = sync_states.get_by_key(
                conn, workspace_id, SOURCE_SYSTEM, SOURCE_TYPE_WINDOW, ref.source_key
            )
            state = existing or sync_states.create_window_if_evidence(
                conn,
                workspace_id=workspace_id,
                chat_id=ref.chat_id,
                window_start=ref.window_start,
                window_end=ref.window_end(window),
                processor_version=processor_version,
                now=now,
            )
        if existing is not None:
            result.already_present += 1
        elif state is not None:
            result.windows.append(ref)
    return result
