"""Curators' milestone times (`incident_report_milestones`): the only module with their SQL.

The derived time of a milestone is never stored: each build reads it from the timeline, so a
curator's time sits beside it and clearing the curator's time brings the derived one back
(docs/report.md, "Milestones"). One row per workspace and milestone, with who set it.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Connection, select

from timeline_pipeline.db.schema import incident_report_milestones as rm
from timeline_pipeline.db.upsert import upsert
from timeline_pipeline.domain.lifecycle import RetentionClass
from timeline_pipeline.domain.lifecycle_declare import declare

__all__ = ["DESCRIPTOR", "OverrideRow", "clear", "overrides", "set_override"]

OverrideRow = tuple[str, datetime, str, datetime]
"""(milestone, at, set by, set at)."""


def set_override(
    conn: Connection, *, workspace_id: str, milestone: str, at: datetime, actor: str, now: datetime
) -> None:
    upsert(
        conn,
        rm,
        {
            "workspace_id": workspace_id,
            "milestone": milestone,
            "at": at,
            "set_by": actor[:128],
            "created_at": now,
            "updated_at": now,
        },
        key=[rm.c.workspace_id, rm.c.milestone],
        update=("at", "set_by", "updated_at"),
    )


def clear(conn: Connection, *, workspace_id: str, milestone: str) -> bool:
    result = conn.execute(
        rm.delete().where(rm.c.workspace_id == workspace_id, rm.c.milestone == milestone)
    )
    return result.rowcount == 1


def overrides(conn: Connection, workspace_id: str) -> list[OverrideRow]:
    rows = conn.execute(
        select(rm.c.milestone, rm.c.at, rm.c.set_by, rm.c.updated_at)
        .where(rm.c.workspace_id == workspace_id)
        .order_by(rm.c.milestone)
    )
    return [(r.milestone, r.at, r.set_by, r.updated_at) for r in rows]


# --- lifecycle -------------------------------------------------------------------------------

DESCRIPTOR = declare(
    __name__,
    "incident_report_milestones",
    RetentionClass.COMMUNICATION_LOG,
    cursor_column="updated_at",
    min_days=30,
    notes="A curator's time for a report milestone (times and actors only).",
)
