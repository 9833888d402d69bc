"""Chat collection checkpoints (docs/design.md §3): one sync-state row per followed chat, its
high-water mark, reconciliation's in-progress marker, how far each chat's history is covered,
and the correlated subquery other stores' statements embed.

Rows, reads by key and the compare-and-set are `store/sync_states.py`'s.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import ColumnElement, Connection, ScalarSelect, select, tuple_

from timeline_pipeline.db.schema import workspace_timeline_sync_states as ss
from timeline_pipeline.db.upsert import insert_new
from timeline_pipeline.domain.keys import (
    SOURCE_LARK,
    SOURCE_TYPE_LARK_MESSAGES,
    chat_checkpoint_key,
)
from timeline_pipeline.domain.states import CheckpointStatus
from timeline_pipeline.domain.sync_states import (
    CHECKPOINT_MARKER_KEY,
    CHECKPOINT_METADATA_VERSION,
    SyncState,
)
from timeline_pipeline.store.sync_states import MAX_ERROR_CHARS, get_by_key, transition


def ensure_checkpoint(conn: Connection, workspace_id: str, chat_id: str) -> SyncState:
    now = datetime.now(UTC)
    key = chat_checkpoint_key(chat_id)
    insert_new(
        conn,
        ss,
        {
            "workspace_id": workspace_id,
            "source": SOURCE_LARK,
            "source_type": SOURCE_TYPE_LARK_MESSAGES,
            "source_key": key,
            "status": CheckpointStatus.PENDING,
            "attempt_count": 0,
            "revision": 1,
            "metadata_json": {},
            "scope_key": chat_id,
            "summary_attempted": False,
            "created_at": now,
            "updated_at": now,
        },
        returning=[ss.c.id],
    )
    state = get_by_key(conn, workspace_id, SOURCE_LARK, SOURCE_TYPE_LARK_MESSAGES, key)
    assert state is not None
    return state


def advance_checkpoint(
    conn: Connection,
    state: SyncState,
    *,
    cursor: str | None,
    covered_until: datetime,
    metadata: dict[str, Any],
    now: datetime | None = None,
) -> bool:
    """Move the high-water mark forward after every page of a range is committed.

    Compare-and-set on the revision read at the start of the run: a concurrent run that
    committed first makes this one a no-op instead of moving the mark backwards.
    """
    stamp = now or datetime.now(UTC)
    values: dict[str, Any] = {
        "status": CheckpointStatus.COMPLETED,
        "last_seen_updated_at": covered_until,
        "metadata_json": {**state.metadata, **metadata},
        "last_error": None,
        "attempt_count": 0,
        "updated_at": stamp,
    }
    if cursor is not None and (state.last_seen_cursor is None or cursor > state.last_seen_cursor):
        values["last_seen_cursor"] = cursor
    return transition(conn, state, values=values) is not None


def record_checkpoint_failure(
    conn: Connection, state: SyncState, error: str, *, now: datetime | None = None
) -> bool:
    """Count a failed run without touching the high-water mark."""
    moved = transition(
        conn,
        state,
        values={
            "status": CheckpointStatus.FAILED,
            "attempt_count": ss.c.attempt_count + 1,
            "last_error": error[:MAX_ERROR_CHARS],
            "updated_at": now or datetime.now(UTC),
        },
    )
    return moved is not None


def checkpoint_coverage(
    conn: Connection, chats: Sequence[tuple[str, str]], *, batch_size: int = 500
) -> dict[tuple[str, str], datetime | None]:
    """`last_seen_updated_at` of each chat's collection checkpoint: how far history is covered."""
    keys = sorted({(ws, chat_checkpoint_key(chat)) for ws, chat in chats})
    found: dict[tuple[str, str], datetime | None] = {}
    for start in range(0, len(keys), batch_size):
        batch = keys[start : start + batch_size]
        rows = conn.execute(
            select(ss.c.workspace_id, ss.c.scope_key, ss.c.last_seen_updated_at).where(
                ss.c.source == SOURCE_LARK,
                ss.c.source_type == SOURCE_TYPE_LARK_MESSAGES,
                tuple_(ss.c.workspace_id, ss.c.source_key).in_(batch),
            )
        )
        for row in rows:
            found[(row.workspace_id, row.scope_key)] = row.last_seen_updated_at
    return found


def record_progress(
    conn: Connection, state: SyncState, marker: dict[str, Any], *, now: datetime
) -> SyncState | None:
    """Store the in-progress marker (CAS on revision); None when another run moved the row.

    The high-water mark (`last_seen_cursor`, `last_seen_updated_at`) is deliberately untouched:
    it moves only in `advance_checkpoint`, once the whole range is committed (docs/design.md §3).
    """
    metadata = {
        **state.metadata,
        "version": CHECKPOINT_METADATA_VERSION,
        CHECKPOINT_MARKER_KEY: marker,
    }
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


def collected_until(
    workspace_id: ColumnElement[Any], scope_key: ColumnElement[Any]
) -> ScalarSelect[Any]:
    """The collection checkpoint's `last_seen_updated_at` of the chat of the enclosing
    statement: one unique-key lookup."""
    return (
        select(ss.c.last_seen_updated_at)
        .where(
            ss.c.workspace_id == workspace_id,
            ss.c.scope_key == scope_key,
            ss.c.source_type == SOURCE_TYPE_LARK_MESSAGES,
            ss.c.source == SOURCE_LARK,
        )
        .limit(1)
        .scalar_subquery()
    )
