"""Measure the pipeline's health from the product database (docs/design.md §9, §12).

Every read is an index range or a per-chat index seek, never a scan of evidence or of all
window history, so the measurement can run every few minutes beside the receiver:

* window counts by workspace and status: `pending`/`processing` through the (source_type,
  status, window_start) index, the finished statuses through the same index bounded by the
  horizon (`health_model.PipelineHealth`);
* the oldest uncovered evidence: stored AI-eligible evidence, in a workspace of any status
  (eligibility decides what is ingested, not what is synthesized), that no `completed` or
  `ignored` window covers. Two
  places hold it, both read per chat in one statement: the oldest unfinished window (pending,
  processing, failed) and the evidence after the chat's latest window (windows not yet created:
  open, waiting for their close grace or collection, or held back by a backlog limit). Each is
  one seek of the (workspace_id, scope_key, occurred_at, id) index. Late evidence into an old,
  empty window before the latest one is not seen here until discovery gives it a window (at
  its next tick), like discovery itself;
* collection lag: each followed chat's checkpoint (`last_seen_updated_at`), one unique-key
  lookup per chat, when reconciliation is on;
* summary lag: finished windows still awaiting their summary decision, when the summary is on.

The statements are in the stores (`store/window_health_reads.py`, `store/workspaces.py`); this
module tallies what they return, straight into the frozen `health_model.WorkspaceHealth` of
each workspace (each count a `dataclasses.replace`), so its fields are written down once.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, Engine

from timeline_pipeline.domain.keys import InvalidKey
from timeline_pipeline.domain.states import (
    TERMINAL_WINDOW_STATUSES,
    UNCOVERING_WINDOW_STATUSES,
    WindowStatus,
)
from timeline_pipeline.domain.window_keys import WindowRef, window_start_of
from timeline_pipeline.domain.workspaces import Workspace
from timeline_pipeline.ingest.eligibility import workspace_skip
from timeline_pipeline.settings import LarkTimelineSettings
from timeline_pipeline.store import evidence, window_health_reads, workspaces
from timeline_pipeline.windows.health_model import (
    ChatPosition,
    ListedWindow,
    PipelineHealth,
    WorkspaceHealth,
)

__all__ = ["MAX_LISTED_WINDOWS", "horizon_start", "measure_health"]

MAX_LISTED_WINDOWS = 20
"""Stale and failed windows listed by partition key; the counts are exact beyond that."""

FINISHED_STATUSES = (*TERMINAL_WINDOW_STATUSES, WindowStatus.FAILED)


def horizon_start(settings: LarkTimelineSettings, now: datetime) -> datetime:
    """The oldest window start that automatic synthesis or the summary can still touch: the
    ingestion lookback plus one window and its close grace (as the summary sensor reads)."""
    return now - (
        settings.ingestion_lookback
        + settings.synthesis_window
        + settings.synthesis_window_close_grace
    )


def _earliest(current: datetime | None, candidate: datetime | None) -> datetime | None:
    if candidate is None:
        return current
    return candidate if current is None or candidate < current else current


class _Measurement:
    def __init__(self, conn: Connection, settings: LarkTimelineSettings, now: datetime) -> None:
        self.conn = conn
        self.settings = settings
        self.now = now
        self.horizon = horizon_start(settings, now)
        self.lookback_start = window_start_of(now - settings.ingestion_lookback, self._window)
        self.stale_before = now - settings.synthesis_stale_timeout
        self.tallies: dict[str, WorkspaceHealth] = {}
        self.uncovered: dict[tuple[str, str], datetime] = {}
        self.collected: dict[tuple[str, str], datetime] = {}

    @property
    def _window(self) -> timedelta:
        return self.settings.synthesis_window

    def tally(self, workspace_id: str) -> WorkspaceHealth:
        """The workspace's health so far: every count starts at zero, every time unknown."""
        tally = self.tallies.get(workspace_id)
        return WorkspaceHealth(workspace_id) if tally is None else tally

    def workspaces(self) -> tuple[WorkspaceHealth, ...]:
        """The workspaces in id order, each with its window counts in status order."""
        return tuple(
            replace(tally, windows=dict(sorted(tally.windows.items())))
            for _id, tally in sorted(self.tallies.items())
        )

    # --- window counts ---------------------------------------------------------------------

    def count_windows(self) -> None:
        for counts in window_health_reads.window_counts(
            self.conn,
            finished_statuses=FINISHED_STATUSES,
            horizon=self.horizon,
            stale_before=self.stale_before,
            max_attempts=self.settings.synthesis_window_max_attempts,
        ):
            tally = self.tally(counts.workspace_id)
            self.tallies[counts.workspace_id] = replace(
                tally,
                windows={
                    **tally.windows,
                    counts.status: tally.windows.get(counts.status, 0) + counts.windows,
                },
                stale_processing=tally.stale_processing + counts.stale,
                failed_exhausted=tally.failed_exhausted + counts.exhausted,
                retried_windows=tally.retried_windows + counts.retried,
                window_retries=tally.window_retries + counts.retries,
                late_evidence_windows=tally.late_evidence_windows + counts.late_windows,
                late_evidence=tally.late_evidence + counts.late,
            )

    def list_windows(self) -> tuple[list[ListedWindow], list[ListedWindow]]:
        stale, failed = window_health_reads.stale_and_failed_windows(
            self.conn,
            stale_before=self.stale_before,
            horizon=self.horizon,
            limit=MAX_LISTED_WINDOWS,
        )
        return [_listed(row) for row in stale], [_listed(row) for row in failed]

    # --- uncovered evidence and collection -------------------------------------------------

    def _collected(self, workspace: Workspace) -> bool:
        """Collection still runs for the workspace (so its lag is worth reporting)."""
        return workspace_skip(workspace, self.settings, self.now) is None

    def _note_uncovered(self, workspace_id: str, chat_id: str, at: datetime | None) -> None:
        if at is None or not self.settings.enabled:
            return  # with the timeline disabled nothing is synthesized, so nothing is late
        key = (workspace_id, chat_id)
        self.uncovered[key] = _earliest(self.uncovered.get(key), at) or at

    def unfinished_windows(self) -> None:
        """Per chat, the first eligible evidence of its oldest unfinished window."""
        for (
            workspace_id,
            chat_id,
            first_at,
        ) in window_health_reads.first_evidence_of_oldest_unfinished_windows(
            self.conn, UNCOVERING_WINDOW_STATUSES
        ):
            self._note_uncovered(workspace_id, chat_id, first_at)

    def followed_chats(self) -> int:
        """Per bound chat, in a workspace of any status: the first eligible evidence after its
        latest window, and its collection checkpoint while collection still runs. Returns the
        number of chats still collected."""
        followed = 0
        for chat in workspaces.followed_chats(self.conn, since=self.lookback_start):
            workspace_id = chat.workspace.id
            first_at = chat.first_after_latest_window
            if first_at is not None and first_at < self.lookback_start:
                # The chat's latest window is older than the lookback: look from there.
                first_at = evidence.first_eligible_at_or_after(
                    self.conn, workspace_id, chat.chat_id, self.lookback_start
                )
            self._note_uncovered(workspace_id, chat.chat_id, first_at)
            if not self._collected(chat.workspace):
                continue
            followed += 1
            if self.settings.reconciliation_enabled:
                self._note_collection(workspace_id, chat.chat_id, chat.collected_until)
        return followed

    def _note_collection(
        self, workspace_id: str, chat_id: str, collected_until: datetime | None
    ) -> None:
        tally = self.tally(workspace_id)
        if collected_until is None:
            self.tallies[workspace_id] = replace(
                tally, chats_never_collected=tally.chats_never_collected + 1
            )
            return
        self.collected[(workspace_id, chat_id)] = collected_until
        self.tallies[workspace_id] = replace(
            tally,
            oldest_collected_until=_earliest(tally.oldest_collected_until, collected_until),
        )

    # --- summary -----------------------------------------------------------------------------

    def summary_backlog(self) -> tuple[int, datetime | None]:
        """Finished windows in the horizon whose summary decision is still to be made."""
        return window_health_reads.summary_backlog(self.conn, horizon=self.horizon)


