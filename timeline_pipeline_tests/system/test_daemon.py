"""The real daemon and webserver run the pipeline on their own, and an operator's API launches
complete, all within the concurrency limits of the production `deploy/dagster.yaml`.

One test, in the order an incident unfolds: the reconcile schedule ticks and its run reads the
chats from the local Lark; the window sensor adds a partition per closed window and requests
their syntheses in batches (partition-range runs, one lane each); the queue runs one run per
lane, so two at a time and one per workspace; then an operator
replays one window and backfills three through the GraphQL API, and those runs obey the same
limits. Everything is observed through GraphQL and the product database, never in-process.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

import pytest
import yaml
from sqlalchemy import select

from timeline_pipeline.db.schema import workspace_timeline_entries as en
from timeline_pipeline.db.schema import workspace_timeline_entry_evidence as ee
from timeline_pipeline.db.schema import workspace_timeline_evidence as ev
from timeline_pipeline.db.schema import workspace_timeline_sync_states as ss
from timeline_pipeline.orchestration.collection import COLLECTION_JOB, RECONCILE_SCHEDULE
from timeline_pipeline.orchestration.windows import (
    DISCOVERY_SENSOR,
    SYNTHESIS_JOB,
    WINDOW_DRAFTS_KEY,
)
from timeline_pipeline.windows.batches import RANGE_START_TAG
from timeline_pipeline.windows.run_queue import (
    TAG_LANE,
    TAG_SYNTHESIS,
    TAG_WINDOWS,
    TAG_WORKSPACE,
    lane_of,
)
from timeline_pipeline_tests.system import concurrency
from timeline_pipeline_tests.system.conftest import REPO, Deployment
from timeline_pipeline_tests.system.graphql import Run
from timeline_pipeline_tests.system.processes import wait_for

pytestmark = [pytest.mark.system, pytest.mark.slow]

T = TypeVar("T")

PARTITION_SET = f"{SYNTHESIS_JOB}_partition_set"
WINDOWS_TAG = TAG_WINDOWS
PARTITION_TAG = "dagster/partition"
BACKFILL_TAG = "dagster/backfill"
SENSOR_TAG = "dagster/sensor_name"
SCHEDULE_TAG = "dagster/schedule_name"
ASSET = WINDOW_DRAFTS_KEY.path[-1]
FAILED = {"FAILURE", "CANCELED", "CANCELING"}
FINISHED = {"SUCCESS", "FAILURE", "CANCELED"}


def _tag_limits() -> dict[str, int]:
    """The run-queue limits as the production file states them (the file the daemon reads)."""
    config = yaml.safe_load((REPO / "deploy" / "dagster.yaml").read_text())
    limits = config["concurrency"]["runs"]["tag_concurrency_limits"]
    return {limit["key"]: int(limit["limit"]) for limit in limits}


SYNTHESIS_LIMIT = _tag_limits()[TAG_SYNTHESIS]
PER_WORKSPACE_LIMIT = _tag_limits()[TAG_WORKSPACE]  # per unique value
LANE_LIMIT = _tag_limits()[TAG_LANE]  # per unique value


def _phase(d: Deployment, name: str, wait: Callable[[], T]) -> T:
    began = time.monotonic()
    value = wait()
    d.timings[name] = round(time.monotonic() - began, 1)
    return value


def _no_failed(d: Deployment, runs: list[Run]) -> None:
    failed = [run for run in runs if run.status in FAILED]
    if failed:
        details = ", ".join(f"{r.run_id} {r.job_name} {r.status}" for r in failed)
        pytest.fail(f"runs failed: {details}\n{d.processes.report()}", pytrace=False)


# --- phases ----------------------------------------------------------------------------------


def schedule_brings_the_chats_in(d: Deployment) -> None:
    """The reconcile schedule ticks on its own and its run reads every message from Lark.

    Other collection runs may succeed meanwhile (the hourly evidence refresh schedule ticks at
    the top of the hour): only the reconcile schedule's run is the one this phase waits for."""

    def collected() -> Run | None:
        runs = d.graphql.runs(job=COLLECTION_JOB)
        _no_failed(d, runs)
        done = [
            run
            for run in runs
            if run.status == "SUCCESS" and run.tags.get(SCHEDULE_TAG) == RECONCILE_SCHEDULE
        ]
        return done[-1] if done else None

    run = wait_for(
        f"a run of {COLLECTION_JOB} launched by {RECONCILE_SCHEDULE} to succeed",
        collected,
        # The first tick waits for a minute boundary; at the top of the hour the refresh
        # schedule may take that tick's run (one collection run at a time), adding a minute.
        timeout=240,
        processes=d.processes,
    )
    ticks = d.graphql.schedule_ticks(d.repo, RECONCILE_SCHEDULE)
    launched = {run_id for tick in ticks if tick.status == "SUCCESS" for run_id in tick.run_ids}
    assert run.run_id in launched, f"run {run.run_id} was not launched by a schedule tick"
    assert run.tags.get(SCHEDULE_TAG) == RECONCILE_SCHEDULE
    with d.engine.connect() as conn:
        stored = conn.execute(select(ev.c.id).where(ev.c.scope_key.is_not(None))).all()
    assert len(stored) == d.messages, "reconciliation did not store every message as evidence"
    assert d.lark.page_requests > 0
    # Every further tick would start a collection run (two Python processes) competing with the
    # syntheses for the machine's cores; the schedule has shown it ticks, so an operator stops it.
    assert d.graphql.stop_schedule(d.repo, RECONCILE_SCHEDULE) == "STOPPED"


