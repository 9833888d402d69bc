"""Audit events (`audit_events`): the only module with their SQL.

One event per curation change, written in the change's own transaction (README, "Package layout").
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, select

from timeline_pipeline.db.schema import audit_events
from timeline_pipeline.domain.lifecycle import RetentionClass, Scope
from timeline_pipeline.domain.lifecycle_declare import archive_on_request, declare

__all__ = ["ACTOR_FORMS", "CRITICAL", "INFO", "audit_curation", "dagster_actor", "events_for"]

INFO = "info"
CRITICAL = "critical"
"""Legal holds: placing and releasing one is audited critical (docs/lifecycle.md)."""

ACTOR_FORMS = ("token:", "cli:", "dagster:", "lark:", "ui:")
"""The prefixes of an audited actor, one per way in (docs/design.md, "Who did it"): an API
token's id, the OS user of a command, a Dagster run's id, a Lark user's open_id, a timeline
page session's id. A bare `api`, `cli` or `loopback` names no one."""


def dagster_actor(run_id: str) -> str:
    """`dagster:<run id>`: a change a Dagster run makes is the run's, found again in the UI
    by its id (docs/design.md, "Who did it")."""
    return f"dagster:{run_id}"[:128]


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
    severity: str = INFO,
) -> None:
    """One audit event per change, in the change's own transaction (ids and revisions only:
    never the text, which may quote the chat). `actor` says who, in one of `ACTOR_FORMS`: an
    API token (`token:<id>`), the OS user of a command (`cli:<user>`), a Dagster run
    (`dagster:<run id>`), a Lark user (`lark:<open_id>`) or a page session (`ui:<id>`)."""
    conn.execute(
        audit_events.insert().values(
            occurred_at=now,
            actor=actor[:128],
            action=action,
            subject_type=subject_type,
            subject_id=subject_id,
            workspace_id=workspace_id,
            details_json=dict(details),
            severity=severity,
        )
    )


def events_for(conn: Connection, subject_type: str, subject_id: str) -> list[dict[str, Any]]:
    """A subject's events, oldest first: who did what when, at which severity."""
    rows = conn.execute(
        select(
            audit_events.c.occurred_at,
            audit_events.c.actor,
            audit_events.c.action,
            audit_events.c.severity,
            audit_events.c.details_json,
        )
        .where(
            audit_events.c.subject_type == subject_type,
            audit_events.c.subject_id == subject_id,
        )
        .order_by(audit_events.c.occurred_at, audit_events.c.id)
    ).all()
    return [
        {
            "occurred_at": r.occurred_at,
            "actor": r.actor,
            "action": r.action,
            "severity": r.severity,
            "details": dict(r.details_json or {}),
        }
        for r in rows
    ]


# --- lifecycle -------------------------------------------------------------------------------

DESCRIPTOR = declare(
    __name__,
    "audit_events",
    RetentionClass.AUDIT_SECURITY,
    cursor_column="occurred_at",
    min_days=365,
    scope=Scope.GLOBAL,
    batch_limit=10_000,
    archive=archive_on_request("The audit trail"),
    notes="Ids and keys only, never content; kept longer than what it describes so that "
    "who changed what can be answered after the data is gone.",
)
