"""`timeline-pipeline report ...` on a real database (SQLite and PostgreSQL): build, show in
Markdown and in the API's JSON, kept revisions, milestone times set and cleared as `cli:<user>`,
the Lark document written through the local Lark, and every refusal one line on stderr with
the project's exit codes (1 bad input, 2 usage), nothing written."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from click.testing import CliRunner, Result
from sqlalchemy import Engine

from timeline_pipeline.api.presenters import report_out
from timeline_pipeline.cli.main import cli
from timeline_pipeline.lark.simulator import SimulatorServer
from timeline_pipeline.lark.simulator.documents import DEFAULT_FOLDER_TOKEN
from timeline_pipeline.maintenance.endpoint import cli_actor
from timeline_pipeline.report.views import read_report
from timeline_pipeline_tests.curation.support import CHAT, IMPACT, ROLLBACK, incident
from timeline_pipeline_tests.support.reports import (
    build_report,
    report_service,
    report_state,
    reported_incident,
    withdraw,
)


@pytest.fixture
def run(db_url: str, monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    monkeypatch.setenv("TIMELINE_DATABASE_URL", db_url)
    return CliRunner()


def invoke(runner: CliRunner, *args: str) -> Result:
    return runner.invoke(cli, list(args), catch_exceptions=False)


def one_line_error(result: Result, code: int) -> str:
    """The refusal's one line on stderr (and nothing on stdout), never a traceback."""
    assert result.exit_code == code, (result.stdout, result.stderr)
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert "Traceback" not in result.stderr
    return lines[0]


def test_build_then_show_in_markdown_and_in_the_apis_json(run: CliRunner, engine: Engine) -> None:
    incident(engine)
    reported_incident(engine, build=False)
    built = invoke(run, "report", "build", "--workspace", "inc-1")
    assert built.exit_code == 0, built.stderr
    assert built.stdout.splitlines() == ["report of inc-1: revision 1 (new)", "document: none"]
    again = invoke(run, "report", "build", "--workspace", "inc-1", "--json")
    assert json.loads(again.stdout) == {
        "workspace_id": "inc-1",
        "revision": 1,
        "created": False,
        "document_url": None,
    }
    shown = invoke(run, "report", "show", "inc-1")
    assert shown.exit_code == 0
    stored = report_service(engine).latest("inc-1")
    assert shown.stdout == stored.markdown
    assert shown.stdout.startswith("# Incident report: inc-1\n")
    assert stored.built_by == cli_actor()
    as_json = invoke(run, "report", "show", "inc-1", "--format", "json")
    assert as_json.exit_code == 0
    read = read_report(report_service(engine), "inc-1")
    assert json.loads(as_json.stdout) == report_out(read).model_dump(mode="json")
    assert json.loads(as_json.stdout)["built_by"] == cli_actor()


def test_a_kept_revision_and_a_withdrawn_one(run: CliRunner, engine: Engine) -> None:
    incident(engine)
    reported = reported_incident(engine)
    set_at = invoke(
        run,
        "report",
        "set-milestone",
        "--workspace",
        "inc-1",
        "--milestone",
        "detected",
        "--at",
        _iso(_milestone(engine, "detected") - timedelta(minutes=1)),
    )
    assert set_at.exit_code == 0, set_at.stderr
    assert build_report(engine).report.revision == 2
    first = json.loads(
        invoke(run, "report", "show", "inc-1", "--format", "json", "--revision", "1").stdout
    )
    newest = json.loads(invoke(run, "report", "show", "inc-1", "--format", "json").stdout)
    assert (first["revision"], newest["revision"]) == (1, 2)
    assert first["milestones"]["detected"]["overridden_by"] is None
    assert newest["milestones"]["detected"]["overridden_by"] == cli_actor()
    missing = invoke(run, "report", "show", "inc-1", "--revision", "9")
    assert one_line_error(missing, 1) == "error: workspace 'inc-1' has no revision 9 of its report"
    withdraw(engine, "inc-1", reported.evidence[ROLLBACK])
    markdown = invoke(run, "report", "show", "inc-1")
    assert markdown.exit_code == 0
    assert "withdrawn" in markdown.stdout and "rolled back" not in markdown.stdout.lower()
    data = json.loads(invoke(run, "report", "show", "inc-1", "--format", "json").stdout)
    assert data["withdrawn"] is True and data["sections"] == [] and data["title"] is None


def test_an_unknown_workspace_or_no_report_is_one_line_and_exit_1(
    run: CliRunner, engine: Engine
) -> None:
    incident(engine)
    for args in (
        ("report", "build", "--workspace", "nope"),
        ("report", "show", "nope"),
        ("report", "clear-milestone", "--workspace", "nope", "--milestone", "started"),
    ):
        assert one_line_error(invoke(run, *args), 1) == "error: workspace 'nope' does not exist"
    line = one_line_error(invoke(run, "report", "show", "inc-1"), 1)
    assert "no report yet" in line and "report build --workspace inc-1" in line


