"""Recalled messages: apply the deletion policy to the evidence already stored.

A recall event carries ids and a time, no content, so the redacted record is rebuilt from the
stored row and passed through `lark.normalize.redact`, the same function the history path uses
for a deleted item. Both paths therefore produce the same content hash for the same recall, and
the evidence upsert lets a redaction win over any concurrent edit. Every bound workspace is
redacted, whatever its status: a workspace that no longer ingests must still forget.

A recall goes through the legal-hold gate (`lifecycle.hold_gate`, docs/lifecycle.md): in a
workspace a hold reaches, the row is redacted in its columns like any recall (so no view, API,
summary, card or synthesis sees it) and its content is set aside until the hold is released.

Every copy of the message's text follows (docs/lifecycle.md, "What a recall and a hold do to
each copy"): `recall_copies` is the one seam, called here for a recall event and by the shared
ingest path (`ingest/writer.py`) for a recall read from history or reconciliation. It applies
each table's declared rule (`domain/content_lineage`, declared beside the table in its store
module) in the recall's transaction: entries first, by who wrote them, then what quotes them
(cards, patched in Lark by the card worker; previews; the summary). Under a hold the replaced
text is set aside where the table keeps it, never dropped.

A recall that arrives before its message (out of order) finds no row: it leaves a tombstone
(`store.recall_tombstones`) in each workspace that lacks the row, and the shared ingest path
stores the message's later arrival redacted, by event or by history, as if the recall had come
after it (docs/design.md §4, "A recall before its message"). Before the tombstone is left, the
chat's lock is taken alone and the evidence read again, so a write of the message that another
replica or reconciliation is committing at that moment is redacted here instead.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from datetime import datetime
from functools import cache, partial

from sqlalchemy import Connection

from timeline_pipeline.domain.content_lineage import ContentCopy, RecallScope
from timeline_pipeline.domain.evidence import EvidenceRecord, EvidenceRow, UpsertOutcome
from timeline_pipeline.domain.keys import SOURCE_LARK, SOURCE_TYPE_LARK_MESSAGE, message_source_key
from timeline_pipeline.ingest.records import evidence_record
from timeline_pipeline.lark.normalize import NormalizedLarkMessage, redact
from timeline_pipeline.lifecycle import hold_gate
from timeline_pipeline.lifecycle.registry import content_copies
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
        thread_id=row.metadata_text("thread_id"),
        root_id=row.metadata_text("root_id"),
        parent_id=row.metadata_text("parent_id"),
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
        held = bool(hold_gate.holds_on(conn, hold_gate.EVIDENCE, row.workspace_id))
        recall_copies(conn, row.workspace_id, (row.id,), now=now, held=held)
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
    recall_copies(conn, row.workspace_id, (row.id,), now=now, held=held)


# --- every copy of the text (docs/lifecycle.md, "What a recall and a hold do to each copy") ---


@cache
def _copies() -> tuple[ContentCopy, ...]:
    """The declared copies that a recall acts on, in their order (loaded once per process)."""
    return tuple(c for c in content_copies() if c.apply is not None)


def recall_copies(
    conn: Connection,
    workspace_id: str,
    evidence_ids: Iterable[int],
    *,
    now: datetime,
    held: bool,
) -> Counter[str]:
    """The one seam: apply the recall of `evidence_ids` (already redacted, in the caller's
    transaction) to every declared copy in the workspace. Returns rows changed per copy key
    (ids and counts only: nothing here is logged with text)."""
    scope = RecallScope(workspace_id, tuple(sorted(set(evidence_ids))), now, held)
    counts: Counter[str] = Counter()
    if not scope.evidence_ids:
        return counts
    changed: list[int] = []
    for copy in _copies():
        assert copy.apply is not None
        effect = copy.apply(conn, scope, tuple(changed))
        changed.extend(effect.entry_ids)
        counts[copy.key] += effect.rows
    return counts


def recall_copies_of_records(
    conn: Connection, records: Sequence[EvidenceRecord], *, now: datetime
) -> Counter[str]:
    """`recall_copies` for the recalled records a batch just wrote (the shared ingest path:
    a recall read from history, by reconciliation or a pin's read): each workspace's stored
    rows of them, with whether a hold reaches it."""
    by_workspace: dict[str, list[int]] = {}
    for record in records:
        if not record.deleted:
            continue
        row = evidence.get_by_key(
            conn, record.workspace_id, record.source, record.source_type, record.source_key
        )
        if row is not None:
            by_workspace.setdefault(record.workspace_id, []).append(row.id)
    counts: Counter[str] = Counter()
    for workspace_id, ids in sorted(by_workspace.items()):
        held = bool(hold_gate.holds_on(conn, hold_gate.EVIDENCE, workspace_id))
        counts.update(recall_copies(conn, workspace_id, ids, now=now, held=held))
    return counts
