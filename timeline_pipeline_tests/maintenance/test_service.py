"""The job service on SQLite and PostgreSQL: idempotent create, dry-run then apply with a
verification pass, revisions, pause/configure/resume keeping the cursor, SQL failures pausing
the job without moving its checkpoint."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from sqlalchemy import Engine, text

from timeline_pipeline.domain.errors import (
    IdempotencyConflict,
    InvalidInput,
    InvalidTransition,
    StaleRevision,
)
from timeline_pipeline.maintenance.errors import (
    JobNotFound,
    OpenJobExists,
    TooEarly,
    UnknownProcessor,
)
from timeline_pipeline.maintenance.limits import Limits
from timeline_pipeline.maintenance.service import JobService
from timeline_pipeline_tests.maintenance.support import (
    FAST,
    allow_updates,
    drive,
    evidence_snapshot,
    fail_updates_of,
    seed_evidence,
    service,
    stale_hashes,
    stored,
)

BACKFILL = "content_hash_backfill"
WS = {"workspace_id": "inc-1"}


def _create(svc: JobService, key: str = "k-1", **kwargs: object):  # type: ignore[no-untyped-def]
    args: dict[str, object] = {"job_type": BACKFILL, "parameters": WS, "limits": FAST}
    args.update(kwargs)
    return svc.create(idempotency_key=key, **args)  # type: ignore[arg-type]


def test_the_same_key_and_input_return_the_original_job(engine: Engine) -> None:
    seed_evidence(engine, 3)
    svc = service(engine)
    first, created = _create(svc)
    again, created_again = _create(svc)
    assert (created, created_again) == (True, False)
    assert again.id == first.id and again.revision == first.revision


def test_the_same_key_with_changed_input_conflicts_and_creates_nothing(engine: Engine) -> None:
    seed_evidence(engine, 3)
    svc = service(engine)
    first, _ = _create(svc)
    with pytest.raises(IdempotencyConflict):
        _create(svc, limits=Limits(20, 1, 200, 2000))
    with pytest.raises(IdempotencyConflict):
        _create(svc, apply=True)
    assert stored(engine, first.id).batch_size == FAST.batch_size


def test_a_second_open_job_of_the_same_type_and_scope_is_refused(engine: Engine) -> None:
    seed_evidence(engine, 3)
    svc = service(engine)
    first, _ = _create(svc)
    with pytest.raises(OpenJobExists):
        _create(svc, key="k-2", apply=True)
    svc.pause(first.id, revision=first.revision)
    with pytest.raises(OpenJobExists):  # paused is open too
        _create(svc, key="k-2", apply=True)


def test_bad_input_is_refused_with_a_reason(engine: Engine) -> None:
    seed_evidence(engine, 1)
    svc = service(engine)
    with pytest.raises(UnknownProcessor):
        _create(svc, job_type="issue_status")
    with pytest.raises(InvalidInput, match="workspace_id"):
        _create(svc, parameters={})
    with pytest.raises(InvalidInput, match="unknown parameter"):
        _create(svc, parameters={**WS, "sql": "DROP TABLE x"})
    with pytest.raises(InvalidInput, match="batch_size"):
        _create(svc, limits=Limits(5001, 1, 1, 1))
    with pytest.raises(InvalidInput, match="timeouts"):
        _create(svc, limits=Limits(10, 1, 3000, 2000))
    with pytest.raises(InvalidInput, match="preflight"):
        _create(svc, parameters={"workspace_id": "nope"})
    with pytest.raises(JobNotFound):
        svc.get("00000000-0000-0000-0000-000000000000")


def test_a_dry_run_persists_its_report_and_never_changes_data(engine: Engine) -> None:
    seed_evidence(engine, 25)
    before = evidence_snapshot(engine)
    svc = service(engine)
    job, _ = _create(svc)
    done = drive(svc, job)
    assert done.status == "completed" and done.phase == "scan"
    assert done.result == {"v": 1, "scanned": 25, "would_update": 25}
    assert done.batches == 3  # 10 + 10 + 5 (a short page ends the pass)
    assert evidence_snapshot(engine) == before
    assert stored(engine, job.id).result == done.result


def test_apply_rewrites_every_stale_row_over_several_batches_then_verifies(engine: Engine) -> None:
    seed_evidence(engine, 35)
    svc = service(engine)
    dry, _ = _create(svc, key="dry")
    drive(svc, dry)
    job, _ = _create(svc, key="apply", apply=True)
    seen_verify = False
    while job.status == "ready":
        job = svc.advance(job.id, revision=job.revision)
        seen_verify = seen_verify or job.phase == "verify"
    assert seen_verify
    assert job.status == "completed"
    assert job.result == {
        "v": 1,
        "scanned": 35,
        "updated": 35,
        "verified": 35,
        "remaining_stale": 0,
    }
    assert job.batches == 8  # 4 scan pages and 4 verification pages
    assert stale_hashes(engine) == 0


def test_verification_rejects_a_residual_stale_hash_and_names_the_row(engine: Engine) -> None:
    seed_evidence(engine, 15)
    svc = service(engine)
    job, _ = _create(svc, apply=True)
    job = svc.advance(job.id, revision=job.revision)
    job = svc.advance(job.id, revision=job.revision)
    assert job.phase == "verify"
    with engine.begin() as conn:  # an old writer behind the scan cursor
        conn.execute(
            text("UPDATE workspace_timeline_evidence SET content_hash = 'old' WHERE id = 3")
        )
    job = svc.advance(job.id, revision=job.revision)
    assert job.status == "paused"
    assert job.error is not None
    assert (job.error["code"], job.error["reason"], job.error["evidence_id"]) == (
        "verification_failed",
        "residual_stale_hash",
        3,
    )
    assert job.checkpoint == {}


def test_pause_configure_resume_keeps_the_cursor_and_the_parameters(engine: Engine) -> None:
    seed_evidence(engine, 30)
    svc = service(engine)
    job, _ = _create(svc, apply=True)
    job = svc.advance(job.id, revision=job.revision)
    cursor = job.checkpoint
    assert cursor["after_id"] == 10
    paused = svc.pause(job.id, revision=job.revision)
    tuned = svc.configure(job.id, revision=paused.revision, limits=Limits(7, 5, 100, 1000))
    resumed = svc.resume(job.id, revision=tuned.revision)
    assert [paused.status, tuned.status, resumed.status] == ["paused", "paused", "ready"]
    assert resumed.checkpoint == cursor and resumed.parameters == job.parameters
    assert (resumed.batch_size, resumed.delay_ms) == (7, 5)
    assert resumed.revision == job.revision + 3
    moved = svc.advance(job.id, revision=resumed.revision)
    assert moved.checkpoint["after_id"] == 17


def test_a_stale_revision_does_nothing(engine: Engine) -> None:
    seed_evidence(engine, 30)
    svc = service(engine)
    job, _ = _create(svc, apply=True)
    moved = svc.advance(job.id, revision=job.revision)
    before = evidence_snapshot(engine)
    for action in ("advance", "pause", "resume", "cancel"):
        with pytest.raises(StaleRevision) as refused:
            svc.act(job.id, action, revision=job.revision)
        assert refused.value.current.revision == moved.revision
    with pytest.raises(StaleRevision):
        svc.configure(job.id, revision=job.revision, limits=Limits(1, 1, 1, 1))
    assert stored(engine, job.id) == moved
    assert evidence_snapshot(engine) == before


def test_cancel_keeps_committed_data_and_the_record(engine: Engine) -> None:
    seed_evidence(engine, 30)
    svc = service(engine)
    job, _ = _create(svc, apply=True)
    job = svc.advance(job.id, revision=job.revision)
    cancelled = svc.cancel(job.id, revision=job.revision)
    assert cancelled.status == "cancelled" and cancelled.finished_at is not None
    assert stale_hashes(engine) == 20
    with pytest.raises(InvalidTransition):
        svc.advance(job.id, revision=cancelled.revision)
    again, _ = _create(svc, key="k-2", apply=True)  # the scope is free again
    assert again.id != job.id


def test_an_advance_inside_the_delay_is_refused_with_the_time_left(engine: Engine) -> None:
    seed_evidence(engine, 30)
    frozen = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
    svc = service(engine, clock=lambda: frozen)
    job, _ = _create(svc, limits=Limits(10, 5000, 200, 2000))
    job = svc.advance(job.id, revision=job.revision)
    with pytest.raises(TooEarly) as early:
        svc.advance(job.id, revision=job.revision)
    assert 4990 <= early.value.retry_after_ms <= 5001
    assert stored(engine, job.id).batches == 1


def test_an_sql_error_pauses_the_job_without_moving_its_checkpoint(engine: Engine) -> None:
    seed_evidence(engine, 30)
    svc = service(engine)
    job, _ = _create(svc, apply=True)
    job = svc.advance(job.id, revision=job.revision)
    fail_updates_of(engine, 15)
    failed = svc.advance(job.id, revision=job.revision)
    assert failed.status == "paused"
    assert failed.checkpoint == job.checkpoint and failed.progress == job.progress
    assert failed.error is not None and failed.error["code"] == "sql_error"
    assert failed.error["retryable"] is False
    assert stale_hashes(engine) == 20  # the failed batch changed nothing
    allow_updates(engine)
    resumed = svc.resume(job.id, revision=failed.revision)
    assert drive(svc, resumed).status == "completed"
    assert stale_hashes(engine) == 0
