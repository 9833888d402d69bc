"""Window partitions in Dagster: the sensor, the asset, the jobs and the concurrency tags, on a
real Dagster instance (`instance_for_test`) and the product database (SQLite and PostgreSQL)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
import yaml
from dagster._core.storage.dagster_run import DagsterRun
from dagster._core.utils import make_new_run_id
from sqlalchemy import Engine

from timeline_pipeline.orchestration.resources import DatabaseResource, TimelineSettingsResource
from timeline_pipeline.orchestration.windows import (
    DISCOVERY_SENSOR,
    RERUN_JOB,
    SYNTHESIS_JOB,
    WINDOW_DRAFTS_KEY,
    WINDOW_PARTITIONS,
    SynthesizerResource,
    partition_tags,
    release_abandoned_runs,
    timeline_window_drafts,
    window_defs,
)
from timeline_pipeline.settings import load_timeline_settings
from timeline_pipeline.store import entries
from timeline_pipeline.windows.keys import WindowRef, window_start_of
from timeline_pipeline_tests.support.anthropic_standin import (
    AnthropicStandIn,
    cite_first_evidence,
    overloaded,
    tool_reply,
)
from timeline_pipeline_tests.windows.support import post, window_states, workspace

REPO = Path(__file__).resolve().parents[2]
OVERRIDES: dict[str, Any] = {"enabled": True, "synthesis_chunk_max_attempts": 1}
NOW = datetime.now(UTC)
W1 = window_start_of(NOW - timedelta(hours=2), timedelta(minutes=10))
W2 = W1 + timedelta(minutes=30)
FACT = "we rolled back the deploy of payments-api to v41"


def defs_for(db_url: str, synthesizer: SynthesizerResource | None = None) -> dg.Definitions:
    resources = dg.Definitions(
        resources={
            "database": DatabaseResource(url=db_url),
            "timeline_settings": TimelineSettingsResource(overrides=OVERRIDES),
        }
    )
    settings = load_timeline_settings(**OVERRIDES)
    return dg.Definitions.merge(resources, window_defs(settings, synthesizer))


@pytest.fixture
def instance() -> Iterator[dg.DagsterInstance]:
    with dg.instance_for_test() as made:
        yield made


@pytest.fixture
def chat(engine: Engine) -> list[int]:
    workspace(engine, created_at=NOW - timedelta(hours=3))
    return post(engine, [W1 + timedelta(minutes=1), W2 + timedelta(minutes=2)], text=FACT)


def tick(defs: dg.Definitions, instance: dg.DagsterInstance, cursor: str | None = None) -> Any:
    sensor = defs.resolve_sensor_def(DISCOVERY_SENSOR)
    with dg.build_sensor_context(
        instance_ref=instance.get_ref(), definitions=defs, cursor=cursor, resources=defs.resources
    ) as context:
        return sensor.evaluate_tick(context)


def launch(
    defs: dg.Definitions, instance: dg.DagsterInstance, key: str, **kwargs: Any
) -> dg.ExecuteInProcessResult:
    """Launch the job for one partition the way the UI launchpad does: partition tags and the
    partition's default config come from the job."""
    return defs.resolve_job_def(SYNTHESIS_JOB).execute_in_process(
        partition_key=key, instance=instance, raise_on_error=False, **kwargs
    )


def materialization(instance: dg.DagsterInstance, key: str) -> dict[str, Any]:
    event = instance.get_latest_materialization_event(WINDOW_DRAFTS_KEY)
    assert event is not None and event.asset_materialization is not None
    assert event.asset_materialization.partition == key
    return {k: v.value for k, v in event.asset_materialization.metadata.items()}


def test_the_sensor_adds_partitions_and_requests_their_runs_in_one_tick(
    db_url: str, chat: list[int], instance: dg.DagsterInstance
) -> None:
    defs = defs_for(db_url)
    first = tick(defs, instance)
    k1 = WindowRef("inc-1", "oc_chat", W1).partition_key
    k2 = WindowRef("inc-1", "oc_chat", W2).partition_key
    (added,) = first.dynamic_partitions_requests
    assert added.partitions_def_name == WINDOW_PARTITIONS
    assert list(added.partition_keys) == [k1, k2]
    assert [r.partition_key for r in first.run_requests] == [k1, k2]
    older, newer = first.run_requests
    assert older.tags["timeline/workspace"] == "inc-1"
    assert older.tags["timeline/synthesis"] == "1"
    assert int(older.tags["dagster/priority"]) > int(newer.tags["dagster/priority"])
    assert older.run_key.startswith(f"{k1}/attempt-1/")
    assert older.run_config == {"ops": {"timeline_window_drafts": {"config": {"replay": False}}}}
    # The next tick finds nothing new and does not list partitions or request again.
    again = tick(defs, instance, first.cursor)
    assert again.run_requests == [] and again.skip_message
    assert not again.dynamic_partitions_requests


