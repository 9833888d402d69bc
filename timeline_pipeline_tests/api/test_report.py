"""`GET /api/workspaces/{id}/report` and `PUT|DELETE .../report/milestones/{name}` on the real
`serve` app, on SQLite and PostgreSQL: the contract's keys, kept revisions, 404s with their
reasons, a withdrawn revision without its text, scopes, and a curator's milestone time that
keeps the derived one, names who set it, and is refused with nothing written."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, select

from timeline_pipeline.api.presenters import report_out
from timeline_pipeline.api.schemas import MilestoneOut, ReportOut
from timeline_pipeline.curation.rules import Action
from timeline_pipeline.curation.service import CurationService
from timeline_pipeline.db.engine import make_engine
from timeline_pipeline.db.migrate import upgrade
from timeline_pipeline.db.schema import audit_events
from timeline_pipeline.report.views import read_report
from timeline_pipeline.store import api_tokens, report_documents
from timeline_pipeline.web.deps import get_report_service
from timeline_pipeline_tests.api.conftest import Served, bearer
from timeline_pipeline_tests.curation.support import IMPACT, ROLLBACK
from timeline_pipeline_tests.support.reports import (
    BUILDER,
    build_report,
    report_service,
    report_state,
    reported_incident,
    withdraw,
)

REPORT = "/api/workspaces/inc-1/report"
MILESTONES = f"{REPORT}/milestones"
NAMES = ("started", "detected", "mitigated", "resolved")
CONTRACT = {
    "revision",
    "milestones",
    "durations",
    "sections",
    "document_url",
    "built_at",
    "built_by",
    "title",
    "status",
    "window",
    "counts",
    "drafts_pending",
    "withdrawn",
}


def token(engine: Engine, *scopes: str) -> tuple[str, dict[str, str]]:
    """(actor, headers) of a new token of inc-1 with `scopes` (default: read and curate)."""
    with engine.begin() as conn:
        issued = api_tokens.create(conn, "inc-1", scopes or api_tokens.DEFAULT_SCOPES)
    return f"token:{issued.id}", bearer(issued.token)


def at(moment: str) -> datetime:
    return datetime.fromisoformat(moment.replace("Z", "+00:00"))


def test_the_report_answers_with_the_contracts_keys_and_what_was_built(served: Served) -> None:
    reported_incident(served.engine)
    answer = served.client.get(REPORT, headers=served.auth)
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert set(body) == CONTRACT == set(ReportOut.model_fields)
    assert (body["revision"], body["built_by"], body["withdrawn"]) == (1, BUILDER, False)
    assert body["document_url"] is None
    assert body["drafts_pending"] is True
    assert body["counts"] == {"confirmed": 2, "drafts": 3, "hidden": 0, "withheld": 0}
    assert set(body["milestones"]) == set(NAMES)
    for name in NAMES:
        assert set(body["milestones"][name]) == set(MilestoneOut.model_fields), name
        assert {"at", "entry_id", "overridden_by"} <= set(body["milestones"][name])
    assert body["milestones"]["mitigated"]["entry_id"] is not None
    assert body["milestones"]["resolved"]["overridden_by"] is None
    durations = body["durations"]
    assert set(durations) == {"time_to_detect", "time_to_mitigate", "time_to_resolve"}
    assert all(isinstance(value, int) for value in durations.values())
    started = at(body["milestones"]["started"]["at"])
    resolved = at(body["milestones"]["resolved"]["at"])
    assert durations["time_to_resolve"] == int((resolved - started).total_seconds())
    # The sections as stored, in the report's order, with the Lark links of their entries.
    stored = report_service(served.engine).latest("inc-1").content
    assert [s["key"] for s in body["sections"]] == [s["key"] for s in stored["sections"]]
    timeline = next(s for s in body["sections"] if s["key"] == "timeline")
    assert timeline["title"] == "Timeline"
    assert all(item["links"] for item in timeline["items"])
    assert IMPACT.lower() in {item["text"].lower() for item in timeline["items"]}
    # One presenter: what the CLI prints is what the API answers.
    read = read_report(report_service(served.engine), "inc-1")
    assert report_out(read).model_dump(mode="json") == body


def test_the_document_url_is_the_workspaces_lark_document_while_it_exists(
    served: Served,
) -> None:
    reported_incident(served.engine)
    url = "https://acme.feishu.cn/docx/doxcnReport01"
    now = datetime.now(UTC)
    with served.engine.begin() as conn:
        planned = report_documents.plan(
            conn,
            workspace_id="inc-1",
            folder_token="fldreports",
            title="Incident report",
            chat_id=None,
            target_revision=1,
            now=now,
        )
        written = report_documents.move(
            conn, planned, document_id="doxcnReport01", document_url=url, updated_at=now
        )
    assert written is not None
    assert served.client.get(REPORT, headers=served.auth).json()["document_url"] == url
    with served.engine.begin() as conn:  # retention deleted it in Lark
        assert report_documents.move(conn, written, state="deleted", deleted_at=now, updated_at=now)
    assert served.client.get(REPORT, headers=served.auth).json()["document_url"] is None


def test_a_kept_revision_is_read_by_its_number(served: Served) -> None:
    reported = reported_incident(served.engine)
    draft = next(
        e
        for e in CurationService(served.engine).timeline("inc-1").entries
        if e.status == "draft" and e.id == reported.recovery_id
    )
    CurationService(served.engine).transition(
        "inc-1", draft.id, Action.CONFIRM, expected_revision=None, actor="test"
    )
    assert build_report(served.engine).report.revision == 2
    newest = served.client.get(REPORT, headers=served.auth).json()
    first = served.client.get(f"{REPORT}?revision=1", headers=served.auth).json()
    assert (newest["revision"], newest["counts"]["confirmed"]) == (2, 3)
    assert (first["revision"], first["counts"]["confirmed"]) == (1, 2)
    missing = served.client.get(f"{REPORT}?revision=3", headers=served.auth)
    assert missing.status_code == 404
    assert missing.json()["detail"] == {
        "code": "report_not_found",
        "message": "workspace 'inc-1' has no revision 3 of its report",
    }
    for bad in ("0", "-1", "x", str(2**31)):
        assert served.client.get(f"{REPORT}?revision={bad}", headers=served.auth).status_code == 422


def test_without_a_report_the_answer_is_404_and_says_how_to_build_one(served: Served) -> None:
    answer = served.client.get(REPORT, headers=served.auth)
    assert answer.status_code == 404
    detail = answer.json()["detail"]
    assert detail["code"] == "report_not_found"
    assert "no report yet" in detail["message"]
    assert "report build --workspace inc-1" in detail["message"]


def test_a_workspace_the_service_does_not_know_is_404_workspace_not_found(
    served: Served, tmp_path: Path
) -> None:
    """A token only names its own workspace, so the route meets an unknown one when the
    report's service reads another database (its overridable dependency) than the gate."""
    elsewhere = make_engine(f"sqlite:///{tmp_path / 'elsewhere.db'}")
    upgrade(elsewhere)
    app = served.client.app
    app.dependency_overrides[get_report_service] = lambda: report_service(elsewhere)  # type: ignore[attr-defined]
    try:
        answers = [
            served.client.get(REPORT, headers=served.auth),
            served.client.put(
                f"{MILESTONES}/started", json={"at": "2026-01-01T00:00:00Z"}, headers=served.auth
            ),
            served.client.delete(f"{MILESTONES}/started", headers=served.auth),
        ]
    finally:
        app.dependency_overrides.clear()  # type: ignore[attr-defined]
        elsewhere.dispose()
    for answer in answers:
        assert answer.status_code == 404
        assert answer.json()["detail"] == {
            "code": "workspace_not_found",
            "message": "workspace 'inc-1' does not exist",
        }


