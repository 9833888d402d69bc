"""The report service on a real database (SQLite and PostgreSQL): a build records a revision
only when the report changed, the milestones come from the timeline and the workspace's
signals, a curator's milestone time is checked and kept beside the derived one, and a recall
withdraws every revision quoting the message (docs/report.md)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import Engine, func, select

from timeline_pipeline.curation.rules import Action
from timeline_pipeline.curation.service import CurationService
from timeline_pipeline.db.schema import incident_report_milestones, incident_reports
from timeline_pipeline.domain.content_lineage import RECALLED_TEXT
from timeline_pipeline.domain.errors import InvalidInput
from timeline_pipeline.ingest.recall import redact_everywhere
from timeline_pipeline.lifecycle.holds import create_hold
from timeline_pipeline.lifecycle.registry import load_registry
from timeline_pipeline.report.service import ReportNotFound, ReportService, Trigger, input_stamp
from timeline_pipeline.store import incident_reports as report_store
from timeline_pipeline.store import status_changes
from timeline_pipeline.store.workspaces import WorkspaceNotFound
from timeline_pipeline_tests.curation.support import (
    RECOVERED,
    ROOT_CAUSE,
    all_entries,
)
from timeline_pipeline_tests.report.support import (
    ACTOR,
    IMPACT,
    W1,
    closed_incident,
    entry_of,
    report_settings,
    set_status,
)


def service(engine: Engine) -> ReportService:
    return ReportService(engine, report_settings())


def revisions(engine: Engine) -> int:
    with engine.connect() as conn:
        return int(conn.execute(select(func.count()).select_from(incident_reports)).scalar_one())


def test_a_build_records_the_report_and_an_unchanged_rebuild_records_nothing(
    engine: Engine,
) -> None:
    closed_incident(engine)
    first = service(engine).build("inc-1", actor=ACTOR, trigger=Trigger.CLOSED)
    again = service(engine).build("inc-1", actor=ACTOR, trigger=Trigger.MANUAL)

    assert first.created
    assert first.report.revision == 1
    assert not again.created
    assert again.report.revision == 1
    assert revisions(engine) == 1
    sections = {s["key"]: s for s in first.report.content["sections"]}
    assert [i["category"] for i in sections["impact"]["items"]] == ["impact"]
    assert "# " in first.report.markdown
    assert IMPACT.split()[0] in first.report.markdown.lower()


def test_the_milestones_come_from_the_alert_the_mitigation_and_the_recovery(
    engine: Engine,
) -> None:
    ids = closed_incident(engine)
    del ids
    built = service(engine).build("inc-1", actor=ACTOR, trigger=Trigger.CLOSED).report
    milestones = built.content["milestones"]

    alert_at = (W1 + timedelta(seconds=30)).astimezone(UTC)
    assert milestones["detected"]["at"].startswith(alert_at.strftime("%Y-%m-%dT%H:%M:%S"))
    assert milestones["mitigated"]["entry_id"] == entry_of(engine, "mitigation").id
    assert milestones["resolved"]["entry_id"] == entry_of(engine, "recovery").id
    durations = built.content["durations"]
    assert durations["time_to_resolve"] is not None
    assert durations["time_to_resolve"] > durations["time_to_mitigate"] >= 0


def test_a_confirmation_changes_the_input_stamp_and_the_next_build_is_a_new_revision(
    engine: Engine,
) -> None:
    closed_incident(engine)
    reports = service(engine)
    reports.build("inc-1", actor=ACTOR, trigger=Trigger.CLOSED)
    with engine.connect() as conn:
        before = input_stamp(conn, "inc-1")
    mitigation = entry_of(engine, "mitigation")
    CurationService(engine).transition(
        "inc-1", mitigation.id, Action.CONFIRM, expected_revision=None, actor=ACTOR
    )
    with engine.connect() as conn:
        after = input_stamp(conn, "inc-1")
        built = report_store.latest(conn, "inc-1")
        assert built is not None
        assert built.input_stamp != after
    rebuilt = reports.build("inc-1", actor=ACTOR, trigger=Trigger.CONFIRMED_CHANGE)

    assert before != after
    assert rebuilt.created
    assert rebuilt.report.revision == 2
    assert rebuilt.report.content["counts"]["confirmed"] == 1
    with engine.connect() as conn:
        assert report_store.get(conn, "inc-1", 1) is not None  # the previous is kept


def test_without_a_recovery_entry_the_status_change_to_recovered_resolves_it(
    engine: Engine,
) -> None:
    closed_incident(engine)
    recovery = entry_of(engine, "recovery")
    CurationService(engine).transition(
        "inc-1", recovery.id, Action.HIDE, expected_revision=None, actor=ACTOR
    )
    with engine.connect() as conn:
        recovered_at = status_changes.last_change_to(conn, "inc-1", "recovered")
    milestones = service(engine).milestones("inc-1")

    assert recovered_at is not None
    assert milestones.resolved.entry_id is None
    assert milestones.resolved.at == recovered_at


def test_a_curators_time_is_kept_beside_the_derived_one_and_names_who_set_it(
    engine: Engine,
) -> None:
    closed_incident(engine)
    reports = service(engine)
    derived = reports.milestones("inc-1").started
    earlier = W1 - timedelta(minutes=5)

    changed = reports.set_milestone("inc-1", "started", earlier, actor="ui:session-1")

    assert changed.started.at == earlier
    assert changed.started.derived_at == derived.at
    assert changed.started.overridden_by == "ui:session-1"
    cleared = reports.clear_milestone("inc-1", "started", actor="ui:session-1")
    assert cleared.started.at == derived.at
    assert cleared.started.overridden_by is None


@pytest.mark.parametrize(
    ("name", "at", "reason"),
    [
        ("started", datetime.now(UTC) + timedelta(days=1), "future"),
        ("detected", datetime.now(UTC) - timedelta(seconds=1), "after the incident was resolved"),
        ("resolved", W1 - timedelta(days=1), "before the incident started"),
        ("ended", W1, "unknown milestone"),
        ("started", W1.replace(tzinfo=None), "offset"),
    ],
)
def test_a_milestone_time_that_contradicts_the_report_is_refused_and_nothing_is_written(
    engine: Engine, name: str, at: datetime, reason: str
) -> None:
    closed_incident(engine)
    with pytest.raises(InvalidInput, match=reason):
        service(engine).set_milestone("inc-1", name, at, actor=ACTOR)
    with engine.connect() as conn:
        count = conn.execute(select(func.count()).select_from(incident_report_milestones))
        assert count.scalar_one() == 0


def test_an_unknown_workspace_and_a_missing_report_are_refused(engine: Engine) -> None:
    closed_incident(engine)
    with pytest.raises(WorkspaceNotFound):
        service(engine).build("nope", actor=ACTOR, trigger=Trigger.MANUAL)
    with pytest.raises(ReportNotFound):
        service(engine).latest("inc-1")


def test_a_recall_of_a_quoted_message_withdraws_the_revision_and_the_rebuild_leaves_it_out(
    engine: Engine,
) -> None:
    ids = closed_incident(engine)
    reports = service(engine)
    first = reports.build("inc-1", actor=ACTOR, trigger=Trigger.CLOSED).report
    assert ids[ROOT_CAUSE] in first.cited_evidence_ids
    now = datetime.now(UTC)
    recalled = _message_id_of(engine, ids[ROOT_CAUSE])

    with engine.begin() as conn:
        redact_everywhere(
            conn,
            ["inc-1"],
            chat_id="oc_chat",
            message_id=recalled,
            recalled_at=now,
            now=now,
        )
    withdrawn = reports.latest("inc-1")
    rebuilt = reports.build("inc-1", actor=ACTOR, trigger=Trigger.RECALL).report

    assert withdrawn.withdrawn
    assert withdrawn.markdown == RECALLED_TEXT
    assert "root cause" not in str(withdrawn.content).lower()
    assert rebuilt.revision == 2
    assert ids[ROOT_CAUSE] not in rebuilt.cited_evidence_ids
    assert "connection pool" not in rebuilt.markdown


def test_under_a_legal_hold_a_withdrawn_revision_keeps_its_text_aside(engine: Engine) -> None:
    ids = closed_incident(engine)
    reports = service(engine)
    reports.build("inc-1", actor=ACTOR, trigger=Trigger.CLOSED)
    with engine.begin() as conn:
        create_hold(
            conn,
            load_registry(),
            workspace_id="inc-1",
            descriptor_key=None,
            reason="preservation notice for case 7",
            idempotency_key="h1",
            actor=ACTOR,
        )
    now = datetime.now(UTC)
    recalled = _message_id_of(engine, ids[ROOT_CAUSE])
    with engine.begin() as conn:
        redact_everywhere(
            conn,
            ["inc-1"],
            chat_id="oc_chat",
            message_id=recalled,
            recalled_at=now,
            now=now,
        )
    withdrawn = reports.latest("inc-1")

    assert withdrawn.withdrawn
    kept = withdrawn.content[report_store.HELD_KEY]
    assert "connection pool" in kept["markdown"]


def test_only_visible_entries_are_reported_and_hidden_ones_are_counted(engine: Engine) -> None:
    closed_incident(engine)
    rollback = next(e for e in all_entries(engine) if "rolled back" in e.title.lower())
    CurationService(engine).transition(
        "inc-1", rollback.id, Action.HIDE, expected_revision=None, actor=ACTOR
    )
    built = service(engine).build("inc-1", actor=ACTOR, trigger=Trigger.MANUAL).report

    assert "payments-api to v41" not in built.markdown
    assert built.content["counts"]["hidden"] == 1
    assert RECOVERED.split()[0] in built.markdown.lower()


def test_a_status_change_is_recorded_with_its_actor_once(engine: Engine) -> None:
    closed_incident(engine)
    set_status(engine, "inc-1", "recovered")  # no change: nothing recorded
    set_status(engine, "inc-1", "archived")
    with engine.connect() as conn:
        recovered = status_changes.last_change_to(conn, "inc-1", "recovered")
        archived = status_changes.last_change_to(conn, "inc-1", "archived")
        firing = status_changes.last_change_to(conn, "inc-1", "firing")
    assert recovered is not None
    assert archived is not None
    assert archived >= recovered
    assert firing is None


def _message_id_of(engine: Engine, evidence_id: int) -> str:
    from timeline_pipeline.db.schema import workspace_timeline_evidence as ev

    with engine.connect() as conn:
        key = conn.execute(select(ev.c.source_key).where(ev.c.id == evidence_id)).scalar_one()
    return str(key).rsplit("/", 1)[-1]
