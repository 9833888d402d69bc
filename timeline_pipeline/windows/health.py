"""Measure the pipeline's health from the product database (seed 000 sections 14 and 17).

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
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Connection,
    Engine,
    and_,
    bindparam,
    case,
    false,
    func,
    select,
    true,
)
from sqlalchemy.engine import Row

from timeline_pipeline.db.schema import workspace_collaboration_resources as res
from timeline_pipeline.db.schema import workspace_timeline_evidence as ev
from timeline_pipeline.db.schema import workspace_timeline_sync_states as ss
from timeline_pipeline.db.schema import workspaces as ws
from timeline_pipeline.domain.keys import (
    RESOURCE_LARK_CHAT,
    SOURCE_LARK,
    SOURCE_TYPE_LARK_MESSAGES,
    SOURCE_TYPE_WINDOW,
    InvalidKey,
)
from timeline_pipeline.domain.states import (
    BACKLOG_WINDOW_STATUSES,
    TERMINAL_WINDOW_STATUSES,
    UNCOVERING_WINDOW_STATUSES,
    WindowStatus,
)
from timeline_pipeline.ingest.eligibility import workspace_skip
from timeline_pipeline.settings import LarkTimelineSettings
from timeline_pipeline.store import evidence
from timeline_pipeline.store.workspaces import Workspace
from timeline_pipeline.windows.health_model import (
    ChatPosition,
    ListedWindow,
    PipelineHealth,
    WorkspaceHealth,
)
from timeline_pipeline.windows.keys import WindowRef, window_start_of
from timeline_pipeline.windows.queries import latest_window_of_chat

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


@dataclass
class _Tally:
    windows: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    stale_processing: int = 0
    failed_exhausted: int = 0
    retried_windows: int = 0
    window_retries: int = 0
    oldest_uncovered_at: datetime | None = None
    oldest_collected_until: datetime | None = None
    chats_never_collected: int = 0
    late_evidence_windows: int = 0
    late_evidence: int = 0

    def freeze(self, workspace_id: str) -> WorkspaceHealth:
        return WorkspaceHealth(
            workspace_id=workspace_id,
            windows=dict(sorted(self.windows.items())),
            stale_processing=self.stale_processing,
            failed_exhausted=self.failed_exhausted,
            retried_windows=self.retried_windows,
            window_retries=self.window_retries,
            oldest_uncovered_at=self.oldest_uncovered_at,
            oldest_collected_until=self.oldest_collected_until,
            chats_never_collected=self.chats_never_collected,
            late_evidence_windows=self.late_evidence_windows,
            late_evidence=self.late_evidence,
        )


def _sum_if(condition: ColumnElement[bool], value: Any = 1) -> Any:
    return func.sum(case((condition, value), else_=0))


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
        self.tallies: dict[str, _Tally] = defaultdict(_Tally)
        self.uncovered: dict[tuple[str, str], datetime] = {}
        self.collected: dict[tuple[str, str], datetime] = {}

    @property
    def _window(self) -> timedelta:
        return self.settings.synthesis_window

    # --- window counts ---------------------------------------------------------------------

    def _count_columns(self) -> list[Any]:
        retried = ss.c.attempt_count > 1
        late = func.coalesce(ss.c.metadata_json["late_evidence"].as_integer(), 0)
        stale = and_(
            ss.c.status == WindowStatus.PROCESSING, ss.c.processing_started_at <= self.stale_before
        )
        exhausted = and_(
            ss.c.status == WindowStatus.FAILED,
            ss.c.attempt_count >= self.settings.synthesis_window_max_attempts,
        )
        return [
            ss.c.workspace_id,
            ss.c.status,
            func.count().label("n"),
            _sum_if(stale).label("stale"),
            _sum_if(exhausted).label("exhausted"),
            _sum_if(retried).label("retried"),
            _sum_if(retried, ss.c.attempt_count - 1).label("retries"),
            # A finished run records evidence it saw but did not process (`late_evidence`).
            _sum_if(late > 0).label("late_windows"),
            _sum_if(late > 0, late).label("late"),
        ]

    def count_windows(self) -> None:
        backlog = (
            select(*self._count_columns())
            .where(ss.c.source_type == SOURCE_TYPE_WINDOW, ss.c.status.in_(BACKLOG_WINDOW_STATUSES))
            .group_by(ss.c.workspace_id, ss.c.status)
        )
        finished = (
            select(*self._count_columns())
            .where(
                ss.c.source_type == SOURCE_TYPE_WINDOW,
                ss.c.status.in_(FINISHED_STATUSES),
                ss.c.window_start >= self.horizon,
            )
            .group_by(ss.c.workspace_id, ss.c.status)
        )
        for statement in (backlog, finished):
            for row in self.conn.execute(statement):
                tally = self.tallies[row.workspace_id]
                tally.windows[row.status] += int(row.n)
                tally.stale_processing += int(row.stale or 0)
                tally.failed_exhausted += int(row.exhausted or 0)
                tally.retried_windows += int(row.retried or 0)
                tally.window_retries += int(row.retries or 0)
                tally.late_evidence_windows += int(row.late_windows or 0)
                tally.late_evidence += int(row.late or 0)

    def list_windows(self) -> tuple[list[ListedWindow], list[ListedWindow]]:
        columns = (
            ss.c.workspace_id,
            ss.c.scope_key,
            ss.c.source_key,
            ss.c.window_start,
            ss.c.processor_version,
            ss.c.status,
            ss.c.attempt_count,
        )
        stale = self.conn.execute(
            select(*columns)
            .where(
                ss.c.source_type == SOURCE_TYPE_WINDOW,
                ss.c.status == WindowStatus.PROCESSING,
                ss.c.processing_started_at <= self.stale_before,
            )
            .order_by(ss.c.window_start, ss.c.id)
            .limit(MAX_LISTED_WINDOWS)
        )
        failed = self.conn.execute(
            select(*columns)
            .where(
                ss.c.source_type == SOURCE_TYPE_WINDOW,
                ss.c.status == WindowStatus.FAILED,
                ss.c.window_start >= self.horizon,
            )
            .order_by(ss.c.window_start, ss.c.id)
            .limit(MAX_LISTED_WINDOWS)
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
        oldest = (
            select(
                ss.c.workspace_id,
                ss.c.scope_key,
                func.min(ss.c.window_start).label("start"),
                func.min(ss.c.window_end).label("end"),
            )
            .select_from(ss.join(ws, ws.c.id == ss.c.workspace_id))
            .where(
                ss.c.source_type == SOURCE_TYPE_WINDOW,
                ss.c.status.in_(UNCOVERING_WINDOW_STATUSES),
                ss.c.processor_version.is_(None),
            )
            .group_by(ss.c.workspace_id, ss.c.scope_key)
            .subquery("oldest")
        )
        first = (
            select(ev.c.occurred_at)
            .where(
                ev.c.workspace_id == oldest.c.workspace_id,
                ev.c.scope_key == oldest.c.scope_key,
                ev.c.occurred_at >= oldest.c.start,
                ev.c.occurred_at < oldest.c.end,
                ev.c.ai_eligible == true(),
                ev.c.deleted == false(),
            )
            .order_by(ev.c.occurred_at, ev.c.id)
            .limit(1)
            .scalar_subquery()
        )
        rows = self.conn.execute(
            select(ws, oldest.c.scope_key, first.label("first_at")).join(
                oldest, oldest.c.workspace_id == ws.c.id
            )
        )
        for row in rows:
            self._note_uncovered(row.id, row.scope_key, row.first_at)

    def followed_chats(self) -> int:
        """Per bound chat, in a workspace of any status: the first eligible evidence after its
        latest window, and its collection checkpoint while collection still runs. Returns the
        number of chats still collected."""
        # Correlated to the outer chat row, through the evidence subquery.
        latest_end = latest_window_of_chat(ss.c.window_end)
        since = bindparam("since", self.lookback_start, type_=ev.c.occurred_at.type)
        first_after = (
            select(ev.c.occurred_at)
            .where(
                ev.c.workspace_id == res.c.workspace_id,
                ev.c.scope_key == res.c.resource_key,
                ev.c.occurred_at >= func.coalesce(latest_end, since),
                ev.c.ai_eligible == true(),
                ev.c.deleted == false(),
            )
            .order_by(ev.c.occurred_at, ev.c.id)
            .limit(1)
            .scalar_subquery()
        )
        collected = (
            select(ss.c.last_seen_updated_at)
            .where(
                ss.c.workspace_id == res.c.workspace_id,
                ss.c.scope_key == res.c.resource_key,
                ss.c.source_type == SOURCE_TYPE_LARK_MESSAGES,
                ss.c.source == SOURCE_LARK,
            )
            .limit(1)
            .scalar_subquery()
        )
        rows = self.conn.execute(
            select(
                ws,
                res.c.resource_key,
                first_after.label("first_at"),
                collected.label("collected_until"),
            )
            .join(res, res.c.workspace_id == ws.c.id)
            .where(res.c.resource_type == RESOURCE_LARK_CHAT)
        )
        followed = 0
        for row in rows:
            first_at = row.first_at
            if first_at is not None and first_at < self.lookback_start:
                # The chat's latest window is older than the lookback: look from there.
                first_at = evidence.first_eligible_at_or_after(
                    self.conn, row.id, row.resource_key, self.lookback_start
                )
            self._note_uncovered(row.id, row.resource_key, first_at)
            if not self._collected(_workspace(row)):
                continue
            followed += 1
            if self.settings.reconciliation_enabled:
                self._note_collection(row.id, row.resource_key, row.collected_until)
        return followed

    def _note_collection(
        self, workspace_id: str, chat_id: str, collected_until: datetime | None
    ) -> None:
        tally = self.tallies[workspace_id]
        if collected_until is None:
            tally.chats_never_collected += 1
            return
        self.collected[(workspace_id, chat_id)] = collected_until
        tally.oldest_collected_until = _earliest(tally.oldest_collected_until, collected_until)

    # --- summary -----------------------------------------------------------------------------

    def summary_backlog(self) -> tuple[int, datetime | None]:
        """Finished windows in the horizon whose summary decision is still to be made."""
        row = self.conn.execute(
            select(
                func.count().label("n"), func.min(ss.c.last_seen_updated_at).label("since")
            ).where(
                ss.c.source_type == SOURCE_TYPE_WINDOW,
                ss.c.status.in_(TERMINAL_WINDOW_STATUSES),
                ss.c.window_start >= self.horizon,
                ss.c.summary_attempted == false(),
            )
        ).one()
        return int(row.n), row.since


def _workspace(row: Row[Any]) -> Workspace:
    return Workspace(row.id, row.type, row.status, row.title, row.created_at, row.updated_at)


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
        tally = measurement.tallies[workspace_id]
        tally.oldest_uncovered_at = _earliest(tally.oldest_uncovered_at, at)
    return PipelineHealth(
        measured_at=now,
        horizon_start=measurement.horizon,
        workspaces=tuple(
            tally.freeze(workspace_id)
            for workspace_id, tally in sorted(measurement.tallies.items())
        ),
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
