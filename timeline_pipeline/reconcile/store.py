"""The statements reconciliation needs beyond the shared evidence and sync-state stores.

`record_progress` runs inside each page's transaction, next to the evidence upserts, so the
in-progress marker can never claim a page that was not committed, and a run that lost the
compare-and-set to a concurrent run rolls its page back instead of interleaving with it.
`mark_thread_listed` likewise runs in the transaction of the thread's replies, so a thread
counts as served only once its replies are stored.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, func, select
from sqlalchemy.dialects import postgresql, sqlite

from timeline_pipeline.db.schema import workspace_timeline_evidence as ev
from timeline_pipeline.db.schema import workspace_timeline_reconcile_threads as rt
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


def thread_first_seen(
    conn: Connection, workspace_id: str, chat_id: str, since: datetime
) -> dict[str, datetime]:
    """Every thread with evidence at or after `since`, with its earliest such message.

    A thread whose root is older than the range never shows up in the range's chat listing
    (Lark lists thread roots only), so the threads to list come from our own evidence. One
    index range of the chat over the ingestion lookback.
    """
    thread_id = ev.c.metadata_json["thread_id"].as_string()
    rows = conn.execute(
        select(thread_id.label("thread_id"), func.min(ev.c.occurred_at).label("first"))
        .where(
            ev.c.workspace_id == workspace_id,
            ev.c.scope_key == chat_id,
            ev.c.source == SOURCE_LARK,
            ev.c.source_type == SOURCE_TYPE_LARK_MESSAGE,
            ev.c.occurred_at >= since,
            thread_id.is_not(None),
        )
        .group_by(thread_id)
    )
    return {row.thread_id: row.first for row in rows if row.thread_id}


def threads_last_listed(conn: Connection, workspace_id: str, chat_id: str) -> dict[str, datetime]:
    rows = conn.execute(
        select(rt.c.thread_id, rt.c.last_listed_at).where(
            rt.c.workspace_id == workspace_id, rt.c.chat_id == chat_id
        )
    )
    return {row.thread_id: row.last_listed_at for row in rows}


def mark_thread_listed(
    conn: Connection, workspace_id: str, chat_id: str, thread_id: str, *, at: datetime
) -> None:
    """Run in the transaction that commits the thread's replies: listed means committed."""
    insert = (postgresql.insert if conn.dialect.name == "postgresql" else sqlite.insert)(rt)
    statement = insert.values(
        workspace_id=workspace_id, chat_id=chat_id, thread_id=thread_id, last_listed_at=at
    )
    conn.execute(
        statement.on_conflict_do_update(
            index_elements=[rt.c.workspace_id, rt.c.chat_id, rt.c.thread_id],
            set_={"last_listed_at": statement.excluded.last_listed_at},
        )
    )


def prune_thread_listings(
    conn: Connection, workspace_id: str, chat_id: str, before: datetime
) -> int:
    """Forget listings older than the lookback floor: such a thread, if still known, simply
    counts as never listed (first in line), so the table stays as small as the lookback."""
    result = conn.execute(
        rt.delete().where(
            rt.c.workspace_id == workspace_id,
            rt.c.chat_id == chat_id,
            rt.c.last_listed_at < before,
        )
    )
    return int(result.rowcount or 0)
