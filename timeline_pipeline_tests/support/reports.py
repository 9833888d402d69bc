"""A workspace with an incident report, for the report's edges (API, CLI, the page's view): the
incident of `curation/support.py` said in its chat, synthesized by the real runner and rules,
the impact and the rollback confirmed, the rest left as drafts, then built by the real
`ReportService` (revision 1, drafts pending)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Final

from sqlalchemy import Engine, func, select

from timeline_pipeline.curation.rules import Action
from timeline_pipeline.curation.service import CurationService
from timeline_pipeline.db.schema import audit_events, incident_report_milestones, incident_reports
from timeline_pipeline.domain.content_lineage import RecallScope
from timeline_pipeline.report.service import BuiltReport, ReportService, Trigger
from timeline_pipeline.settings import LarkTimelineSettings
from timeline_pipeline.store import incident_reports as report_store
from timeline_pipeline_tests.curation.support import (
    CHAT,
    IMPACT,
    NEXT_STEP,
    RECOVERED,
    ROLLBACK,
    ROOT_CAUSE,
    W1,
    W2,
    entry_titled,
    say,
    synthesize,
)

BUILDER: Final = "cli:test"


@dataclass(frozen=True, slots=True)
class Reported:
    workspace_id: str
    evidence: dict[str, int]
    """The evidence id of each message, by its text."""
    rollback_id: int
    """The confirmed mitigation (`mitigated` comes from it)."""
    recovery_id: int
    """The recovery draft (`resolved` comes from it)."""


def report_service(engine: Engine) -> ReportService:
    return ReportService(engine, LarkTimelineSettings())


def reported_incident(
    engine: Engine, workspace_id: str = "inc-1", chat: str = CHAT, *, build: bool = True
) -> Reported:
    """The incident said and synthesized in an existing workspace (`curation.support.incident`
    makes one), two entries confirmed, and its report built once (unless `build` is False)."""
    texts = (IMPACT, ROLLBACK, ROOT_CAUSE, RECOVERED, NEXT_STEP)
    ids = say(engine, W1, texts[:2], workspace_id=workspace_id, chat=chat)
    ids += say(engine, W2, texts[2:], workspace_id=workspace_id, chat=chat)
    synthesize(engine, W1, workspace_id=workspace_id, chat=chat)
    synthesize(engine, W2, workspace_id=workspace_id, chat=chat)
    curation = CurationService(engine)
    rollback = entry_titled(engine, "rolled back", workspace_id)
    impact = entry_titled(engine, "latency", workspace_id)
    for entry in (impact, rollback):
        curation.transition(
            workspace_id, entry.id, Action.CONFIRM, expected_revision=None, actor="test"
        )
    recovery = entry_titled(engine, "back to normal", workspace_id)
    if build:
        build_report(engine, workspace_id)
    return Reported(workspace_id, dict(zip(texts, ids, strict=True)), rollback.id, recovery.id)


def build_report(engine: Engine, workspace_id: str = "inc-1") -> BuiltReport:
    return report_service(engine).build(workspace_id, actor=BUILDER, trigger=Trigger.MANUAL)


def withdraw(engine: Engine, workspace_id: str, evidence_id: int) -> None:
    """What a recall of `evidence_id` does to the revisions that quote it."""
    scope = RecallScope(workspace_id, (evidence_id,), datetime.now(UTC), held=False)
    with engine.begin() as conn:
        report_store.recall_copies(conn, scope, [])


def report_state(engine: Engine) -> tuple[object, ...]:
    """Everything a milestone change could write: curators' times, revisions and the audit."""
    with engine.connect() as conn:
        overrides = conn.execute(
            select(incident_report_milestones).order_by(
                incident_report_milestones.c.workspace_id, incident_report_milestones.c.milestone
            )
        ).all()
        revisions = conn.execute(select(func.count()).select_from(incident_reports)).scalar_one()
        audits = conn.execute(select(func.count()).select_from(audit_events)).scalar_one()
    return (tuple(tuple(r) for r in overrides), revisions, audits)
