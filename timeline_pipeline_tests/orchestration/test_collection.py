"""Chat collection in Dagster: the asset, its schedules and the manual refresh job, on a real
Dagster instance, the real product database (SQLite and PostgreSQL) and the local Lark."""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import dagster as dg
import pytest
from dagster._core.storage.dagster_run import DagsterRun
from sqlalchemy import Engine

from timeline_pipeline.definitions import defs as code_location
from timeline_pipeline.lark.simulator import ChatStore, SimulatorServer, make_chat_messages
from timeline_pipeline.orchestration.collection import (
    CHAT_COLLECTION_KEY,
    COLLECTION_JOB,
    COLLECTION_TAGS,
    FAILURE_CHECK,
    MANUAL_JOB,
    MODE_TAG,
    RECONCILE_SCHEDULE,
    REFRESH_SCHEDULE,
    THREADS_CHECK,
    LarkClientResource,
    collection_schedules,
    lark_chat_collection,
    lark_manual_reconcile_job,
)
from timeline_pipeline.orchestration.resources import DatabaseResource, TimelineSettingsResource
from timeline_pipeline.settings import load_timeline_settings
from timeline_pipeline.store import workspaces
from timeline_pipeline.windows.run_queue import TAG_COLLECTION

NOW = datetime.now(UTC).replace(microsecond=0)
CHAT = "oc_dagster_chat"
ENABLED: dict[str, Any] = {
    "enabled": True,
    "reconciliation_enabled": True,
    "lark_max_attempts": 2,
    "retry_backoff_base": "1ms",
    "retry_backoff_cap": "5ms",
}


@pytest.fixture(scope="module")
def instance() -> Iterator[dg.DagsterInstance]:
    """One Dagster instance for the module: creating one costs seconds."""
    with dg.instance_for_test() as made:
        yield made


@pytest.fixture
def lark() -> Iterator[SimulatorServer]:
    items = make_chat_messages(CHAT, NOW - timedelta(hours=2), 60, seed=4, thread_every=0)
    items += make_chat_messages("oc_hidden", NOW - timedelta(hours=1), 5, seed=5)
    with ExitStack() as exits:
        yield exits.enter_context(
            SimulatorServer(ChatStore(items), app_id=f"cli_dg_{uuid.uuid4().hex[:10]}")
        )


def resources(db_url: str, lark: SimulatorServer, **overrides: Any) -> dict[str, Any]:
    return {
        "database": DatabaseResource(url=db_url),
        "timeline_settings": TimelineSettingsResource(overrides={**ENABLED, **overrides}),
        "lark": LarkClientResource(
            app_id=lark.app_id, app_secret=lark.app_secret, base_url=lark.base_url
        ),
    }


def workspace(
    engine: Engine,
    workspace_id: str,
    *,
    status: str = "firing",
    age: timedelta = timedelta(hours=3),
    chats: tuple[str, ...] = (CHAT,),
) -> None:
    with engine.begin() as conn:
        workspaces.create(conn, workspace_id, status=status, created_at=NOW - age)
        for chat in chats:
            workspaces.bind_chat(conn, workspace_id, chat)


def materialization(instance: dg.DagsterInstance) -> dg.AssetMaterialization:
    event = instance.get_latest_materialization_event(CHAT_COLLECTION_KEY)
    assert event is not None and event.asset_materialization is not None
    return event.asset_materialization


def values(mat: dg.AssetMaterialization) -> dict[str, Any]:
    return {key: getattr(value, "value", value) for key, value in mat.metadata.items()}


# ----------------------------------------------------------------- the asset


