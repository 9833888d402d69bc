"""Workspace status changes (`workspace_status_changes`): the only module with their SQL.

A workspace's status is one column; when it changed and who changed it are rows here, written
in the change's own transaction by `store/workspaces.set_status`. The incident report reads the
last change to `recovered` as the `resolved` milestone when no recovery entry says so, and the
report sensor reads a change out of `firing` as "the incident closed" (docs/report.md).
Ids, statuses and times only.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Connection, select

from timeline_pipeline.db.schema import workspace_status_changes as sc
from timeline_pipeline.domain.lifecycle import RetentionClass
from timeline_pipeline.domain.lifecycle_declare import declare

__all__ = ["DESCRIPTOR", "last_change_to", "record"]


def record(conn: Connection, *, workspace_id: str, status: str, actor: str, now: datetime) -> None:
    conn.execute(
        sc.insert().values(
            workspace_id=workspace_id, status=status, changed_by=actor[:128], changed_at=now
        )
    )


def last_change_to(conn: Connection, workspace_id: str, status: str) -> datetime | None:
    """When the workspace last entered `status`, if a recorded change put it there."""
    value: datetime | None = conn.execute(
        select(sc.c.changed_at)
        .where(sc.c.workspace_id == workspace_id, sc.c.status == status)
        .order_by(sc.c.changed_at.desc(), sc.c.id.desc())
        .limit(1)
    ).scalar_one_or_none()
    return value


# --- lifecycle -------------------------------------------------------------------------------

DESCRIPTOR = declare(
    __name__,
    "workspace_status_changes",
    RetentionClass.AUDIT_SECURITY,
    cursor_column="changed_at",
    min_days=365,
    notes=(
        "Who moved a workspace between firing, recovered and archived, and when (ids and "
        "times only); the report's `resolved` milestone reads the last change to recovered."
    ),
)
