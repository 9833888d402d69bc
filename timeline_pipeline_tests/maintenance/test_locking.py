"""The busy path and timeouts of a batch: the job row is locked NOWAIT on PostgreSQL (two real
connections), the embedded SQLite default fails busy at once instead of waiting, a lock timeout
inside a batch pauses the job as retryable, and the driver retries both."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
import pytest
from sqlalchemy import Engine

from timeline_pipeline.db.engine import make_engine
from timeline_pipeline.maintenance.driver import Budget, Driver
from timeline_pipeline.maintenance.errors import Busy
from timeline_pipeline.maintenance.limits import Limits
from timeline_pipeline.maintenance.transports import ServiceTransport
from timeline_pipeline_tests.maintenance.support import (
    seed_evidence,
    service,
    stale_hashes,
    stored,
)

LIMITS = Limits(batch_size=10, delay_ms=1, lock_timeout_ms=100, statement_timeout_ms=1000)


def _plain(url: str) -> str:
    return url.replace("postgresql+psycopg://", "postgresql://", 1)


@contextmanager
def _holding(url: str, sql: str) -> Iterator[psycopg.Connection[tuple[object, ...]]]:
    """A second connection holding a row lock until the block ends."""
    with psycopg.connect(_plain(url)) as other:
        other.execute(sql)
        yield other
        other.rollback()


@pytest.fixture
def pg_engine(pg_url: str) -> Iterator[Engine]:
    made = make_engine(pg_url)
    try:
        yield made
    finally:
        made.dispose()


def _job(engine: Engine):  # type: ignore[no-untyped-def]
    svc = service(engine)
    job, _ = svc.create(
        job_type="content_hash_backfill",
        idempotency_key="k",
        parameters={"workspace_id": "inc-1"},
        limits=LIMITS,
        apply=True,
    )
    return svc, job


@pytest.mark.postgres_only
def test_a_held_job_row_makes_every_action_busy_at_once_and_changes_nothing(
    pg_url: str, pg_engine: Engine
) -> None:
    seed_evidence(pg_engine, 25)
    svc, job = _job(pg_engine)
    lock = f"SELECT 1 FROM maintenance_jobs WHERE id = '{job.id}' FOR UPDATE"
    with _holding(pg_url, lock):
        for action in ("advance", "pause", "cancel"):
            started = time.monotonic()
            with pytest.raises(Busy):
                svc.act(job.id, action, revision=job.revision)
            assert time.monotonic() - started < 0.5  # NOWAIT: no lock wait at all
    assert stored(pg_engine, job.id) == job
    assert stale_hashes(pg_engine) == 25


@pytest.mark.postgres_only
def test_a_lock_timeout_inside_a_batch_pauses_the_job_as_retryable_at_its_checkpoint(
    pg_url: str, pg_engine: Engine
) -> None:
    seed_evidence(pg_engine, 25)
    svc, job = _job(pg_engine)
    job = svc.advance(job.id, revision=job.revision)
    with _holding(pg_url, "SELECT 1 FROM workspace_timeline_evidence WHERE id = 15 FOR UPDATE"):
        failed = svc.advance(job.id, revision=job.revision)
    assert failed.status == "paused"
    assert failed.error is not None
    assert (failed.error["sqlstate"], failed.error["retryable"]) == ("55P03", True)
    assert failed.checkpoint == job.checkpoint
    assert stale_hashes(pg_engine) == 15


@pytest.mark.postgres_only
def test_the_driver_retries_busy_and_retryable_failures_and_completes(
    pg_url: str, pg_engine: Engine
) -> None:
    seed_evidence(pg_engine, 25)
    svc, job = _job(pg_engine)
    job = svc.advance(job.id, revision=job.revision)
    row_lock = "SELECT 1 FROM workspace_timeline_evidence WHERE id = 15 FOR UPDATE"
    with psycopg.connect(_plain(pg_url)) as other:
        other.execute(row_lock)
        release = threading.Timer(0.5, other.rollback)
        release.start()
        try:
            report = Driver(ServiceTransport(svc)).run(job.id, Budget(100, 30, max_retries=5))
        finally:
            release.cancel()
    assert report.exit_code == 0, report.reason
    assert stale_hashes(pg_engine) == 0


def test_the_embedded_default_reports_busy_at_once_while_another_writer_holds_the_database(
    lite_engine: Engine,
) -> None:
    seed_evidence(lite_engine, 5)
    svc, job = _job(lite_engine)
    with lite_engine.connect() as other:
        other.exec_driver_sql("SELECT 1")  # BEGIN IMMEDIATE: the write lock is held
        started = time.monotonic()
        with pytest.raises(Busy):
            svc.advance(job.id, revision=job.revision)
        assert time.monotonic() - started < 1  # not the engine's 10 s busy wait
        other.rollback()
    moved = svc.advance(job.id, revision=job.revision)  # once the writer is gone
    assert (moved.batches, moved.phase) == (1, "verify")
