"""The incident report in Dagster: the sensor's reasons to build, the asset per workspace
partition with the metadata the UI plots, the Lark document written from a run, and the
follow-up tasks job, on a real Dagster instance (`instance_for_test`), the product database
(SQLite and PostgreSQL) and the local Lark (docs/report.md, "When it is built", "In
Dagster")."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import dagster as dg
import pytest
from sqlalchemy import Engine

from timeline_pipeline.curation.rules import Action
from timeline_pipeline.curation.service import CurationService
from timeline_pipeline.db.schema import incident_reports as incident_reports_table
from timeline_pipeline.lark.simulator import SimulatorServer
from timeline_pipeline.lark.simulator.documents import DEFAULT_FOLDER_TOKEN
from timeline_pipeline.orchestration.collection import LarkClientResource
from timeline_pipeline.orchestration.report import (
    FOLLOW_UP_JOB,
    REPORT_JOB,
    REPORT_KEY,
    REPORT_SENSOR,
    TAG_TRIGGER,
    report_defs,
)
from timeline_pipeline.orchestration.resources import DatabaseResource, TimelineSettingsResource
from timeline_pipeline.orchestration.summary import WORKSPACE_PARTITIONS
from timeline_pipeline.report.service import ReportService, Trigger
from timeline_pipeline.settings import load_timeline_settings
from timeline_pipeline.store import follow_up_tasks
from timeline_pipeline_tests.report.support import (
    ACTOR,
    closed_incident,
    entry_of,
    report_settings,
    set_status,
)

SECRET = "report-dagster-secret"
ON: dict[str, Any] = {"enabled": True, "report_enabled": True}


def defs_for(
    db_url: str, overrides: dict[str, Any] = ON, lark: LarkClientResource | None = None
) -> dg.Definitions:
    resources = dg.Definitions(
        resources={
            "database": DatabaseResource(url=db_url),
            "timeline_settings": TimelineSettingsResource(overrides=overrides),
            "lark": lark
            or LarkClientResource(app_id="cli_x", app_secret="x", base_url="http://127.0.0.1:9"),
        }
    )
    return dg.Definitions.merge(resources, report_defs(load_timeline_settings(**overrides)))


@pytest.fixture
def instance() -> Iterator[dg.DagsterInstance]:
    with dg.instance_for_test() as made:
        yield made


def tick(defs: dg.Definitions, instance: dg.DagsterInstance, cursor: str | None = None) -> Any:
    sensor = defs.resolve_sensor_def(REPORT_SENSOR)
    with dg.build_sensor_context(
        instance_ref=instance.get_ref(), definitions=defs, resources=defs.resources, cursor=cursor
    ) as context:
        return sensor.evaluate_tick(context)


def launch(
    defs: dg.Definitions, instance: dg.DagsterInstance, workspace_id: str, **tags: str
) -> dg.ExecuteInProcessResult:
    instance.add_dynamic_partitions(WORKSPACE_PARTITIONS, [workspace_id])
    return defs.resolve_job_def(REPORT_JOB).execute_in_process(
        partition_key=workspace_id, instance=instance, raise_on_error=False, tags=tags
    )


def materializations(instance: dg.DagsterInstance) -> list[dict[str, Any]]:
    records = instance.fetch_materializations(REPORT_KEY, limit=100).records
    found = []
    for record in records:
        event = record.asset_materialization
        assert event is not None
        found.append({k: v.value for k, v in event.metadata.items()})
    return found


def test_a_workspace_that_left_firing_gets_one_build_and_then_none(
    db_url: str, engine: Engine, instance: dg.DagsterInstance
) -> None:
    defs = defs_for(db_url)
    closed_incident(engine)

    (request,) = tick(defs, instance).run_requests
    result = launch(defs, instance, "inc-1", **request.tags)
    after = tick(defs, instance)

    assert request.partition_key == "inc-1"
    assert request.job_name == REPORT_JOB
    assert request.tags[TAG_TRIGGER] == Trigger.CLOSED
    assert result.success
    assert not after.run_requests
    (metadata,) = materializations(instance)
    assert metadata["revision"] == 1
    assert metadata["trigger"] == Trigger.CLOSED
    assert metadata["time_to_resolve_seconds"] > 0
    assert metadata["entries_drafts"] == 5


def test_a_firing_workspace_is_not_built_by_the_sensor(
    db_url: str, engine: Engine, instance: dg.DagsterInstance
) -> None:
    defs = defs_for(db_url)
    closed_incident(engine)
    set_status(engine, "inc-1", "firing")

    assert not tick(defs, instance).run_requests


def test_a_confirmation_after_the_build_asks_for_the_next_revision(
    db_url: str, engine: Engine, instance: dg.DagsterInstance
) -> None:
    defs = defs_for(db_url)
    closed_incident(engine)
    (first,) = tick(defs, instance).run_requests
    launch(defs, instance, "inc-1", **first.tags)
    CurationService(engine).transition(
        "inc-1",
        entry_of(engine, "mitigation").id,
        Action.CONFIRM,
        expected_revision=None,
        actor=ACTOR,
    )

    (second,) = tick(defs, instance).run_requests
    launch(defs, instance, "inc-1", **second.tags)

    assert second.tags[TAG_TRIGGER] == Trigger.CONFIRMED_CHANGE
    assert second.run_key != first.run_key
    assert sorted(m["revision"] for m in materializations(instance)) == [1, 2]


def test_a_revision_built_from_the_cli_is_recorded_in_dagster_once(
    db_url: str, engine: Engine, instance: dg.DagsterInstance
) -> None:
    defs = defs_for(db_url)
    closed_incident(engine)
    ReportService(engine, report_settings()).build("inc-1", actor=ACTOR, trigger=Trigger.MANUAL)

    (request,) = tick(defs, instance).run_requests
    launch(defs, instance, "inc-1", **request.tags)
    (metadata,) = materializations(instance)

    assert request.tags[TAG_TRIGGER] == Trigger.RECORD
    assert metadata["revision"] == 1
    assert metadata["new_revision"] is False
    assert not tick(defs, instance).run_requests


def test_a_failed_build_is_asked_again_under_a_new_key_a_bounded_number_of_times(
    db_url: str, engine: Engine, instance: dg.DagsterInstance, monkeypatch: pytest.MonkeyPatch
) -> None:
    defs = defs_for(db_url)
    closed_incident(engine)

    def broken(*_args: Any, **_kwargs: Any) -> Any:
        raise RuntimeError("the database went away mid-build")

    monkeypatch.setattr(ReportService, "build", broken)
    keys = []
    cursor = None
    for _ in range(5):
        result = tick(defs, instance, cursor)
        cursor = result.cursor
        if not result.run_requests:
            break
        (request,) = result.run_requests
        keys.append(request.run_key)
        tags = {**request.tags, "dagster/run_key": request.run_key}
        assert not launch(defs, instance, "inc-1", **tags).success
    monkeypatch.undo()

    assert len(keys) == 4  # the first run and three reruns, each under its own key
    assert len(set(keys)) == 4


def test_a_recall_in_a_firing_workspace_with_a_report_rebuilds_it(
    db_url: str, engine: Engine, instance: dg.DagsterInstance
) -> None:
    defs = defs_for(db_url)
    closed_incident(engine)
    ReportService(engine, report_settings()).build("inc-1", actor=ACTOR, trigger=Trigger.MANUAL)
    set_status(engine, "inc-1", "firing")
    with engine.begin() as conn:
        conn.execute(incident_reports_table.update().values(withdrawn=True))

    (request,) = tick(defs, instance).run_requests

    assert request.tags[TAG_TRIGGER] == Trigger.RECALL


def test_with_the_sensor_off_nothing_is_requested(
    db_url: str, engine: Engine, instance: dg.DagsterInstance
) -> None:
    defs = defs_for(db_url, {"enabled": True})
    closed_incident(engine)

    result = tick(defs, instance)

    assert not result.run_requests
    assert "reportEnabled" in (result.skip_message or "")


def test_a_run_writes_the_document_and_records_its_link(
    db_url: str, engine: Engine, instance: dg.DagsterInstance
) -> None:
    app_id = f"cli_rep_{uuid.uuid4().hex[:12]}"
    overrides = {
        **ON,
        "report_lark_doc_enabled": True,
        "report_folder_token": DEFAULT_FOLDER_TOKEN,
        "follow_up_tasks_enabled": True,
    }
    closed_incident(engine)
    with SimulatorServer(app_id=app_id, app_secret=SECRET) as lark:
        lark.state.store.add_message(
            {"message_id": "om_seed", "chat_id": "oc_chat", "create_time": "1700000000000"}
        )
        defs = defs_for(
            db_url,
            overrides,
            LarkClientResource(app_id=app_id, app_secret=SECRET, base_url=lark.base_url),
        )
        (request,) = tick(defs, instance).run_requests
        launch(defs, instance, "inc-1", **request.tags)
        CurationService(engine, follow_up_tasks=True).transition(
            "inc-1",
            entry_of(engine, "next_step").id,
            Action.CONFIRM,
            expected_revision=None,
            actor=ACTOR,
        )
        requests = tick(defs, instance).run_requests
        by_job = {r.job_name: r for r in requests}
        tasks_run = defs.resolve_job_def(FOLLOW_UP_JOB).execute_in_process(instance=instance)

        (document_id,) = lark.state.documents.document_ids()
        (metadata,) = materializations(instance)
        assert metadata["document_url"].endswith(document_id)
        assert set(by_job) == {REPORT_JOB, FOLLOW_UP_JOB}
        assert tasks_run.success
        (task,) = lark.state.documents.tasks()
        with engine.connect() as conn:
            (row,) = follow_up_tasks.for_workspace(conn, "inc-1")
        assert row.state == "created"
        assert row.task_guid == task["guid"]
