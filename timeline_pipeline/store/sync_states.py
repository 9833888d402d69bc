"""Sync-state store: the owner of `workspace_timeline_sync_states` (docs/design.md §3, §5): the
row's mapping, the reads by id and key, the one compare-and-set every transition goes through,
and the table's lifecycle descriptor.

Every transition that two workers could race on is one compare-and-set on the row's revision
and its status or a guard (`db.cas.compare_and_set`): the row it returns, or None, decides the
winner.

The table's other SQL is split by job, each module building on this one: chat collection
checkpoints (`store/checkpoints.py`), synthesis window states (`store/window_states.py`) and
the health measurement's reads (`store/window_health_reads.py`). No module outside these four
has SQL on the table (README, "Package layout").
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection
from sqlalchemy.engine import Row

from timeline_pipeline.db.cas import compare_and_set_record
from timeline_pipeline.db.rows import by_source_key, json_object, record_where
from timeline_pipeline.db.schema import workspace_timeline_sync_states as ss
from timeline_pipeline.domain.lifecycle import OnlyWhere, RetentionClass
from timeline_pipeline.domain.lifecycle_declare import declare
from timeline_pipeline.domain.records import record_of
from timeline_pipeline.domain.sync_states import SyncState

MAX_ERROR_CHARS = 1000


def to_state(row: Row[Any]) -> SyncState:
    """A state by its column names (`db/rows.py`); only the decoded and defaulted columns are
    spelled out."""
    return record_of(
        SyncState,
        row,
        metadata=json_object(row.metadata_json),
        summary_attempted=bool(row.summary_attempted),
        deferral_count=int(row.deferral_count or 0),
        deferred=bool(row.deferred),
        unclaimed_runs=int(row.unclaimed_runs or 0),
    )


def transition(
    conn: Connection,
    state: SyncState,
    *,
    values: dict[str, Any],
    expected_status: str | None = None,
    where: Any = None,
) -> SyncState | None:
    """One compare-and-set from the revision `state` was read at: the new state, or None."""
    return compare_and_set_record(
        conn, ss, state, to_state, values=values, expected_status=expected_status, where=where
    )


def get(conn: Connection, state_id: int) -> SyncState | None:
    return record_where(conn, ss, to_state, ss.c.id == state_id)


def get_by_key(
    conn: Connection, workspace_id: str, source: str, source_type: str, source_key: str
) -> SyncState | None:
    row = by_source_key(conn, ss, workspace_id, source, source_type, source_key)
    return to_state(row) if row else None


# --- lifecycle -------------------------------------------------------------------------------

DESCRIPTOR = declare(
    __name__,
    "workspace_timeline_sync_states",
    RetentionClass.SYSTEM_EVENT,
    cursor_column="updated_at",
    min_days=14,
    default_days=90,
    max_days=730,
    # Finished windows and checkpoints only: a pending or processing window is never purged.
    only_where=(OnlyWhere("status", ("completed", "ignored", "failed")),),
    report_columns=("source_type", "scope_key", "window_start", "processor_version"),
    notes="Window states and chat checkpoints. A purged window's Dagster partition and its "
    "old runs are removed with it; a purged checkpoint makes the next collection of that chat "
    "start from the ingestion lookback.",
)
