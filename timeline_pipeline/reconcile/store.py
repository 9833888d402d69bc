"""The two statements reconciliation needs beyond the shared evidence and sync-state stores.

`record_progress` runs inside each page's transaction, next to the evidence upserts, so the
in-progress marker can never claim a page that was not committed, and a run that lost the
compare-and-set to a concurrent run rolls its page back instead of interleaving with it.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, func, select

from timeline_pipeline.db.schema import workspace_timeline_evidence as ev
from timeline_pipeline.db.schema import workspace_timeline_sync_states as ss
from timeline_pipeline.domain.keys import SOURCE_LARK, SOURCE_TYPE_LARK_MESSAGE
from timeline_pipeline.reconcile.planning import MARKER_KEY, METADATA_VERSION
from timeline_pipeline.store.sync_states import SyncState


def record_progress(
    conn: Connection, state: SyncState, marker: dict[str, Any], *, now: datetime
) -> SyncState | None:
    """Store the in-progress marker (CAS on revision); None when another run moved the row.

    The high-water mark (`last_seen_cursor`, `last_seen_updated_at`) is deliberately untouched:
    it moves only in `advance_checkpoint`, once the whole range is committed (seed 000 §8.2).
    """
    metadata = {**state.metadata, "version": METADATA_VERSION, MARKER_KEY: marker}
    started = state.processing_started_at if state.status == "processing" else now
    result = conn.execute(
        ss.update()
        .where(ss.c.id == state.id, ss.c.revision == state.revision)
        .values(
            status="processing",
            processing_started_at=started,
            metadata_json=metadata,
            revision=ss.c.revision + 1,
            updated_at=now,
        )
    )
    if result.rowcount != 1:
        return None
    return dataclasses.replace(
        state,
        status="processing",
        processing_started_at=started,
        metadata=metadata,
        revision=state.revision + 1,
    )


def active_thread_ids(
    conn: Connection, workspace_id: str, chat_id: str, since: datetime, *, limit: int
) -> list[str]:
    """Threads with evidence at or after `since`, most recently active first, at most `limit`.

    A thread whose root is older than the range never shows up in the range's chat listing
    (Lark lists thread roots only), so its new replies are found through our own evidence.
    """
    if limit <= 0:
        return []
    thread_id = ev.c.metadata_json["thread_id"].as_string()
    newest = func.max(ev.c.occurred_at)
    rows = conn.execute(
        select(thread_id.label("thread_id"), newest.label("newest"))
        .where(
            ev.c.workspace_id == workspace_id,
            ev.c.scope_key == chat_id,
            ev.c.source == SOURCE_LARK,
            ev.c.source_type == SOURCE_TYPE_LARK_MESSAGE,
            ev.c.occurred_at >= since,
            thread_id.is_not(None),
        )
        .group_by(thread_id)
        .order_by(newest.desc(), thread_id)
        .limit(limit)
    )
    return [row.thread_id for row in rows if row.thread_id]
