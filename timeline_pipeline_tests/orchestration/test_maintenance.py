"""Dagster job `drive_maintenance_job`: the launchpad drives one maintenance job with the same
budgets as the CLI driver, its progress on the run's tags and output metadata (SQLite: the
driving rules are the driver's and are tested on both databases in maintenance/)."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest
from sqlalchemy import Engine

from timeline_pipeline.db.engine import make_engine
from timeline_pipeline.db.migrate import upgrade
from timeline_pipeline.maintenance.limits import Limits
from timeline_pipeline.orchestration.maintenance import MAINTENANCE_JOB, maintenance_defs
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
    return defs.resolve_job_def(MAINTENANCE_JOB).execute_in_process(
        instance=instance,
        run_config={"ops": {"drive_maintenance": {"config": config}}},
        raise_on_error=False,
    )


def test_the_launchpad_job_drives_a_maintenance_job_within_its_budget(url: str) -> None:
    engine: Engine = make_engine(url)
    seed_evidence(engine, 25)
    job, _ = service(engine).create(
        job_type="content_hash_backfill",
        idempotency_key="k",
        parameters={"workspace_id": "inc-1"},
        limits=Limits(10, 1, 200, 2000),
        apply=True,
    )
    with dg.instance_for_test() as instance:
        canary = _run(url, instance, job_id=job.id, max_batches=1)
        assert canary.success
        output = canary.output_for_node("drive_maintenance")
        assert output["batches"] == 1 and output["status"] == "ready"
        (step,) = [e for e in canary.all_events if e.event_type_value == "STEP_OUTPUT"]
        metadata = step.event_specific_data.metadata  # type: ignore[union-attr]
        assert metadata["outcome"].value == "incomplete"
        assert metadata["progress"].value["updated"] == 10
        run = instance.get_run_by_id(canary.run_id)
        assert run is not None
        assert run.tags["timeline/maintenance_revision"] == str(output["revision"])
        assert run.tags["timeline/maintenance_status"] == "ready"

        rest = _run(url, instance, job_id=job.id)
        assert rest.success
        assert rest.output_for_node("drive_maintenance")["status"] == "completed"
        assert stale_hashes(engine) == 0

        svc = service(engine)
        other, _ = svc.create(
            job_type="content_hash_backfill",
            idempotency_key="k2",
            parameters={"workspace_id": "inc-1"},
            limits=Limits(10, 1, 200, 2000),
        )
        svc.pause(other.id, revision=other.revision)
        paused = _run(url, instance, job_id=other.id)
        assert not paused.success  # a paused job is not resumed without being asked
        resumed = _run(url, instance, job_id=other.id, resume=True)
        assert resumed.success
    engine.dispose()


def test_the_code_location_carries_the_maintenance_job() -> None:
    from timeline_pipeline.definitions import defs

    with dg.instance_for_test():
        # (A live instance: Dagster's definitions loader reads state storage from the current one.)
        names = {job.name for job in defs.resolve_all_job_defs()}
    assert {MAINTENANCE_JOB, "rerun_windows"} <= names
