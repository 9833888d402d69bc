"""Review cards (`interaction_requests`): the authoritative record a callback is checked against.

Every status, delivery and decision change is a compare-and-set on the card's revision
(`db/cas.py`), so two replicas admitting clicks on one card, or two workers delivering it,
cannot lose each other's writes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import ColumnElement, Connection, and_, func, or_, select, true
from sqlalchemy.engine import Row

from timeline_pipeline.db.cas import compare_and_set_record, compare_and_set_selected
from timeline_pipeline.db.rows import record_where, records, workspace_records
from timeline_pipeline.db.schema import interaction_requests as ir
from timeline_pipeline.db.upsert import insert_new
from timeline_pipeline.domain.card_requests import (
    CardRequest,
    Decisions,
    decisions_as_json,
    decisions_from_json,
    pending_count,
)
from timeline_pipeline.domain.content_lineage import (
    OnRecall,
    RecallEffect,
    RecallScope,
    Tie,
    declare_content,
)
from timeline_pipeline.domain.interactions import CardStatus, DeliveryStatus
from timeline_pipeline.domain.lifecycle import ChildLink, OnlyWhere, RetentionClass
from timeline_pipeline.domain.lifecycle_declare import declare
from timeline_pipeline.store import entries


@dataclass(frozen=True, slots=True)
class CardRow:
    id: int
    workspace_id: str
    kind: str
    window_state_id: int | None
    processor_version: str
    idempotency_uuid: str
    bot_app_id: str | None
    chat_id: str
    reply_to_message_id: str | None
    message_id: str | None
    thread_id: str | None
    delivery_status: str
    delivery_attempts: int
    status: str
    request: CardRequest
    decisions: Decisions
    revision: int
    expires_at: datetime
    created_at: datetime
    updated_at: datetime


def _to_card(row: Row[Any]) -> CardRow:
    return CardRow(
        row.id,
        row.workspace_id,
        row.kind,
        row.window_state_id,
        row.processor_version,
        row.idempotency_uuid,
        row.bot_app_id,
        row.chat_id,
        row.reply_to_message_id,
        row.message_id,
        row.thread_id,
        row.delivery_status,
        row.delivery_attempts,
        row.status,
        CardRequest.from_json(row.request_json),
        decisions_from_json(row.decisions_json or {}),
        row.revision,
        row.expires_at,
        row.created_at,
        row.updated_at,
    )


def create(
    conn: Connection,
    *,
    workspace_id: str,
    kind: str,
    window_state_id: int | None,
    processor_version: str,
    idempotency_uuid: str,
    chat_id: str,
    reply_to_message_id: str | None,
    request: CardRequest,
    expires_at: datetime,
    now: datetime,
) -> CardRow | None:
    """A queued card, or None when one with this idempotency uuid exists (a rerun)."""
    row = insert_new(
        conn,
        ir,
        {
            "workspace_id": workspace_id,
            "kind": kind,
            "window_state_id": window_state_id,
            "processor_version": processor_version,
            "idempotency_uuid": idempotency_uuid,
            "chat_id": chat_id,
            "reply_to_message_id": reply_to_message_id,
            "delivery_status": DeliveryStatus.QUEUED.value,
            "status": CardStatus.PENDING.value,
            "request_json": request.as_json(),
            "decisions_json": {},
            "expires_at": expires_at,
            "created_at": now,
            "updated_at": now,
        },
    )
    return None if row is None else _to_card(row)


def get(conn: Connection, card_id: int) -> CardRow | None:
    return record_where(conn, ir, _to_card, ir.c.id == card_id)


def get_by_message(conn: Connection, message_id: str) -> CardRow | None:
    return record_where(conn, ir, _to_card, ir.c.message_id == message_id)


def for_workspace(conn: Connection, workspace_id: str, *, limit: int = 100) -> list[CardRow]:
    return workspace_records(conn, ir, workspace_id, _to_card, limit=limit)


def claim_deliveries(
    conn: Connection, *, owner: str, now: datetime, lease: timedelta, limit: int
) -> list[CardRow]:
    """Queued cards no live lease holds, each taken by CAS (a lost race skips the card)."""
    return compare_and_set_selected(
        conn,
        ir,
        select(ir)
        .where(
            ir.c.delivery_status == DeliveryStatus.QUEUED.value,
            or_(ir.c.delivery_due_at.is_(None), ir.c.delivery_due_at <= now),
        )
        .order_by(ir.c.id)
        .limit(limit),
        _to_card,
        values=lambda row: {
            "delivery_owner": owner,
            "delivery_due_at": now + lease,
            "delivery_attempts": row.delivery_attempts + 1,
            "updated_at": now,
        },
        where=ir.c.delivery_status == DeliveryStatus.QUEUED.value,
    )


def _transition(
    conn: Connection,
    card: CardRow,
    values: Mapping[str, Any],
    *,
    where: ColumnElement[bool] | None = None,
) -> CardRow | None:
    """One compare-and-set from the revision `card` was read at: the new row, or None when
    another writer moved the card on (docs/review-cards.md)."""
    return compare_and_set_record(conn, ir, card, _to_card, values=values, where=where)


def mark_delivered(
    conn: Connection,
    card: CardRow,
    *,
    owner: str,
    bot_app_id: str,
    message_id: str,
    thread_id: str | None,
    now: datetime,
) -> CardRow | None:
    """None when the lease was lost (another worker took the card over)."""
    return _transition(
        conn,
        card,
        {
            "delivery_status": DeliveryStatus.SENT.value,
            "bot_app_id": bot_app_id,
            "message_id": message_id,
            "thread_id": thread_id,
            "delivered_at": now,
            "delivery_owner": None,
            "delivery_due_at": None,
            "updated_at": now,
        },
        where=ir.c.delivery_owner == owner,
    )


def retry_delivery_at(conn: Connection, card: CardRow, *, owner: str, at: datetime) -> None:
    """A failed send: release the lease and try again at `at` (or give up after attempts)."""
    _transition(
        conn,
        card,
        {"delivery_owner": None, "delivery_due_at": at, "updated_at": at},
        where=ir.c.delivery_owner == owner,
    )


def fail_delivery(conn: Connection, card: CardRow, *, owner: str, now: datetime) -> None:
    _transition(
        conn,
        card,
        {
            "delivery_status": DeliveryStatus.FAILED.value,
            "status": CardStatus.CANCELLED.value,
            "delivery_owner": None,
            "delivery_due_at": None,
            "updated_at": now,
        },
        where=ir.c.delivery_owner == owner,
    )


def write_state(
    conn: Connection,
    card: CardRow,
    *,
    request: CardRequest,
    decisions: Decisions,
    status: str,
    now: datetime,
) -> CardRow | None:
    """The card's request, decisions and status at once; None when the card moved on."""
    return _transition(
        conn,
        card,
        {
            "request_json": request.as_json(),
            "decisions_json": decisions_as_json(decisions),
            "status": status,
            "updated_at": now,
        },
    )


