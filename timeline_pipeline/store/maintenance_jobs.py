"""Maintenance job store: the only SQL of `maintenance_jobs` (docs/maintenance.md).

Functions take a Connection so that the job service composes them with a processor's batch in
one transaction: the data, the checkpoint, the counters and the revision commit together.
Status and limit changes are compare-and-set transitions on the revision (`db.cas`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg
from sqlalchemy import Connection, select
from sqlalchemy.engine import Row
from sqlalchemy.exc import DBAPIError, IntegrityError

from timeline_pipeline.db.cas import compare_and_set_record
from timeline_pipeline.db.rows import json_object, record_where
from timeline_pipeline.db.schema import maintenance_jobs as mj
from timeline_pipeline.domain.content_lineage import OnRecall, Tie, declare_content
from timeline_pipeline.domain.lifecycle import OnlyWhere, RetentionClass
from timeline_pipeline.domain.lifecycle_declare import declare
from timeline_pipeline.domain.maintenance import OPEN_MAINTENANCE_STATUSES
from timeline_pipeline.domain.records import record_of

LOCK_NOT_AVAILABLE = "55P03"


class JobRowBusy(Exception):
    """Another transaction holds the job row (PostgreSQL NOWAIT) or the database write lock
    (SQLite): nothing was read or changed; try again after the short batch holding it ends."""


class DuplicateJob(Exception):
    """The insert met an existing job: the same idempotency key or an open job of the scope."""


@dataclass(frozen=True)
class MaintenanceJob:
    id: str
    job_type: str
    processor_version: str
    scope_key: str
    idempotency_key: str
    input_hash: str
    parameters: dict[str, Any]
    apply: bool
    status: str
    phase: str
    revision: int
    batch_size: int
    delay_ms: int
    lock_timeout_ms: int
    statement_timeout_ms: int
    checkpoint: dict[str, Any]
    progress: dict[str, Any]
    result: dict[str, Any] | None
    error: dict[str, Any] | None
    batches: int
    not_before: datetime | None
    created_at: datetime
    updated_at: datetime
    finished_at: datetime | None


def _to_job(row: Row[Any]) -> MaintenanceJob:
    return record_of(
        MaintenanceJob,
        row,
        parameters=json_object(row.parameters_json),
        apply=bool(row.apply),
        checkpoint=json_object(row.checkpoint_json),
        progress=json_object(row.progress_json),
        result=None if row.result_json is None else dict(row.result_json),
        error=None if row.error_json is None else dict(row.error_json),
    )


def workspace_of(parameters: Any) -> str | None:
    """The workspace a job's parameters name: every processor's scope (docs/maintenance.md),
    stored in its own column so that holds and the lifecycle see whose job it is."""
    if isinstance(parameters, Mapping):
        found = parameters.get("workspace_id")
        if isinstance(found, str) and found:
            return found
    return None


def insert(conn: Connection, values: Mapping[str, Any]) -> MaintenanceJob:
    """Insert a new job in a savepoint; DuplicateJob when a unique rule refuses it (the caller
    then reads what is there), with the caller's transaction still usable."""
    row_values = {"workspace_id": workspace_of(values.get("parameters_json")), **values}
    try:
        with conn.begin_nested():
            row = conn.execute(mj.insert().values(**row_values).returning(*mj.c)).one()
    except IntegrityError:
        raise DuplicateJob from None
    return _to_job(row)


def get(conn: Connection, job_id: str) -> MaintenanceJob | None:
    return record_where(conn, mj, _to_job, mj.c.id == job_id)


def get_by_idempotency_key(conn: Connection, key: str) -> MaintenanceJob | None:
    return record_where(conn, mj, _to_job, mj.c.idempotency_key == key)


def open_for_scope(conn: Connection, job_type: str, scope_key: str) -> MaintenanceJob | None:
    """The ready or paused job of this type and scope, if any (at most one by the index)."""
    return record_where(
        conn,
        mj,
        _to_job,
        mj.c.job_type == job_type,
        mj.c.scope_key == scope_key,
        mj.c.status.in_([s.value for s in OPEN_MAINTENANCE_STATUSES]),
    )


def lock_nowait(conn: Connection, job_id: str) -> MaintenanceJob | None:
    """Read the job row locked for this transaction, never waiting for another holder.

    PostgreSQL: `SELECT ... FOR UPDATE NOWAIT`; a held row raises JobRowBusy at once. SQLite has
    no row locks: the job service opens the transaction with `BEGIN IMMEDIATE` under a zero busy
    timeout, which already holds the database's write lock (or failed busy), so a plain read is
    as good as locked here.
    """
    stmt = select(mj).where(mj.c.id == job_id)
    if conn.dialect.name == "postgresql":
        stmt = stmt.with_for_update(nowait=True)
    try:
        row = conn.execute(stmt).first()
    except DBAPIError as exc:
        if is_lock_busy(exc):
            raise JobRowBusy from None
        raise
    return None if row is None else _to_job(row)


def is_lock_busy(exc: DBAPIError) -> bool:
    """A lock that could not be taken without waiting (NOWAIT or a zero busy timeout)."""
    orig = exc.orig
    if isinstance(orig, psycopg.Error):
        return orig.sqlstate == LOCK_NOT_AVAILABLE
    return isinstance(orig, sqlite3.OperationalError) and "locked" in str(orig)


def transition(
    conn: Connection,
    job: MaintenanceJob,
    values: Mapping[str, Any],
    *,
    expected_status: str | None = None,
) -> MaintenanceJob | None:
    """One compare-and-set from the revision `job` was read at: the new job, or None."""
    return compare_and_set_record(
        conn, mj, job, _to_job, values=values, expected_status=expected_status
    )


# --- lifecycle -------------------------------------------------------------------------------

DESCRIPTOR = declare(
    __name__,
    "maintenance_jobs",
    RetentionClass.SYSTEM_EVENT,
    cursor_column="updated_at",
    min_days=30,
    # Every job is scoped by its parameters' workspace (0018_maintenance_workspace): a
    # workspace hold reaches its jobs, and the dry-run counts them held, not purgeable.
    batch_limit=1_000,
    # Finished jobs only: a ready or paused job is an operator's open work.
    only_where=(OnlyWhere("status", ("completed", "cancelled")),),
    notes="Operator maintenance jobs of a workspace (ids, counts and checkpoints; a rerun "
    "preview's report keeps ids and counts, its titles stay in the preview's scratch rows): a "
    "year of history, held with the workspace.",
)

CONTENT = declare_content(
    __name__,
    "maintenance_jobs",
    text_columns=("result_json", "progress_json"),
    tie=Tie.EVIDENCE_ID,
    tie_column="result_json",
    on_recall=OnRecall.IDS_ONLY,
    notes="A job's report keeps ids and counts, never a message's text (docs/maintenance.md).",
)
