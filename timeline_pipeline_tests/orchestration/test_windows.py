"""Window partitions in Dagster: the sensor, the asset, the jobs and the concurrency tags, on a
real Dagster instance (`instance_for_test`) and the product database (SQLite and PostgreSQL)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
import yaml
from dagster._core.storage.dagster_run import DagsterRun
from dagster._core.utils import make_new_run_id
from sqlalchemy import Engine

from timeline_pipeline.domain.sync_states import SyncState
from timeline_pipeline.domain.window_keys import WindowRef, parse_partition_key, window_start_of
from timeline_pipeline.orchestration.resources import DatabaseResource, TimelineSettingsResource
from timeline_pipeline.orchestration.windows import (
    DISCOVERY_SENSOR,
    RERUN_JOB,
    SYNTHESIS_JOB,
    WINDOW_DRAFTS_KEY,
    WINDOW_PARTITIONS,
    SynthesizerResource,
    evaluate_discovery,
    partition_tags,
    release_abandoned_runs,
    timeline_window_drafts,
    window_defs,
)
from timeline_pipeline.settings import load_timeline_settings
from timeline_pipeline.store import entries
from timeline_pipeline.store import window_states as window_store
from timeline_pipeline.windows.batches import RunScope
from timeline_pipeline.windows.planning import run_priority
from timeline_pipeline.windows.run_queue import lane_of
from timeline_pipeline_tests.support.anthropic_standin import (
    AnthropicStandIn,
    TextReply,
    cite_first_evidence,
    overloaded,
    tool_reply,
)
from timeline_pipeline_tests.support.windows import WINDOW
from timeline_pipeline_tests.synthesis_run.commit_faults import advances_cursor, failing_commits
from timeline_pipeline_tests.windows.support import post, window_states, workspace

REPO = Path(__file__).resolve().parents[2]
OVERRIDES: dict[str, Any] = {"enabled": True, "synthesis_chunk_max_attempts": 1}
NOW = datetime.now(UTC)
W1 = window_start_of(NOW - timedelta(hours=2), WINDOW)
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


def add_partitions(instance: dg.DagsterInstance, result: Any) -> list[str]:
    """Add a tick's partitions as the daemon does: one add request, in its order."""
    added: list[str] = []
    for request in result.dynamic_partitions_requests or []:
        instance.add_dynamic_partitions(request.partitions_def_name, list(request.partition_keys))
        added.extend(request.partition_keys)
    return added


def run_request(
    defs: dg.Definitions, instance: dg.DagsterInstance, request: dg.RunRequest
) -> dg.ExecuteInProcessResult:
    """Execute a sensor's request as the daemon would: its partition or range, tags, config."""
    return defs.resolve_job_def(SYNTHESIS_JOB).execute_in_process(
        instance=instance,
        partition_key=request.partition_key,
        tags=dict(request.tags),
        run_config=request.run_config,
        raise_on_error=False,
    )


def materializations(instance: dg.DagsterInstance, run_id: str) -> dict[str, dict[str, Any]]:
    """Each partition's materialization metadata recorded by one run."""
    found: dict[str, dict[str, Any]] = {}
    for record in instance.get_records_for_run(run_id).records:
        event = record.event_log_entry.dagster_event
        if event is None or not event.is_step_materialization:
            continue
        data = event.step_materialization_data.materialization
        assert data.partition is not None
        found[data.partition] = {k: v.value for k, v in data.metadata.items()}
    return found


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
    # Both windows are new and in one lane: one batch, a range run over exactly them.
    (batch,) = first.run_requests
    assert batch.partition_key is None
    assert batch.tags["dagster/asset_partition_range_start"] == k1
    assert batch.tags["dagster/asset_partition_range_end"] == k2
    assert batch.tags["timeline/windows"] == "2"
    assert batch.tags["timeline/synthesis"] == "1"
    assert batch.tags["timeline/lane"] == lane_of("inc-1", 2)
    assert "timeline/workspace" not in batch.tags  # a batch may span workspaces of its lane
    assert batch.tags["timeline/request"].startswith(lane_of("inc-1", 2) + "@")
    assert int(batch.tags["dagster/priority"]) == run_priority(W1)
    assert batch.run_config == {"ops": {"timeline_window_drafts": {"config": {"replay": False}}}}
    # The next tick finds nothing new and does not list partitions or request again.
    again = tick(defs, instance, first.cursor)
    assert again.run_requests == [] and again.skip_message
    assert not again.dynamic_partitions_requests


