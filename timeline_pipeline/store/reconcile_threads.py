"""When reconciliation last listed each thread (`workspace_timeline_reconcile_threads`).

The only module with this table's SQL. `mark_thread_listed` runs in the transaction of the
thread's replies, so a thread counts as served only once its replies are stored (README,
"Package layout").
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Connection, select

from timeline_pipeline.db.schema import workspace_timeline_reconcile_threads as rt
from timeline_pipeline.db.upsert import upsert
from timeline_pipeline.domain.lifecycle import (
    DelegatedPurge,
    PartitionDecision,
    RequiredIndex,
    RetentionClass,
)
from timeline_pipeline.domain.lifecycle_declare import declare

__all__ = ["mark_thread_listed", "prune_thread_listings", "threads_last_listed"]


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
    upsert(
        conn,
        rt,
        {
            "workspace_id": workspace_id,
            "chat_id": chat_id,
            "thread_id": thread_id,
            "last_listed_at": at,
        },
        key=[rt.c.workspace_id, rt.c.chat_id, rt.c.thread_id],
        update=("last_listed_at",),
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


# --- lifecycle -------------------------------------------------------------------------------

DESCRIPTOR = declare(
    __name__,
    "workspace_timeline_reconcile_threads",
    RetentionClass.OPERATIONAL_QUEUE,
    cursor_column="last_listed_at",
    default_days=3,
    max_days=3,
    id_column="thread_id",
    indexes=(RequiredIndex(("workspace_id", "chat_id", "thread_id"), "the run prunes per chat"),),
    batch_limit=1_000,
    partition=PartitionDecision(False, "At most one row per thread within the lookback."),
    delegated=DelegatedPurge(
        purge_function="timeline_pipeline.store.reconcile_threads:prune_thread_listings",
        job="lark_chat_collection (every reconciliation run prunes its chat's listings)",
        description="Listings older than the ingestion lookback (72 h) are pruned by the run "
        "that would read them; the lifecycle engine only counts them in the dry-run.",
    ),
)
