"""A driver killed with SIGKILL mid-run loses nothing committed, and a second driver resumes
from the stored cursor (a real `timeline-pipeline maintenance run` process)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from sqlalchemy import Engine

from timeline_pipeline.cli.main import cli
from timeline_pipeline.maintenance.limits import Limits
from timeline_pipeline_tests.maintenance.conftest import Running
from timeline_pipeline_tests.maintenance.support import seed_evidence, stale_hashes, stored

ROWS = 40
CLI = str(Path(sys.executable).parent / "timeline-pipeline")


@pytest.mark.slow
def test_a_killed_driver_loses_nothing_committed_and_a_second_one_resumes_from_the_cursor(
    lite_running: Running, lite_engine: Engine
) -> None:
    seed_evidence(lite_engine, ROWS)
    job, _ = lite_running.service.create(
        job_type="content_hash_backfill",
        idempotency_key="k",
        parameters={"workspace_id": "inc-1"},
        limits=Limits(batch_size=5, delay_ms=100, lock_timeout_ms=100, statement_timeout_ms=1000),
        apply=True,
    )
    args = [
        "maintenance",
        "run",
        "--job",
        job.id,
        "--max-batches",
        "1000",
        "--max-seconds",
        "60",
        "--port",
        str(lite_running.port),
    ]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    driver = subprocess.Popen([CLI, *args], stdout=subprocess.PIPE, env=env, text=True)
    printed = []
    try:
        assert driver.stdout is not None
        while len(printed) < 4:  # the job as found, then three advances
            line = driver.stdout.readline()
            assert line, "the driver ended early"
            if line.startswith("{"):
                printed.append(json.loads(line))
    finally:
        driver.send_signal(signal.SIGKILL)
        driver.wait(10)
    assert driver.returncode == -signal.SIGKILL
    left = stored(lite_engine, job.id)
    assert left.status == "ready" and left.revision >= printed[-1]["revision"]
    # Everything the stored counters say was committed is in the data, and nothing more.
    assert stale_hashes(lite_engine) == ROWS - left.progress["updated"]
    assert left.checkpoint["after_id"] == left.progress["scanned"]
    second = CliRunner().invoke(cli, args)
    assert second.exit_code == 0, second.stderr
    jobs = [json.loads(line) for line in second.stdout.splitlines() if line.startswith("{")]
    assert jobs[0]["checkpoint"] == left.checkpoint and jobs[0]["revision"] == left.revision
    assert jobs[1]["checkpoint"]["after_id"] == left.checkpoint["after_id"] + 5
    assert jobs[-1]["status"] == "completed"
    assert jobs[-1]["result"]["updated"] == ROWS
    assert stale_hashes(lite_engine) == 0
