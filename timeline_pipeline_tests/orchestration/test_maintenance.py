"""Dagster job `maintenance_status_job`: the UI shows a maintenance job's status and never
drives it (docs/maintenance.md): driving goes through the loopback listener only."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest
from sqlalchemy import Engine

from timeline_pipeline.db.engine import make_engine
from timeline_pipeline.db.migrate import upgrade
from timeline_pipeline.maintenance.driver import Budget
from timeline_pipeline.maintenance.limits import Limits
from timeline_pipeline.orchestration.maintenance import (
    MAINTENANCE_STATUS_JOB,
    drive_job,
    maintenance_defs,
)
from timeline_pipeline.orchestration.resources import DatabaseResource, TimelineSettingsResource
from timeline_pipeline_tests.maintenance.support import seed_evidence, service, stale_hashes


@pytest.fixture
def url(tmp_path: Path) -> str:
    made = f"sqlite:///{tmp_path / 'timeline.db'}"
    engine = make_engine(made)
    upgrade(engine)
    engine.dispose()
    return made


def _run(url: str, instance: dg.DagsterInstance, **config: object) -> dg.ExecuteInProcessResult:
    defs = dg.Definitions.merge(
        dg.Definitions(
            resources={
                "database": DatabaseResource(url=url),
                "timeline_settings": TimelineSettingsResource(),
            }
        ),
        maintenance_defs(),
    )
    return defs.resolve_job_def(MAINTENANCE_STATUS_JOB).execute_in_process(
        instance=instance,
        run_config={"ops": {"maintenance_status": {"config": config}}},
        raise_on_error=False,
    )


def test_the_status_job_shows_a_job_and_never_advances_or_resumes_it(url: str) -> None:
    engine: Engine = make_engine(url)
    seed_evidence(engine, 25)
    svc = service(engine)
    job, _ = svc.create(
        job_type="content_hash_backfill",
        idempotency_key="k",
        parameters={"workspace_id": "inc-1"},
        limits=Limits(10, 1, 200, 2000),
        apply=True,
    )
    paused = svc.pause(job.id, revision=job.revision)
    with dg.instance_for_test() as instance:
        shown = _run(url, instance, job_id=job.id)
        assert shown.success
        output = shown.output_for_node("maintenance_status")
        assert (output["status"], output["revision"], output["batches"]) == ("paused", 2, 0)
        run = instance.get_run_by_id(shown.run_id)
        assert run is not None
        assert run.tags["timeline/maintenance_status"] == "paused"
        unknown = _run(url, instance, job_id="00000000-0000-0000-0000-000000000000")
        assert not unknown.success
    after = svc.get(job.id)
    assert (after.status, after.revision, after.batches) == ("paused", paused.revision, 0)
    assert stale_hashes(engine) == 25
    engine.dispose()


def test_the_code_location_carries_the_maintenance_job() -> None:
    from timeline_pipeline.definitions import defs

    with dg.instance_for_test():
        # (A live instance: Dagster's definitions loader reads state storage from the current one.)
        names = {job.name for job in defs.resolve_all_job_defs()}
    assert {MAINTENANCE_STATUS_JOB, "rerun_windows"} <= names
    assert "drive_maintenance_job" not in names


@pytest.mark.parametrize("apply", [True, False])
def test_the_rerun_driver_refuses_any_job_but_a_window_rerun(url: str, apply: bool) -> None:
    """`drive_job` exists for `rerun_windows`' own job: a hash backfill (which rewrites
    evidence) is driven through the loopback listener only, whether it applies or not."""
    engine: Engine = make_engine(url)
    seed_evidence(engine, 5)
    svc = service(engine)
    job, _ = svc.create(
        job_type="content_hash_backfill",
        idempotency_key="k",
        parameters={"workspace_id": "inc-1"},
        limits=Limits(10, 1, 200, 2000),
        apply=apply,
    )
    with pytest.raises(dg.Failure, match="through the loopback listener"):
        drive_job(dg.build_op_context(), svc, job.id, Budget(max_batches=5, max_seconds=5))
    after = svc.get(job.id)
    assert (after.status, after.revision, after.batches) == (job.status, job.revision, 0)
    assert stale_hashes(engine) == 5
    engine.dispose()