def test_a_scheduled_materialization_records_counts_lag_and_each_chat(
    db_url: str, engine: Engine, lark: SimulatorServer, instance: dg.DagsterInstance
) -> None:
    workspace(engine, "inc-live")
    workspace(engine, "inc-old", age=timedelta(hours=80))
    workspace(engine, "inc-done", status="recovered")

    result = dg.materialize(
        [lark_chat_collection],
        instance=instance,
        resources=resources(db_url, lark),
        run_config={"ops": {"lark_chat_collection": {"config": {"refresh": False}}}},
    )

    assert result.success
    meta = values(materialization(instance))
    assert (meta["mode"], meta["chats"], meta["pages"], meta["messages"]) == (
        "incremental",
        1,
        2,
        60,
    )
    assert (meta["inserted"], meta["updated"], meta["duplicate"], meta["failures"]) == (60, 0, 0, 0)
    assert meta["workspaces_skipped"] == {"workspace_aged_out": 1}
    assert 0 <= meta["lag_seconds"] < 2 * 3600
    [chat] = meta["per_chat"]
    assert (chat["workspace_id"], chat["chat_id"], chat["kind"]) == ("inc-live", CHAT, "backfill")
    assert (meta["threads_fetched"], meta["threads_skipped"]) == (0, 0)
    checks = {c.check_name: c.passed for c in result.get_asset_check_evaluations()}
    assert checks == {FAILURE_CHECK: True, THREADS_CHECK: True}


def test_a_chat_that_fails_is_named_by_a_failed_check_and_the_others_are_recorded(
    db_url: str, engine: Engine, lark: SimulatorServer, instance: dg.DagsterInstance
) -> None:
    workspace(engine, "inc-live", chats=(CHAT, "oc_hidden"))
    lark.faults.update(permission_denied_chats={"oc_hidden"})

    result = dg.materialize(
        [lark_chat_collection], instance=instance, resources=resources(db_url, lark)
    )

    meta = values(materialization(instance))
    assert (meta["inserted"], meta["failures"]) == (60, 1)
    assert meta["failures_by_kind"] == {"permission_denied": 1}
    [check] = [c for c in result.get_asset_check_evaluations() if c.check_name == FAILURE_CHECK]
    assert not check.passed
    assert check.severity == dg.AssetCheckSeverity.ERROR
    assert "inc-live/oc_hidden" in (check.description or "")


def test_threads_left_out_by_the_budget_are_counted_and_warned_about(
    db_url: str, engine: Engine, lark: SimulatorServer, instance: dg.DagsterInstance
) -> None:
    for item in make_chat_messages("oc_threads", NOW - timedelta(hours=1), 30, seed=6):
        lark.store.add_message(item)  # three threads, one reply each
    workspace(engine, "inc-threads", chats=("oc_threads",))

    result = dg.materialize(
        [lark_chat_collection],
        instance=instance,
        resources=resources(db_url, lark, reconcile_max_threads=1),
    )

    meta = values(materialization(instance))
    assert (meta["threads_fetched"], meta["threads_skipped"]) == (1, 2)
    [chat] = meta["per_chat"]
    assert chat["threads_skipped"] == 2
    assert chat["covered_until"] is not None and chat["covered_until"] < NOW.isoformat()
    [check] = [c for c in result.get_asset_check_evaluations() if c.check_name == THREADS_CHECK]
    assert not check.passed
    assert check.severity == dg.AssetCheckSeverity.WARN
    assert check.metadata["per_chat"].value == {"inc-threads/oc_threads": 2}


def test_a_disabled_deployment_materializes_nothing_and_calls_no_lark(
    db_url: str, engine: Engine, lark: SimulatorServer, instance: dg.DagsterInstance
) -> None:
    workspace(engine, "inc-live")

    dg.materialize(
        [lark_chat_collection],
        instance=instance,
        resources=resources(db_url, lark, reconciliation_enabled=False),
    )

    meta = values(materialization(instance))
    assert meta["skipped"] == "reconciliation is disabled (reconciliationEnabled: false)"
    assert lark.page_requests == 0


# ----------------------------------------------------------------- the manual job


def manual_run(
    db_url: str, lark: SimulatorServer, instance: dg.DagsterInstance, config: dict[str, Any]
) -> dg.ExecuteInProcessResult:
    location = dg.Definitions(jobs=[lark_manual_reconcile_job], resources=resources(db_url, lark))
    return location.get_job_def(MANUAL_JOB).execute_in_process(
        run_config={"ops": {"manual_reconcile": {"config": config}}},
        instance=instance,
        raise_on_error=False,
    )


def test_the_manual_job_refreshes_a_workspace_that_is_no_longer_eligible(
    db_url: str, engine: Engine, lark: SimulatorServer, instance: dg.DagsterInstance
) -> None:
    workspace(engine, "inc-done", status="recovered")

    result = manual_run(db_url, lark, instance, {"workspace_id": "inc-done", "chat_id": CHAT})

    assert result.success
    meta = values(materialization(instance))
    assert (meta["trigger"], meta["workspace_id"], meta["inserted"]) == ("manual", "inc-done", 60)