def sensor_adds_the_window_partitions(d: Deployment) -> None:
    expected = set(d.partition_keys)

    def added() -> list[str] | None:
        keys = d.graphql.partition_keys(ASSET)
        return keys if expected <= set(keys) else None

    keys = wait_for(
        f"the {len(expected)} window partitions of {DISCOVERY_SENSOR}",
        added,
        timeout=150,
        processes=d.processes,
        describe=lambda: str(sorted(d.graphql.partition_keys(ASSET))),
    )
    assert set(keys) == expected, "the sensor added partitions for windows that have no messages"


def sensor_runs_succeed(d: Deployment, partition_keys: list[str]) -> list[Run]:
    """Wait until a successful sensor run (not the operator's) materialized each of these
    partitions; a run may be a batch (a partition range) or one window."""
    expected = set(partition_keys)

    def sensor_runs() -> list[Run]:
        return d.graphql.runs(job=SYNTHESIS_JOB, tags={SENSOR_TAG: DISCOVERY_SENSOR})

    def all_done() -> list[Run] | None:
        runs = sensor_runs()
        _no_failed(d, runs)
        succeeded = {run.run_id for run in runs if run.status == "SUCCESS"}
        for key in expected:
            if not succeeded & set(d.graphql.materialization_runs(ASSET, key)):
                return None
        return runs

    return wait_for(
        f"the sensor's runs of {SYNTHESIS_JOB} for {len(expected)} windows to succeed",
        all_done,
        timeout=300,
        processes=d.processes,
        describe=lambda: str(sorted((r.run_id, r.status) for r in sensor_runs())),
    )


def the_sensor_batched_windows(d: Deployment, runs: list[Run]) -> None:
    """At least one sensor run was a batch: one run, several windows, each its own partition."""
    batches = [run for run in runs if int(run.tags.get(WINDOWS_TAG, "1")) > 1]
    assert batches, "no sensor run synthesized more than one window"
    for run in batches:
        assert RANGE_START_TAG in run.tags and TAG_WORKSPACE not in run.tags
        assert run.tags[TAG_LANE] in {str(lane) for lane in range(SYNTHESIS_LIMIT)}


def replay_from_the_launchpad(d: Deployment, partition_key: str, workspace_id: str) -> str:
    """Launch the partition as the UI's launchpad pre-fills it: the job's config and tags."""
    config_yaml, tags = d.graphql.launchpad(d.repo, PARTITION_SET, partition_key)
    config = yaml.safe_load(config_yaml)
    assert config["ops"][WINDOW_DRAFTS_KEY.to_python_identifier()]["config"]["replay"] is True
    assert tags[TAG_WORKSPACE] == workspace_id
    assert tags[TAG_SYNTHESIS] == "1"
    assert tags[TAG_LANE] == lane_of(workspace_id, SYNTHESIS_LIMIT)
    return d.graphql.launch_run(
        d.repo, SYNTHESIS_JOB, config_yaml, {**tags, PARTITION_TAG: partition_key}
    )


