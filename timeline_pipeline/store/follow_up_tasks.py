"""Confirmed next steps' Lark tasks (`follow_up_tasks`): the only module with their SQL.

A curator's confirmation of a next-step entry queues its task in the confirmation's own
transaction (one row per entry: a second confirmation changes nothing); the report worker
creates it in Lark with the row's `client_token`, so a retry or a restart returns the first
task instead of making a second (docs/report.md, "Follow-ups as Lark tasks"). Hiding the entry
later leaves the task alone: it is the team's now. Ids, states and the task's link only.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, select

from timeline_pipeline.db.cas import compare_and_set_record
from timeline_pipeline.db.rows import records
from timeline_pipeline.db.schema import follow_up_tasks as ft
from timeline_pipeline.db.upsert import insert_new
from timeline_pipeline.domain.lifecycle import RetentionClass
from timeline_pipeline.domain.lifecycle_declare import declare
from timeline_pipeline.domain.records import record_of

__all__ = [
    "DESCRIPTOR",
    "FollowUpTask",
    "client_token_for",
    "for_workspace",
    "move",
    "pending",
    "request",
]

_NAMESPACE = uuid.UUID("5b7a3f0e-6a52-4a35-9d2c-3b8f0f2f7a11")


@dataclass(frozen=True, slots=True)
class FollowUpTask:
    id: int
    workspace_id: str
    entry_id: int
    client_token: str
    state: str
    task_guid: str | None
    task_url: str | None
    requested_by: str
    attempt_count: int
    last_error: str | None
    revision: int


def _to_task(row: Any) -> FollowUpTask:
    return record_of(FollowUpTask, row)


def client_token_for(workspace_id: str, entry_id: int) -> str:
    """The task's idempotency key: the same entry always asks Lark for the same task."""
    return str(uuid.uuid5(_NAMESPACE, f"{workspace_id}\x1f{entry_id}"))


def request(
    conn: Connection, *, workspace_id: str, entry_id: int, actor: str, now: datetime
) -> bool:
    """Queue the entry's task; False when it was queued (or made) before."""
    made = insert_new(
        conn,
        ft,
        {
            "workspace_id": workspace_id,
            "entry_id": entry_id,
            "client_token": client_token_for(workspace_id, entry_id),
            "state": "pending",
            "requested_by": actor[:128],
            "created_at": now,
            "updated_at": now,
        },
        returning=[ft.c.id],
        conflict=[ft.c.entry_id],
    )
    return made is not None


def pending(conn: Connection, *, limit: int = 50) -> list[FollowUpTask]:
    return records(
        conn, select(ft).where(ft.c.state == "pending").order_by(ft.c.id).limit(limit), _to_task
    )


def for_workspace(conn: Connection, workspace_id: str) -> list[FollowUpTask]:
    return records(
        conn, select(ft).where(ft.c.workspace_id == workspace_id).order_by(ft.c.id), _to_task
    )


def move(conn: Connection, read: FollowUpTask, **values: Any) -> FollowUpTask | None:
    return compare_and_set_record(conn, ft, read, _to_task, values=values, expected_status=None)


# --- lifecycle -------------------------------------------------------------------------------

DESCRIPTOR = declare(
    __name__,
    "follow_up_tasks",
    RetentionClass.COMMUNICATION_LOG,
    cursor_column="updated_at",
    min_days=30,
    notes="Which Lark task a confirmed next step became (ids and link only).",
)
