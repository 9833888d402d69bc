"""`serve` with MAINTENANCE_PORT: a real `timeline-pipeline serve` process starts the loopback
listener beside the receiver, never on the public port, and a bad port disables only it."""

from __future__ import annotations

import json
import secrets
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from timeline_pipeline.cli.main import cli
from timeline_pipeline.db.engine import make_engine
from timeline_pipeline.db.migrate import upgrade
from timeline_pipeline_tests.faults.support_serve import ServeProcess
from timeline_pipeline_tests.maintenance.support import seed_evidence
from timeline_pipeline_tests.support.processes import free_port

LIMITS = [
    "--batch-size",
    "10",
    "--delay-ms",
    "1",
    "--lock-timeout-ms",
    "100",
    "--statement-timeout-ms",
    "1000",
]


@pytest.mark.slow
def test_serve_runs_the_listener_on_loopback_only_and_a_bad_port_disables_only_it(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'timeline.db'}"
    engine = make_engine(url)
    upgrade(engine)
    seed_evidence(engine, 15)
    engine.dispose()
    port = free_port()
    runtime = {
        "TIMELINE_DATABASE_URL": url,
        "LARK_VERIFICATION_TOKEN": secrets.token_urlsafe(16),
        "MAINTENANCE_PORT": str(port),
    }
    with ServeProcess(runtime, tmp_path).start() as serve:
        runner = CliRunner()
        created = runner.invoke(
            cli,
            [
                "maintenance",
                "create",
                "--type",
                "content_hash_backfill",
                "--idempotency-key",
                "k",
                "--apply",
                "--parameters",
                json.dumps({"workspace_id": "inc-1"}),
                *LIMITS,
                "--port",
                str(port),
            ],
        )
        assert created.exit_code == 0, created.stderr
        job = json.loads(created.stdout.splitlines()[-1])
        ran = runner.invoke(
            cli,
            [
                "maintenance",
                "run",
                "--job",
                job["id"],
                "--max-batches",
                "20",
                "--max-seconds",
                "30",
                "--port",
                str(port),
            ],
        )
        assert ran.exit_code == 0, ran.stderr
        public = httpx.get(f"{serve.base_url}/maintenance/jobs/{job['id']}", trust_env=False)
        assert public.status_code == 404  # never on the public router
        assert 'timeline_maintenance_advances_total{job_type="content_hash_backfill"' in (
            serve.metrics()
        )

    runtime["MAINTENANCE_PORT"] = "not-a-port"
    workdir = tmp_path / "bad"
    workdir.mkdir()
    with ServeProcess(runtime, workdir).start() as serve:
        assert serve.health_status() == 200
    assert "maintenance.listener_disabled" in serve.log_path.read_text()