def test_a_withdrawn_revision_gives_its_flag_and_none_of_its_text(served: Served) -> None:
    reported = reported_incident(served.engine)
    withdraw(served.engine, "inc-1", reported.evidence[ROLLBACK])
    answer = served.client.get(REPORT, headers=served.auth)
    assert answer.status_code == 200
    body = answer.json()
    assert set(body) == CONTRACT
    assert (body["revision"], body["withdrawn"]) == (1, True)
    assert body["sections"] == []
    for key in ("title", "status", "window", "milestones", "durations", "counts"):
        assert body[key] is None, key
    assert "rolled back" not in answer.text.lower() and "latency" not in answer.text.lower()


def test_reading_takes_the_read_scope_and_changing_takes_curation(served: Served) -> None:
    reported_incident(served.engine)
    _, reader = token(served.engine, api_tokens.SCOPE_TIMELINE_READ)
    _, curator = token(served.engine, api_tokens.SCOPE_TIMELINE_CURATE)
    body = {"at": "2026-01-01T00:00:00Z"}
    before = report_state(served.engine)
    assert served.client.get(REPORT, headers=reader).status_code == 200
    for answer in (
        served.client.put(f"{MILESTONES}/started", json=body, headers=reader),
        served.client.delete(f"{MILESTONES}/started", headers=reader),
        served.client.get(REPORT, headers=curator),
    ):
        assert answer.status_code == 403
        assert answer.json()["detail"]["code"] == "insufficient_scope"
    assert served.client.get(REPORT).status_code == 401
    assert served.client.put(f"{MILESTONES}/started", json=body).status_code == 401
    other = bearer(served.other_token)
    assert served.client.get(REPORT, headers=other).status_code == 403
    assert served.client.delete(f"{MILESTONES}/started", headers=other).status_code == 403
    assert report_state(served.engine) == before


