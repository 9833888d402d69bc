"""Discovery reads that join the workspace tables with window states.

Kept beside discovery rather than in one repository because they answer one question of the
sensor's cold start ("where does each bound chat's window history end?") across three tables.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Connection, ScalarSelect, false, select, true
from sqlalchemy.engine import Row

from timeline_pipeline.db.schema import workspace_collaboration_resources as res
from timeline_pipeline.db.schema import workspace_timeline_evidence as ev
from timeline_pipeline.db.schema import workspace_timeline_sync_states as ss
from timeline_pipeline.db.schema import workspaces as ws
from timeline_pipeline.domain.keys import RESOURCE_LARK_CHAT, SOURCE_TYPE_WINDOW
from timeline_pipeline.store.workspaces import Workspace

__all__ = [
    "BoundChat",
    "bound_chats_with_latest_window",
    "latest_window_of_chat",
    "workspaces_by_ids",
]


@dataclass(frozen=True, slots=True)
class BoundChat:
    workspace: Workspace
    chat_id: str
    latest_window_start: datetime | None
    latest_evidence_at: datetime | None


def _workspace(row: Row[Any]) -> Workspace:
    return Workspace(row.id, row.type, row.status, row.title, row.created_at, row.updated_at)


def latest_window_of_chat(column: ColumnElement[Any]) -> ScalarSelect[Any]:
    """`column` of the latest default-namespace window of the chat binding row `res` of the
    enclosing statement: one backward seek of (workspace_id, scope_key, source_type,
    window_start), however many windows the chat ever had."""
    return (
        select(column)
        .where(
            ss.c.workspace_id == res.c.workspace_id,
            ss.c.scope_key == res.c.resource_key,
            ss.c.source_type == SOURCE_TYPE_WINDOW,
            ss.c.processor_version.is_(None),
        )
        .order_by(ss.c.window_start.desc())
        .limit(1)
        .correlate(res)
        .scalar_subquery()
    )


def bound_chats_with_latest_window(
    conn: Connection, *, statuses: Sequence[str] | None = None
) -> list[BoundChat]:
    """Every bound chat (of workspaces in `statuses`, default: any status), with its latest
    default-namespace window and its latest eligible evidence.

    One statement: both are correlated "first row in descending order" subqueries that each
    database answers with a backward seek of an index ((workspace_id, scope_key, source_type,
    window_start) and (workspace_id, scope_key, occurred_at, id)), so the cost follows the
    number of chats, not the number of windows or messages they ever had.
    """
    latest = latest_window_of_chat(ss.c.window_start)
    newest = (
        select(ev.c.occurred_at)
        .where(
            ev.c.workspace_id == res.c.workspace_id,
            ev.c.scope_key == res.c.resource_key,
            ev.c.ai_eligible == true(),
            ev.c.deleted == false(),
        )
        .order_by(ev.c.occurred_at.desc())
        .limit(1)
        .scalar_subquery()
    )
    stmt = (
        select(
            ws,
            res.c.resource_key,
            latest.label("latest_window_start"),
            newest.label("latest_evidence_at"),
        )
        .join(res, res.c.workspace_id == ws.c.id)
        .where(res.c.resource_type == RESOURCE_LARK_CHAT)
        .order_by(ws.c.id, res.c.resource_key)
    )
    if statuses is not None:
        stmt = stmt.where(ws.c.status.in_(list(statuses)))
    rows = conn.execute(stmt)
    return [
        BoundChat(
            _workspace(row),
            row.resource_key,
            row.latest_window_start,
            row.latest_evidence_at,
        )
        for row in rows
    ]


def workspaces_by_ids(conn: Connection, ids: Sequence[str]) -> dict[str, Workspace]:
    found: dict[str, Workspace] = {}
    unique = sorted(set(ids))
    for start in range(0, len(unique), 500):
        rows = conn.execute(select(ws).where(ws.c.id.in_(unique[start : start + 500])))
        for row in rows:
            found[row.id] = _workspace(row)
    return found
