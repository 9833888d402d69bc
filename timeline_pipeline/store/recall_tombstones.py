"""Recalls that arrived before their message (`workspace_timeline_recall_tombstones`).

Lark delivers in no set order, so a recall can reach the receiver before the message it
recalls, by event or by history. The recall then finds no evidence row to redact; it leaves a
tombstone here instead, one row per bound workspace, and the shared ingest path stores the
message's later arrival redacted, exactly as if the recall had come after it (docs/design.md
§4, "A recall before its message"). A tombstone holds ids and times, never content.

Two writers meet here: a recall that missed its message, and a write of that message on another
receiver replica or by reconciliation. Each checks the other's table in its own transaction,
and on PostgreSQL a statement sees only what had committed when it began, so two that run at
once could each miss the other and leave the message stored in clear. A per-chat advisory lock,
held to the end of the transaction, orders them: every evidence write of a chat shares it
(`lock_for_messages`, taken before the tombstones are read), and a recall that missed its
message takes it alone (`lock_for_recall`, then reads the evidence again before leaving its
tombstone). Whichever commits first is seen by the other. Within one transaction chats are
locked in chat order, a chat's recalls before its messages (receiver/handlers.py), so two
transactions never wait for each other in a circle (docs/deployment-receivers.md). SQLite runs
one writer at a time (BEGIN IMMEDIATE, db/engine.py) and needs no lock.

The only module with this table's SQL.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Final

from sqlalchemy import Connection, func, select

from timeline_pipeline.db.schema import workspace_timeline_recall_tombstones as rt
from timeline_pipeline.db.upsert import insert_new
from timeline_pipeline.domain.lifecycle import RetentionClass
from timeline_pipeline.domain.lifecycle_declare import declare

__all__ = [
    "DESCRIPTOR",
    "TombstoneKey",
    "lock_for_messages",
    "lock_for_recall",
    "recalled",
    "record",
]

_LOCK_NAMESPACE: Final = 0x7470_0A02
"""The first key of the per-chat advisory lock between recalls and message writes."""

TombstoneKey = tuple[str, str, str]
"""(workspace_id, chat_id, message_id)."""


def lock_for_messages(conn: Connection, chat_ids: Iterable[str]) -> None:
    """Before an evidence write reads the tombstones of its chats: share each chat's lock, in
    chat order, so a recall that is placing a tombstone in one of them commits first."""
    if conn.dialect.name != "postgresql":
        return
    for chat_id in sorted(set(chat_ids)):
        conn.execute(
            select(func.pg_advisory_xact_lock_shared(_LOCK_NAMESPACE, func.hashtext(chat_id)))
        )


def lock_for_recall(conn: Connection, chat_id: str) -> None:
    """Before a recall that missed its message reads the evidence again: take the chat's lock
    alone, so every write of the chat already under way has committed (and is seen) first."""
    if conn.dialect.name != "postgresql":
        return
    conn.execute(select(func.pg_advisory_xact_lock(_LOCK_NAMESPACE, func.hashtext(chat_id))))


def record(
    conn: Connection,
    workspace_id: str,
    chat_id: str,
    message_id: str,
    *,
    recalled_at: datetime,
    now: datetime,
) -> bool:
    """Leave the tombstone; False when one was there already (a redelivered recall keeps the
    first recall time, as `lark.normalize.redact` does for a row)."""
    made = insert_new(
        conn,
        rt,
        {
            "workspace_id": workspace_id,
            "chat_id": chat_id,
            "message_id": message_id,
            "recalled_at": recalled_at,
            "created_at": now,
        },
        returning=[rt.c.id],
        conflict=[rt.c.workspace_id, rt.c.chat_id, rt.c.message_id],
    )
    return made is not None


def recalled(
    conn: Connection, workspace_ids: Sequence[str], chat_ids: Sequence[str]
) -> dict[TombstoneKey, datetime]:
    """The tombstones of these workspaces' chats, with their recall times.

    Read by every evidence write, so it is one range of the unique (workspace_id, chat_id,
    message_id) index per pair, and answers by chat rather than by message: tombstones are rare
    and short-lived, a page of messages is not."""
    if not workspace_ids or not chat_ids:
        return {}
    rows = conn.execute(
        select(rt.c.workspace_id, rt.c.chat_id, rt.c.message_id, rt.c.recalled_at).where(
            rt.c.workspace_id.in_(sorted(set(workspace_ids))),
            rt.c.chat_id.in_(sorted(set(chat_ids))),
        )
    )
    return {(r.workspace_id, r.chat_id, r.message_id): r.recalled_at for r in rows}


# --- lifecycle -------------------------------------------------------------------------------

DESCRIPTOR = declare(
    __name__,
    "workspace_timeline_recall_tombstones",
    RetentionClass.OPERATIONAL_QUEUE,
    cursor_column="created_at",
    min_days=3,
    default_days=7,
    max_days=30,
    batch_limit=10_000,
    notes=(
        "Recalls that arrived before their message (ids and times only). A message is ingested "
        "only within the ingestion lookback (at most 72 h) of its creation, which precedes its "
        "recall and so the tombstone: after three days none can arrive, hence the minimum."
    ),
)