def _listed(row: Any) -> ListedWindow:
    try:
        key = WindowRef(
            row.workspace_id, row.scope_key, row.window_start, row.processor_version
        ).partition_key
    except (InvalidKey, ValueError):
        key = f"{row.workspace_id}/{row.source_key}"
    return ListedWindow(key, row.status, int(row.attempt_count), row.window_start)


def _oldest(positions: Iterable[tuple[tuple[str, str], datetime]]) -> ChatPosition | None:
    best: ChatPosition | None = None
    for (workspace_id, chat_id), at in positions:
        if best is None or (at, workspace_id, chat_id) < (best.at, best.workspace_id, best.chat_id):
            best = ChatPosition(workspace_id, chat_id, at)
    return best


def measure_health(engine: Engine, settings: LarkTimelineSettings, now: datetime) -> PipelineHealth:
    """One consistent-enough reading: each statement sees committed rows at its own start."""
    summary_on = settings.enabled and settings.summary_enabled
    with engine.connect() as conn:
        measurement = _Measurement(conn, settings, now)
        measurement.count_windows()
        stale, failed = measurement.list_windows()
        measurement.unfinished_windows()
        followed = measurement.followed_chats()
        pending, pending_since = measurement.summary_backlog() if summary_on else (0, None)
    for (workspace_id, _chat), at in measurement.uncovered.items():
        tally = measurement.tally(workspace_id)
        measurement.tallies[workspace_id] = replace(
            tally, oldest_uncovered_at=_earliest(tally.oldest_uncovered_at, at)
        )
    return PipelineHealth(
        measured_at=now,
        horizon_start=measurement.horizon,
        workspaces=measurement.workspaces(),
        oldest_uncovered=_oldest(measurement.uncovered.items()),
        chats_followed=followed,
        collection_measured=settings.reconciliation_enabled,
        oldest_collected=_oldest(measurement.collected.items()),
        summary_measured=summary_on,
        summary_pending_windows=pending,
        oldest_summary_pending_since=pending_since,
        stale_windows=tuple(stale),
        failed_windows=tuple(failed),
    )