@pytest.mark.parametrize(("model", "expected_runs"), [(False, 1), (True, 2)])
def test_a_batch_takes_more_windows_when_the_rules_synthesize(
    db_url: str,
    engine: Engine,
    instance: dg.DagsterInstance,
    monkeypatch: pytest.MonkeyPatch,
    model: bool,
    expected_runs: int,
) -> None:
    """A run's start-up is worth paying for hundreds of rules windows (milliseconds each) but
    only for tens of model calls: the same four windows are one run with the rules and two with
    Claude when the bounds are 4 and 2 (docs/scaling.md)."""
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.setenv("TIMELINE_LARK_SYNTHESIS_RUN_MAX_WINDOWS", "2")
    monkeypatch.setenv("TIMELINE_LARK_SYNTHESIS_RUN_MAX_WINDOWS_RULES", "4")
    workspace(engine, created_at=NOW - timedelta(hours=3))
    post(engine, [W1 + timedelta(minutes=1 + 10 * i) for i in range(4)], text=FACT)
    synthesizer = SynthesizerResource(api_key="sk-test" if model else None)
    result = tick(defs_for(db_url, synthesizer), instance)
    assert len(result.run_requests) == expected_runs
    assert sum(int(r.tags["timeline/windows"]) for r in result.run_requests) == 4


def test_one_window_alone_is_a_run_of_its_partition(
    db_url: str, engine: Engine, instance: dg.DagsterInstance
) -> None:
    workspace(engine, created_at=NOW - timedelta(hours=3))
    post(engine, [W1 + timedelta(minutes=1)], text=FACT)
    defs = defs_for(db_url)
    (single,) = tick(defs, instance).run_requests
    key = WindowRef("inc-1", "oc_chat", W1).partition_key
    assert single.partition_key == key
    assert single.run_key.startswith(f"{key}/attempt-1/")
    assert single.tags["timeline/workspace"] == "inc-1"
    assert single.tags["timeline/lane"] == lane_of("inc-1", 2)
    assert "dagster/asset_partition_range_start" not in single.tags


def test_a_batch_run_materializes_each_window_on_its_own(
    db_url: str, engine: Engine, instance: dg.DagsterInstance
) -> None:
    """A range run over three workspaces' windows: one materialization per window, each with
    its own lineage, in window order, each window claimed and finished by the run."""
    lane = lane_of("inc-1", 2)
    names = ["inc-1", *[f"inc-{i}" for i in range(2, 40) if lane_of(f"inc-{i}", 2) == lane][:2]]
    ids: dict[str, int] = {}
    for offset, name in enumerate(names):
        workspace(engine, name, chats=("oc_chat",), created_at=NOW - timedelta(hours=3))
        at = W1 + offset * WINDOW + timedelta(minutes=1)
        (ids[name],) = post(engine, [at], workspace_id=name, text=FACT)
    defs = defs_for(db_url)
    first = tick(defs, instance)
    (batch,) = first.run_requests
    keys = add_partitions(instance, first)
    assert len(keys) == 3 and batch.tags["timeline/lane"] == lane
    result = run_request(defs, instance, batch)
    assert result.success
    meta = materializations(instance, result.run_id)
    assert list(meta) == keys, "one materialization per window, oldest first"
    states = {k: v for name in names for k, v in window_states(engine, name).items()}
    for key, name in zip(keys, names, strict=True):
        assert meta[key]["status"] == "completed"
        assert meta[key]["workspace_id"] == name
        assert meta[key]["evidence_ids"] == [ids[name]]
        assert meta[key]["aggregate_hash"] == states[key].last_seen_content_hash
        assert states[key].status == "completed"
        assert states[key].attempt_count == 1  # its own claim: one attempt each
    # Dagster sees each partition materialized, by this run.
    materialized = instance.get_materialized_partitions(WINDOW_DRAFTS_KEY)
    assert set(keys) <= materialized