def expire_due(conn: Connection, *, now: datetime, limit: int = 500) -> list[CardRow]:
    """Pending cards past their persisted expiry become expired (one CAS each)."""
    return compare_and_set_selected(
        conn,
        ir,
        select(ir)
        .where(ir.c.status == CardStatus.PENDING.value, ir.c.expires_at <= now)
        .order_by(ir.c.expires_at, ir.c.id)
        .limit(limit),
        _to_card,
        values=lambda _row: {"status": CardStatus.EXPIRED.value, "updated_at": now},
        expected_status=CardStatus.PENDING.value,
    )


def counts(conn: Connection) -> Mapping[str, int]:
    """Cards by status, and those still queued for delivery, for metrics and health."""
    by_status: dict[str, int] = dict(
        conn.execute(select(ir.c.status, func.count()).group_by(ir.c.status)).all()
    )
    queued = conn.execute(
        select(func.count()).where(
            and_(
                ir.c.delivery_status == DeliveryStatus.QUEUED.value,
                ir.c.status == CardStatus.PENDING.value,
            )
        )
    ).scalar_one()
    return {**{s.value: int(by_status.get(s.value, 0)) for s in CardStatus}, "undelivered": queued}


# --- a recall's copies (docs/lifecycle.md, "What a recall and a hold do to each copy") ---------


def recall_copies(conn: Connection, scope: RecallScope, changed: Sequence[int]) -> RecallEffect:
    """Cards that quote an entry the recall changed (a pin's reply, a review card) take the
    entry's text as it now is, and wait for the card worker to patch them in Lark
    (`redraw_pending`, `claim_redraws`): the chat shows what the timeline shows. A card's own
    revision of the entry follows the stored one, so a click on the patched card still applies."""
    if not changed:
        return RecallEffect()
    wanted = set(changed)
    moved = 0
    for row in conn.execute(select(ir).where(ir.c.workspace_id == scope.workspace_id)).all():
        card = _to_card(row)
        request = card.request
        for quoted in card.request.entries:
            stored = entries.get(conn, quoted.id) if quoted.id in wanted else None
            if stored is None or stored.title == quoted.title:
                continue
            ahead = pending_count(card.decisions.get(quoted.id, []))
            request = request.with_revision(quoted.id, stored.revision + ahead, title=stored.title)
        if request == card.request:
            continue
        values = {"request_json": request.as_json(), "redraw_pending": True}
        moved += int(_transition(conn, card, {**values, "updated_at": scope.now}) is not None)
    return RecallEffect(rows=moved)


def claim_redraws(conn: Connection, *, limit: int = 20) -> list[CardRow]:
    """Delivered cards a recall redacted, to be patched in Lark (oldest first)."""
    return records(
        conn,
        select(ir)
        .where(ir.c.redraw_pending == true(), ir.c.message_id.is_not(None))
        .order_by(ir.c.updated_at, ir.c.id)
        .limit(limit),
        _to_card,
    )


def redrawn(conn: Connection, card: CardRow, *, now: datetime) -> CardRow | None:
    """The card was patched as read; None when it changed meanwhile (patched again later)."""
    return _transition(conn, card, {"redraw_pending": False, "updated_at": now})


CONTENT = declare_content(
    __name__,
    "interaction_requests",
    text_columns=("request_json",),
    tie=Tie.ENTRY,
    tie_column="request_json",
    on_recall=OnRecall.REDACT,
    apply=recall_copies,
    stage=1,
    notes="A card quotes its entries' titles; it follows the entry and is patched in Lark.",
)


# --- lifecycle -------------------------------------------------------------------------------

DESCRIPTOR = declare(
    __name__,
    "interaction_requests",
    RetentionClass.OPERATIONAL_QUEUE,
    cursor_column="expires_at",
    min_days=7,
    # A pending card is never purged; its callback tokens go with it (ON DELETE CASCADE).
    only_where=(OnlyWhere("status", ("submitted", "expired", "cancelled")),),
    children=(ChildLink("interaction_admissions.interaction_admissions", "request_id"),),
    notes="Review cards: what the card offered and where it went; 30 days after it expired "
    "the curation it led to is in the entries and the audit trail.",
)