def test_a_curators_time_keeps_the_derived_one_names_who_set_it_and_clears_back(
    served: Served,
) -> None:
    reported_incident(served.engine)
    actor, headers = token(served.engine)
    built = served.client.get(REPORT, headers=headers).json()["milestones"]
    derived = at(built["started"]["at"])
    # Before the detection (the workspace's creation here): a start may not come after it.
    wanted = at(built["detected"]["at"]).replace(microsecond=0) - timedelta(minutes=5)
    # Sent in another zone: the same moment, stored and answered in UTC.
    shanghai = wanted.astimezone(timezone(timedelta(hours=8))).isoformat()
    assert shanghai.endswith("+08:00")
    answer = served.client.put(f"{MILESTONES}/started", json={"at": shanghai}, headers=headers)
    assert answer.status_code == 200, answer.text
    now = answer.json()
    assert set(now) == set(NAMES)
    started = now["started"]
    assert at(started["at"]) == wanted
    assert at(started["derived_at"]) == derived
    assert started["entry_id"] is None
    assert started["derived_entry_id"] == built["started"]["derived_entry_id"]
    assert started["overridden_by"] == actor
    assert at(started["overridden_at"]) <= datetime.now(UTC)
    for name in ("detected", "mitigated", "resolved"):
        assert now[name] == built[name], name
    # The stored revision is what was built; the next build shows the curator's time.
    assert served.client.get(REPORT, headers=headers).json()["milestones"] == built
    rebuilt = build_report(served.engine)
    assert rebuilt.created and rebuilt.report.revision == 2
    newest = served.client.get(REPORT, headers=headers).json()
    assert newest["milestones"]["started"]["overridden_by"] == actor
    assert at(newest["milestones"]["started"]["at"]) == wanted
    resolved = at(newest["milestones"]["resolved"]["at"])
    assert newest["durations"]["time_to_resolve"] == int((resolved - wanted).total_seconds())
    assert newest["durations"]["time_to_detect"] == 5 * 60
    # Cleared: the timeline's time again, and who cleared it is audited.
    cleared = served.client.delete(f"{MILESTONES}/started", headers=headers)
    assert cleared.status_code == 200
    assert cleared.json()["started"] == {
        "at": built["started"]["at"],
        "entry_id": built["started"]["entry_id"],
        "overridden_by": None,
        "derived_at": built["started"]["derived_at"],
        "derived_entry_id": built["started"]["derived_entry_id"],
        "overridden_at": None,
    }
    again = served.client.delete(f"{MILESTONES}/started", headers=headers)
    assert again.status_code == 200 and again.json() == cleared.json()
    audited = _audit(served.engine)
    assert ("report.milestone.set", actor) in audited
    assert ("report.milestone.clear", actor) in audited


def _audit(engine: Engine) -> list[tuple[str, str]]:
    with engine.connect() as conn:
        rows = conn.execute(select(audit_events.c.action, audit_events.c.actor)).all()
    return [(row.action, row.actor) for row in rows]


@pytest.mark.parametrize(
    ("name", "body", "reason"),
    [
        ("mitigated", {"at": "LATER"}, "after the incident was resolved"),
        ("resolved", {"at": "EARLIER"}, "before the incident started"),
        ("detected", {"at": "2099-01-01T00:00:00Z"}, "is in the future"),
        ("started", {"at": "0001-01-01T00:00:00+05:00"}, "at is out of range"),
        ("started", {"at": "1999-12-31T23:00:00Z"}, "between 2000 and 2100"),
    ],
)
def test_a_time_the_report_refuses_is_422_with_its_reason_and_writes_nothing(
    served: Served, name: str, body: dict[str, str], reason: str
) -> None:
    reported_incident(served.engine)
    milestones = served.client.get(REPORT, headers=served.auth).json()["milestones"]
    resolved, started = at(milestones["resolved"]["at"]), at(milestones["started"]["at"])
    moment = {
        "LATER": (resolved + timedelta(minutes=1)).isoformat(),
        "EARLIER": (started - timedelta(minutes=1)).isoformat(),
    }.get(body["at"], body["at"])
    before = report_state(served.engine)
    answer = served.client.put(f"{MILESTONES}/{name}", json={"at": moment}, headers=served.auth)
    assert answer.status_code == 422, answer.text
    detail = answer.json()["detail"]
    assert detail["code"] == "invalid_input"
    assert reason in detail["message"]
    assert report_state(served.engine) == before


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("ended", {"at": "2026-01-01T00:00:00Z"}),
        ("started", {"at": "2026-01-01T00:00:00"}),
        ("started", {"at": "yesterday"}),
        ("started", {}),
        ("started", {"at": "2026-01-01T00:00:00Z", "by": "someone"}),
    ],
)
def test_a_request_outside_the_schema_is_422_with_where_and_writes_nothing(
    served: Served, path: str, body: dict[str, Any]
) -> None:
    reported_incident(served.engine)
    before = report_state(served.engine)
    answer = served.client.put(f"{MILESTONES}/{path}", json=body, headers=served.auth)
    assert answer.status_code == 422
    issues = answer.json()["detail"]
    assert isinstance(issues, list) and issues and all(issue["msg"] for issue in issues)
    assert served.client.delete(f"{MILESTONES}/{path}", headers=served.auth).status_code in (
        200,
        422,
    )
    assert report_state(served.engine)[0] == before[0]
