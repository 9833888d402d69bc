"""The driver and its command line: `timeline-pipeline maintenance ...` against a real listener,
its exit codes (0 completed, 2 budget ran out, 1 everything else), the job JSON after each
advance, and an ambiguous advance retried with its original revision."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator, Mapping
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

import pytest
from click.testing import CliRunner, Result
from sqlalchemy import Engine

from timeline_pipeline.cli.main import cli
from timeline_pipeline.maintenance.driver import Budget, Driver, Reply, TransportError
from timeline_pipeline.maintenance.transports import ServiceTransport
from timeline_pipeline_tests.maintenance.conftest import Running
from timeline_pipeline_tests.maintenance.support import (
    allow_updates,
    fail_updates_of,
    seed_evidence,
    service,
    stale_hashes,
    stored,
)

LIMITS = [
    "--batch-size",
    "10",
    "--delay-ms",
    "1",
    "--lock-timeout-ms",
    "200",
    "--statement-timeout-ms",
    "2000",
]
WS = json.dumps({"workspace_id": "inc-1"})


def _cli(port: int, *args: str) -> Result:
    return CliRunner().invoke(cli, ["maintenance", *args, "--port", str(port)])


def _jobs(result: Result) -> list[dict[str, Any]]:
    return [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]


def _create(port: int, key: str = "k-1", *extra: str) -> dict[str, Any]:
    result = _cli(
        port,
        "create",
        "--type",
        "content_hash_backfill",
        "--idempotency-key",
        key,
        "--parameters",
        WS,
        *LIMITS,
        *extra,
    )
    assert result.exit_code == 0, result.stderr
    (job,) = _jobs(result)
    return job


def _run(port: int, job_id: str, *extra: str) -> Result:
    return _cli(port, "run", "--job", job_id, "--max-seconds", "30", *extra)


def test_run_exits_0_once_the_job_completes_printing_the_job_after_each_advance(
    lite_running: Running, lite_engine: Engine
) -> None:
    seed_evidence(lite_engine, 25)
    job = _create(lite_running.port, "k-1", "--apply")
    result = _run(lite_running.port, job["id"], "--max-batches", "100")
    assert result.exit_code == 0, result.stderr
    printed = _jobs(result)
    assert printed[0]["revision"] == job["revision"]  # the job as found, then each advance
    assert [p["revision"] for p in printed[1:]] == list(range(2, 2 + len(printed) - 1))
    assert printed[-1]["status"] == "completed" and printed[-1]["batches"] == 6
    assert {"id", "status", "revision", "progress"} <= set(printed[-1])
    assert stale_hashes(lite_engine) == 0


def test_run_exits_2_when_a_budget_runs_out_and_a_later_run_continues(
    lite_running: Running, lite_engine: Engine
) -> None:
    seed_evidence(lite_engine, 25)
    job = _create(lite_running.port)
    canary = _run(lite_running.port, job["id"], "--max-batches", "1")
    assert canary.exit_code == 2
    assert "batch budget" in canary.stderr
    assert _jobs(canary)[-1]["batches"] == 1
    rest = _run(lite_running.port, job["id"], "--max-batches", "10")
    assert rest.exit_code == 0
    assert _jobs(rest)[-1]["result"] == {"v": 1, "scanned": 25, "would_update": 25}


def test_run_exits_1_for_a_paused_job_unless_told_to_resume_it(
    lite_running: Running, lite_engine: Engine
) -> None:
    seed_evidence(lite_engine, 5)
    job = _create(lite_running.port)
    paused = _cli(lite_running.port, "pause", "--job", job["id"], "--revision", "1")
    assert paused.exit_code == 0 and _jobs(paused)[0]["status"] == "paused"
    refused = _run(lite_running.port, job["id"], "--max-batches", "10")
    assert refused.exit_code == 1 and "--resume" in refused.stderr
    assert stored(lite_engine, job["id"]).status == "paused"
    resumed = _run(lite_running.port, job["id"], "--max-batches", "10", "--resume")
    assert resumed.exit_code == 0


def test_run_exits_1_for_a_cancelled_or_unknown_job_and_without_a_listener(
    lite_running: Running, lite_engine: Engine
) -> None:
    seed_evidence(lite_engine, 5)
    job = _create(lite_running.port)
    cancel = _cli(lite_running.port, "cancel", "--job", job["id"], "--revision", "1")
    assert cancel.exit_code == 0
    assert _run(lite_running.port, job["id"], "--max-batches", "5").exit_code == 1
    unknown = _run(lite_running.port, "00000000-0000-0000-0000-000000000000", "--max-batches", "1")
    assert unknown.exit_code == 1 and "job_not_found" in unknown.stderr
    free = socket.socket()
    free.bind(("127.0.0.1", 0))
    port = free.getsockname()[1]
    free.close()
    nobody = _cli(port, "status", "--job", job["id"])
    assert nobody.exit_code == 1
    assert nobody.stderr.count("\n") == 1 and "no answer" in nobody.stderr


def test_bad_arguments_exit_1_with_one_line_and_change_nothing(
    lite_running: Running, lite_engine: Engine
) -> None:
    seed_evidence(lite_engine, 5)
    port = lite_running.port
    cases = [
        [
            "create",
            "--type",
            "content_hash_backfill",
            "--idempotency-key",
            "k",
            "--parameters",
            WS,
        ],  # limits are required
        [
            "create",
            "--type",
            "content_hash_backfill",
            "--idempotency-key",
            "k",
            "--parameters",
            "{oops",
            *LIMITS,
        ],
        [
            "create",
            "--type",
            "content_hash_backfill",
            "--idempotency-key",
            "k",
            "--parameters",
            WS,
            *LIMITS[:-1],
            "100",
        ],  # statement timeout below the lock timeout
        [
            "create",
            "--type",
            "content_hash_backfill",
            "--idempotency-key",
            "k",
            "--parameters",
            WS,
            "--batch-size",
            "0",
            *LIMITS[2:],
        ],
        ["create", "--type", "nope", "--idempotency-key", "k", "--parameters", WS, *LIMITS],
        ["run", "--job", "x", "--max-batches", "1", "--max-seconds", "1", "--max-retries", "11"],
        ["pause", "--job", "x"],
    ]
    for args in cases:
        result = _cli(port, *args)
        assert result.exit_code == 1, (args, result.stderr)
        assert result.stderr.count("\n") == 1 and result.stderr.startswith("error:"), args
        assert "Traceback" not in result.stderr
    assert service(lite_engine).engine is lite_engine
    with lite_engine.connect() as conn:
        assert conn.exec_driver_sql("SELECT count(*) FROM maintenance_jobs").scalar() == 0


def test_configure_through_the_cli_keeps_the_cursor(
    lite_running: Running, lite_engine: Engine
) -> None:
    seed_evidence(lite_engine, 25)
    port = lite_running.port
    job = _create(port, "k-1", "--apply")
    _run(port, job["id"], "--max-batches", "1")
    current = stored(lite_engine, job["id"])
    paused = _jobs(_cli(port, "pause", "--job", job["id"], "--revision", str(current.revision)))
    tuned = _cli(
        port,
        "configure",
        "--job",
        job["id"],
        "--revision",
        str(paused[0]["revision"]),
        "--batch-size",
        "3",
        "--delay-ms",
        "2",
        "--lock-timeout-ms",
        "100",
        "--statement-timeout-ms",
        "1000",
    )
    assert tuned.exit_code == 0
    after = _jobs(tuned)[0]
    assert after["checkpoint"] == current.checkpoint and after["limits"]["batch_size"] == 3
    stale = _cli(port, "resume", "--job", job["id"], "--revision", str(current.revision))
    assert stale.exit_code == 1 and "stale_revision" in stale.stderr
    assert stored(lite_engine, job["id"]).status == "paused"


def test_an_injected_sql_error_pauses_the_job_and_run_resumes_it_with_resume(
    running: Running, engine: Engine
) -> None:
    seed_evidence(engine, 25)
    port = running.port
    job = _create(port, "k-1", "--apply")
    fail_updates_of(engine, 15)
    failed = _run(port, job["id"], "--max-batches", "10")
    assert failed.exit_code == 1 and "sql_error" in failed.stderr
    paused = stored(engine, job["id"])
    assert paused.status == "paused" and paused.checkpoint == {"v": 1, "after_id": 10}
    assert paused.error is not None and paused.error["retryable"] is False
    assert stale_hashes(engine) == 15
    allow_updates(engine)
    again = _run(port, job["id"], "--max-batches", "10")
    assert again.exit_code == 1  # still paused: never resumed without being asked
    resumed = _run(port, job["id"], "--max-batches", "10", "--resume")
    assert resumed.exit_code == 0, resumed.stderr
    assert _jobs(resumed)[1]["checkpoint"] == {"v": 1, "after_id": 10}  # resumed, not restarted
    assert stale_hashes(engine) == 0


class _LosesFirstAdvanceAnswer:
    """The real service, but the answer to the first advance is lost after it committed."""

    def __init__(self, inner: ServiceTransport) -> None:
        self.inner = inner
        self.sent: list[tuple[str, int]] = []

    def get(self, job_id: str) -> Reply:
        return self.inner.get(job_id)

    def post(
        self, job_id: str, action: str, body: Mapping[str, Any], *, timeout: float | None = None
    ) -> Reply:
        reply = self.inner.post(job_id, action, body)
        self.sent.append((action, int(body["revision"])))
        if action == "advance" and len(self.sent) == 1:
            raise TransportError("ReadTimeout")
        return reply


def test_an_unanswered_advance_is_retried_with_its_revision_and_never_applied_twice(
    lite_engine: Engine,
) -> None:
    seed_evidence(lite_engine, 25)
    svc = service(lite_engine)
    job, _ = svc.create(
        job_type="content_hash_backfill",
        idempotency_key="k",
        parameters={"workspace_id": "inc-1"},
        limits=_limits(),
    )
    transport = _LosesFirstAdvanceAnswer(ServiceTransport(svc))
    report = Driver(transport, sleep=lambda _s: None).run(job.id, Budget(100, 30))
    assert report.exit_code == 0
    assert transport.sent[:2] == [("advance", 1), ("advance", 1)]  # the same revision again
    final = stored(lite_engine, job.id)
    assert final.batches == 3 and final.progress["scanned"] == 25
    assert report.batches == 2  # the acknowledged one was not counted as a new advance


def _limits() -> Any:
    from timeline_pipeline.maintenance.limits import Limits

    return Limits(10, 1, 200, 2000)


@pytest.fixture
def redirecting_port() -> Iterator[int]:
    class Redirect(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(307)
            self.send_header("Location", "http://192.0.2.2:1/maintenance/jobs/x")
            self.end_headers()

        def log_message(self, *_args: Any) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Redirect)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def test_the_driver_refuses_redirects_and_ignores_proxy_variables(
    redirecting_port: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTTP_PROXY", "http://192.0.2.2:9")
    monkeypatch.setenv("ALL_PROXY", "http://192.0.2.2:9")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    result = _cli(redirecting_port, "status", "--job", "x")
    assert result.exit_code == 1
    assert "redirect" in result.stderr  # reached the loopback server, did not follow it
