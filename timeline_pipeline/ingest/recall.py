"""Recalled messages: apply the deletion policy to the evidence already stored.

A recall event carries ids and a time, no content, so the redacted record is rebuilt from the
stored row and passed through `lark.normalize.redact`, the same function the history path uses
for a deleted item. Both paths therefore produce the same content hash for the same recall, and
the evidence upsert lets a redaction win over any concurrent edit. Every bound workspace is
redacted, whatever its status: a workspace that no longer ingests must still forget.

A recall goes through the legal-hold gate (`lifecycle.hold_gate`, docs/lifecycle.md): in a
workspace a hold reaches, the row is redacted in its columns like any recall (so no view, API,
summary, card or synthesis sees it) and its content is set aside until the hold is released.

A recall that arrives before its message (out of order) finds no row and changes nothing; the
reconciliation history refresh sees the message as deleted and stores it redacted.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import datetime
from functools import partial

from sqlalchemy import Connection

from timeline_pipeline.domain.evidence import EvidenceRow, UpsertOutcome
from timeline_pipeline.domain.keys import SOURCE_LARK, SOURCE_TYPE_LARK_MESSAGE, message_source_key
from timeline_pipeline.ingest.records import evidence_record
from timeline_pipeline.lark.normalize import NormalizedLarkMessage, redact
from timeline_pipeline.lifecycle import hold_gate
from timeline_pipeline.store import evidence

REDACTED = "redacted"
ALREADY_REDACTED = "already_redacted"
NOT_FOUND = "not_found"
HELD = "held"
"""Redacted in view, content set aside under a legal hold (also counted as REDACTED)."""


def message_from_row(row: EvidenceRow, *, message_id: str) -> NormalizedLarkMessage:
    """The normalized message a stored evidence row was made from (enough to redact it)."""
    metadata = {key: value for key, value in row.metadata.items() if key != "sender_type"}
    sender_type = row.metadata.get("sender_type")
    message_type = row.metadata.get("message_type")
    return NormalizedLarkMessage(
        message_id=message_id,
        chat_id=str(row.metadata.get("chat_id") or row.scope_key or ""),
        chat_type=None,
        thread_id=_optional(row.metadata.get("thread_id")),
        root_id=_optional(row.metadata.get("root_id")),
        parent_id=_optional(row.metadata.get("parent_id")),
        sender_id=row.actor_id,
        sender_type=sender_type if isinstance(sender_type, str) else "unknown",
        message_type=message_type if isinstance(message_type, str) else "unknown",
        text=row.content,
        created_at=row.occurred_at,
        updated_at=row.source_updated_at,
        deleted=row.deleted,
        ai_eligible=row.ai_eligible,
        metadata=metadata,
    )


def _optional(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def redact_everywhere(
    conn: Connection,
    workspace_ids: Sequence[str],
    *,
    chat_id: str,
    message_id: str,
    recalled_at: datetime,
    now: datetime,
) -> Counter[str]:
    """Redact the message in each workspace, in the caller's transaction.

    Returns counts keyed REDACTED / ALREADY_REDACTED / NOT_FOUND, and HELD for the
    workspaces whose content a legal hold set aside.
    """
    key = message_source_key(chat_id, message_id)
    counts: Counter[str] = Counter()
    for workspace_id in workspace_ids:
        row = evidence.get_by_key(conn, workspace_id, SOURCE_LARK, SOURCE_TYPE_LARK_MESSAGE, key)
        if row is None:
            counts[NOT_FOUND] += 1
            continue
        if row.deleted:
            counts[ALREADY_REDACTED] += 1
            continue
        redacted = redact(message_from_row(row, message_id=message_id), recalled_at=recalled_at)
        record = evidence_record(redacted, workspace_id)
        outcome, held = hold_gate.redact_evidence(
            conn,
            workspace_id,
            [(record.source, record.source_type, record.source_key)],
            partial(evidence.upsert, conn, record, now=now),
            what="recall",
        )
        counts[REDACTED if outcome is UpsertOutcome.UPDATED else ALREADY_REDACTED] += 1
        if held:
            counts[HELD] += 1
    return counts
