"""An explicit full regeneration under a versioned namespace (seed 000 sections 10.2 and 16).

After a prompt or schema upgrade an operator reruns a workspace's windows as
`chat/<chat_id>/processor/<version>/window/<start>`: new state rows beside the old ones, so the
default namespace keeps its history and the rerun is bounded, resumable and auditable. This
module finds the non-empty windows (one index seek per window, never a scan of the messages)
and creates their versioned state rows; the discovery sensor then requests their runs, oldest
first and within the backlog limits, like any other window.

A state row created here is requested by the sensor as soon as there is room, so only windows
that discovery itself would take get one: closed (`window_end + synthesisWindowCloseGrace`) and,
with reconciliation on, collected past their end. The rules are discovery's own
(`windows.planning.is_closed`, `collection_covers`); the windows they hold back are counted in
the plan, and running the rerun again later adds them (existing rows are kept).
"""

from __future__ import annotations

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

__all__ = ["RerunPlan", "RerunRefused", "plan_versioned_rerun"]


class RerunRefused(ValueError):
    """The rerun cannot start as asked; the message names what to change."""


@dataclass
class RerunPlan:
    workspace_id: str
    processor_version: str
    windows: list[WindowRef] = field(default_factory=list)
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


def plan_versioned_rerun(
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
) -> RerunPlan:
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
    plan = RerunPlan(workspace_id, processor_version)
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
    for ref in found:
        end = ref.window_end(window)
        if not is_closed(end, now, limits.close_grace):
            plan.held_open += 1
            continue
        if not collection_covers(end, coverage.get(ref.chat_key), limits.reconciliation_enabled):
            plan.held_collecting += 1
            continue
        if len(plan.windows) >= max_windows:
            plan.truncated = True
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
            plan.already_present += 1
        elif state is not None:
            plan.windows.append(ref)
    return plan
