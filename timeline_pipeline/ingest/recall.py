"""Recalled messages: apply the deletion policy to the evidence already stored.

A recall event carries ids and a time, no content, so the redacted record is rebuilt from the
stored row and passed through `lark.normalize.redact`, the same function the history path uses
for a deleted item. Both paths therefore produce the same content hash for the same recall, and
the evidence upsert lets a redaction win over any concurrent edit. Every bound workspace is
redacted, whatever its status: a workspace that no longer ingests must still forget.

A recall goes through the legal-hold gate (`lifecycle.hold_gate`, docs/lifecycle.md): in a
workspace a hold reaches, the row is redacted in its columns like any recall (so no view, API,
summary, card or synthesis sees it) and its content is set aside until the hold is released.

A recall that arrives before its message (out of order) finds no row: it leaves a tombstone
(`store.recall_tombstones`) in each workspace that lacks the row, and the shared ingest path
stores the message's later arrival redacted, by event or by history, as if the recall had come
after it (docs/design.md §4, "A recall before its message"). Before the tombstone is left, the
chat's lock is taken alone and the evidence read again, so a write of the message that another
replica or reconciliation is committing at that moment is redacted here instead.
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
from timeline_pipeline.store import evidence, recall_tombstones

REDACTED = "redacted"
ALREADY_REDACTED = "already_redacted"
NOT_FOUND = "not_found"
"""No row yet: a tombstone was left for the message's later arrival (also counted TOMBSTONED
when this recall left it, not an earlier delivery of the same recall)."""
TOMBSTONED = "tombstoned"
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
    """Redact the message in each workspace, in the caller's transaction; where it is not
    stored yet, leave a tombstone instead.

    Returns counts keyed REDACTED / ALREADY_REDACTED / NOT_FOUND, HELD for the workspaces
    whose content a legal hold set aside, and TOMBSTONED for the tombstones this call left.
    """
    key = message_source_key(chat_id, message_id)
    counts: Counter[str] = Counter()
    missing: list[str] = []
    for workspace_id in workspace_ids:
        row = evidence.get_by_key(conn, workspace_id, SOURCE_LARK, SOURCE_TYPE_LARK_MESSAGE, key)
        if row is None:
            missing.append(workspace_id)
        else:
            _redact_row(
                conn, row, message_id=message_id, recalled_at=recalled_at, now=now, counts=counts
            )
    if not missing:
        return counts
    # A write of the message that another transaction already has under way commits before
    # this lock is granted, so the second read below sees it; a write that starts later waits
    # for this transaction and finds the tombstone (store/recall_tombstones.py).
    recall_tombstones.lock_for_recall(conn, chat_id)
    for workspace_id in missing:
        row = evidence.get_by_key(conn, workspace_id, SOURCE_LARK, SOURCE_TYPE_LARK_MESSAGE, key)
        if row is not None:
            _redact_row(
                conn, row, message_id=message_id, recalled_at=recalled_at, now=now, counts=counts
            )
            continue
        counts[NOT_FOUND] += 1
        left = recall_tombstones.record(
            conn, workspace_id, chat_id, message_id, recalled_at=recalled_at, now=now
        )
        counts[TOMBSTONED] += int(left)
    return counts


def _redact_row(
    conn: Connection,
    row: EvidenceRow,
    *,
    message_id: str,
    recalled_at: datetime,
    now: datetime,
    counts: Counter[str],
) -> None:
    if row.deleted:
        counts[ALREADY_REDACTED] += 1
        return
    redacted = redact(message_from_row(row, message_id=message_id), recalled_at=recalled_at)
    record = evidence_record(redacted, row.workspace_id)
    outcome, held = hold_gate.redact_evidence(
        conn,
        row.workspace_id,
        [(record.source, record.source_type, record.source_key)],
        partial(evidence.upsert, conn, record, now=now),
        what="recall",
    )
    counts[REDACTED if outcome is UpsertOutcome.UPDATED else ALREADY_REDACTED] += 1
    if held:
        counts[HELD] += 1