def test_a_window_partition_materializes_with_lineage_to_its_evidence(
    db_url: str, chat: list[int], engine: Engine, instance: dg.DagsterInstance
) -> None:
    defs = defs_for(db_url)
    first = tick(defs, instance)
    key = first.run_requests[0].partition_key
    instance.add_dynamic_partitions(WINDOW_PARTITIONS, [key])
    result = launch(defs, instance, key, run_config=first.run_requests[0].run_config)
    assert result.success
    assert result.dagster_run.tags["timeline/workspace"] == "inc-1"  # from the job itself
    meta = materialization(instance, key)
    assert meta["status"] == "completed"
    assert meta["evidence_ids"] == [chat[0]] and meta["evidence_count"] == 1
    assert meta["chunks"] == 1 and meta["entries_created"] == 1
    assert meta["prompt_version"] == "rules-v6" and meta["processor"] == "rules"
    assert meta["aggregate_hash"] == window_states(engine)[key].last_seen_content_hash
    with engine.connect() as conn:
        (entry,) = entries.list_for_workspace(conn, "inc-1")
    assert entry.evidence_ids == (chat[0],)
    # A second, automatic run for the same window does nothing and records no materialization.
    again = launch(defs, instance, key, run_config=first.run_requests[0].run_config)
    assert again.success
    assert not again.get_asset_materialization_events()
    (observed,) = again.get_asset_observation_events()
    assert observed.asset_observation_data.asset_observation.metadata["status"].value == "skipped"


def test_a_ui_launch_of_the_job_replays_the_window(
    db_url: str, chat: list[int], engine: Engine, instance: dg.DagsterInstance
) -> None:
    defs = defs_for(db_url)
    key = WindowRef("inc-1", "oc_chat", W1).partition_key
    instance.add_dynamic_partitions(WINDOW_PARTITIONS, [key])
    assert launch(defs, instance, key).success  # launchpad default: replay
    first = window_states(engine)[key]
    assert launch(defs, instance, key).success
    replayed = window_states(engine)[key]
    assert first.status == "completed"
    # The replay ran whole and found every entry already stored: no new material entry.
    assert replayed.status == "ignored" and replayed.revision > first.revision
    meta = materialization(instance, key)
    assert meta["replayed"] is True and meta["entries_unchanged"] > 0


def test_a_run_without_the_workspace_tag_is_refused(
    db_url: str, chat: list[int], engine: Engine, instance: dg.DagsterInstance
) -> None:
    defs = defs_for(db_url)
    key = WindowRef("inc-1", "oc_chat", W1).partition_key
    instance.add_dynamic_partitions(WINDOW_PARTITIONS, [key])
    # Materializing from the asset graph uses Dagster's implicit job: no partition tags.
    result = dg.materialize(
        [timeline_window_drafts],
        partition_key=key,
        instance=instance,
        resources=defs.resources,
        raise_on_error=False,
    )
    assert not result.success
    failure = result.get_step_failure_events()[0].step_failure_data.user_failure_data
    assert failure is not None and "timeline/workspace" in (failure.description or "")
    assert window_states(engine) == {}  # refused before touching the window
    tagged = dg.materialize(
        [timeline_window_drafts],
        partition_key=key,
        instance=instance,
        resources=defs.resources,
        tags=dict(partition_tags(key)),
    )
    assert tagged.success


