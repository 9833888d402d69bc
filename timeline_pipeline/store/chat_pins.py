"""Curators' pins of chat messages (`timeline_chat_pins`, docs/pins.md).

One row per workspace, message and curator: the INSERT ... ON CONFLICT DO NOTHING decides
whether a reaction is the first pin or a repeat, so a duplicate or redelivered reaction finds
the row it made before. A later change (unpin, pin again) is a compare-and-set on the row's
revision that only applies a reaction newer than the last one applied (`action_at`), so an old
event delivered late changes nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from sqlalchemy import Connection, func, select
from sqlalchemy.engine import Row

from timeline_pipeline.db.cas import compare_and_set_record
from timeline_pipeline.db.rows import record_where, records, workspace_records
from timeline_pipeline.db.schema import timeline_chat_pins as pins
from timeline_pipeline.db.upsert import insert_new
from timeline_pipeline.domain.lifecycle import RetentionClass
from timeline_pipeline.domain.lifecycle_declare import declare
from timeline_pipeline.domain.records import record_of

PINNED: Final = "pinned"
UNPINNED: Final = "unpinned"


@dataclass(frozen=True, slots=True)
class PinRow:
    id: int
    workspace_id: str
    message_id: str
    operator_open_id: str
    chat_id: str
    evidence_id: int
    entry_id: int
    status: str
    action_at: datetime
    revision: int
    created_at: datetime
    updated_at: datetime


def _to_pin(row: Row[Any]) -> PinRow:
    return record_of(PinRow, row)


def get(conn: Connection, workspace_id: str, message_id: str, operator: str) -> PinRow | None:
    return record_where(
        conn,
        pins,
        _to_pin,
        pins.c.workspace_id == workspace_id,
        pins.c.message_id == message_id,
        pins.c.operator_open_id == operator,
    )


def insert(
    conn: Connection,
    *,
    workspace_id: str,
    message_id: str,
    operator: str,
    chat_id: str,
    evidence_id: int,
    entry_id: int,
    action_at: datetime,
    now: datetime,
) -> PinRow | None:
    """The first pin of this message by this curator in this workspace; None when a row
    exists already (a repeat, a redelivery, or a concurrent replica that won)."""
    row = insert_new(
        conn,
        pins,
        {
            "workspace_id": workspace_id,
            "message_id": message_id,
            "operator_open_id": operator,
            "chat_id": chat_id,
            "evidence_id": evidence_id,
            "entry_id": entry_id,
            "status": PINNED,
            "action_at": action_at,
            "created_at": now,
            "updated_at": now,
        },
    )
    return None if row is None else _to_pin(row)


def move(
    conn: Connection, pin: PinRow, *, status: str, action_at: datetime, now: datetime
) -> PinRow | None:
    """Pin again or unpin, if the row is still as read and the reaction is newer than the last
    one applied; None otherwise (nothing changed)."""
    return compare_and_set_record(
        conn,
        pins,
        pin,
        _to_pin,
        values={"status": status, "action_at": action_at, "updated_at": now},
        where=pins.c.action_at < action_at,
    )


def of_operator(conn: Connection, message_id: str, operator: str) -> list[PinRow]:
    """Every workspace's pin of this message by this curator (what a removed reaction undoes)."""
    return records(
        conn,
        select(pins)
        .where(pins.c.message_id == message_id, pins.c.operator_open_id == operator)
        .order_by(pins.c.id),
        _to_pin,
    )


def pinned_count(
    conn: Connection, workspace_id: str, message_id: str, *, curators: Sequence[str]
) -> int:
    """How many of `curators` (the workspace's current ones) still pin the message: a removed
    curator's leftover row does not keep the entry pinned (docs/pins.md, "A removed
    curator")."""
    if not curators:
        return 0
    return int(
        conn.execute(
            select(func.count()).where(
                pins.c.workspace_id == workspace_id,
                pins.c.message_id == message_id,
                pins.c.status == PINNED,
                pins.c.operator_open_id.in_(sorted(set(curators))),
            )
        ).scalar_one()
    )


def for_workspace(conn: Connection, workspace_id: str, *, limit: int = 500) -> list[PinRow]:
    return workspace_records(conn, pins, workspace_id, _to_pin, limit=limit)


# --- lifecycle -------------------------------------------------------------------------------

DESCRIPTOR = declare(
    __name__,
    "timeline_chat_pins",
    RetentionClass.COMMUNICATION_LOG,
    cursor_column="updated_at",
    min_days=30,
    notes="Who pinned which message from the chat, and whether it is still pinned: the "
    "idempotency record of pin reactions. Kept as long as the timeline entries by default; the "
    "entry and its audit events stay the record of the curation itself.",
)
