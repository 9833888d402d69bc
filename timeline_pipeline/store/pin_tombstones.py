"""Pin reactions' removals that arrived before their creation (`timeline_pin_tombstones`).

Lark delivers reactions at least once and in no set order; the product orders a curator's
reactions on a message by Lark's `action_time` (docs/pins.md). A removal that finds no pin row
(its creation has not arrived yet) leaves a tombstone here, one row per workspace the curator
curates, message, curator and emoji, so that the creation, when it arrives with an older
`action_time`, does not pin. A redelivered or later removal only moves the row's `removed_at`
forward. A tombstone holds ids and times, never content, and is purged by its descriptor.

A removal and a creation of the same reaction handled at once on two replicas must see each
other: each takes `lock_reaction` (a per message and curator advisory lock held to the end of
the transaction) before it reads the pin rows and the tombstones, so whichever commits first is
seen by the other. SQLite runs one writer at a time (BEGIN IMMEDIATE, db/engine.py) and needs
no lock.

The only module with this table's SQL.
"""

from __future__ import annotations

from datetime import datetime
from typing import Final

from sqlalchemy import Connection, func, select

from timeline_pipeline.db.schema import timeline_pin_tombstones as pt
from timeline_pipeline.db.upsert import upsert
from timeline_pipeline.domain.lifecycle import RetentionClass
from timeline_pipeline.domain.lifecycle_declare import declare

__all__ = ["DESCRIPTOR", "lock_reaction", "record", "removed_at"]

_LOCK_NAMESPACE: Final = 0x7470_0A03
"""The first key of the per message and curator advisory lock between a reaction's creation
and its removal (recall tombstones use 0x7470_0A02)."""


def lock_reaction(conn: Connection, message_id: str, operator: str) -> None:
    """Before a reaction reads the pin rows and tombstones of (message, curator): take their
    lock, so a creation and a removal of that reaction never miss each other."""
    if conn.dialect.name != "postgresql":
        return
    key = func.hashtext(f"{message_id}\x1f{operator}")
    conn.execute(select(func.pg_advisory_xact_lock(_LOCK_NAMESPACE, key)))


def record(
    conn: Connection,
    *,
    workspace_id: str,
    message_id: str,
    operator: str,
    emoji_type: str,
    removed_at: datetime,
    now: datetime,
) -> None:
    """Leave the tombstone, or move an existing one's `removed_at` forward (never back: an
    older removal delivered late changes nothing)."""
    upsert(
        conn,
        pt,
        {
            "workspace_id": workspace_id,
            "message_id": message_id,
            "operator_open_id": operator,
            "emoji_type": emoji_type,
            "removed_at": removed_at,
            "created_at": now,
            "updated_at": now,
        },
        key=[pt.c.workspace_id, pt.c.message_id, pt.c.operator_open_id, pt.c.emoji_type],
        update=("removed_at", "updated_at"),
        where=lambda new: pt.c.removed_at < new.removed_at,
    )


def removed_at(
    conn: Connection, workspace_id: str, message_id: str, operator: str, emoji_type: str
) -> datetime | None:
    """When the curator's latest early removal of this reaction happened, if one arrived."""
    value: datetime | None = conn.execute(
        select(pt.c.removed_at).where(
            pt.c.workspace_id == workspace_id,
            pt.c.message_id == message_id,
            pt.c.operator_open_id == operator,
            pt.c.emoji_type == emoji_type,
        )
    ).scalar_one_or_none()
    return value


# --- lifecycle -------------------------------------------------------------------------------

DESCRIPTOR = declare(
    __name__,
    "timeline_pin_tombstones",
    RetentionClass.OPERATIONAL_QUEUE,
    cursor_column="updated_at",
    min_days=1,
    default_days=7,
    max_days=30,
    batch_limit=10_000,
    notes=(
        "Pin reactions' removals that arrived before their creation (ids and times only). Lark "
        "redelivers an event for hours, not days, after its first attempt: a day after the "
        "removal no creation it outranks is still on its way, hence the minimum."
    ),
)
