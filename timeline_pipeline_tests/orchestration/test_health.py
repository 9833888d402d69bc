"""Pipeline health in Dagster: the asset, its alert checks and its schedule, materialized on a
real Dagster instance over the product database (SQLite and PostgreSQL) seeded through the
stores with the real window transitions."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import dagster as dg
import pytest
from dagster._core.storage.dagster_run import DagsterRun
from sqlalchemy import Engine

from timeline_pipeline.definitions import defs as code_location
from timeline_pipeline.domain.sync_states import SyncState
from timeline_pipeline.domain.window_keys import window_start_of
from timeline_pipeline.orchestration.health import (
    HEALTH_JOB,
    HEALTH_KEY,
    HEALTH_SCHEDULE,
    timeline_pipeline_health,
    timeline_pipeline_health_schedule,
)
from timeline_pipeline.orchestration.resources import DatabaseResource, TimelineSettingsResource
from timeline_pipeline.store import checkpoints, window_states
from timeline_pipeline.windows.health_checks import (
    BACKLOG_CHECK,
    CHECK_NAMES,
    FAILED_CHECK,
    STALE_CHECK,
    UNCOVERED_CHECK,
)
from timeline_pipeline_tests.windows.support import MIN, WINDOW, claim, finish, post, workspace

ENABLED: dict[str, Any] = {"enabled": True}


@pytest.fixture(scope="module")
def instance() -> Iterator[dg.DagsterInstance]:
    """One Dagster instance for the module: creating one costs seconds."""
    with dg.instance_for_test() as made:
        yield made


@pytest.fixture
def now() -> datetime:
    """The test's own clock reading: the asset measures against the real clock."""
    return datetime.now(UTC).replace(microsecond=0)


def windows_before(now: datetime, count: int, *, minutes_ago: int) -> list[datetime]:
    """`count` consecutive window starts, the first one about `minutes_ago` minutes back."""
    first = window_start_of(now - timedelta(minutes=minutes_ago), WINDOW)
    return [first + k * WINDOW for k in range(count)]


def window(engine: Engine, start: datetime) -> SyncState:
    with engine.begin() as conn:
        state = window_states.create_window_if_evidence(
            conn,
            workspace_id="inc-1",
            chat_id="oc_chat",
            window_start=start,
            window_end=start + WINDOW,
            now=start + WINDOW,
        )
    assert state is not None
    return state


def materialize(
    db_url: str, instance: dg.DagsterInstance, **overrides: Any
) -> dg.ExecuteInProcessResult:
    return dg.materialize(
        [timeline_pipeline_health],
        instance=instance,
        resources={
            "database": DatabaseResource(url=db_url),
            "timeline_settings": TimelineSettingsResource(overrides={**ENABLED, **overrides}),
        },
    )


def checks(result: dg.ExecuteInProcessResult) -> dict[str, dg.AssetCheckEvaluation]:
    return {e.check_name: e for e in result.get_asset_check_evaluations()}


def latest_metadata(instance: dg.DagsterInstance) -> dict[str, Any]:
    event = instance.get_latest_materialization_event(HEALTH_KEY)
    assert event is not None and event.asset_materialization is not None
    return {k: v.value for k, v in event.asset_materialization.metadata.items()}


def test_under_the_limits_every_check_passes_and_the_figures_are_recorded(
    db_url: str, engine: Engine, instance: dg.DagsterInstance, now: datetime
) -> None:
    workspace(engine, created_at=now - timedelta(hours=3))
    done, waiting = windows_before(now, 2, minutes_ago=50)
    post(engine, [done + MIN, waiting + MIN])
    finish(engine, window(engine, done), now - 30 * MIN)
    window(engine, waiting)  # requested, not run yet

    result = materialize(
        db_url, instance, backlog_alert_windows=2, backlog_alert_oldest_uncovered_age="2h"
    )

    assert result.success
    evaluations = checks(result)
    assert sorted(evaluations) == sorted(CHECK_NAMES)
    assert all(e.passed for e in evaluations.values())
    backlog = evaluations[BACKLOG_CHECK]
    assert backlog.description is not None
    assert "window backlog 1 (1 pending, 0 processing) is within the limit of 2" in (
        backlog.description
    )
    meta = latest_metadata(instance)
    assert (meta["window_backlog"], meta["windows_pending"], meta["windows_completed"]) == (
        1,
        1,
        1,
    )
    assert (meta["stale_processing_windows"], meta["failed_windows"]) == (0, 0)
    assert (meta["late_evidence"], meta["late_evidence_windows"]) == (0, 0)
    assert meta["windows_by_status"] == {
        "pending": 1,
        "processing": 0,
        "completed": 1,
        "ignored": 0,
        "failed": 0,
    }
    waited = (now - (waiting + MIN)).total_seconds()
    assert waited <= meta["oldest_uncovered_evidence_age_seconds"] <= waited + 600
    assert (meta["oldest_uncovered_workspace_id"], meta["oldest_uncovered_chat_id"]) == (
        "inc-1",
        "oc_chat",
    )
    (row,) = meta["per_workspace"].records
    assert (row.data["workspace_id"], row.data["backlog"], row.data["completed"]) == ("inc-1", 1, 1)


