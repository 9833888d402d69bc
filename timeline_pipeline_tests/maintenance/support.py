"""Builders for maintenance tests: a workspace with evidence, a job service, limits."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Engine, func, select, text

from timeline_pipeline.db.schema import workspace_timeline_evidence as ev
from timeline_pipeline.maintenance.limits import Limits
from timeline_pipeline.maintenance.processors import default_registry
from timeline_pipeline.maintenance.processors.evidence_rows import current_hash
from timeline_pipeline.maintenance.service import JobService
from timeline_pipeline.settings import load_timeline_settings
from timeline_pipeline.store import evidence, maintenance_jobs
from timeline_pipeline.store.maintenance_jobs import MaintenanceJob
from timeline_pipeline_tests.store.factories import T0, make_workspace, message

FAST = Limits(batch_size=10, delay_ms=1, lock_timeout_ms=200, statement_timeout_ms=2000)


def service(engine: Engine, clock: Any = None, **overrides: Any) -> JobService:
    return JobService(
        engine,
        default_registry(load_timeline_settings(**overrides)),
        clock=clock or SteppingClock(),
    )


def seed_evidence(
    engine: Engine, count: int, *, workspace_id: str = "inc-1", status: str = "firing"
) -> None:
    """`count` messages whose stored hashes are stale (the factory hashes differently)."""
    make_workspace(engine, workspace_id, status=status)
    records = [
        message(
            f"message {n}",
            workspace_id=workspace_id,
            message_id=f"om_{n}",
            at=T0 + timedelta(seconds=n),
        )
        for n in range(count)
    ]
    with engine.begin() as conn:
        evidence.upsert_many(conn, records, now=T0)


def stale_hashes(engine: Engine, workspace_id: str = "inc-1") -> int:
    with engine.connect() as conn:
        rows = evidence.id_page(conn, workspace_id, after_id=0, limit=1_000_000)
    return sum(1 for row in rows if row.content_hash != current_hash(row))


def evidence_snapshot(engine: Engine) -> list[tuple[Any, ...]]:
    with engine.connect() as conn:
        return [tuple(r) for r in conn.execute(select(ev).order_by(ev.c.id))]


def evidence_count(engine: Engine) -> int:
    with engine.connect() as conn:
        return int(conn.execute(select(func.count()).select_from(ev)).scalar_one())


def stored(engine: Engine, job_id: str) -> MaintenanceJob:
    with engine.connect() as conn:
        job = maintenance_jobs.get(conn, job_id)
    assert job is not None
    return job


class SteppingClock:
    """Each reading is a second after the last, so a job's delay has always passed by the next
    advance (the delay itself is tested with a clock that stands still)."""

    def __init__(self, start: datetime | None = None) -> None:
        self.now = start or datetime.now(UTC)

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now


def drive(svc: JobService, job: MaintenanceJob, *, max_batches: int = 1000) -> MaintenanceJob:
    """Advance until the job leaves `ready`."""
    for _ in range(max_batches):
        if job.status != "ready":
            return job
        job = svc.advance(job.id, revision=job.revision)
    return job


def fail_updates_of(engine: Engine, row_id: int) -> None:
    """A real SQL error inside the batch: a trigger refusing an update of one row."""
    with engine.begin() as conn:
        if conn.dialect.name == "sqlite":
            conn.execute(
                text(
                    "CREATE TRIGGER refuse_update BEFORE UPDATE ON workspace_timeline_evidence "
                    f"WHEN OLD.id = {row_id} BEGIN SELECT RAISE(ABORT, 'refused'); END"
                )
            )
            return
        conn.execute(
            text(
                "CREATE FUNCTION refuse_update() RETURNS trigger LANGUAGE plpgsql AS "
                "$$ BEGIN RAISE EXCEPTION 'refused'; END $$"
            )
        )
        conn.execute(
            text(
                "CREATE TRIGGER refuse_update BEFORE UPDATE ON workspace_timeline_evidence "
                f"FOR EACH ROW WHEN (OLD.id = {row_id}) EXECUTE FUNCTION refuse_update()"
            )
        )


def allow_updates(engine: Engine) -> None:
    with engine.begin() as conn:
        if conn.dialect.name == "sqlite":
            conn.execute(text("DROP TRIGGER refuse_update"))
        else:
            conn.execute(text("DROP TRIGGER refuse_update ON workspace_timeline_evidence"))
