"""Incident report revisions (`incident_reports`): the only module with their SQL.

Every build of a workspace's report is a new revision and the previous ones are kept
(docs/report.md). A revision quotes entries' text, so it is a copy of message text: declared
below, tied to the messages it quotes by `cited_evidence_ids`. A recall of one of them withdraws
every revision that quotes it (its text replaced, unless a legal hold keeps it set aside) and
the report sensor, seeing the newest revision withdrawn, builds the next one without it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, func, select
from sqlalchemy.exc import IntegrityError

from timeline_pipeline.db.rows import first_record, record_where
from timeline_pipeline.db.schema import incident_reports as ir
from timeline_pipeline.domain.content_lineage import (
    RECALLED_TEXT,
    OnRecall,
    RecallEffect,
    RecallScope,
    Tie,
    declare_content,
)
from timeline_pipeline.domain.lifecycle import RetentionClass
from timeline_pipeline.domain.lifecycle_declare import archive_on_request, declare
from timeline_pipeline.domain.records import record_of

__all__ = [
    "CONTENT",
    "DESCRIPTOR",
    "StoredReport",
    "get",
    "latest",
    "recall_copies",
    "record",
    "withdrawn_latest",
]


@dataclass(frozen=True, slots=True)
class StoredReport:
    id: int
    workspace_id: str
    revision: int
    content: dict[str, Any]
    markdown: str
    content_fingerprint: str
    input_stamp: str
    cited_evidence_ids: tuple[int, ...]
    built_by: str
    trigger: str
    withdrawn: bool
    created_at: datetime


def _to_report(row: Any) -> StoredReport:
    return record_of(
        StoredReport,
        row,
        content=dict(row.content_json or {}),
        cited_evidence_ids=tuple(int(i) for i in row.cited_evidence_ids or ()),
        withdrawn=bool(row.withdrawn),
    )


def record(
    conn: Connection,
    *,
    workspace_id: str,
    content: dict[str, Any],
    markdown: str,
    content_fingerprint: str,
    input_stamp: str,
    cited_evidence_ids: Sequence[int],
    built_by: str,
    trigger: str,
    now: datetime,
) -> StoredReport | None:
    """The next revision, or None when another build took that number first (the unique
    (workspace, revision) key decides; the caller reads the winner with `latest`)."""
    current = conn.execute(
        select(func.max(ir.c.revision)).where(ir.c.workspace_id == workspace_id)
    ).scalar_one_or_none()
    nested = conn.begin_nested()
    try:
        row = conn.execute(
            ir.insert()
            .values(
                workspace_id=workspace_id,
                revision=(current or 0) + 1,
                content_json=content,
                markdown=markdown,
                content_fingerprint=content_fingerprint,
                input_stamp=input_stamp,
                cited_evidence_ids=sorted(set(cited_evidence_ids)),
                built_by=built_by[:128],
                trigger=trigger[:32],
                created_at=now,
                updated_at=now,
            )
            .returning(*ir.c)
        ).one()
    except IntegrityError:  # the unique key: a concurrent build recorded this revision
        nested.rollback()
        return None
    nested.commit()
    return _to_report(row)


def latest(conn: Connection, workspace_id: str) -> StoredReport | None:
    return first_record(
        conn,
        select(ir).where(ir.c.workspace_id == workspace_id).order_by(ir.c.revision.desc()).limit(1),
        _to_report,
    )


def get(conn: Connection, workspace_id: str, revision: int) -> StoredReport | None:
    return record_where(
        conn, ir, _to_report, ir.c.workspace_id == workspace_id, ir.c.revision == revision
    )


def withdrawn_latest(conn: Connection, *, limit: int) -> list[str]:
    """Workspaces whose newest revision a recall withdrew: their report is rebuilt whatever
    their status (docs/report.md, "Recalls")."""
    newest = (
        select(ir.c.workspace_id, func.max(ir.c.revision).label("revision"))
        .group_by(ir.c.workspace_id)
        .subquery()
    )
    rows = conn.execute(
        select(ir.c.workspace_id)
        .join(
            newest,
            (newest.c.workspace_id == ir.c.workspace_id) & (newest.c.revision == ir.c.revision),
        )
        .where(ir.c.withdrawn.is_(True))
        .order_by(ir.c.workspace_id)
        .limit(limit)
    )
    return [str(r.workspace_id) for r in rows]


# --- a recall's copies (docs/lifecycle.md, "What a recall and a hold do to each copy") ---------

WITHDRAWN_CONTENT_KEY = "withdrawn"
HELD_KEY = "held_recalled_text"


def recall_copies(conn: Connection, scope: RecallScope, changed: Sequence[int]) -> RecallEffect:
    """Every revision quoting a recalled message is withdrawn: its text replaced by
    `RECALLED_TEXT`, or, while a legal hold reaches the workspace, kept aside in the row (never
    shown) until the hold is released. Revisions are few per workspace, so they are read whole
    and matched in Python on their cited ids."""
    del changed
    recalled = set(scope.evidence_ids)
    rows = conn.execute(
        select(ir.c.id, ir.c.cited_evidence_ids, ir.c.content_json, ir.c.markdown).where(
            ir.c.workspace_id == scope.workspace_id, ir.c.withdrawn.is_(False)
        )
    ).all()
    touched = 0
    for row in rows:
        if not recalled.intersection(int(i) for i in row.cited_evidence_ids or ()):
            continue
        content: dict[str, Any] = {WITHDRAWN_CONTENT_KEY: "recall"}
        if scope.held:
            content[HELD_KEY] = {"content": row.content_json, "markdown": row.markdown}
        conn.execute(
            ir.update()
            .where(ir.c.id == row.id)
            .values(
                withdrawn=True, content_json=content, markdown=RECALLED_TEXT, updated_at=scope.now
            )
        )
        touched += 1
    return RecallEffect(rows=touched)


CONTENT = declare_content(
    __name__,
    "incident_reports",
    text_columns=("content_json", "markdown"),
    tie=Tie.EVIDENCE_ID,
    tie_column="cited_evidence_ids",
    on_recall=OnRecall.STALE,
    apply=recall_copies,
    stage=1,
    notes=(
        "Written from the visible entries; a revision quoting a recalled message is withdrawn "
        "and the next build leaves the message out (and updates the Lark document)."
    ),
)


# --- lifecycle -------------------------------------------------------------------------------

DESCRIPTOR = declare(
    __name__,
    "incident_reports",
    RetentionClass.COMMUNICATION_LOG,
    cursor_column="updated_at",
    min_days=30,
    archive=archive_on_request("An incident report's revisions"),
    notes="Every build of a workspace's report; the Lark document follows the newest one.",
)