@pytest.mark.parametrize(
    ("config", "fragment"),
    [
        ({"workspace_id": "ghost"}, "workspace 'ghost' does not exist"),
        ({"workspace_id": "inc-live", "chat_id": "oc_nope"}, "is not bound"),
        ({"workspace_id": "inc-live", "chat_id": "oc_hidden"}, "permission_denied"),
    ],
)
def test_the_manual_job_fails_with_a_clear_reason(
    db_url: str,
    engine: Engine,
    lark: SimulatorServer,
    instance: dg.DagsterInstance,
    config: dict[str, Any],
    fragment: str,
) -> None:
    workspace(engine, "inc-live", chats=(CHAT, "oc_hidden"))
    lark.faults.update(permission_denied_chats={"oc_hidden"})

    result = manual_run(db_url, lark, instance, config)

    assert not result.success
    [failure] = [e for e in result.all_events if e.is_step_failure]
    user_failure = failure.step_failure_data.user_failure_data
    assert user_failure is not None
    assert fragment in str(user_failure.description)


# ----------------------------------------------------------------- the schedules


def schedule(name: str, **overrides: Any) -> dg.ScheduleDefinition:
    settings = load_timeline_settings(**overrides)
    [found] = [s for s in collection_schedules(settings) if s.name == name]
    return found


def evaluate(
    sched: dg.ScheduleDefinition,
    instance: dg.DagsterInstance,
    when: datetime = NOW,
    **overrides: Any,
) -> Any:
    context = dg.build_schedule_context(
        instance=instance,
        scheduled_execution_time=when,
        resources={"timeline_settings": TimelineSettingsResource(overrides=overrides)},
    )
    return sched(context)


def test_schedules_tick_at_the_configured_intervals() -> None:
    assert schedule(RECONCILE_SCHEDULE).cron_schedule == "*/5 * * * *"
    assert schedule(REFRESH_SCHEDULE).cron_schedule == "0 * * * *"
    assert schedule(RECONCILE_SCHEDULE, reconcile_interval="2m").cron_schedule == "*/2 * * * *"


@pytest.mark.parametrize(
    ("name", "refresh"), [(RECONCILE_SCHEDULE, False), (REFRESH_SCHEDULE, True)]
)
def test_an_enabled_schedule_requests_a_run_in_its_mode(
    instance: dg.DagsterInstance, name: str, refresh: bool
) -> None:
    request = evaluate(schedule(name), instance, **ENABLED)

    assert isinstance(request, dg.RunRequest)
    assert request.run_config == {"ops": {"lark_chat_collection": {"config": {"refresh": refresh}}}}
    assert request.tags[MODE_TAG] == ("refresh" if refresh else "incremental")


@pytest.mark.parametrize(
    ("overrides", "reason"),
    [
        ({}, "ingestion is disabled"),
        ({"enabled": True}, "reconciliation is disabled"),
    ],
)
def test_a_disabled_schedule_skips(
    instance: dg.DagsterInstance, overrides: dict[str, Any], reason: str
) -> None:
    result = evaluate(schedule(RECONCILE_SCHEDULE), instance, **overrides)

    assert isinstance(result, dg.SkipReason)
    assert reason in (result.skip_message or "")


TOP_OF_HOUR = NOW.replace(minute=0, second=0)


@contextmanager
def run_in_instance(
    instance: dg.DagsterInstance, status: dg.DagsterRunStatus, tags: Mapping[str, str]
) -> Iterator[str]:
    """A collection run in the instance's run storage, as the daemon would see it. Waiting runs
    are NOT_STARTED here: a QUEUED one needs a code-location origin; the schedule treats both
    statuses alike."""
    run_id = str(uuid.uuid4())
    instance.add_run(DagsterRun(job_name=COLLECTION_JOB, run_id=run_id, status=status, tags=tags))
    try:
        yield run_id
    finally:
        instance.delete_run(run_id)


