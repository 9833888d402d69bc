"""The one write path for Lark messages, shared by the receiver and reconciliation.

It decides per bound workspace whether a message is eligible, builds the evidence rows and
upserts them in the caller's transaction; it returns counts for metrics and asset metadata.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import Connection

from timeline_pipeline.domain.evidence import EvidenceRecord, UpsertOutcome, UpsertSummary
from timeline_pipeline.domain.workspaces import Workspace
from timeline_pipeline.ingest.eligibility import AUTOMATIC, Scope, Skip, message_skip
from timeline_pipeline.ingest.records import evidence_record
from timeline_pipeline.lark.normalize import NormalizedLarkMessage
from timeline_pipeline.lifecycle import hold_gate
from timeline_pipeline.settings import LarkTimelineSettings
from timeline_pipeline.store import evidence


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
    records: list[EvidenceRecord] = []
    skipped: Counter[str] = Counter()
    if not workspaces:
        skipped[Skip.UNBOUND_CHAT] += len(messages)
        return records, skipped
    for message in messages:
        for workspace in workspaces:
            reason = message_skip(message, workspace, settings, now, scope, app_id=app_id)
            if reason is None:
                records.append(evidence_record(message, workspace.id))
            else:
                skipped[reason] += 1
    return records, skipped


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
    records, skipped = plan_records(messages, workspaces, settings, now, scope, app_id=app_id)
    result = IngestResult(skipped=skipped, workspaces={r.workspace_id for r in records})
    # A recall (a deleted message from history or an event) goes through the hold gate: a held
    # workspace's content is set aside before the write redacts it (docs/lifecycle.md).
    recalled = [r for r in records if r.deleted]
    free = hold_gate.set_aside_recalled(conn, recalled) if recalled else set()
    if len(records) == 1:
        outcome = evidence.upsert(conn, records[0], now=now)
        result.upserts = UpsertSummary(
            inserted=int(outcome is UpsertOutcome.INSERTED),
            updated=int(outcome is UpsertOutcome.UPDATED),
            duplicate=int(outcome is UpsertOutcome.DUPLICATE),
        )
    elif records:
        result.upserts = evidence.upsert_many(conn, records, now=now)
    if free:
        hold_gate.recheck_recalled(conn, free, what="recall")
    return result
