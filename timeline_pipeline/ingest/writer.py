"""The one write path for Lark messages, shared by the receiver and reconciliation.

It decides per bound workspace whether a message is eligible, builds the evidence rows and
upserts them in the caller's transaction; it returns counts for metrics and asset metadata.

Every write goes through the legal-hold gate (`lifecycle.hold_gate.write_evidence`): in a
held workspace an edit or a recall sets the version it replaces aside before the new one is
visible, keeping every version (docs/lifecycle.md, "What a hold does to an edit"). The
receiver, reconciliation (and its refresh) and a pin's read of a message all write here, so
the rule holds on every path. A message whose recall arrived first (a tombstone,
`store.recall_tombstones`) is written redacted, through the same deletion policy and gate as a
recall that follows its message (docs/design.md §4, "A recall before its message";
docs/lifecycle.md, "A recall under a hold"). The tombstones are read after the chats' shared
lock is taken, in the transaction of the write, so a recall committing at the same moment is
never missed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import Connection

from timeline_pipeline.domain.evidence import EvidenceRecord, UpsertSummary
from timeline_pipeline.domain.workspaces import Workspace
from timeline_pipeline.ingest.eligibility import AUTOMATIC, Scope, Skip, message_skip
from timeline_pipeline.ingest.recall import recall_copies_of_records
from timeline_pipeline.ingest.records import evidence_record
from timeline_pipeline.lark.normalize import NormalizedLarkMessage, redact
from timeline_pipeline.lifecycle import hold_gate
from timeline_pipeline.settings import LarkTimelineSettings
from timeline_pipeline.store import evidence, recall_tombstones


@dataclass
class IngestResult:
    """Counts of one ingestion call; `skipped` is keyed by Skip reason."""

    upserts: UpsertSummary = field(default_factory=UpsertSummary)
    skipped: Counter[str] = field(default_factory=Counter)
    workspaces: set[str] = field(default_factory=set)

    @property
    def stored(self) -> int:
        return self.upserts.inserted + self.upserts.updated + self.upserts.duplicate


def plan_records(
    messages: Sequence[NormalizedLarkMessage],
    workspaces: Sequence[Workspace],
    settings: LarkTimelineSettings,
    now: datetime,
    scope: Scope = AUTOMATIC,
    *,
    app_id: str | None = None,
) -> tuple[list[EvidenceRecord], Counter[str]]:
    """Pure fan-out: every eligible (message, workspace) pair becomes one record."""
    pairs, skipped = _eligible_pairs(messages, workspaces, settings, now, scope, app_id=app_id)
    return [evidence_record(message, workspace_id) for message, workspace_id in pairs], skipped


def _eligible_pairs(
    messages: Sequence[NormalizedLarkMessage],
    workspaces: Sequence[Workspace],
    settings: LarkTimelineSettings,
    now: datetime,
    scope: Scope,
    *,
    app_id: str | None,
) -> tuple[list[tuple[NormalizedLarkMessage, str]], Counter[str]]:
    pairs: list[tuple[NormalizedLarkMessage, str]] = []
    skipped: Counter[str] = Counter()
    if not workspaces:
        skipped[Skip.UNBOUND_CHAT] += len(messages)
        return pairs, skipped
    for message in messages:
        for workspace in workspaces:
            reason = message_skip(message, workspace, settings, now, scope, app_id=app_id)
            if reason is None:
                pairs.append((message, workspace.id))
            else:
                skipped[reason] += 1
    return pairs, skipped


def ingest(
    conn: Connection,
    messages: Sequence[NormalizedLarkMessage],
    workspaces: Sequence[Workspace],
    settings: LarkTimelineSettings,
    now: datetime,
    scope: Scope = AUTOMATIC,
    *,
    app_id: str | None = None,
) -> IngestResult:
    """`app_id` (the product's Lark app) makes its own messages skipped as `self_generated`."""
    pairs, skipped = _eligible_pairs(messages, workspaces, settings, now, scope, app_id=app_id)
    result = IngestResult(skipped=skipped, workspaces={workspace for _, workspace in pairs})
    if pairs:
        recall_tombstones.lock_for_messages(conn, (message.chat_id for message, _ in pairs))
    records, early = _honour_early_recalls(conn, pairs)
    if early:
        # Under a legal hold, "as if the recall had come after it" means the message is stored
        # first, so that the gate below sets its content aside before redacting the columns.
        early_summary = evidence.upsert_keeping_versions(conn, early, now=now)
        result.upserts = UpsertSummary(inserted=early_summary.inserted)
    # Every write goes through the hold gate: in a held workspace the version an edit or a
    # recall replaces is set aside before the new one is written (docs/lifecycle.md, "What a
    # hold does to an edit"; "A recall under a hold").
    if records:
        written = hold_gate.write_evidence(conn, records, now=now, what="evidence write")
        result.upserts = result.upserts + written
    recalled = [record for record in records if record.deleted]
    if recalled:
        # Every copy of a recalled message's text follows it (ingest/recall.py).
        recall_copies_of_records(conn, recalled, now=now)
    return result


def _honour_early_recalls(
    conn: Connection, pairs: Sequence[tuple[NormalizedLarkMessage, str]]
) -> tuple[list[EvidenceRecord], list[EvidenceRecord]]:
    """The records to write, a message with a tombstone redacted under the deletion policy
    (`lark.normalize.redact` with the recall's own time, as the receiver's recall applies it);
    and, to be written before them, the message as it was in each workspace a legal hold
    reaches, for the gate to set aside."""
    live = [(message, workspace) for message, workspace in pairs if not message.deleted]
    tombstones = (
        recall_tombstones.recalled(
            conn,
            [workspace for _, workspace in live],
            [message.chat_id for message, _ in live],
        )
        if live
        else {}
    )
    if not tombstones:
        return [evidence_record(message, workspace) for message, workspace in pairs], []
    records: list[EvidenceRecord] = []
    early: list[EvidenceRecord] = []
    held: dict[str, bool] = {}
    for message, workspace in pairs:
        recalled_at = tombstones.get((workspace, message.chat_id, message.message_id))
        if recalled_at is None or message.deleted:
            records.append(evidence_record(message, workspace))
            continue
        if workspace not in held:
            held[workspace] = bool(hold_gate.holds_on(conn, hold_gate.EVIDENCE, workspace))
        if held[workspace]:
            early.append(evidence_record(message, workspace))
        records.append(evidence_record(redact(message, recalled_at=recalled_at), workspace))
    return records, early
