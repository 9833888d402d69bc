"""A maintenance job knows its workspace (migration 0018_maintenance_workspace;
docs/lifecycle.md, "Retention"): a workspace hold reaches its finished jobs, so the lifecycle
dry-run reports them held, never purgeable, and the purge keeps them; another workspace's jobs
age out as before. On SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import Engine, func, select

from timeline_pipeline.db.schema import maintenance_jobs as mj
from timeline_pipeline.lifecycle.dry_run import dry_run, read_only
from timeline_pipeline.lifecycle.engine import PurgeEngine
from timeline_pipeline.lifecycle.holds import create_hold
from timeline_pipeline.lifecycle.registry import load_registry
from timeline_pipeline_tests.maintenance.support import FAST, drive, seed_evidence, service
from timeline_pipeline_tests.store.factories import T0

KEY = "maintenance_jobs.maintenance_jobs"


def _finished_job(engine: Engine, workspace_id: str) -> str:
    svc = service(engine)
    job, _ = svc.create(
        job_type="content_hash_backfill",
        idempotency_key=f"check-{workspace_id}",
        parameters={"workspace_id": workspace_id},
        limits=FAST,
    )
    done = drive(svc, job)
    assert done.status == "completed", done.error
    return done.id


def _jobs(engine: Engine) -> dict[str, str | None]:
    with engine.connect() as conn:
        rows = conn.execute(select(mj.c.id, mj.c.workspace_id)).all()
    return {row.id: row.workspace_id for row in rows}


def test_a_held_workspaces_jobs_are_reported_held_and_kept(engine: Engine) -> None:
    seed_evidence(engine, 2, workspace_id="inc-held")
    seed_evidence(engine, 2, workspace_id="inc-free")
    held_job = _finished_job(engine, "inc-held")
    free_job = _finished_job(engine, "inc-free")
    assert _jobs(engine) == {held_job: "inc-held", free_job: "inc-free"}
    registry = load_registry()
    with engine.begin() as conn:
        hold = create_hold(
            conn,
            registry,
            workspace_id="inc-held",
            descriptor_key=KEY,
            reason="preservation notice for the jobs",
            idempotency_key="hold-jobs",
            actor="cli:tester",
        )
    as_of = T0 + timedelta(days=800)
    with read_only(engine) as conn:
        report = dry_run(conn, registry, descriptor_key=KEY, as_of=as_of)
    (jobs,) = report.descriptors
    by_workspace = {row.workspace: row for row in jobs.workspaces}
    held, free = by_workspace["inc-held"], by_workspace["inc-free"]
    assert (held.eligible, held.held, held.purgeable, held.holds) == (1, 1, 0, [hold.hold.id])
    assert (free.eligible, free.held, free.purgeable) == (1, 0, 1)
    assert (jobs.held, jobs.purgeable) == (1, 1)

    run = PurgeEngine(engine, registry).run(descriptor_key=KEY, as_of=as_of)
    assert run.status == "succeeded"
    assert _jobs(engine) == {held_job: "inc-held"}
    with engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(mj)).scalar_one() == 1