@pytest.mark.parametrize("fault", ["invalid", "outage"])
def test_one_window_failing_or_deferred_in_a_batch_does_not_lose_the_others(
    db_url: str, engine: Engine, instance: dg.DagsterInstance, fault: str
) -> None:
    workspace(engine, created_at=NOW - timedelta(hours=3))
    starts = [W1, W1 + WINDOW, W1 + 2 * WINDOW]
    ids = post(engine, [start + timedelta(minutes=1) for start in starts], text=FACT)
    middle = TextReply() if fault == "invalid" else overloaded()
    script = [tool_reply(cite_first_evidence), middle, tool_reply(cite_first_evidence)]
    with AnthropicStandIn(script=script) as standin:
        synthesizer = SynthesizerResource(api_key=standin.api_key, base_url=standin.base_url)
        defs = defs_for(db_url, synthesizer)
        first = tick(defs, instance)
        (batch,) = first.run_requests
        keys = add_partitions(instance, first)
        result = run_request(defs, instance, batch)
    states = window_states(engine)
    meta = materializations(instance, result.run_id)
    assert list(meta) == [keys[0], keys[2]]
    assert meta[keys[0]]["evidence_ids"] == [ids[0]]
    assert meta[keys[2]]["evidence_ids"] == [ids[2]]
    assert states[keys[0]].status == states[keys[2]].status == "completed"
    with engine.connect() as conn:
        stored = entries.list_for_workspace(conn, "inc-1")
    # (the stand-in's findings share a title, so they may merge into one entry)
    assert {i for e in stored for i in e.evidence_ids} == {ids[0], ids[2]}
    if fault == "invalid":
        # The run says so: it failed, naming the window; the window has an attempt recorded.
        assert not result.success
        failure = result.get_step_failure_events()[0].step_failure_data.user_failure_data
        assert failure is not None and keys[1] in (failure.description or "")
        assert "1 of 3 windows failed" in (failure.description or "")
        assert (states[keys[1]].status, states[keys[1]].attempt_count) == ("failed", 1)
    else:
        # An outage is not a failure: the window waits out its backoff with no attempt used.
        assert result.success
        middle_state = states[keys[1]]
        assert (middle_state.status, middle_state.attempt_count) == ("pending", 0)
        assert middle_state.deferred


def test_a_released_batch_run_stops_before_claiming_more(
    db_url: str, engine: Engine, instance: dg.DagsterInstance
) -> None:
    """Once the sensor marked the run failed (a lease expired), its lane went to another run:
    it claims nothing more, and the windows it did not reach stay requested."""
    workspace(engine, created_at=NOW - timedelta(hours=3))
    post(engine, [W1 + timedelta(minutes=1), W1 + timedelta(minutes=11)], text=FACT)

    def release_after_first(body: Mapping[str, Any]) -> dict[str, Any]:
        run = instance.get_runs(limit=1)[0]
        instance.report_run_failed(run, message="window lease expired (test)")
        return cite_first_evidence(body)

    with AnthropicStandIn(script=[tool_reply(release_after_first)]) as standin:
        synthesizer = SynthesizerResource(api_key=standin.api_key, base_url=standin.base_url)
        defs = defs_for(db_url, synthesizer)
        first = tick(defs, instance)
        (batch,) = first.run_requests
        keys = add_partitions(instance, first)
        run_request(defs, instance, batch)
        states = window_states(engine)
        assert states[keys[0]].status == "completed"
        assert (states[keys[1]].status, states[keys[1]].attempt_count) == ("pending", 0)
        assert len(standin.requests) == 1


def test_a_window_partition_materializes_with_lineage_to_its_evidence(
    db_url: str, chat: list[int], engine: Engine, instance: dg.DagsterInstance
) -> None:
    defs = defs_for(db_url)
    first = tick(defs, instance)
    key = WindowRef("inc-1", "oc_chat", W1).partition_key
    instance.add_dynamic_partitions(WINDOW_PARTITIONS, [key])
    result = launch(defs, instance, key, run_config=first.run_requests[0].run_config)
    assert result.success
    assert result.dagster_run.tags["timeline/workspace"] == "inc-1"  # from the job itself
    assert result.dagster_run.tags["timeline/lane"] == lane_of("inc-1", 2)
    meta = materialization(instance, key)
    assert meta["status"] == "completed"
    assert meta["evidence_ids"] == [chat[0]] and meta["evidence_count"] == 1
    assert meta["chunks"] == 1 and meta["entries_created"] == 1
    assert meta["prompt_version"] == "rules-v7" and meta["processor"] == "rules"
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
    # The workspace alone is not enough: without its lane, a batch of that lane could overlap.
    no_lane = {k: v for k, v in partition_tags(key).items() if k != "timeline/lane"}
    unlaned = dg.materialize(
        [timeline_window_drafts],
        partition_key=key,
        instance=instance,
        resources=defs.resources,
        tags=no_lane,
        raise_on_error=False,
    )
    assert not unlaned.success and window_states(engine) == {}
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
    (added,) = requested.dynamic_partitions_requests
    assert [k for k in added.partition_keys if k.endswith(":v2")] == v2
    ranges = [
        (r.tags["dagster/asset_partition_range_start"], r.tags["dagster/asset_partition_range_end"])
        for r in requested.run_requests
    ]
    order = list(added.partition_keys)
    covered = [k for start, end in ranges for k in order[order.index(start) : order.index(end) + 1]]
    assert sorted(covered) == sorted(order) and set(v2) <= set(covered)
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
    lanes = limits["timeline/lane"]
    assert lanes["value"] == {"applyLimitPerUniqueValue": True} and lanes["limit"] == 1
    tags = partition_tags("inc-1:oc_chat:20261129T1020Z:v2")
    assert tags == {
        "timeline/workspace": "inc-1",
        "timeline/synthesis": "1",
        "timeline/lane": lane_of("inc-1", defaults.max_concurrent_synthesis),
    }
    # One run per lane and maxConcurrentSynthesis lanes: the lanes alone keep the limit.
    assert {lane_of(f"ws-{i}", defaults.max_concurrent_synthesis) for i in range(50)} == {
        str(lane) for lane in range(defaults.max_concurrent_synthesis)
    }
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


