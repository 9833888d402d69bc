"""A workspace's report document in Lark Docs (`incident_report_documents`): the only module
with its SQL.

The row is the document's durable write plan (docs/report.md, "The Lark document"): which
report revision it should show (`target_revision`), which one it shows (`written_revision`),
whether a create was started before its answer was recorded (`create_started_at`: a crash there
is recovered by finding the document in the folder, never by a second create), and the one
chat reply carrying its link (`reply_uuid`, Lark's idempotency key, then `reply_message_id`).
Every move is a compare-and-set on the row's revision (`db/cas.py`), so two publishers never
both write. Ids, states and the link only.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, or_, select

from timeline_pipeline.db.cas import compare_and_set_record
from timeline_pipeline.db.rows import record_where, records
from timeline_pipeline.db.schema import incident_report_documents as rd
from timeline_pipeline.db.schema import incident_reports as ir
from timeline_pipeline.db.upsert import upsert
from timeline_pipeline.domain.lifecycle import OnlyWhere, RetentionClass
from timeline_pipeline.domain.lifecycle_declare import declare
from timeline_pipeline.domain.records import record_of

__all__ = [
    "DESCRIPTOR",
    "ReportDocument",
    "get",
    "move",
    "orphaned",
    "plan",
    "unwritten",
]


@dataclass(frozen=True, slots=True)
class ReportDocument:
    id: int
    workspace_id: str
    folder_token: str
    title: str
    document_id: str | None
    document_url: str | None
    create_started_at: datetime | None
    target_revision: int
    written_revision: int | None
    cleared_for_revision: int | None
    chat_id: str | None
    reply_uuid: str | None
    reply_message_id: str | None
    attempt_count: int
    last_error: str | None
    revision: int
    updated_at: datetime
    state: str = "active"

    @property
    def up_to_date(self) -> bool:
        return self.written_revision is not None and self.written_revision >= self.target_revision

    @property
    def reply_pending(self) -> bool:
        return self.up_to_date and self.chat_id is not None and self.reply_message_id is None


def _to_document(row: Any) -> ReportDocument:
    return record_of(ReportDocument, row)


def plan(
    conn: Connection,
    *,
    workspace_id: str,
    folder_token: str,
    title: str,
    chat_id: str | None,
    target_revision: int,
    now: datetime,
) -> ReportDocument:
    """Ask for `target_revision` to be written: the row is made on the first report and its
    target only moves forward (a late, older build never rolls the document back). The folder
    and title are the first report's: the document stays where it was made. A row whose
    document retention deleted starts over: the new report gets a new document."""
    conn.execute(rd.delete().where(rd.c.workspace_id == workspace_id, rd.c.state == "deleted"))
    upsert(
        conn,
        rd,
        {
            "workspace_id": workspace_id,
            "folder_token": folder_token,
            "title": title[:512],
            "chat_id": chat_id,
            "target_revision": target_revision,
            "created_at": now,
            "updated_at": now,
        },
        key=[rd.c.workspace_id],
        update=("target_revision", "updated_at"),
        also={"attempt_count": 0, "revision": rd.c.revision + 1},
        where=lambda new: rd.c.target_revision < new.target_revision,
    )
    found = get(conn, workspace_id)
    assert found is not None
    return found


def get(conn: Connection, workspace_id: str) -> ReportDocument | None:
    return record_where(conn, rd, _to_document, rd.c.workspace_id == workspace_id)


def move(conn: Connection, read: ReportDocument, **values: Any) -> ReportDocument | None:
    """One step of the write plan from the row as `read`; None when another publisher moved
    it first (its work stands, this one stops)."""
    return compare_and_set_record(conn, rd, read, _to_document, values=values)


def unwritten(conn: Connection, *, limit: int = 100) -> list[ReportDocument]:
    """Documents behind their report, or written and still without their chat reply."""
    return records(
        conn,
        select(rd)
        .where(
            rd.c.state == "active",
            or_(
                rd.c.written_revision.is_(None),
                rd.c.written_revision < rd.c.target_revision,
                (rd.c.chat_id.is_not(None) & rd.c.reply_message_id.is_(None)),
            ),
        )
        .order_by(rd.c.updated_at, rd.c.id)
        .limit(limit),
        _to_document,
    )


def orphaned(conn: Connection, *, limit: int = 100) -> list[ReportDocument]:
    """Active documents whose workspace has no report revision left: retention purged the
    reports, so the copy of their text in Lark goes too (docs/report.md, "Retention and
    holds"). A legal hold keeps the revisions, and with them the document."""
    has_report = select(ir.c.id).where(ir.c.workspace_id == rd.c.workspace_id).exists()
    return records(
        conn,
        select(rd)
        .where(rd.c.state == "active", ~has_report)
        .order_by(rd.c.updated_at, rd.c.id)
        .limit(limit),
        _to_document,
    )


# --- lifecycle -------------------------------------------------------------------------------

DESCRIPTOR = declare(
    __name__,
    "incident_report_documents",
    RetentionClass.COMMUNICATION_LOG,
    cursor_column="updated_at",
    min_days=30,
    only_where=(OnlyWhere("state", ("deleted",)),),
    notes=(
        "The write plan of a workspace's Lark document (ids and link). A row goes only once "
        "its document was deleted in Lark, after the workspace's reports aged out "
        '(docs/report.md, "Retention and holds").'
    ),
)
