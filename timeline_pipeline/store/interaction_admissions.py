"""The durable admission queue (`interaction_admissions`): admitted card decisions the worker
applies once.

A row is inserted with ON CONFLICT DO NOTHING on the callback's event id and on its decision
key, so a redelivered or replayed callback, on any replica, is admitted once; the same statement
keeps the workspace's working rows under its admission limit (see `admit`). The worker takes
rows with a lease by compare-and-set; an expired lease is taken over by any other worker. Rows
of one card are taken in admission order, one at a time, so an edit lands before the confirm
that followed it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, String, cast, exists, func, literal, or_, select, update
from sqlalchemy.engine import Row
from sqlalchemy.orm import aliased

from timeline_pipeline.db.cas import (
    compare_and_set_from,
    compare_and_set_record,
    compare_and_set_selected,
)
from timeline_pipeline.db.rows import record_where
from timeline_pipeline.db.schema import interaction_admissions as ia
from timeline_pipeline.db.upsert import insert_for
from timeline_pipeline.domain.interactions import (
    WORKING_ADMISSION_STATUSES,
    AdmissionStatus,
    CardAction,
)
from timeline_pipeline.domain.lifecycle import OnlyWhere, RequiredIndex, RetentionClass
from timeline_pipeline.domain.lifecycle_declare import declare
from timeline_pipeline.domain.records import record_of

_WORKING = [s.value for s in WORKING_ADMISSION_STATUSES]
_LOCK_NAMESPACE = 0x7470_0A01
"""The first key of the per-workspace advisory lock that serializes admissions on PostgreSQL."""


class AdmissionLimitReached(Exception):
    """The workspace already has as many working admissions as its limit allows."""


@dataclass(frozen=True, slots=True)
class AdmissionRow:
    id: int
    request_id: int
    workspace_id: str
    event_id: str
    entry_id: int
    entry_revision: int
    action: CardAction
    value: str | None
    actor_open_id: str
    status: str
    attempts: int
    revision: int
    lease_owner: str | None
    outcome: str | None
    admitted_at: datetime


def _to_admission(row: Row[Any]) -> AdmissionRow:
    return record_of(
        AdmissionRow,
        row,
        action=CardAction(row.action),
        value=(row.value_json or {}).get("value"),
    )


def admit(
    conn: Connection,
    *,
    request_id: int,
    workspace_id: str,
    event_id: str,
    decision_key: str,
    entry_id: int,
    entry_revision: int,
    action: CardAction,
    value: str | None,
    actor_open_id: str,
    now: datetime,
    limit: int,
) -> int | None:
    """The new admission's id, or None when this callback (or decision) was admitted before;
    AdmissionLimitReached when the workspace has `limit` working admissions already.

    The count and the insert are one `INSERT ... SELECT ... WHERE count < limit`, so no two
    admissions can both see room for one. SQLite runs one writer at a time (BEGIN IMMEDIATE,
    db/engine.py); on PostgreSQL a statement sees only what had committed when it began, so an
    advisory lock per workspace, held to the end of the transaction, makes the second admission
    wait for the first and count it.
    """
    if conn.dialect.name == "postgresql":
        conn.execute(
            select(func.pg_advisory_xact_lock(_LOCK_NAMESPACE, func.hashtext(workspace_id)))
        )
    working = (
        select(func.count())
        .select_from(ia)
        .where(ia.c.workspace_id == workspace_id, ia.c.status.in_(_WORKING))
        .scalar_subquery()
    )
    values: dict[str, Any] = {
        "request_id": request_id,
        "workspace_id": workspace_id,
        "event_id": event_id,
        "decision_key": decision_key,
        "entry_id": entry_id,
        "entry_revision": entry_revision,
        "action": action.value,
        "value_json": {"value": value},
        "actor_open_id": actor_open_id,
        "status": AdmissionStatus.QUEUED.value,
        "admitted_at": now,
    }
    source = select(*(literal(v, ia.c[k].type) for k, v in values.items())).where(working < limit)
    admitted = conn.execute(
        insert_for(conn, ia)
        .from_select(list(values), source)
        .on_conflict_do_nothing()
        .returning(ia.c.id)
    ).scalar_one_or_none()
    if admitted is not None:
        return int(admitted)
    if by_event(conn, event_id) is not None or by_decision_key(conn, decision_key) is not None:
        return None
    raise AdmissionLimitReached(workspace_id)


def get(conn: Connection, admission_id: int) -> AdmissionRow | None:
    return record_where(conn, ia, _to_admission, ia.c.id == admission_id)


def by_event(conn: Connection, event_id: str) -> AdmissionRow | None:
    return record_where(conn, ia, _to_admission, ia.c.event_id == event_id)


def by_decision_key(conn: Connection, decision_key: str) -> AdmissionRow | None:
    return record_where(conn, ia, _to_admission, ia.c.decision_key == decision_key)


def fail_queued_after(
    conn: Connection,
    admission: AdmissionRow,
    *,
    outcome: str,
    now: datetime,
) -> list[int]:
    """Fail the decisions on the same card and entry admitted after `admission` and not yet
    taken: they were made on the revision `admission` would have led to, which it did not.
    Rows of one card are taken one at a time in order (`claim`), so none of them is leased."""
    failed = conn.execute(
        update(ia)
        .where(
            ia.c.request_id == admission.request_id,
            ia.c.entry_id == admission.entry_id,
            ia.c.id > admission.id,
            ia.c.status == AdmissionStatus.QUEUED.value,
        )
        .values(
            status=AdmissionStatus.FAILED.value,
            outcome=outcome,
            decision_key=_retired_key(),
            finished_at=now,
            lease_owner=None,
            lease_expires_at=None,
            revision=ia.c.revision + 1,
        )
        .returning(ia.c.id)
    ).scalars()
    return sorted(int(i) for i in failed)


def _retired_key() -> Any:
    return ia.c.decision_key + ":failed:" + cast(ia.c.id, String)


def retire_key(conn: Connection, admission_id: int) -> None:
    """Free a decision's key once it failed to apply: the same decision made again on the
    redrawn card (which may show the same revision number) is a new decision, not a repeat."""
    conn.execute(
        update(ia)
        .where(ia.c.id == admission_id, ~ia.c.decision_key.like("%:failed:%"))
        .values(decision_key=_retired_key())
    )


def claim(
    conn: Connection, *, owner: str, now: datetime, lease: timedelta, limit: int
) -> list[AdmissionRow]:
    """Up to `limit` unleased (or lease-expired) working rows, the oldest of each card only."""
    earlier = aliased(ia)
    return compare_and_set_selected(
        conn,
        ia,
        select(ia)
        .where(
            ia.c.status.in_(_WORKING),
            or_(ia.c.lease_expires_at.is_(None), ia.c.lease_expires_at <= now),
            ~exists().where(
                earlier.c.request_id == ia.c.request_id,
                earlier.c.status.in_(_WORKING),
                earlier.c.id < ia.c.id,
            ),
        )
        .order_by(ia.c.id)
        .limit(limit),
        _to_admission,
        values=lambda row: {
            "lease_owner": owner,
            "lease_expires_at": now + lease,
            "attempts": row.attempts + 1,
        },
        where=ia.c.status.in_(_WORKING),
    )


def advance(
    conn: Connection,
    admission: AdmissionRow,
    *,
    owner: str,
    status: AdmissionStatus,
    now: datetime,
    outcome: str | None = None,
    release: bool = False,
) -> AdmissionRow | None:
    """Move a leased row on; None when the lease was lost to another worker meanwhile."""
    values: dict[str, Any] = {"status": status.value}
    if outcome is not None:
        values["outcome"] = outcome
    if status is AdmissionStatus.APPLIED:
        values["applied_at"] = now
    if status in (AdmissionStatus.DONE, AdmissionStatus.FAILED) or release:
        values.update(lease_owner=None, lease_expires_at=None)
    if status in (AdmissionStatus.DONE, AdmissionStatus.FAILED):
        values["finished_at"] = now
    return compare_and_set_record(
        conn,
        ia,
        admission,
        _to_admission,
        values=values,
        expected_status=admission.status,
        where=ia.c.lease_owner == owner,
    )


def release(conn: Connection, admission: AdmissionRow, *, owner: str, at: datetime) -> None:
    """Give the row back (a follow-up failed): it is taken again once `at` has passed."""
    compare_and_set_from(
        conn,
        ia,
        admission,
        values={"lease_expires_at": at},
        expected_status=admission.status,
        where=ia.c.lease_owner == owner,
    )


def backlog(conn: Connection, *, now: datetime) -> Mapping[str, float]:
    """Working rows by status and the age of the oldest, for metrics and health."""
    by_status: dict[str, int] = dict(
        conn.execute(
            select(ia.c.status, func.count()).where(ia.c.status.in_(_WORKING)).group_by(ia.c.status)
        ).all()
    )
    oldest = conn.execute(
        select(func.min(ia.c.admitted_at)).where(ia.c.status.in_(_WORKING))
    ).scalar_one_or_none()
    age = (now - oldest).total_seconds() if oldest is not None else 0.0
    return {**{s: float(by_status.get(s, 0)) for s in _WORKING}, "oldest_age_seconds": age}


# --- lifecycle -------------------------------------------------------------------------------

DESCRIPTOR = declare(
    __name__,
    "interaction_admissions",
    RetentionClass.OPERATIONAL_QUEUE,
    cursor_column="admitted_at",
    min_days=7,
    indexes=(RequiredIndex(("request_id",), "the cards' live-child probe"),),
    # Finished decisions only: a queued or applied one is still the worker's.
    only_where=(OnlyWhere("status", ("done", "failed")),),
    notes="The durable admission queue of card callbacks, purged before its cards.",
)
