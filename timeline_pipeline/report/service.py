"""Builds, reads and corrects a workspace's incident report: the I/O edge around the pure report
modules (`milestones`, `sections`, `render`; docs/report.md).

A build reads the workspace's visible timeline, its opening messages (first message, first
alert), its last change to `recovered` and its curators' milestone times in one transaction,
and records a new revision only when what the report shows or what it was built from changed:
a rebuild of an unchanged timeline returns the revision it already has, so the sensor, the CLI
and the Dagster UI can ask for a build as often as they like. The Lark document follows the
newest revision through its own write plan (`store/report_documents.py`, `report/publisher.py`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from sqlalchemy import Connection, Engine

from timeline_pipeline.curation.presentation import presentation_of
from timeline_pipeline.curation.timeline import TimelineView, entry_views
from timeline_pipeline.db.engine import connection, transaction
from timeline_pipeline.domain.entries import VISIBLE_STATUSES, EntryStatus
from timeline_pipeline.domain.errors import InvalidInput, Refused
from timeline_pipeline.domain.workspaces import Workspace
from timeline_pipeline.report.milestones import (
    MilestoneError,
    MilestoneName,
    MilestoneOverride,
    Milestones,
    SignalMessage,
    check_override,
    derive_milestones,
    durations_of,
    signals_of,
)
from timeline_pipeline.report.render import content_json, render_markdown
from timeline_pipeline.report.sections import (
    ReportContent,
    build_content,
    content_fingerprint,
    facts_of,
)
from timeline_pipeline.settings import LarkTimelineSettings
from timeline_pipeline.store import (
    audit,
    entries,
    evidence,
    incident_reports,
    report_milestones,
    status_changes,
)
from timeline_pipeline.store import workspaces as workspace_store
from timeline_pipeline.store.incident_reports import StoredReport

__all__ = [
    "OPENING_MESSAGES",
    "BuiltReport",
    "ReportNotFound",
    "ReportService",
    "Trigger",
    "input_stamp",
]

OPENING_MESSAGES: Final = 2_000
"""Messages read from the start of a workspace to find its first alert: an alert that opens an
incident comes with its first messages, and the read stays bounded on a chat of any size."""
MAX_REPORT_ENTRIES: Final = 5_000


class Trigger:
    """Why a revision was built (stored with it; the Dagster run's tags say it too)."""

    CLOSED = "closed"
    """The workspace left `firing`."""
    CONFIRMED_CHANGE = "confirmed_change"
    """Its confirmed entries or milestones changed after the report was built."""
    RECALL = "recall"
    """A message the newest revision quoted was recalled."""
    MANUAL = "manual"
    """Asked for from the CLI or the Dagster UI."""
    DOCUMENT = "document"
    """The Lark document is behind its report (a write died on the way): finish it."""
    RECORD = "record"
    """The newest revision was built outside Dagster (the CLI): record it in the UI."""


class ReportNotFound(Refused, code="report_not_found", status=404):
    """The workspace has no report yet: `report build` makes the first one."""


@dataclass(frozen=True, slots=True)
class BuiltReport:
    report: StoredReport
    created: bool
    """False when the newest revision already showed the same report (nothing recorded)."""


def _utcnow() -> datetime:
    return datetime.now(UTC)


def input_stamp(conn: Connection, workspace_id: str) -> str:
    """A digest of what a build reads and the sensor watches: the workspace's status, its
    confirmed entries (id, revision, recalled flag) and its curators' milestone times. Drafts
    are left out on purpose: a report is rebuilt when what curators decided changes, not on
    every machine draft (docs/report.md, "When it is built")."""
    workspace = workspace_store.require(conn, workspace_id)
    digest: dict[str, Any] = {
        "status": workspace.status,
        "confirmed": entries.confirmed_versions(conn, workspace_id),
        "milestones": [
            (name, at.isoformat(), by)
            for name, at, by, _ in report_milestones.overrides(conn, workspace_id)
        ],
    }
    encoded = json.dumps(digest, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(encoded.encode("utf-8")).hexdigest()


class ReportService:
    """One workspace's report at a time; `actor` names who asked (docs/design.md, "Who did it")."""

    def __init__(
        self,
        engine: Engine,
        settings: LarkTimelineSettings,
        *,
        clock: Callable[[], datetime] = _utcnow,
    ) -> None:
        self.engine = engine
        self.settings = settings
        self.clock = clock

    # --- reads ---------------------------------------------------------------------------------

    def latest(self, workspace_id: str) -> StoredReport:
        with connection(self.engine) as conn:
            workspace_store.require(conn, workspace_id)
            found = incident_reports.latest(conn, workspace_id)
        if found is None:
            raise ReportNotFound(f"workspace {workspace_id!r} has no report yet")
        return found

    def milestones(self, workspace_id: str) -> Milestones:
        """The milestones as a build would find them now (derived, with curators' times)."""
        with connection(self.engine) as conn:
            return self._current_milestones(conn, workspace_id)

    # --- builds --------------------------------------------------------------------------------

    def build(self, workspace_id: str, *, actor: str, trigger: str) -> BuiltReport:
        """The newest revision, recorded now when the report changed since the last one (or
        the last one was withdrawn by a recall)."""
        now = self.clock()
        with transaction(self.engine) as conn:
            workspace = workspace_store.require(conn, workspace_id)
            presentation = presentation_of(conn, workspace_id, self.settings)
            content = self._content(conn, workspace)
            fingerprint = content_fingerprint(content, presentation)
            stamp = input_stamp(conn, workspace_id)
            current = incident_reports.latest(conn, workspace_id)
            unchanged = (
                current is not None
                and not current.withdrawn
                and current.content_fingerprint == fingerprint
            )
            if unchanged and current is not None:
                return BuiltReport(current, created=False)
            recorded = incident_reports.record(
                conn,
                workspace_id=workspace_id,
                content=content_json(content, presentation),
                markdown=render_markdown(content, presentation),
                content_fingerprint=fingerprint,
                input_stamp=stamp,
                cited_evidence_ids=content.cited_evidence_ids,
                built_by=actor,
                trigger=trigger,
                now=now,
            )
            if recorded is None:  # a concurrent build recorded this revision: it stands
                winner = incident_reports.latest(conn, workspace_id)
                assert winner is not None
                return BuiltReport(winner, created=False)
            audit.audit_curation(
                conn,
                actor=actor,
                action="report.build",
                subject_type="incident_report",
                subject_id=f"{workspace_id}#{recorded.revision}",
                workspace_id=workspace_id,
                details={"revision": recorded.revision, "trigger": trigger},
                now=now,
            )
            return BuiltReport(recorded, created=True)

    # --- curators' milestone times --------------------------------------------------------------

    def set_milestone(
        self, workspace_id: str, name: str, at: datetime, *, actor: str
    ) -> Milestones:
        """A curator's time for `name`, checked against the other milestones as the report
        shows them; the derived time stays beside it (docs/report.md, "Correcting a
        milestone")."""
        now = self.clock()
        wanted = _milestone_name(name)
        with transaction(self.engine) as conn:
            current = self._current_milestones(conn, workspace_id)
            try:
                check_override(current, wanted, at, now=now)
            except MilestoneError as exc:
                raise InvalidInput(str(exc)) from None
            report_milestones.set_override(
                conn,
                workspace_id=workspace_id,
                milestone=wanted.value,
                at=at.astimezone(UTC),
                actor=actor,
                now=now,
            )
            audit.audit_curation(
                conn,
                actor=actor,
                action="report.milestone.set",
                subject_type="incident_report_milestone",
                subject_id=f"{workspace_id}:{wanted.value}",
                workspace_id=workspace_id,
                details={"milestone": wanted.value, "at": at.astimezone(UTC).isoformat()},
                now=now,
            )
            return self._current_milestones(conn, workspace_id)

    def clear_milestone(self, workspace_id: str, name: str, *, actor: str) -> Milestones:
        """Back to the derived time."""
        now = self.clock()
        wanted = _milestone_name(name)
        with transaction(self.engine) as conn:
            workspace_store.require(conn, workspace_id)
            if report_milestones.clear(conn, workspace_id=workspace_id, milestone=wanted.value):
                audit.audit_curation(
                    conn,
                    actor=actor,
                    action="report.milestone.clear",
                    subject_type="incident_report_milestone",
                    subject_id=f"{workspace_id}:{wanted.value}",
                    workspace_id=workspace_id,
                    details={"milestone": wanted.value},
                    now=now,
                )
            return self._current_milestones(conn, workspace_id)

    # --- the pieces ----------------------------------------------------------------------------

    def _content(self, conn: Connection, workspace: Workspace) -> ReportContent:
        view = self._view(conn, workspace)
        milestones = self._milestones(conn, workspace, view)
        counts = entries.status_counts(conn, workspace.id)
        return build_content(
            view,
            title=workspace.title or workspace.id,
            status=workspace.status,
            milestones=milestones,
            durations=durations_of(milestones),
            hidden_count=counts.get(EntryStatus.HIDDEN.value, 0),
        )

    def _current_milestones(self, conn: Connection, workspace_id: str) -> Milestones:
        workspace = workspace_store.require(conn, workspace_id)
        return self._milestones(conn, workspace, self._view(conn, workspace))

    @staticmethod
    def _view(conn: Connection, workspace: Workspace) -> TimelineView:
        rows = entries.list_for_workspace(
            conn, workspace.id, statuses=VISIBLE_STATUSES, limit=MAX_REPORT_ENTRIES
        )
        return TimelineView(
            workspace.id,
            tuple(VISIBLE_STATUSES),
            entry_views(conn, rows),
            None,
            None,
            workspace.title,
        )

    @staticmethod
    def _milestones(conn: Connection, workspace: Workspace, view: TimelineView) -> Milestones:
        opening = evidence.opening_messages(conn, workspace.id, limit=OPENING_MESSAGES)
        signals = signals_of(
            (SignalMessage(at, from_app, text) for at, from_app, text in opening),
            created_at=workspace.created_at,
            recovered_at=status_changes.last_change_to(conn, workspace.id, "recovered"),
        )
        overrides = [
            MilestoneOverride(MilestoneName(name), at, by, set_at)
            for name, at, by, set_at in report_milestones.overrides(conn, workspace.id)
        ]
        return derive_milestones(facts_of(view), signals, overrides)


def _milestone_name(name: str) -> MilestoneName:
    try:
        return MilestoneName(name)
    except ValueError:
        choices = ", ".join(m.value for m in MilestoneName)
        raise InvalidInput(f"unknown milestone {name!r}: expected one of {choices}") from None
