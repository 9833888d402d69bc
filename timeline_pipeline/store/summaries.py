"""The workspace summary (`workspace_timeline_summaries`): the only module with its SQL.

An AI write is one INSERT ... ON CONFLICT DO UPDATE ... WHERE source = 'ai', so an automatic
summary can never replace a human one, whatever the timing; a human write is a compare-and-set
on the revision (README, "Package layout").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, select
from sqlalchemy.engine import Row

from timeline_pipeline.db.rows import json_object
from timeline_pipeline.db.schema import workspace_timeline_summaries as su
from timeline_pipeline.db.upsert import insert_for
from timeline_pipeline.domain.entries import SummarySource
from timeline_pipeline.domain.lifecycle import RetentionClass
from timeline_pipeline.domain.lifecycle_declare import archive_on_request, declare
from timeline_pipeline.domain.records import record_of

__all__ = [
    "SummaryRow",
    "get_summary",
    "summary_sources",
    "write_ai_summary",
    "write_human_summary",
]


@dataclass(frozen=True, slots=True)
class SummaryRow:
    workspace_id: str
    content: str
    source: str
    revision: int
    metadata: dict[str, Any]
    created_at: datetime
    updated_at: datetime


def _to_summary(row: Row[Any]) -> SummaryRow:
    return record_of(SummaryRow, row, metadata=json_object(row.metadata_json))


def get_summary(conn: Connection, workspace_id: str) -> SummaryRow | None:
    row = conn.execute(select(su).where(su.c.workspace_id == workspace_id)).first()
    return _to_summary(row) if row else None


def summary_sources(conn: Connection, workspace_ids: Sequence[str]) -> dict[str, str]:
    """workspace id -> `ai` or `human`, for the workspaces that have a summary."""
    if not workspace_ids:
        return {}
    rows = conn.execute(
        select(su.c.workspace_id, su.c.source).where(su.c.workspace_id.in_(sorted(workspace_ids)))
    )
    return {row.workspace_id: row.source for row in rows}


def write_ai_summary(
    conn: Connection,
    workspace_id: str,
    content: str,
    metadata: Mapping[str, Any],
    *,
    now: datetime,
) -> SummaryRow | None:
    """Create or replace the automatic summary; None (and nothing written) if it is human's.

    The WHERE of the upsert is the whole protection: a human summary written a moment before
    makes this statement update no row, however the two writers interleave.
    """
    stmt = insert_for(conn, su).values(
        workspace_id=workspace_id,
        content=content,
        source=SummarySource.AI,
        revision=1,
        metadata_json=dict(metadata),
        created_at=now,
        updated_at=now,
    )
    stmt = stmt.on_conflict_do_update(
        index_elements=[su.c.workspace_id],
        set_={
            "content": stmt.excluded.content,
            "metadata_json": stmt.excluded.metadata_json,
            "revision": su.c.revision + 1,
            "updated_at": stmt.excluded.updated_at,
        },
        where=su.c.source == SummarySource.AI,
    ).returning(su.c.workspace_id)
    if conn.execute(stmt).first() is None:
        return None
    return get_summary(conn, workspace_id)


def write_human_summary(
    conn: Connection,
    workspace_id: str,
    content: str,
    *,
    expected_revision: int | None,
    now: datetime,
    metadata: Mapping[str, Any] | None = None,
) -> SummaryRow | None:
    """A curator's summary, from then on never replaced automatically.

    `expected_revision` None: there must be no summary yet (an insert that loses to a
    concurrent one returns None). Otherwise the stored summary, AI or human, must still be at
    that revision. None means the precondition failed and nothing was written.
    """
    meta = dict(metadata or {})
    if expected_revision is None:
        row = conn.execute(
            insert_for(conn, su)
            .values(
                workspace_id=workspace_id,
                content=content,
                source=SummarySource.HUMAN,
                revision=1,
                metadata_json=meta,
                created_at=now,
                updated_at=now,
            )
            .on_conflict_do_nothing()
            .returning(su.c.workspace_id)
        ).first()
    else:
        row = conn.execute(
            su.update()
            .where(su.c.workspace_id == workspace_id, su.c.revision == expected_revision)
            .values(
                content=content,
                source=SummarySource.HUMAN,
                metadata_json=meta,
                revision=su.c.revision + 1,
                updated_at=now,
            )
            .returning(su.c.workspace_id)
        ).first()
    return get_summary(conn, workspace_id) if row is not None else None


# --- lifecycle -------------------------------------------------------------------------------

DESCRIPTOR = declare(
    __name__,
    "workspace_timeline_summaries",
    RetentionClass.COMMUNICATION_LOG,
    cursor_column="updated_at",
    min_days=30,
    archive=archive_on_request("The workspace summary"),
)
