"""Audit events (`audit_events`): the only module with their SQL.

One event per curation change, written in the change's own transaction (README, "Package layout").
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from sqlalchemy import Connection

from timeline_pipeline.db.schema import audit_events

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