def test_a_milestone_is_set_by_the_cli_user_keeping_the_derived_time_and_cleared(
    run: CliRunner, engine: Engine
) -> None:
    incident(engine)
    reported_incident(engine)
    derived = _milestone(engine, "resolved")
    wanted = derived + timedelta(minutes=2)
    result = invoke(
        run,
        "report",
        "set-milestone",
        "--workspace",
        "inc-1",
        "--milestone",
        "resolved",
        "--at",
        wanted.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f+00:00"),
        "--json",
    )
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    resolved = data["milestones"]["resolved"]
    assert data["milestone"] == "resolved"
    assert _at(resolved["at"]) == wanted
    assert _at(resolved["derived_at"]) == derived
    assert resolved["overridden_by"] == cli_actor()
    human = invoke(
        run, "report", "clear-milestone", "--workspace", "inc-1", "--milestone", "resolved"
    )
    assert human.exit_code == 0
    assert (
        human.stdout.splitlines()[0]
        == f"resolved of inc-1: {derived.isoformat()} (from the timeline)"
    )
    assert "report build --workspace inc-1" in human.stdout
    assert report_service(engine).milestones("inc-1").resolved.overridden_by is None


@pytest.mark.parametrize(
    ("milestone", "at", "code", "reason"),
    [
        ("mitigated", "LATER", 1, "after the incident was resolved"),
        ("resolved", "EARLIER", 1, "before the incident started"),
        ("started", "2099-01-01T00:00:00Z", 1, "is in the future"),
        ("started", "1999-12-31T00:00:00Z", 1, "--at must be between 2000 and 2100"),
        ("started", "2026-01-01T00:00:00", 2, "give a timezone"),
        ("started", "not a time", 2, "not an ISO 8601 time"),
        ("ended", "2026-01-01T00:00:00Z", 2, "'ended' is not one of"),
    ],
)
def test_a_refused_time_is_one_line_and_writes_nothing(
    run: CliRunner, engine: Engine, milestone: str, at: str, code: int, reason: str
) -> None:
    incident(engine)
    reported_incident(engine)
    moment = {
        "LATER": _iso(_milestone(engine, "resolved") + timedelta(minutes=1)),
        "EARLIER": _iso(_milestone(engine, "started") - timedelta(minutes=1)),
    }.get(at, at)
    before = report_state(engine)
    result = invoke(
        run,
        "report",
        "set-milestone",
        "--workspace",
        "inc-1",
        "--milestone",
        milestone,
        "--at",
        moment,
    )
    assert reason in one_line_error(result, code)
    assert report_state(engine) == before


@pytest.fixture
def lark(monkeypatch: pytest.MonkeyPatch) -> Iterator[SimulatorServer]:
    """The local Lark, and the settings that write the report into a document there."""
    app_id = f"cli_report_{uuid.uuid4().hex[:12]}"
    with SimulatorServer(app_id=app_id, app_secret="report-cli-secret") as server:
        server.state.store.add_message(
            {"message_id": "om_seed", "chat_id": CHAT, "create_time": "1700000000000"}
        )
        for name, value in {
            "LARK_BASE_URL": server.base_url,
            "LARK_APP_ID": app_id,
            "LARK_APP_SECRET": "report-cli-secret",
            "TIMELINE_LARK_REPORT_ENABLED": "true",
            "TIMELINE_LARK_REPORT_LARK_DOC_ENABLED": "true",
            "TIMELINE_LARK_REPORT_FOLDER_TOKEN": DEFAULT_FOLDER_TOKEN,
            "TIMELINE_LARK_REPORT_DOCUMENT_URL_BASE": "https://acme.feishu.cn/docx/",
            "TIMELINE_LARK_LARK_MAX_ATTEMPTS": "1",
        }.items():
            monkeypatch.setenv(name, value)
        yield server


def test_with_the_document_on_build_writes_it_and_prints_its_link(
    run: CliRunner, engine: Engine, lark: SimulatorServer
) -> None:
    incident(engine)
    reported_incident(engine, build=False)
    result = invoke(run, "report", "build", "--workspace", "inc-1", "--json")
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    [document_id] = lark.state.documents.document_ids()
    assert data == {
        "workspace_id": "inc-1",
        "revision": 1,
        "created": True,
        "document_url": f"https://acme.feishu.cn/docx/{document_id}",
    }
    assert IMPACT.split()[0].lower() in lark.state.documents.raw_text(document_id).lower()
    # A build with nothing new writes nothing new, and the link is the same.
    again = invoke(run, "report", "build", "--workspace", "inc-1")
    assert again.stdout.splitlines() == [
        "report of inc-1: revision 1 (unchanged, already built)",
        f"document: https://acme.feishu.cn/docx/{document_id}",
    ]
    assert lark.state.documents.document_ids() == [document_id]
    shown = json.loads(invoke(run, "report", "show", "inc-1", "--format", "json").stdout)
    assert shown["document_url"] == data["document_url"]


def test_a_lark_error_is_one_line_and_the_revision_stays_built(
    run: CliRunner, engine: Engine, lark: SimulatorServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TIMELINE_LARK_REPORT_FOLDER_TOKEN", "fldnotaknownfolder")
    incident(engine)
    reported_incident(engine, build=False)
    result = invoke(run, "report", "build", "--workspace", "inc-1")
    line = one_line_error(result, 1)
    assert line.startswith("error: revision 1 is built; its Lark document is not written yet")
    assert lark.state.documents.document_ids() == []
    assert report_service(engine).latest("inc-1").revision == 1


def _milestone(engine: Engine, name: str) -> datetime:
    moment = report_service(engine).milestones("inc-1").get(name).at
    assert moment is not None
    return moment


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat()


def _at(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))
