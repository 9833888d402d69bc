"""Audit events (`audit_events`): the only module with their SQL.

One event per curation change, written in the change's own transaction (README, "Package layout").
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from sqlalchemy import Connection

from timeline_pipeline.db.schema import audit_events
from timeline_pipeline.lifecycle.declare import (
    BACKUP_NOTES,
    HARD_DELETE,
    NOT_PARTITIONED,
    archive_on_request,
)
from timeline_pipeline.lifecycle.descriptor import (
    ExecutionMode,
    LegalHoldNote,
    LifecycleDescriptor,
    RequiredIndex,
    RetentionClass,
    Scope,
)

__all__ = ["audit_curation"]


def audit_curation(
    conn: Connection,
    *,
    actor: str,
    action: str,
    subject_type: str,
    subject_id: str,
    workspace_id: str,
    details: Mapping[str, Any],
    now: datetime,
) -> None:
    """One audit event per curation change, in the change's own transaction (ids and
    revisions only: never the text, which may quote the chat)."""
    conn.execute(
        audit_events.insert().values(
            occurred_at=now,
            actor=actor[:128],
            action=action,
            subject_type=subject_type,
            subject_id=subject_id,
            workspace_id=workspace_id,
            details_json=dict(details),
        )
    )


# --- lifecycle -------------------------------------------------------------------------------

DESCRIPTOR = LifecycleDescriptor(
    key="audit.audit_events",
    table_name="audit_events",
    owner="audit",
    scope=Scope.GLOBAL,
    cursor_column="occurred_at",
    retention_class=RetentionClass.AUDIT_SECURITY,
    retention_min_days=365,
    retention_max_days=2555,
    default_retention_days=730,
    partition=NOT_PARTITIONED,
    archive=archive_on_request("The audit trail"),
    deletion=HARD_DELETE,
    legal_hold=LegalHoldNote(),
    required_indexes=(RequiredIndex(("occurred_at", "id"), "the purge's keyset"),),
    batch_limit=10_000,
    backup_restore_notes=BACKUP_NOTES,
    execution_mode=ExecutionMode.GENERIC,
    notes="Ids and keys only, never content; kept longer than what it describes so that "
    "who changed what can be answered after the data is gone.",
)