# --- a window in a batch is isolated (docs/scaling.md) ----------------------------------------


def sensor_tick(
    db_url: str, instance: dg.DagsterInstance, now: datetime, cursor: str | None = None
) -> dg.SensorResult:
    """One evaluation of the window sensor at `now`, on a real instance."""
    with dg.build_sensor_context(instance=instance, cursor=cursor) as context:
        return evaluate_discovery(
            context,
            DatabaseResource(url=db_url),
            TimelineSettingsResource(overrides=OVERRIDES),
            now=now,
        )


def started_run(instance: dg.DagsterInstance, tags: Mapping[str, str]) -> str:
    """A run the daemon launched and that still runs (or was SIGKILLed: Dagster cannot tell)."""
    run = DagsterRun(
        job_name=SYNTHESIS_JOB,
        run_id=make_new_run_id(),
        status=dg.DagsterRunStatus.STARTED,
        tags=dict(tags),
    )
    instance.add_run(run)
    return run.run_id


def claimed_by(engine: Engine, key: str, owner: str, at: datetime) -> SyncState:
    state = window_states(engine)[key]
    with engine.begin() as conn:
        claimed = window_store.claim_window(
            conn,
            state,
            owner=owner,
            max_attempts=3,
            stale_timeout=timedelta(minutes=15),
            now=at,
        )
    assert claimed is not None
    return claimed


def test_a_database_error_in_one_window_of_a_batch_releases_it_and_the_batch_goes_on(
    db_url: str, engine: Engine, instance: dg.DagsterInstance
) -> None:
    """The second window's chunk commit fails (the database's `OperationalError`): that window
    is failed by the bounded-attempt rule and released, the third still runs and commits."""
    workspace(engine, created_at=NOW - timedelta(hours=3))
    starts = [W1, W1 + WINDOW, W1 + 2 * WINDOW]
    ids = post(engine, [start + timedelta(minutes=1) for start in starts], text=FACT)
    defs = defs_for(db_url)
    first = tick(defs, instance)
    (batch,) = first.run_requests
    keys = add_partitions(instance, first)
    with failing_commits(Engine, advances_cursor, skip=1) as fault:
        result = run_request(defs, instance, batch)
    assert fault.failed == 1
    states = window_states(engine)
    middle = states[keys[1]]
    assert (middle.status, middle.lease_owner, middle.attempt_count) == ("failed", None, 1)
    assert middle.next_attempt_at is not None
    assert middle.last_error is not None and "OperationalError" in middle.last_error
    assert states[keys[0]].status == states[keys[2]].status == "completed"
    meta = materializations(instance, result.run_id)
    assert list(meta) == [keys[0], keys[2]]
    assert meta[keys[2]]["evidence_ids"] == [ids[2]]
    assert not result.success
    failure = result.get_step_failure_events()[0].step_failure_data.user_failure_data
    assert failure is not None and "1 of 3 windows failed" in (failure.description or "")


