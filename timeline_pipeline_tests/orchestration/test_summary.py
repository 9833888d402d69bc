"""The workspace summary in Dagster: the sensor, the asset per workspace partition and the job,
on a real Dagster instance (`instance_for_test`) and the product database (SQLite and
PostgreSQL), with windows synthesized by the real window runner."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import dagster as dg
import pytest
from sqlalchemy import Engine

from timeline_pipeline.curation.service import CurationService
from timeline_pipeline.domain.window_keys import window_start_of
from timeline_pipeline.orchestration.resources import DatabaseResource, TimelineSettingsResource
from timeline_pipeline.orchestration.summary import (
    SUMMARY_JOB,
    SUMMARY_KEY,
    SUMMARY_SENSOR,
    WORKSPACE_PARTITIONS,
    summary_defs,
)
from timeline_pipeline.settings import load_timeline_settings
from timeline_pipeline.store import summaries as store
from timeline_pipeline_tests.curation.support import (
    CHATTER,
    IMPACT,
    NOW,
    RECOVERED,
    ROLLBACK,
    W1,
    W2,
    W3,
    WINDOW,
    incident,
    say,
    synthesize,
    window_state,
)
from timeline_pipeline_tests.windows.support import workspace

ON: dict[str, Any] = {"enabled": True, "summary_enabled": True}


def defs_for(db_url: str, overrides: dict[str, Any] = ON) -> dg.Definitions:
    resources = dg.Definitions(
        resources={
            "database": DatabaseResource(url=db_url),
            "timeline_settings": TimelineSettingsResource(overrides=overrides),
        }
    )
    return dg.Definitions.merge(resources, summary_defs(load_timeline_settings(**overrides)))


@pytest.fixture
def instance() -> Iterator[dg.DagsterInstance]:
    with dg.instance_for_test() as made:
        yield made


def tick(defs: dg.Definitions, instance: dg.DagsterInstance, cursor: str | None = None) -> Any:
    sensor = defs.resolve_sensor_def(SUMMARY_SENSOR)
    with dg.build_sensor_context(
        instance_ref=instance.get_ref(), definitions=defs, cursor=cursor, resources=defs.resources
    ) as context:
        return sensor.evaluate_tick(context)


def launch(
    defs: dg.Definitions, instance: dg.DagsterInstance, workspace_id: str, **kwargs: Any
) -> dg.ExecuteInProcessResult:
    """Launch job `summarize_workspaces` for a partition as the UI or the daemon does."""
    instance.add_dynamic_partitions(WORKSPACE_PARTITIONS, [workspace_id])
    return defs.resolve_job_def(SUMMARY_JOB).execute_in_process(
        partition_key=workspace_id, instance=instance, raise_on_error=False, **kwargs
    )


def summary_of(engine: Engine) -> store.SummaryRow | None:
    with engine.connect() as conn:
        return store.get_summary(conn, "inc-1")


def test_a_completed_window_gets_one_summary_run_and_one_materialization(
    db_url: str, engine: Engine, instance: dg.DagsterInstance
) -> None:
    defs = defs_for(db_url)
    incident(engine)
    say(engine, W1, [IMPACT, ROLLBACK])
    synthesize(engine, W1)
    say(engine, W2, CHATTER)
    assert synthesize(engine, W2).status == "ignored"

    first = tick(defs, instance)
    (request,) = first.run_requests
    assert request.partition_key == "inc-1"
    # Under dagster.yaml's one-run-per-workspace limit: never beside the workspace's synthesis.
    assert (request.tags["timeline/workspace"], request.tags["timeline/summary"]) == ("inc-1", "1")
    (added,) = first.dynamic_partitions_requests
    assert (added.partitions_def_name, list(added.partition_keys)) == (
        WORKSPACE_PARTITIONS,
        ["inc-1"],
    )
    # The ignored window needs no run: its decision was made in the tick.
    assert window_state(engine, W2).summary_attempted
    assert not window_state(engine, W1).summary_attempted  # the run owns that attempt
    # A burst of ticks asks for the same run (Dagster launches a run key once).
    again = tick(defs, instance, first.cursor)
    assert [r.run_key for r in again.run_requests] == [request.run_key]

    result = launch(defs, instance, "inc-1", tags={"dagster/run_key": request.run_key})
    assert result.success
    assert result.dagster_run.tags["timeline/workspace"] == "inc-1"  # from the job itself
    (materialized,) = result.get_asset_materialization_events()
    meta = {k: v.value for k, v in materialized.materialization.metadata.items()}
    assert meta["outcome"] == "written" and meta["attempted"] is True
    assert meta["window_state_ids"] == [window_state(engine, W1).id]
    assert meta["window_decisions"] == {"attempt": 1} and meta["summarizer"] == "rules"
    written = summary_of(engine)
    assert written is not None and written.source == "ai" and written.revision == 1
    assert meta["input_digest"] == written.metadata["input_digest"]

    # Nothing awaits a decision any more: no request, and a relaunch writes nothing.
    assert tick(defs, instance, again.cursor).run_requests == []
    relaunch = launch(defs, instance, "inc-1")
    assert relaunch.success and not relaunch.get_asset_materialization_events()
    (observed,) = relaunch.get_asset_observation_events()
    assert observed.asset_observation_data.asset_observation.metadata["outcome"].value == (
        "nothing_to_do"
    )
    assert summary_of(engine) == written

    # Once a curator writes the summary, later windows are settled without a run.
    CurationService(engine).write_summary(
        "inc-1", "Curated.", expected_revision=1, check=True, actor="t"
    )
    say(engine, W3, [RECOVERED])
    synthesize(engine, W3)
    assert tick(defs, instance).run_requests == []
    assert window_state(engine, W3).summary_attempted
    kept = summary_of(engine)
    assert kept is not None and (kept.source, kept.content) == ("human", "Curated.")


def test_a_run_that_failed_before_taking_its_windows_is_requested_again(
    db_url: str, engine: Engine, instance: dg.DagsterInstance
) -> None:
    defs = defs_for(db_url)
    incident(engine)
    say(engine, W1, [ROLLBACK])
    synthesize(engine, W1)
    first = tick(defs, instance)
    (request,) = first.run_requests
    # The run starts while the product database does not answer.
    unreachable = dg.Definitions.merge(
        defs_for("postgresql+psycopg://nobody@127.0.0.1:1/none"), dg.Definitions()
    )
    failed = launch(unreachable, instance, "inc-1", tags={"dagster/run_key": request.run_key})
    assert not failed.success
    assert not window_state(engine, W1).summary_attempted
    retry = tick(defs, instance, first.cursor)
    (again,) = retry.run_requests
    assert again.run_key != request.run_key and again.run_key.endswith(":1")
    assert launch(defs, instance, "inc-1", tags={"dagster/run_key": again.run_key}).success
    assert window_state(engine, W1).summary_attempted


def test_nothing_is_requested_or_decided_while_the_summary_is_disabled(
    db_url: str, engine: Engine, instance: dg.DagsterInstance
) -> None:
    incident(engine)
    say(engine, W1, [ROLLBACK])
    synthesize(engine, W1)
    off = defs_for(db_url, {"enabled": True, "summary_enabled": False})
    result = tick(off, instance)
    assert result.run_requests == [] and "disabled" in (result.skip_message or "")
    launched = launch(off, instance, "inc-1")
    assert launched.success and not launched.get_asset_materialization_events()
    assert not window_state(engine, W1).summary_attempted
    assert summary_of(engine) is None


def test_a_window_that_finishes_long_after_the_lookback_still_gets_its_decision(
    db_url: str, engine: Engine, instance: dg.DagsterInstance
) -> None:
    """A window of an ended incident synthesized days later (a backlog, a rerun): its start is
    far before any lookback, and the scan used to start there, so it never got a decision."""
    defs = defs_for(db_url)
    old = window_start_of(NOW - timedelta(hours=100), WINDOW)
    workspace(engine, "inc-1", ("oc_chat",), created_at=old - timedelta(hours=1))
    say(engine, old, [IMPACT, ROLLBACK])
    assert synthesize(engine, old).status == "completed"
    (request,) = tick(defs, instance).run_requests
    assert request.partition_key == "inc-1"
    assert launch(defs, instance, "inc-1", tags={"dagster/run_key": request.run_key}).success
    assert window_state(engine, old).summary_attempted
    written = summary_of(engine)
    assert written is not None and written.source == "ai"


def test_the_code_location_has_the_summary_asset_job_and_sensor() -> None:
    from timeline_pipeline.definitions import defs

    assert defs.resolve_assets_def(SUMMARY_KEY).partitions_def is not None
    assert defs.resolve_job_def(SUMMARY_JOB).name == SUMMARY_JOB
    assert defs.resolve_sensor_def(SUMMARY_SENSOR).name == SUMMARY_SENSOR
