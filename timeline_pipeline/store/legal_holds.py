"""The legal holds table: the only place with its SQL (docs/lifecycle.md, "Legal holds").

A hold is created active and leaves that state only through `release`, a compare-and-set on
status and revision; its `review_at` is a review date and nothing here ever reads it to release.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, func, or_, select

from timeline_pipeline.db.cas import compare_and_set_record
from timeline_pipeline.db.rows import record_where, records
from timeline_pipeline.db.schema import legal_holds as lh
from timeline_pipeline.db.upsert import insert_new
from timeline_pipeline.domain.records import record_of

ACTIVE = "active"
RELEASED = "released"


@dataclass(frozen=True, slots=True)
class HoldRow:
    id: str
    workspace_id: str
    descriptor_key: str | None
    status: str
    revision: int
    reason: str
    review_at: datetime | None
    created_by: str
    create_idempotency_key: str
    create_request_hash: str
    released_at: datetime | None
    released_by: str | None
    release_reason: str | None
    release_idempotency_key: str | None
    release_request_hash: str | None
    created_at: datetime
    updated_at: datetime


def _row(row: Any) -> HoldRow:
    return record_of(HoldRow, row)


def insert(conn: Connection, values: dict[str, Any]) -> bool:
    """Insert a new hold; False when its create idempotency key is already taken."""
    made = insert_new(
        conn,
        lh,
        values,
        returning=[lh.c.id],
        conflict=["workspace_id", "create_idempotency_key"],
    )
    return made is not None


def get(conn: Connection, hold_id: str) -> HoldRow | None:
    return record_where(conn, lh, _row, lh.c.id == hold_id)


def by_create_key(conn: Connection, workspace_id: str, key: str) -> HoldRow | None:
    """The workspace's hold created under `key` (keys are scoped per workspace)."""
    return record_where(
        conn, lh, _row, lh.c.workspace_id == workspace_id, lh.c.create_idempotency_key == key
    )


def by_release_key(conn: Connection, workspace_id: str, key: str) -> HoldRow | None:
    """The workspace's hold released under `key`."""
    return record_where(
        conn, lh, _row, lh.c.workspace_id == workspace_id, lh.c.release_idempotency_key == key
    )


def release(conn: Connection, hold: HoldRow, values: dict[str, Any]) -> HoldRow | None:
    """Active -> released if nobody moved the hold since it was read; None otherwise."""
    return compare_and_set_record(
        conn, lh, hold, _row, expected_status=ACTIVE, values={"status": RELEASED, **values}
    )


def list_all(conn: Connection, *, active_only: bool = False) -> list[HoldRow]:
    stmt = select(lh).order_by(lh.c.created_at, lh.c.id)
    if active_only:
        stmt = stmt.where(lh.c.status == ACTIVE)
    return records(conn, stmt, _row)


def active_for(
    conn: Connection, descriptor_keys: Iterable[str], workspace_id: str | None = None
) -> list[HoldRow]:
    """Active holds reaching any of `descriptor_keys`: workspace-wide ones and those naming one
    of the keys, optionally of one workspace. Never filtered by a descriptor's own flags."""
    keys = sorted(set(descriptor_keys))
    stmt = select(lh).where(
        lh.c.status == ACTIVE,
        or_(lh.c.descriptor_key.is_(None), lh.c.descriptor_key.in_(keys)),
    )
    if workspace_id is not None:
        stmt = stmt.where(lh.c.workspace_id == workspace_id)
    return records(conn, stmt.order_by(lh.c.id), _row)


def last_released_at(conn: Connection) -> datetime | None:
    """When the latest release happened (the lifecycle sensor's cursor)."""
    return conn.execute(select(func.max(lh.c.released_at))).scalar_one_or_none()