def test_the_versioned_rerun_job_drives_a_window_rerun_job_and_the_sensor_runs_its_windows(
    db_url: str, chat: list[int], engine: Engine, instance: dg.DagsterInstance
) -> None:
    defs = defs_for(db_url)
    config = {"workspace_id": "inc-1", "processor_version": "v2", "batch_size": 1}
    result = defs.resolve_job_def(RERUN_JOB).execute_in_process(
        instance=instance, run_config={"ops": {"create_rerun_windows": {"config": config}}}
    )
    assert result.success
    job = result.output_for_node("create_rerun_windows")
    assert (job["type"], job["mode"], job["status"]) == ("window_rerun", "apply", "completed")
    assert job["result"]["created"] == 2 and job["batches"] >= 4  # one window a batch, twice
    run = instance.get_run_by_id(result.run_id)
    assert run is not None
    tags = run.tags
    assert tags["timeline/maintenance_status"] == "completed"
    v2 = [
        WindowRef("inc-1", "oc_chat", W1, "v2").partition_key,
        WindowRef("inc-1", "oc_chat", W2, "v2").partition_key,
    ]
    assert v2[0].endswith(":v2")
    requested = tick(defs, instance)
    assert [k for k in (r.partition_key for r in requested.run_requests) if k.endswith(":v2")] == v2
    (added,) = requested.dynamic_partitions_requests
    assert set(v2) <= set(added.partition_keys)
    states = window_states(engine)
    assert states[v2[0]].source_key.startswith("chat/oc_chat/processor/v2/window/")
    again = defs.resolve_job_def(RERUN_JOB).execute_in_process(
        instance=instance, run_config={"ops": {"create_rerun_windows": {"config": config}}}
    )
    assert again.output_for_node("create_rerun_windows")["result"]["already_present"] == 2


def test_an_ai_outage_defers_the_window_and_the_next_run_binds_the_drafts(
    db_url: str, chat: list[int], engine: Engine, instance: dg.DagsterInstance
) -> None:
    with AnthropicStandIn(script=[overloaded(), tool_reply(cite_first_evidence)]) as standin:
        synthesizer = SynthesizerResource(api_key=standin.api_key, base_url=standin.base_url)
        defs = defs_for(db_url, synthesizer)
        key = WindowRef("inc-1", "oc_chat", W1).partition_key
        instance.add_dynamic_partitions(WINDOW_PARTITIONS, [key])
        automatic = {"ops": {"timeline_window_drafts": {"config": {"replay": False}}}}
        deferred = launch(defs, instance, key, run_config=automatic)
        assert deferred.success  # an outage is not a failed run: nothing was attempted
        state = window_states(engine)[key]
        assert (state.status, state.attempt_count, state.deferred) == ("pending", 0, True)
        assert state.next_attempt_at is not None
        retried = launch(defs, instance, key, run_config=automatic)
        assert retried.success
        assert window_states(engine)[key].attempt_count == 1
    meta = materialization(instance, key)
    assert (meta["processor"], meta["model"], meta["input_tokens"]) == (
        "claude",
        "claude-standin",
        120,
    )
    with engine.connect() as conn:
        (entry,) = entries.list_for_workspace(conn, "inc-1")
    assert entry.evidence_ids == (chat[0],)


def test_dagster_yaml_limits_act_on_the_tags_every_synthesis_run_carries() -> None:
    config = yaml.safe_load((REPO / "dagster.yaml").read_text())
    limits = {item["key"]: item for item in config["concurrency"]["runs"]["tag_concurrency_limits"]}
    defaults = load_timeline_settings()
    assert limits["timeline/synthesis"]["limit"] == defaults.max_concurrent_synthesis
    per_workspace = limits["timeline/workspace"]
    assert per_workspace["value"] == {"applyLimitPerUniqueValue": True}
    assert per_workspace["limit"] == defaults.max_concurrent_per_workspace
    assert config["concurrency"]["pools"]["default_limit"] == defaults.max_concurrent_synthesis
    tags = partition_tags("inc-1:oc_chat:20261129T1020Z:v2")
    assert tags == {"timeline/workspace": "inc-1", "timeline/synthesis": "1"}
    assert timeline_window_drafts.op.pool == "synthesis"


def test_runs_whose_windows_went_stale_are_failed_so_they_free_their_queue_slot(
    instance: dg.DagsterInstance,
) -> None:
    def stored_run(status: dg.DagsterRunStatus) -> str:
        run = DagsterRun(job_name=SYNTHESIS_JOB, run_id=make_new_run_id(), status=status)
        instance.add_run(run)
        return run.run_id

    killed = stored_run(dg.DagsterRunStatus.STARTED)  # SIGKILLed: Dagster still sees it running
    finished = stored_run(dg.DagsterRunStatus.SUCCESS)

    released = release_abandoned_runs(
        instance, [killed, finished, killed, "not-a-dagster-run"], "15m"
    )

    assert released == [killed]
    dead = instance.get_run_by_id(killed)
    assert dead is not None and dead.status is dg.DagsterRunStatus.FAILURE
    done = instance.get_run_by_id(finished)
    assert done is not None and done.status is dg.DagsterRunStatus.SUCCESS
