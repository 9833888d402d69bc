"""The lifecycle runs table: one row per purge run, counts only, never row content.

Counters move in the same transaction as the batch they count, so a run killed mid-way leaves a
row whose figures are exactly what was deleted (docs/lifecycle.md, "Purge runbook").
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, func, select

from timeline_pipeline.db.rows import record_where, records
from timeline_pipeline.db.schema import lifecycle_runs as lr
from timeline_pipeline.domain.lifecycle import OnlyWhere, RetentionClass, Scope
from timeline_pipeline.domain.lifecycle_declare import archive_on_request, declare
from timeline_pipeline.domain.records import record_of

COUNTERS = ("scanned", "held", "archived", "purged", "redacted", "batches")


@dataclass(frozen=True, slots=True)
class RunRow:
    id: int
    run_key: str
    mode: str
    status: str
    workspace_id: str | None
    descriptor_key: str | None
    as_of: datetime
    retention_days_override: int | None
    archive_dir: str | None
    scanned: int
    held: int
    archived: int
    purged: int
    redacted: int
    batches: int
    counts_json: dict[str, Any]
    error_code: str | None
    error_message: str | None
    started_at: datetime
    heartbeat_at: datetime
    finished_at: datetime | None


def _row(row: Any) -> RunRow:
    return record_of(RunRow, row)


def start(conn: Connection, values: dict[str, Any]) -> int:
    row = conn.execute(
        lr.insert().values(status="running", counts_json={}, **values).returning(lr.c.id)
    ).one()
    return int(row.id)


def add_counts(conn: Connection, run_id: int, now: datetime, **deltas: int) -> None:
    """Add to the run's counters (in the caller's transaction) and beat its heartbeat."""
    values: dict[str, Any] = {name: lr.c[name] + int(n) for name, n in deltas.items() if n}
    conn.execute(lr.update().where(lr.c.id == run_id).values(heartbeat_at=now, **values))


def finish(
    conn: Connection,
    run_id: int,
    *,
    status: str,
    now: datetime,
    counts: dict[str, Any],
    error_code: str | None = None,
    error_message: str | None = None,
) -> None:
    conn.execute(
        lr.update()
        .where(lr.c.id == run_id)
        .values(
            status=status,
            finished_at=now,
            heartbeat_at=now,
            counts_json=counts,
            error_code=error_code,
            error_message=(error_message or None) and error_message[:1000],
        )
    )


def fail_stale(conn: Connection, *, before: datetime, now: datetime) -> list[int]:
    """Mark failed (`stale_heartbeat`) every `running` run whose heartbeat is older than
    `before`: a run killed mid-way (`kill -9`) never finishes its row, and the next run says so
    (docs/lifecycle.md, "Purge runbook"). The ids it marked."""
    stale = [
        int(r.id)
        for r in conn.execute(
            select(lr.c.id).where(lr.c.status == "running", lr.c.heartbeat_at < before)
        )
    ]
    if stale:
        conn.execute(
            lr.update()
            .where(lr.c.id.in_(stale), lr.c.status == "running")
            .values(
                status="failed",
                error_code="stale_heartbeat",
                error_message="the run stopped beating (killed or crashed); counts are what it "
                "committed",
                finished_at=now,
            )
        )
    return stale


def failed_since(conn: Connection, since: datetime) -> int:
    """Runs started since `since` that failed (stale ones marked by a later run included)."""
    return int(
        conn.execute(
            select(func.count())
            .select_from(lr)
            .where(lr.c.status == "failed", lr.c.started_at >= since)
        ).scalar_one()
    )


def get(conn: Connection, run_id: int) -> RunRow | None:
    return record_where(conn, lr, _row, lr.c.id == run_id)


def latest(conn: Connection, limit: int = 20) -> list[RunRow]:
    return records(
        conn, select(lr).order_by(lr.c.started_at.desc(), lr.c.id.desc()).limit(limit), _row
    )


DESCRIPTOR = declare(
    __name__,
    "lifecycle_runs",
    RetentionClass.SYSTEM_EVENT,
    cursor_column="started_at",
    min_days=90,
    scope=Scope.GLOBAL,
    archive=archive_on_request("The purge history"),
    only_where=(OnlyWhere("status", ("succeeded", "failed")),),
    notes="Counts only; a running run is never purged.",
)
