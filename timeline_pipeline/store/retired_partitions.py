"""Dagster window partitions a purge retired (`lifecycle_retired_partitions`): the only module
with their SQL (docs/lifecycle.md, "Dagster partitions").

The purge writes the partition keys of the window states it deletes in the same transaction as
the deletion, whichever path runs it (CLI or Dagster), so the keys are durable exactly when the
rows are gone. A Dagster sensor forgets each pending key's partition and its finished runs and
marks it done; forgetting is idempotent, so a sensor tick that dies half-way repeats it.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import Connection, select

from timeline_pipeline.db.schema import lifecycle_retired_partitions as rp
from timeline_pipeline.db.upsert import insert_for
from timeline_pipeline.domain.lifecycle import OnlyWhere, RequiredIndex, RetentionClass, Scope
from timeline_pipeline.domain.lifecycle_declare import declare

PENDING = "pending"
DONE = "done"


def retire(conn: Connection, keys: Sequence[str], *, run_id: int | None, now: datetime) -> int:
    """Record partition keys to forget (a key already recorded stays as it is)."""
    if not keys:
        return 0
    stmt = insert_for(conn, rp).values(
        [
            {"partition_key": key, "status": PENDING, "run_id": run_id, "retired_at": now}
            for key in sorted(set(keys))
        ]
    )
    result = conn.execute(stmt.on_conflict_do_nothing(index_elements=["partition_key"]))
    return int(result.rowcount or 0)


def pending(conn: Connection, limit: int) -> list[str]:
    """The oldest keys not yet forgotten in Dagster."""
    rows = conn.execute(
        select(rp.c.partition_key).where(rp.c.status == PENDING).order_by(rp.c.id).limit(limit)
    )
    return [r.partition_key for r in rows]


def mark_done(conn: Connection, keys: Sequence[str], *, now: datetime) -> int:
    if not keys:
        return 0
    result = conn.execute(
        rp.update()
        .where(rp.c.partition_key.in_(list(keys)), rp.c.status == PENDING)
        .values(status=DONE, forgotten_at=now)
    )
    return int(result.rowcount or 0)


DESCRIPTOR = declare(
    __name__,
    "lifecycle_retired_partitions",
    RetentionClass.SYSTEM_EVENT,
    cursor_column="retired_at",
    default_days=30,
    max_days=365,
    scope=Scope.GLOBAL,
    workspace_column=None,
    indexes=(RequiredIndex(("status", "id"), "the sensor's pending keys"),),
    only_where=(OnlyWhere("status", (DONE,)),),
    notes="Partition keys only; a key still pending is never purged.",
)