@pytest.mark.parametrize("first", [RECONCILE_SCHEDULE, REFRESH_SCHEDULE])
@pytest.mark.parametrize("status", [dg.DagsterRunStatus.NOT_STARTED, dg.DagsterRunStatus.STARTED])
def test_both_schedules_ticking_in_the_same_minute_both_request_their_run(
    instance: dg.DagsterInstance, first: str, status: dg.DagsterRunStatus
) -> None:
    """Dagster evaluates the two top-of-hour ticks in either order; whichever goes second sees
    the first one's run queued or started, and still requests its own (the run queue, not the
    schedule, keeps the two from running at once)."""
    second = REFRESH_SCHEDULE if first == RECONCILE_SCHEDULE else RECONCILE_SCHEDULE
    job = code_location.resolve_job_def(COLLECTION_JOB)

    first_request = evaluate(schedule(first), instance, TOP_OF_HOUR, **ENABLED)
    assert isinstance(first_request, dg.RunRequest)
    with run_in_instance(instance, status, {**job.tags, **first_request.tags}):
        second_request = evaluate(schedule(second), instance, TOP_OF_HOUR, **ENABLED)

    assert isinstance(second_request, dg.RunRequest)
    modes = {first_request.tags[MODE_TAG], second_request.tags[MODE_TAG]}
    assert modes == {"incremental", "refresh"}
    for request in (first_request, second_request):
        assert dg.validate_run_config(job, request.run_config)
        assert request.tags[TAG_COLLECTION] == job.tags[TAG_COLLECTION] == "lark"


def test_a_schedule_skips_only_while_a_run_of_its_own_mode_is_still_queued(
    instance: dg.DagsterInstance,
) -> None:
    """The queued run reads the same range when it starts, so a second one would only lengthen
    the queue behind a slow run; a run of the other mode, or one already started, is no reason."""
    queued = {**COLLECTION_TAGS, MODE_TAG: "incremental"}
    with run_in_instance(instance, dg.DagsterRunStatus.NOT_STARTED, queued) as run_id:
        reconcile = evaluate(schedule(RECONCILE_SCHEDULE), instance, TOP_OF_HOUR, **ENABLED)
        refresh = evaluate(schedule(REFRESH_SCHEDULE), instance, TOP_OF_HOUR, **ENABLED)
    with run_in_instance(instance, dg.DagsterRunStatus.STARTED, queued):
        after_start = evaluate(schedule(RECONCILE_SCHEDULE), instance, TOP_OF_HOUR, **ENABLED)

    assert isinstance(reconcile, dg.SkipReason)
    assert f"run {run_id}" in (reconcile.skip_message or "")
    assert isinstance(refresh, dg.RunRequest)
    assert isinstance(after_start, dg.RunRequest)


def test_the_manual_job_queues_behind_scheduled_collection_runs_too() -> None:
    assert code_location.resolve_job_def(MANUAL_JOB).tags[TAG_COLLECTION] == "lark"


def test_an_interval_cron_cannot_express_runs_only_on_due_minutes(
    instance: dg.DagsterInstance,
) -> None:
    every_seven = schedule(RECONCILE_SCHEDULE, reconcile_interval="7m")
    due = datetime.fromtimestamp(7 * 60 * 4_000_000, tz=UTC)

    assert every_seven.cron_schedule == "* * * * *"
    assert isinstance(evaluate(every_seven, instance, due, **ENABLED), dg.RunRequest)
    skipped = evaluate(every_seven, instance, due + timedelta(minutes=1), **ENABLED)
    assert isinstance(skipped, dg.SkipReason)


# ----------------------------------------------------------------- the code location


def test_the_code_location_carries_collection(instance: dg.DagsterInstance) -> None:
    # (A live instance: Dagster's definitions loader reads state storage from the current one.)
    dg.Definitions.validate_loadable(code_location)
    assert code_location.resolve_assets_def(CHAT_COLLECTION_KEY).check_keys
    jobs = {job.name for job in code_location.resolve_all_job_defs()}
    assert {COLLECTION_JOB, MANUAL_JOB} <= jobs
    for name in (RECONCILE_SCHEDULE, REFRESH_SCHEDULE):
        assert code_location.resolve_schedule_def(name).job_name == COLLECTION_JOB
    assert {"database", "timeline_settings", "lark"} <= set(code_location.resources or {})