def test_over_the_limits_the_error_checks_fail_and_the_warnings_warn(
    db_url: str, engine: Engine, instance: dg.DagsterInstance, now: datetime
) -> None:
    workspace(engine, created_at=now - timedelta(hours=3))
    first, second, running, broken = windows_before(now, 4, minutes_ago=70)
    post(engine, [first + MIN, second + MIN, running + MIN, broken + MIN])
    window(engine, first)
    window(engine, second)
    claim(engine, window(engine, running), now - 20 * MIN)  # its run stopped 20 minutes ago
    failing = claim(engine, window(engine, broken), now - 5 * MIN)
    with engine.begin() as conn:
        assert window_states.fail_window(conn, failing, error="chunk 1/1", retry_at=None)

    result = materialize(db_url, instance, backlog_alert_windows=2, synthesis_window_max_attempts=1)

    assert result.success  # the measurement itself worked; the checks carry the verdicts
    evaluations = checks(result)
    backlog = evaluations[BACKLOG_CHECK]
    assert (backlog.passed, backlog.severity) == (False, dg.AssetCheckSeverity.ERROR)
    assert backlog.description is not None
    assert "window backlog 3 (2 pending, 1 processing) is above the limit of 2" in (
        backlog.description
    )
    assert (backlog.metadata["backlog"].value, backlog.metadata["limit"].value) == (3, 2)

    uncovered = evaluations[UNCOVERED_CHECK]
    assert (uncovered.passed, uncovered.severity) == (False, dg.AssetCheckSeverity.ERROR)
    assert uncovered.description is not None
    assert "above the limit of 30m00s (backlogAlertOldestUncoveredAge)" in uncovered.description
    assert uncovered.metadata["age_seconds"].value > 30 * 60

    stale = evaluations[STALE_CHECK]
    assert (stale.passed, stale.severity) == (False, dg.AssetCheckSeverity.WARN)
    assert stale.metadata["partitions"].value == [f"inc-1:oc_chat:{running:%Y%m%dT%H%MZ}"]

    failed = evaluations[FAILED_CHECK]
    assert (failed.passed, failed.severity) == (False, dg.AssetCheckSeverity.WARN)
    assert (failed.metadata["failed"].value, failed.metadata["exhausted"].value) == (1, 1)
    assert failed.metadata["partitions"].value == [f"inc-1:oc_chat:{broken:%Y%m%dT%H%MZ}"]

    meta = latest_metadata(instance)
    assert (meta["window_backlog"], meta["stale_processing_windows"]) == (3, 1)
    assert (meta["failed_windows"], meta["failed_windows_exhausted"]) == (1, 1)


def test_collection_and_summary_lag_are_recorded_when_those_features_are_on(
    db_url: str, engine: Engine, instance: dg.DagsterInstance, now: datetime
) -> None:
    workspace(engine, created_at=now - timedelta(hours=3))
    (start,) = windows_before(now, 1, minutes_ago=30)
    post(engine, [start + MIN])
    finish(engine, window(engine, start), now - 12 * MIN)
    with engine.begin() as conn:
        state = checkpoints.ensure_checkpoint(conn, "inc-1", "oc_chat")
        checkpoints.advance_checkpoint(
            conn, state, cursor=None, covered_until=now - 4 * MIN, metadata={}
        )

    result = materialize(db_url, instance, reconciliation_enabled=True, summary_enabled=True)

    assert result.success
    meta = latest_metadata(instance)
    assert 4 * 60 <= meta["collection_lag_seconds"] <= 4 * 60 + 600
    assert meta["chats_never_collected"] == 0
    assert meta["summary_pending_windows"] == 1
    assert 12 * 60 <= meta["summary_lag_seconds"] <= 12 * 60 + 600


# ----------------------------------------------------------------- the schedule


def evaluate(instance: dg.DagsterInstance, **overrides: Any) -> Any:
    context = dg.build_schedule_context(
        instance=instance,
        scheduled_execution_time=datetime.now(UTC),
        resources={"timeline_settings": TimelineSettingsResource(overrides=overrides)},
    )
    return timeline_pipeline_health_schedule(context)


def test_the_schedule_requests_a_run_every_five_minutes_while_enabled(
    instance: dg.DagsterInstance,
) -> None:
    assert timeline_pipeline_health_schedule.cron_schedule == "*/5 * * * *"
    assert timeline_pipeline_health_schedule.default_status is dg.DefaultScheduleStatus.RUNNING
    assert isinstance(evaluate(instance, **ENABLED), dg.RunRequest)
    skipped = evaluate(instance)
    assert isinstance(skipped, dg.SkipReason)
    assert "disabled" in (skipped.skip_message or "")


def test_the_schedule_skips_while_a_health_run_is_in_flight(instance: dg.DagsterInstance) -> None:
    run_id = str(uuid.uuid4())
    instance.add_run(
        DagsterRun(job_name=HEALTH_JOB, run_id=run_id, status=dg.DagsterRunStatus.STARTED)
    )
    try:
        result = evaluate(instance, **ENABLED)
    finally:
        instance.delete_run(run_id)

    assert isinstance(result, dg.SkipReason)
    assert f"run {run_id}" in (result.skip_message or "")


def test_the_code_location_carries_the_asset_its_checks_and_the_schedule(
    instance: dg.DagsterInstance,
) -> None:
    dg.Definitions.validate_loadable(code_location)
    asset = code_location.resolve_assets_def(HEALTH_KEY)
    assert {key.name for key in asset.check_keys} == set(CHECK_NAMES)
    assert code_location.resolve_schedule_def(HEALTH_SCHEDULE).job_name == HEALTH_JOB
    assert HEALTH_JOB in {job.name for job in code_location.resolve_all_job_defs()}