def test_a_stale_sweep_takes_only_the_stale_window_from_a_run_that_still_works(
    db_url: str, engine: Engine, instance: dg.DagsterInstance
) -> None:
    """A run holding a live lease still works: the sweep requeues the window it left stale but
    does not fail the run in Dagster, so the run is not stopped before its remaining windows."""
    workspace(engine, created_at=NOW - timedelta(hours=3))
    post(engine, [W1 + timedelta(minutes=1), W1 + timedelta(minutes=11)], text=FACT)
    first = sensor_tick(db_url, instance, NOW)
    (batch,) = first.run_requests or []
    keys = add_partitions(instance, first)
    run_id = started_run(instance, batch.tags)
    claimed_by(engine, keys[0], run_id, NOW)  # left processing, then goes stale
    later = NOW + timedelta(minutes=16)
    claimed_by(engine, keys[1], run_id, later - timedelta(minutes=1))  # the run's live lease
    swept = sensor_tick(db_url, instance, later, first.cursor)
    assert [r.partition_key for r in swept.run_requests or []] == [keys[0]]
    states = window_states(engine)
    assert (states[keys[0]].status, states[keys[0]].lease_owner) == ("pending", None)
    assert (states[keys[1]].status, states[keys[1]].lease_owner) == ("processing", run_id)
    run = instance.get_run_by_id(run_id)
    assert run is not None and run.status is dg.DagsterRunStatus.STARTED


def test_windows_a_dead_batch_never_reached_are_requested_at_the_first_stale_check_free(
    db_url: str, engine: Engine, instance: dg.DagsterInstance
) -> None:
    """SIGKILL inside window 2 of a 4-window batch: the tick that finds window 2 stale releases
    the run and requests windows 2, 3 and 4 again at once; 3 and 4 lose no attempt."""
    workspace(engine, created_at=NOW - timedelta(hours=3))
    post(engine, [W1 + timedelta(minutes=1 + 10 * i) for i in range(4)], text=FACT)
    first = sensor_tick(db_url, instance, NOW)
    (batch,) = first.run_requests or []
    keys = add_partitions(instance, first)
    assert len(keys) == 4
    run_id = started_run(instance, batch.tags)
    done = claimed_by(engine, keys[0], run_id, NOW)
    with engine.begin() as conn:
        assert window_store.finish_window(
            conn, done, status="completed", aggregate_hash="h", metadata={}, now=NOW
        )
    killed_at = NOW + timedelta(minutes=1)
    claimed_by(engine, keys[1], run_id, killed_at)  # then SIGKILL

    stale = killed_at + timedelta(minutes=15, seconds=30)
    swept = sensor_tick(db_url, instance, stale, first.cursor)

    requested = sorted(k for r in swept.run_requests or [] for k in request_keys(r, keys))
    assert requested == keys[1:]
    run = instance.get_run_by_id(run_id)
    assert run is not None and run.status is dg.DagsterRunStatus.FAILURE
    states = window_states(engine)
    assert states[keys[1]].attempt_count == 1  # its one claim
    for key in keys[2:]:
        state = states[key]
        assert (state.status, state.attempt_count, state.unclaimed_runs) == ("pending", 0, 0)
    # The next stale check sees them requested under this tick's group: nothing is charged.
    sensor_tick(db_url, instance, stale + timedelta(minutes=16), swept.cursor)
    for key in keys[2:]:
        state = window_states(engine)[key]
        assert (state.attempt_count, state.unclaimed_runs) == (0, 0)


def request_keys(request: dg.RunRequest, keys: list[str]) -> list[str]:
    """The partitions a request covers: its own, or those of its range among `keys`."""
    if request.partition_key is not None:
        return [request.partition_key]
    start = request.tags["dagster/asset_partition_range_start"]
    end = request.tags["dagster/asset_partition_range_end"]
    return [key for key in keys if start <= key <= end]


def test_a_runs_scope_is_its_range_in_its_group_minus_the_windows_with_runs_of_their_own() -> None:
    keys = [WindowRef("inc-1", "oc_chat", W1 + i * WINDOW).partition_key for i in range(4)]
    tags = {
        "timeline/request": "1@g",
        "dagster/asset_partition_range_start": keys[0],
        "dagster/asset_partition_range_end": keys[2],
    }
    scope = RunScope.from_tags(tags, others={keys[1]})
    assert scope is not None
    refs = [parse_partition_key(key) for key in keys]
    assert [scope.covers(ref, "1@g") for ref in refs] == [True, False, True, False]
    assert not scope.covers(refs[0], "1@other")
    single = RunScope.from_tags({"timeline/request": "1@g", "dagster/partition": keys[3]})
    assert single is not None and single.covers(refs[3], "1@g")
    assert RunScope.from_tags({"dagster/partition": keys[3]}) is None  # not the sensor's run