def backfill_completes(d: Deployment, backfill_id: str, selected: list[str]) -> None:
    def done() -> str | None:
        status = d.graphql.backfill_status(backfill_id)
        if status in ("FAILED", "COMPLETED_FAILED", "CANCELED"):
            pytest.fail(f"backfill {backfill_id} ended {status}\n{d.processes.report()}")
        return status if status in ("COMPLETED", "COMPLETED_SUCCESS") else None

    wait_for(
        f"backfill {backfill_id} of {len(selected)} windows to complete",
        done,
        timeout=240,
        processes=d.processes,
    )
    runs = d.graphql.runs(job=SYNTHESIS_JOB, tags={BACKFILL_TAG: backfill_id})
    _no_failed(d, runs)
    assert sorted(run.tags[PARTITION_TAG] for run in runs) == sorted(selected)
    assert all(run.status == "SUCCESS" for run in runs)
    for run in runs:  # the partition set's tag function put each run under its workspace's limit
        workspace_id = run.tags[PARTITION_TAG].split(":")[0]
        assert run.tags[TAG_WORKSPACE] == workspace_id
        assert run.tags[TAG_LANE] == lane_of(workspace_id, SYNTHESIS_LIMIT)


def replay_completes(d: Deployment, run_id: str, partition_key: str, revision: int) -> None:
    def finished() -> Run | None:
        runs = [run for run in d.graphql.runs(job=SYNTHESIS_JOB) if run.run_id == run_id]
        _no_failed(d, runs)
        return runs[0] if runs and runs[0].status == "SUCCESS" else None

    wait_for(
        f"the replay run {run_id} of {partition_key}",
        finished,
        timeout=180,
        processes=d.processes,
    )
    assert run_id in d.graphql.materialization_runs(ASSET, partition_key)
    assert window_revision(d, partition_key) > revision, "the replay did not reset the window"


def windows_are_synthesized(d: Deployment) -> None:
    """Every window's state finished, and its entries cite evidence of its own workspace."""
    joined = en.join(ee, ee.c.entry_id == en.c.id).join(ev, ev.c.id == ee.c.evidence_id)
    with d.engine.connect() as conn:
        for incident in d.incidents:
            states = conn.execute(
                select(ss.c.id, ss.c.status).where(
                    ss.c.workspace_id == incident.workspace_id, ss.c.window_start.is_not(None)
                )
            ).all()
            # A replayed or backfilled window re-finds its entries unchanged: no new material
            # entry, so it ends `ignored` (docs/metrics.md); every other one `completed`.
            assert len(states) == len(incident.windows)
            assert {s.status for s in states} <= {"completed", "ignored"}
            assert any(s.status == "completed" for s in states)
            for state in states:
                cited = conn.execute(
                    select(ev.c.workspace_id)
                    .select_from(joined)
                    .where(en.c.window_state_id == state.id)
                ).all()
                assert cited, f"window state {state.id} completed without entries bound to evidence"
                assert {row.workspace_id for row in cited} == {incident.workspace_id}


def window_revision(d: Deployment, partition_key: str) -> int:
    incident = next(i for i in d.incidents if partition_key in i.partition_keys)
    ref = incident.windows[incident.partition_keys.index(partition_key)]
    with d.engine.connect() as conn:
        revision = conn.execute(
            select(ss.c.revision).where(
                ss.c.workspace_id == ref.workspace_id,
                ss.c.scope_key == ref.chat_id,
                ss.c.window_start == ref.window_start,
            )
        ).scalar_one()
    return int(revision)


