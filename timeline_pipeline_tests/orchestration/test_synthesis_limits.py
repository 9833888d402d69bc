"""Every run that synthesizes carries the tags dagster.yaml's run-queue limits act on, the
summary waits for its workspace's synthesis in a real run queue, and a rerun preview's model
calls hold a synthesis slot outside Dagster too (docs/dagster.md, "Concurrency"; issue 35 items
3 and 4), on SQLite and PostgreSQL.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
import yaml
from dagster._core.remote_origin import (
    RegisteredCodeLocationOrigin,
    RemoteJobOrigin,
    RemoteRepositoryOrigin,
)
from dagster._core.storage.dagster_run import DagsterRun
from dagster._core.utils import make_new_run_id
from dagster._daemon.run_coordinator.queued_run_coordinator_daemon import (
    QueuedRunCoordinatorDaemon,
)
from sqlalchemy import Engine, func, select, text
from sqlalchemy.exc import DBAPIError

from timeline_pipeline.db.engine import make_engine
from timeline_pipeline.db.schema import window_rerun_previews as pv
from timeline_pipeline.db.synthesis_slots import hold_synthesis_slot
from timeline_pipeline.domain.window_keys import WindowRef
from timeline_pipeline.maintenance.errors import Busy
from timeline_pipeline.maintenance.processors import default_registry
from timeline_pipeline.maintenance.service import JobService
from timeline_pipeline.maintenance.sql import batch_transaction, bounded
from timeline_pipeline.orchestration.summary import SUMMARY_JOB, summary_job, summary_tags
from timeline_pipeline.orchestration.windows import (
    RERUN_JOB,
    SYNTHESIS_JOB,
    partition_tags,
    rerun_windows_job,
)
from timeline_pipeline.settings import load_timeline_settings
from timeline_pipeline.store.maintenance_jobs import JobRowBusy
from timeline_pipeline.synthesis.rules import RuleSynthesizer
from timeline_pipeline.windows.batches import BatchItem, plan_runs, request_group, run_tags
from timeline_pipeline.windows.run_queue import lane_of
from timeline_pipeline_tests.curation.support import NOW, ROLLBACK, W1, incident, say
from timeline_pipeline_tests.maintenance.support import FAST, SteppingClock
from timeline_pipeline_tests.windows.support import settings
from timeline_pipeline_tests.windows.test_planning import state

REPO = Path(__file__).resolve().parents[2]
LANES = load_timeline_settings().max_concurrent_synthesis
START = datetime(2026, 11, 29, 10, 0, tzinfo=UTC)
KEY_TAIL = "oc_chat:20261129T1000Z"


def _same_lane_workspaces() -> tuple[str, str, str]:
    """Two workspaces sharing a lane and one in another lane (of the default lanes)."""
    names = [f"inc-{i}" for i in range(50)]
    first = names[0]
    mate = next(n for n in names[1:] if lane_of(n, LANES) == lane_of(first, LANES))
    other = next(n for n in names if lane_of(n, LANES) != lane_of(first, LANES))
    return first, mate, other


WS_A, WS_B, WS_OTHER = _same_lane_workspaces()


def _item(workspace: str, minutes: int) -> BatchItem:
    ref = WindowRef(workspace, "oc_chat", START + timedelta(minutes=minutes))
    row = state(workspace_id=workspace, next_attempt_at=START + timedelta(hours=1))
    return BatchItem(ref, request_group(ref, row, LANES), run_tags(ref, row, LANES))


def _batch_tags(*items: BatchItem) -> Mapping[str, str]:
    (run,) = plan_runs(list(items), existing=set(), max_windows=50).runs
    return run.tags


def _one_window_tags() -> Mapping[str, str]:
    return _item(WS_A, 0).tags


RUNS: list[tuple[str, Any, str | None, bool]] = [
    # (kind of run, its tags, the workspace it carries, whether it synthesizes). A batch carries
    # no workspace, it may span several of its lane: its lane holds it apart (docs/scaling.md).
    ("sensor run of one window", _one_window_tags, WS_A, True),
    ("batch of one workspace", lambda: _batch_tags(_item(WS_A, 0), _item(WS_A, 10)), None, True),
    ("batch of two workspaces", lambda: _batch_tags(_item(WS_A, 0), _item(WS_B, 10)), None, True),
    ("UI replay of a partition", lambda: partition_tags(f"{WS_A}:{KEY_TAIL}"), WS_A, True),
    (
        "UI launch of the synthesis job",
        lambda: _job_partition_tags(SYNTHESIS_JOB, f"{WS_A}:{KEY_TAIL}"),
        WS_A,
        True,
    ),
    ("summary run from the sensor", lambda: summary_tags(WS_A, LANES), WS_A, False),
    ("UI launch of the summary job", lambda: _job_partition_tags(SUMMARY_JOB, WS_A), WS_A, False),
]


def _job_partition_tags(job: str, key: str) -> Mapping[str, str]:
    """The tags Dagster gives a UI launch of `job` for partition `key` (its partition tag
    function), as the launchpad does."""
    from timeline_pipeline.orchestration.windows import synthesis_job

    defined = {SYNTHESIS_JOB: synthesis_job, SUMMARY_JOB: summary_job}[job]
    config = defined.config
    assert isinstance(config, dg.PartitionedConfig)
    return config.get_tags_for_partition_key(key)


@pytest.mark.parametrize(("kind", "tags_of", "workspace", "synthesizes"), RUNS)
def test_every_run_of_a_workspace_carries_its_lane_and_the_limits_tags(
    kind: str, tags_of: Any, workspace: str | None, synthesizes: bool
) -> None:
    tags = dict(tags_of())
    # The lane (limit 1 per value) separates every run of a workspace from every other,
    # whatever launched it: the batch's lane is its workspaces' lane.
    assert tags.get("timeline/lane") == lane_of(WS_A, LANES), kind
    assert tags.get("timeline/workspace") == workspace, kind
    assert (tags.get("timeline/synthesis") == "1") is synthesizes, kind


def test_the_rerun_job_counts_in_the_synthesis_limit() -> None:
    assert rerun_windows_job.name == RERUN_JOB
    assert rerun_windows_job.tags.get("timeline/synthesis") == "1"


# --- a real run queue with the repository's dagster.yaml ----------------------------------------


@pytest.fixture
def queued_instance() -> Iterator[dg.DagsterInstance]:
    config = yaml.safe_load((REPO / "dagster.yaml").read_text())
    overrides = {key: config[key] for key in ("run_coordinator", "concurrency")}
    with dg.instance_for_test(overrides=overrides) as made:
        yield made


def _run(
    instance: dg.DagsterInstance, job: str, tags: Mapping[str, str], status: dg.DagsterRunStatus
) -> str:
    origin = RemoteJobOrigin(
        repository_origin=RemoteRepositoryOrigin(
            code_location_origin=RegisteredCodeLocationOrigin("timeline_pipeline"),
            repository_name="__repository__",
        ),
        job_name=job,
    )
    run = DagsterRun(
        job_name=job,
        run_id=make_new_run_id(),
        status=status,
        tags=dict(tags),
        remote_job_origin=origin,
    )
    instance.add_run(run)
    return run.run_id


def _dequeued(instance: dg.DagsterInstance) -> set[str]:
    """The queued runs the run-queue daemon would launch now, by its own selection."""
    daemon = QueuedRunCoordinatorDaemon(interval_seconds=1)
    runs = daemon._get_runs_to_dequeue(instance, instance.get_concurrency_config(), None)
    return {run.run_id for run in runs}


def test_a_summary_is_not_dequeued_beside_its_workspaces_batch_run(
    queued_instance: dg.DagsterInstance,
) -> None:
    started = dg.DagsterRunStatus.STARTED
    queued = dg.DagsterRunStatus.QUEUED
    # A sensor's batch of two workspaces of one lane runs: it carries no workspace tag.
    batch = _batch_tags(_item(WS_A, 0), _item(WS_B, 10))
    _run(queued_instance, SYNTHESIS_JOB, batch, started)
    mine = _run(queued_instance, SUMMARY_JOB, summary_tags(WS_A, LANES), queued)
    mate = _run(queued_instance, SUMMARY_JOB, summary_tags(WS_B, LANES), queued)
    elsewhere = _run(queued_instance, SUMMARY_JOB, summary_tags(WS_OTHER, LANES), queued)

    assert _dequeued(queued_instance) == {elsewhere}
    assert mine not in _dequeued(queued_instance) and mate not in _dequeued(queued_instance)


def test_a_batch_waits_for_the_running_summary_of_a_workspace_of_its_lane(
    queued_instance: dg.DagsterInstance,
) -> None:
    _run(queued_instance, SUMMARY_JOB, summary_tags(WS_A, LANES), dg.DagsterRunStatus.STARTED)
    batch = _batch_tags(_item(WS_A, 0), _item(WS_A, 10))
    waiting = _run(queued_instance, SYNTHESIS_JOB, batch, dg.DagsterRunStatus.QUEUED)
    other = _batch_tags(_item(WS_OTHER, 0), _item(WS_OTHER, 10))
    free = _run(queued_instance, SYNTHESIS_JOB, other, dg.DagsterRunStatus.QUEUED)

    assert _dequeued(queued_instance) == {free}
    assert waiting not in _dequeued(queued_instance)


# --- synthesis slots for previews outside Dagster ----------------------------------------------


def test_a_transaction_holds_one_slot_and_the_limit_holds_across_connections(
    engine: Engine,
) -> None:
    if engine.dialect.name != "postgresql":
        # SQLite: a maintenance batch holds the database's single write lock (BEGIN IMMEDIATE)
        # to its end, so a second batch cannot start beside it: one slot, nothing to take.
        with batch_transaction(engine) as first:
            assert hold_synthesis_slot(first, 2, holder="job-1") is None
            with pytest.raises(JobRowBusy), batch_transaction(engine):
                pass
        return
    with (
        engine.connect() as one,
        engine.connect() as two,
        engine.connect() as three,
        one.begin(),
        two.begin(),
    ):
        slot_one = hold_synthesis_slot(one, 2, holder="job-1")
        assert hold_synthesis_slot(one, 2, holder="job-1") == slot_one  # the same, once
        slot_two = hold_synthesis_slot(two, 2, holder="job-2")
        assert {slot_one, slot_two} == {0, 1}
        with (
            three.begin(),
            bounded(three, lock_timeout_ms=200, statement_timeout_ms=5000),
            pytest.raises(DBAPIError) as refused,
        ):
            hold_synthesis_slot(three, 2, holder="job-3")
        assert getattr(refused.value.orig, "sqlstate", None) == "55P03"  # lock_timeout
        one.commit()
        # The slot ends with its transaction: the waiting holder gets it.
        with three.begin():
            assert hold_synthesis_slot(three, 2, holder="job-3") == slot_one


def test_a_dead_holders_slot_ends_with_its_session(pg_url: str) -> None:
    """Restart-safe: a process killed while holding a slot leaves nothing to clean up.
    PostgreSQL only: on SQLite there is no slot, the write lock of a dead process ends with it."""
    engine = make_engine(pg_url)
    dying = engine.connect()
    dying.begin()
    assert hold_synthesis_slot(dying, 1, holder="killed") == 0
    pid = dying.exec_driver_sql("SELECT pg_backend_pid()").scalar_one()
    with engine.begin() as admin:
        admin.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
    with (
        engine.connect() as next_one,
        next_one.begin(),
        bounded(next_one, lock_timeout_ms=2000, statement_timeout_ms=5000),
    ):
        assert hold_synthesis_slot(next_one, 1, holder="next") == 0
    dying.invalidate()
    dying.rollback()
    dying.close()
    engine.dispose()


class ModelSynthesizer(RuleSynthesizer):
    """Stands for a model: the rule synthesizer's drafts under a model's name (no network)."""

    name = "model-standin"


def _scratch_rows(engine: Engine) -> int:
    with engine.connect() as conn:
        return int(conn.execute(select(func.count()).select_from(pv)).scalar_one())


def test_a_preview_batch_beyond_the_limit_waits_then_pauses_retryable_and_writes_nothing(
    engine: Engine,
) -> None:
    incident(engine)
    say(engine, W1, [ROLLBACK])
    overrides: dict[str, Any] = {"max_concurrent_synthesis": 1}
    svc = JobService(
        engine,
        default_registry(settings(**overrides), synthesizer=ModelSynthesizer),
        clock=SteppingClock(NOW),
    )
    job, _ = svc.create(
        job_type="window_rerun",
        idempotency_key="preview-slots",
        parameters={"workspace_id": "inc-1", "processor_version": "model-v2"},
        limits=FAST,
    )
    if engine.dialect.name == "postgresql":
        # Another process's preview batch holds the only slot.
        with engine.connect() as other, other.begin():
            assert hold_synthesis_slot(other, 1, holder="elsewhere") == 0
            paused = svc.advance(job.id, revision=job.revision)
        assert paused.status == "paused"
        assert paused.error is not None
        assert (paused.error["sqlstate"], paused.error["retryable"]) == ("55P03", True)
        assert _scratch_rows(engine) == 0
        job = svc.resume(paused.id, revision=paused.revision)
    else:
        # Another batch holds SQLite's write lock: this one is busy and waits its turn.
        with batch_transaction(engine), pytest.raises(Busy):
            svc.advance(job.id, revision=job.revision)
        assert _scratch_rows(engine) == 0
    # The slot is free again: the preview goes on and completes.
    for _ in range(10):
        if job.status != "ready":
            break
        job = svc.advance(job.id, revision=job.revision)
    assert job.status == "completed", job.error
    assert _scratch_rows(engine) > 0
