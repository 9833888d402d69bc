"""The driver waits for a slow batch as long as the job's batch budget says, and a batch whose
answer it lost all the same is recognised by the job's revision once it commits
(docs/maintenance.md, "Dry-run, then apply"): a real listener, a rerun preview whose windows
take seconds each. The driver's bounds are scaled down (`AdvanceTimeout`) so that a batch
outlasting the base timeout takes seconds, not minutes.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from sqlalchemy import Engine

from timeline_pipeline.maintenance.advance_timeout import AdvanceTimeout
from timeline_pipeline.maintenance.driver import EXIT_COMPLETED, Budget, Driver
from timeline_pipeline.maintenance.http_client import HttpTransport
from timeline_pipeline.maintenance.limits import Limits
from timeline_pipeline.maintenance.listener import MaintenanceListener
from timeline_pipeline.maintenance.processors import default_registry
from timeline_pipeline.maintenance.service import JobService
from timeline_pipeline.synthesis.contract import SynthesisChunk, SynthesisResult
from timeline_pipeline.synthesis.rules import RuleSynthesizer
from timeline_pipeline_tests.curation.support import (
    IMPACT,
    NOW,
    RECOVERED,
    ROLLBACK,
    W1,
    W2,
    W3,
    incident,
    say,
)
from timeline_pipeline_tests.maintenance.conftest import run_listener
from timeline_pipeline_tests.maintenance.support import SteppingClock, stored
from timeline_pipeline_tests.windows.support import settings

WINDOW_SECONDS = 1.5
"""How long the slow synthesizer takes per window: a preview batch of 2 takes 3 s."""
BASE = 0.3
"""The scaled-down base timeout: far below a batch (30 s in production)."""


class SlowRules(RuleSynthesizer):
    """The rules, as slow as a model: every window's answer takes `WINDOW_SECONDS`."""

    def synthesize(self, chunk: SynthesisChunk) -> SynthesisResult:
        time.sleep(WINDOW_SECONDS)
        return super().synthesize(chunk)


@dataclass
class Slow:
    service: JobService
    listener: MaintenanceListener
    job_id: str


@pytest.fixture
def slow(lite_engine: Engine) -> Iterator[Slow]:
    """Three windows to preview, two per batch (3 s, then 1.5 s), behind a real listener."""
    incident(lite_engine)
    for start, text in ((W1, IMPACT), (W2, ROLLBACK), (W3, RECOVERED)):
        say(lite_engine, start, [text])
    svc = JobService(
        lite_engine,
        default_registry(settings(), synthesizer=SlowRules),
        clock=SteppingClock(NOW),
    )
    job, _ = svc.create(
        job_type="window_rerun",
        idempotency_key="slow-preview",
        parameters={"workspace_id": "inc-1", "processor_version": "rules-slow"},
        # On SQLite the statement timeout bounds the whole batch: 5 s covers the 3-s one.
        limits=Limits(batch_size=2, delay_ms=1, lock_timeout_ms=500, statement_timeout_ms=5000),
    )
    listener = run_listener(svc)
    try:
        yield Slow(svc, listener, job.id)
    finally:
        listener.stop()


def _drive(slow: Slow, timeouts: AdvanceTimeout) -> tuple[Any, list[int]]:
    transport = HttpTransport(slow.listener.port, read_timeout=BASE)
    seen: list[int] = []
    try:
        driver = Driver(
            transport, on_job=lambda job: seen.append(int(job["revision"])), timeouts=timeouts
        )
        report = driver.run(slow.job_id, Budget(max_batches=10, max_seconds=60))
    finally:
        transport.close()
    return report, seen


def test_an_advance_waits_as_long_as_the_jobs_batch_budget_not_the_base_timeout(
    slow: Slow, lite_engine: Engine
) -> None:
    # A preview batch is bounded by its windows: 2 x 2.5 s, plus the margin, well above 3 s.
    report, seen = _drive(slow, AdvanceTimeout(BASE, window_seconds=2.5, margin_seconds=0.5))

    assert report.exit_code == EXIT_COMPLETED, report.reason
    job = stored(lite_engine, slow.job_id)
    assert job.status == "completed" and job.batches == 2
    assert report.batches == 2  # both answers arrived: nothing had to be recognised afterwards
    assert seen == [1, 2, 3]
    assert job.result is not None and job.result["preview"]["totals"]["windows"] == 3


def test_a_batch_whose_answer_timed_out_is_recognised_by_its_revision_once_it_commits(
    slow: Slow, lite_engine: Engine
) -> None:
    # Bounds far below the batch: every answer is lost, and every batch commits meanwhile.
    report, seen = _drive(slow, AdvanceTimeout(BASE, window_seconds=0.1, margin_seconds=0.1))

    assert report.exit_code == EXIT_COMPLETED, report.reason
    job = stored(lite_engine, slow.job_id)
    assert job.status == "completed" and job.batches == 2  # each batch ran once
    assert seen == [1, 2, 3]  # each commit acknowledged at its revision, never advanced twice
    assert job.result is not None and job.result["preview"]["totals"]["windows"] == 3


def test_the_read_timeout_follows_the_jobs_limits_within_the_time_budget() -> None:
    timeouts = AdvanceTimeout()  # production bounds: 30 s base, 120 s a window, 10 s margin
    limits = {"batch_size": 20, "statement_timeout_ms": 5000}
    preview = {"type": "window_rerun", "mode": "dry_run", "limits": limits}
    apply = {**preview, "mode": "apply"}
    backfill = {"type": "content_hash_backfill", "mode": "apply", "limits": limits}
    assert timeouts.read_timeout(preview, remaining=1e9) == 20 * 120 + 10
    assert timeouts.read_timeout(apply, remaining=1e9) == 30 + 10  # statements only
    assert timeouts.read_timeout(backfill, remaining=1e9) == 30 + 10
    assert timeouts.read_timeout(preview, remaining=90) == 90  # never past the budget
    slow_sql = AdvanceTimeout(base_seconds=1, margin_seconds=0)
    assert slow_sql.read_timeout(backfill, remaining=1e9) == 5  # the statement timeout
    assert timeouts.read_timeout({"limits": "junk"}, remaining=1e9) == 30 + 10