def workspaces_of_runs(d: Deployment, runs: list[Run]) -> dict[str, list[Run]]:
    """The runs that synthesized each workspace's windows: a run of one window by its tag, a
    batch by the partitions it materialized."""
    by_id = {run.run_id: run for run in runs}
    touched: dict[str, dict[str, Run]] = {}
    for run in runs:
        if TAG_WORKSPACE in run.tags:
            touched.setdefault(run.tags[TAG_WORKSPACE], {})[run.run_id] = run
    for key in d.partition_keys:
        for run_id in d.graphql.materialization_runs(ASSET, key):
            if run_id in by_id:
                touched.setdefault(key.split(":")[0], {})[run_id] = by_id[run_id]
    return {workspace: list(group.values()) for workspace, group in touched.items()}


def the_limits_held_and_mattered(d: Deployment, expected_runs: int) -> None:
    """No two runs of a workspace overlapped, one run per lane, never more than two syntheses
    ran, while the queue held more runs than that and runs waited for their lane."""

    def all_finished() -> list[Run] | None:
        runs = d.graphql.runs(job=SYNTHESIS_JOB)
        return runs if all(run.status in FINISHED for run in runs) else None

    runs = wait_for(
        f"every run of {SYNTHESIS_JOB} to finish", all_finished, timeout=120, processes=d.processes
    )
    assert all(run.status == "SUCCESS" for run in runs), [(r.run_id, r.status) for r in runs]
    assert len(runs) >= expected_runs
    lanes = concurrency.by_tag(runs, TAG_LANE)
    assert sum(len(group) for group in lanes.values()) == len(runs), "a run had no lane tag"
    for lane, group in lanes.items():
        assert concurrency.max_running(group) <= LANE_LIMIT, (
            f"runs of lane {lane} overlapped: {concurrency.overlapping_pairs(group)}"
        )
    for workspace_id, group in workspaces_of_runs(d, runs).items():
        assert concurrency.max_running(group) <= PER_WORKSPACE_LIMIT, (
            f"runs of workspace {workspace_id} overlapped: {concurrency.overlapping_pairs(group)}"
        )
        assert {run.tags[TAG_LANE] for run in group} == {lane_of(workspace_id, SYNTHESIS_LIMIT)}
    assert all(run.tags.get(TAG_SYNTHESIS) == "1" for run in runs), "a run escaped the limit"
    running, waiting = concurrency.max_running(runs), concurrency.max_waiting(runs)
    assert running <= SYNTHESIS_LIMIT, f"{running} syntheses ran at once"
    assert waiting > SYNTHESIS_LIMIT, f"the queue never held more than {waiting} runs"
    waits = [pair for group in lanes.values() for pair in concurrency.waited_behind(group)]
    assert waits, "no run ever waited for its lane's previous run"
    d.timings.update(runs=len(runs), max_running=running, max_waiting=waiting, waits=len(waits))


# --- the test --------------------------------------------------------------------------------


def test_daemon_ticks_the_pipeline_and_api_launches_complete_within_the_limits(
    deployment: Deployment,
) -> None:
    d = deployment
    alpha, beta = d.incidents
    _phase(d, "schedule", lambda: schedule_brings_the_chats_in(d))
    _phase(d, "partitions", lambda: sensor_adds_the_window_partitions(d))

    # The operator steps in once the older windows are synthesized, while the sensor's last runs
    # still wait or run: replays and backfills share the queue and its limits with them.
    older = alpha.partition_keys[:2] + beta.partition_keys[:2]
    _phase(d, "older_windows", lambda: sensor_runs_succeed(d, older))
    replayed = beta.partition_keys[0]
    selected = [alpha.partition_keys[0], alpha.partition_keys[1], beta.partition_keys[1]]
    revision_before = window_revision(d, replayed)
    backfill_id = d.graphql.launch_backfill(d.repo, PARTITION_SET, selected)
    rerun_id = replay_from_the_launchpad(d, replayed, beta.workspace_id)

    sensor_runs = _phase(d, "all_windows", lambda: sensor_runs_succeed(d, d.partition_keys))
    the_sensor_batched_windows(d, sensor_runs)
    _phase(d, "backfill", lambda: backfill_completes(d, backfill_id, selected))
    _phase(d, "replay", lambda: replay_completes(d, rerun_id, replayed, revision_before))
    windows_are_synthesized(d)
    # the sensor's runs (at least one batch), one per backfilled window, the replay
    the_limits_held_and_mattered(d, 1 + len(selected) + 1)
    print(f"system test figures: {d.timings}")
