"""What the report's edges read and change (docs/report.md): a kept revision with the link of
the workspace's Lark document, and a curator's milestone time, checked at the edge as an entry's
time is.

The API (`api/routers/report.py`), the CLI (`cli/report_commands.py`) and the timeline page's
report view (`ui/routers/report.py`) all go through here, so they read the same revision the same
way and refuse the same times with the same reasons. No I/O of its own beyond the service's
engine; nothing here logs.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from timeline_pipeline.curation.rules import check_time
from timeline_pipeline.db.engine import connection
from timeline_pipeline.report.milestones import Milestones
from timeline_pipeline.report.service import ReportNotFound, ReportService
from timeline_pipeline.store import incident_reports, report_documents
from timeline_pipeline.store import workspaces as workspace_store
from timeline_pipeline.store.incident_reports import StoredReport

__all__ = ["ReportRead", "clear_milestone", "read_report", "set_milestone"]


@dataclass(frozen=True, slots=True)
class ReportRead:
    """One kept revision and the link of the workspace's Lark document (the document follows
    the newest revision; None until it has been created, and once retention deleted it)."""

    report: StoredReport
    document_url: str | None


def read_report(
    service: ReportService, workspace_id: str, *, revision: int | None = None
) -> ReportRead:
    """The newest revision, or the kept revision `revision`; WorkspaceNotFound for an unknown
    workspace, ReportNotFound when it has no report yet or no such revision. One read
    transaction, so the revision and the link are read together."""
    with connection(service.engine) as conn:
        workspace_store.require(conn, workspace_id)
        if revision is None:
            found = incident_reports.latest(conn, workspace_id)
        else:
            found = incident_reports.get(conn, workspace_id, revision)
        document = report_documents.get(conn, workspace_id)
    if found is None:
        if revision is None:
            raise ReportNotFound(
                f"workspace {workspace_id!r} has no report yet: "
                f"`timeline-pipeline report build --workspace {workspace_id}` builds it"
            )
        raise ReportNotFound(f"workspace {workspace_id!r} has no revision {revision} of its report")
    # A document retention deleted in Lark (its reports aged out) has no link to show.
    live = document is not None and document.state == "active"
    url = document.document_url if live and document is not None else None
    return ReportRead(found, url or None)


def set_milestone(
    service: ReportService,
    workspace_id: str,
    name: str,
    at: datetime,
    *,
    actor: str,
    field: str = "at",
) -> Milestones:
    """A curator's time for milestone `name`. The time is first held to the bounds every time
    a curator types has (`curation.rules.check_time`: with its UTC offset, 2000 to 2100, so
    that a year-1 time cannot overflow its UTC conversion); then the service checks it against
    the other milestones. InvalidInput (one line naming `field` or the milestone) on a refusal,
    and nothing is written."""
    return service.set_milestone(workspace_id, name, check_time(at, field), actor=actor)


def clear_milestone(
    service: ReportService, workspace_id: str, name: str, *, actor: str
) -> Milestones:
    """Back to the time the timeline gives (nothing is written when none was set)."""
    return service.clear_milestone(workspace_id, name, actor=actor)
