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

from timeline_pipeline.db.rows import json_object, record_where
from timeline_pipeline.db.schema import workspace_timeline_summaries as su
from timeline_pipeline.db.upsert import insert_new, upsert
from timeline_pipeline.domain.content_lineage import (
    RECALLED_TEXT,
    OnRecall,
    RecallEffect,
    RecallScope,
    Tie,
    declare_content,
)
from timeline_pipeline.domain.entries import SummarySource
from timeline_pipeline.domain.lifecycle import RetentionClass
from timeline_pipeline.domain.lifecycle_declare import archive_on_request, declare
from timeline_pipeline.domain.records import record_of
from timeline_pipeline.store import entries, window_states

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
    return record_where(conn, su, _to_summary, su.c.workspace_id == workspace_id)


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
    written = upsert(
        conn,
        su,
        {
            "workspace_id": workspace_id,
            "content": content,
            "source": SummarySource.AI,
            "revision": 1,
            "metadata_json": dict(metadata),
            "created_at": now,
            "updated_at": now,
        },
        key=[su.c.workspace_id],
        update=("content", "metadata_json", "updated_at"),
        also={"revision": su.c.revision + 1},
        where=lambda _new: su.c.source == SummarySource.AI,
    )
    if written is None:
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
        row = insert_new(
            conn,
            su,
            {
                "workspace_id": workspace_id,
                "content": content,
                "source": SummarySource.HUMAN,
                "revision": 1,
                "metadata_json": meta,
                "created_at": now,
                "updated_at": now,
            },
            returning=[su.c.workspace_id],
        )
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


# --- a recall's copies (docs/lifecycle.md, "What a recall and a hold do to each copy") ---------

STALE_KEY = "stale"
HELD_TEXT_KEY = "held_recalled_text"


def recall_copies(conn: Connection, scope: RecallScope, changed: Sequence[int]) -> RecallEffect:
    """A summary written from entries a recall just changed (`changed`) is stale: an automatic
    one loses its text (`RECALLED_TEXT`, `metadata.stale = "recall"`; under a hold the text is
    kept aside in its metadata) and the windows of those entries are opened again for the
    summary sensor, which writes it anew from what is still visible. A curator's summary is
    the curator's words: kept, marked `recalled_evidence` in its metadata."""
    if not changed:
        return RecallEffect()
    row = conn.execute(select(su).where(su.c.workspace_id == scope.workspace_id)).first()
    if row is None:
        return RecallEffect()
    current = _to_summary(row)
    meta = dict(current.metadata)
    values: dict[str, Any] = {}
    if current.source == SummarySource.HUMAN:
        if not meta.get("recalled_evidence"):
            values["metadata_json"] = {**meta, "recalled_evidence": True}
    elif current.content != RECALLED_TEXT:
        meta[STALE_KEY] = "recall"
        if scope.held and HELD_TEXT_KEY not in meta:
            meta[HELD_TEXT_KEY] = current.content
        values.update(content=RECALLED_TEXT, metadata_json=meta)
    windows = [
        found.window_state_id
        for entry_id in changed
        if (found := entries.get(conn, entry_id)) is not None and found.window_state_id is not None
    ]
    window_states.reopen_summary(conn, windows)
    if not values:
        return RecallEffect()
    conn.execute(
        su.update()
        .where(su.c.workspace_id == scope.workspace_id, su.c.revision == current.revision)
        .values(**values, revision=su.c.revision + 1, updated_at=scope.now)
    )
    return RecallEffect(rows=1)


CONTENT = declare_content(
    __name__,
    "workspace_timeline_summaries",
    text_columns=("content",),
    tie=Tie.WORKSPACE,
    on_recall=OnRecall.STALE,
    apply=recall_copies,
    stage=1,
    notes="Written from the visible entries: stale once a recall changed one of them.",
)


# --- lifecycle -------------------------------------------------------------------------------

DESCRIPTOR = declare(
    __name__,
    "workspace_timeline_summaries",
    RetentionClass.COMMUNICATION_LOG,
    cursor_column="updated_at",
    min_days=30,
    archive=archive_on_request("The workspace summary"),
)
