"""The health measurement's reads of window states (docs/design.md §9, §12; `windows/health.py`):
counts per workspace and status, stale and failed windows, the first evidence of each chat's
oldest unfinished window, and the summary backlog. Read-only; each read is an index range.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Connection, and_, case, false, func, select

from timeline_pipeline.db.schema import workspace_timeline_sync_states as ss
from timeline_pipeline.db.schema import workspaces as ws
from timeline_pipeline.domain.keys import SOURCE_TYPE_WINDOW
from timeline_pipeline.domain.states import (
    BACKLOG_WINDOW_STATUSES,
    TERMINAL_WINDOW_STATUSES,
    WindowStatus,
)
from timeline_pipeline.store import evidence


@dataclass(frozen=True, slots=True)
class WindowCounts:
    """Windows of one workspace and status, with the health tallies among them."""

    workspace_id: str
    status: str
    windows: int
    stale: int
    exhausted: int
    retried: int
    retries: int
    late_windows: int
    late: int


def _sum_if(condition: ColumnElement[bool], value: Any = 1) -> Any:
    return func.sum(case((condition, value), else_=0))


def window_counts(
    conn: Connection,
    *,
    finished_statuses: Sequence[str],
    horizon: datetime,
    stale_before: datetime,
    max_attempts: int,
) -> list[WindowCounts]:
    """Per workspace and status: backlog windows (pending, processing) of any age, the
    `finished_statuses` from `horizon` on, both through the (source_type, status,
    window_start) index."""
    retried = ss.c.attempt_count > 1
    late = func.coalesce(ss.c.metadata_json["late_evidence"].as_integer(), 0)
    stale = and_(ss.c.status == WindowStatus.PROCESSING, ss.c.processing_started_at <= stale_before)
    exhausted = and_(ss.c.status == WindowStatus.FAILED, ss.c.attempt_count >= max_attempts)
    columns = [
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
    backlog = (
        select(*columns)
        .where(ss.c.source_type == SOURCE_TYPE_WINDOW, ss.c.status.in_(BACKLOG_WINDOW_STATUSES))
        .group_by(ss.c.workspace_id, ss.c.status)
    )
    finished = (
        select(*columns)
        .where(
            ss.c.source_type == SOURCE_TYPE_WINDOW,
            ss.c.status.in_(list(finished_statuses)),
            ss.c.window_start >= horizon,
        )
        .group_by(ss.c.workspace_id, ss.c.status)
    )
    return [
        WindowCounts(
            row.workspace_id,
            row.status,
            int(row.n),
            int(row.stale or 0),
            int(row.exhausted or 0),
            int(row.retried or 0),
            int(row.retries or 0),
            int(row.late_windows or 0),
            int(row.late or 0),
        )
        for statement in (backlog, finished)
        for row in conn.execute(statement)
    ]


def stale_and_failed_windows(
    conn: Connection, *, stale_before: datetime, horizon: datetime, limit: int
) -> tuple[list[Any], list[Any]]:
    """At most `limit` stale `processing` windows (any age) and `failed` windows from
    `horizon` on, oldest first: (workspace_id, scope_key, source_key, window_start,
    processor_version, status, attempt_count) rows."""
    columns = (
        ss.c.workspace_id,
        ss.c.scope_key,
        ss.c.source_key,
        ss.c.window_start,
        ss.c.processor_version,
        ss.c.status,
        ss.c.attempt_count,
    )
    stale = conn.execute(
        select(*columns)
        .where(
            ss.c.source_type == SOURCE_TYPE_WINDOW,
            ss.c.status == WindowStatus.PROCESSING,
            ss.c.processing_started_at <= stale_before,
        )
        .order_by(ss.c.window_start, ss.c.id)
        .limit(limit)
    )
    failed = conn.execute(
        select(*columns)
        .where(
            ss.c.source_type == SOURCE_TYPE_WINDOW,
            ss.c.status == WindowStatus.FAILED,
            ss.c.window_start >= horizon,
        )
        .order_by(ss.c.window_start, ss.c.id)
        .limit(limit)
    )
    return list(stale), list(failed)


def first_evidence_of_oldest_unfinished_windows(
    conn: Connection, statuses: Sequence[str]
) -> list[tuple[str, str, datetime | None]]:
    """Per chat with a default-namespace window in `statuses`: (workspace id, chat id, the
    first eligible evidence of its oldest such window). Windows of a deleted workspace are
    left out (the join with `workspaces`)."""
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
            ss.c.status.in_(list(statuses)),
            ss.c.processor_version.is_(None),
        )
        .group_by(ss.c.workspace_id, ss.c.scope_key)
        .subquery("oldest")
    )
    first = evidence.first_eligible_at(
        oldest.c.workspace_id,
        oldest.c.scope_key,
        at_or_after=oldest.c.start,
        before=oldest.c.end,
    )
    rows = conn.execute(
        select(ws, oldest.c.scope_key, first.label("first_at")).join(
            oldest, oldest.c.workspace_id == ws.c.id
        )
    )
    return [(row.id, row.scope_key, row.first_at) for row in rows]


def summary_backlog(conn: Connection, *, horizon: datetime) -> tuple[int, datetime | None]:
    """Finished windows from `horizon` on whose summary decision is still to be made, and
    the oldest `last_seen_updated_at` among them."""
    row = conn.execute(
        select(func.count().label("n"), func.min(ss.c.last_seen_updated_at).label("since")).where(
            ss.c.source_type == SOURCE_TYPE_WINDOW,
            ss.c.status.in_(TERMINAL_WINDOW_STATUSES),
            ss.c.window_start >= horizon,
            ss.c.summary_attempted == false(),
        )
    ).one()
    return int(row.n), row.since
