"""`timeline-pipeline maintenance ...`: the operator's driver of maintenance jobs
(docs/maintenance.md).

A plain HTTP client of the loopback listener: it needs no database credentials or settings,
only the port (`--port`, else MAINTENANCE_PORT). It connects to 127.0.0.1 only, ignores proxy
variables and refuses redirects. Every command prints the job JSON on stdout; `run` prints it
after each advance. Exit codes: 0 done (for `run`: the job is completed), 2 `run`'s budget ran
out, 1 anything else (bad arguments, an API error, a paused or cancelled job, Ctrl-C), always
with one line on stderr.
"""

from __future__ import annotations

import functools
import json
import os
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import click

from timeline_pipeline.cli.output import fail
from timeline_pipeline.maintenance.driver import (
    DEFAULT_RETRIES,
    EXIT_ERROR,
    MAX_RETRIES,
    Budget,
    Driver,
    Reply,
    TransportError,
)
from timeline_pipeline.maintenance.endpoint import ListenerRefused, parse_port
from timeline_pipeline.maintenance.http_client import HttpTransport
from timeline_pipeline.maintenance.limits import BATCH_SIZE_RANGE, DELAY_MS_RANGE, TIMEOUT_MS_MAX


class MaintenanceGroup(click.Group):
    """Usage mistakes exit 1 like every other failure of the driver (2 means "budget ran
    out"), with one line on stderr."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.UsageError as exc:
            fail(exc.format_message())


def _emit(job: dict[str, Any]) -> None:
    click.echo(json.dumps(job, sort_keys=True, separators=(",", ":")))


def _progress(job: dict[str, Any]) -> None:
    """A one-line progress display on stderr, only for a terminal."""
    if not sys.stderr.isatty():
        return
    counts = " ".join(
        f"{key}={value}"
        for key, value in sorted((job.get("progress") or {}).items())
        if key != "v" and isinstance(value, int)
    )
    line = f"{job['status']} {job['phase']} rev {job['revision']} batches {job['batches']} {counts}"
    click.echo("\r\x1b[2K" + line[:200], err=True, nl=False)


def _port(port: int | None) -> int:
    if port is not None:
        return port
    try:
        configured = parse_port(os.environ.get("MAINTENANCE_PORT"))
    except ListenerRefused as exc:
        fail(str(exc))
    if configured is None:
        fail("give --port or set MAINTENANCE_PORT to the listener's port")
    return configured


def _answer(reply: Reply, emit: Callable[[dict[str, Any]], None] = _emit) -> dict[str, Any]:
    job = reply.job
    if reply.status in (200, 201) and job is not None:
        emit(job)
        return job
    if job is not None:
        _emit(job)
    fail(f"{reply.message} (HTTP {reply.status}, {reply.code or 'error'})")


def _call(
    port: int | None,
    request: Callable[[HttpTransport], Reply],
    emit: Callable[[dict[str, Any]], None] = _emit,
) -> dict[str, Any]:
    transport = HttpTransport(_port(port))
    try:
        return _answer(request(transport), emit)
    except TransportError as exc:
        fail(
            f"no answer from the maintenance listener on 127.0.0.1 ({exc}); check that serve "
            "runs with MAINTENANCE_PORT, and read `status` before retrying a mutation"
        )
    finally:
        transport.close()


port_option = click.option(
    "--port",
    type=click.IntRange(1, 65535),
    help="Listener port on 127.0.0.1 (default: MAINTENANCE_PORT).",
)
job_option = click.option("--job", "job_id", required=True, help="The job id.")
revision_option = click.option(
    "--revision", type=click.IntRange(min=1), required=True, help="The job's current revision."
)


@dataclass(frozen=True, slots=True)
class _Limits:
    """A job's batch limits as given; `options()` checks them when the body is built."""

    batch_size: int
    delay_ms: int
    lock_timeout_ms: int
    statement_timeout_ms: int

    def options(self) -> dict[str, int]:
        if self.lock_timeout_ms > self.statement_timeout_ms:
            fail("--lock-timeout-ms must not exceed --statement-timeout-ms")
        return asdict(self)


def limit_options(func: Callable[..., None]) -> Callable[..., None]:
    """The four batch limits of `create` and `configure`, handed to the command as `limits`."""

    @functools.wraps(func)
    def command(
        *,
        batch_size: int,
        delay_ms: int,
        lock_timeout_ms: int,
        statement_timeout_ms: int,
        **rest: Any,
    ) -> None:
        func(limits=_Limits(batch_size, delay_ms, lock_timeout_ms, statement_timeout_ms), **rest)

    low, high = BATCH_SIZE_RANGE
    wrapped: Callable[..., None] = command
    wrapped = click.option(
        "--statement-timeout-ms",
        type=click.IntRange(1, TIMEOUT_MS_MAX),
        required=True,
        help=f"SQL statement timeout of a batch (>= lock timeout, <= {TIMEOUT_MS_MAX}).",
    )(wrapped)
    wrapped = click.option(
        "--lock-timeout-ms",
        type=click.IntRange(1, TIMEOUT_MS_MAX),
        required=True,
        help="SQL lock timeout of a batch (1 .. statement timeout).",
    )(wrapped)
    wrapped = click.option(
        "--delay-ms",
        type=click.IntRange(*DELAY_MS_RANGE),
        required=True,
        help=f"Pause after each batch ({DELAY_MS_RANGE[0]} .. {DELAY_MS_RANGE[1]} ms).",
    )(wrapped)
    return click.option(
        "--batch-size",
        type=click.IntRange(low, high),
        required=True,
        help=f"Rows (or windows) per batch ({low} .. {high}).",
    )(wrapped)


@click.group("maintenance", cls=MaintenanceGroup)
def maintenance_group() -> None:
    """Operator-driven maintenance jobs, through the loopback listener of `serve`."""


@maintenance_group.command("create")
@click.option(
    "--type",
    "job_type",
    required=True,
    help="Processor: window_rerun, evidence_redaction or content_hash_backfill.",
)
@click.option("--idempotency-key", required=True, help="Same key and input: the same job.")
@click.option("--apply", is_flag=True, help="Change data (default: a dry-run that only counts).")
@click.option(
    "--parameters", default="{}", show_default=True, help='JSON, e.g. \'{"workspace_id":"W"}\'.'
)
@limit_options
@port_option
def create(
    job_type: str,
    idempotency_key: str,
    apply: bool,
    parameters: str,
    limits: _Limits,
    port: int | None,
) -> None:
    """Create a job (a dry-run unless --apply); prints the job JSON."""
    try:
        parsed = json.loads(parameters)
    except json.JSONDecodeError:
        fail("--parameters is not valid JSON")
    if not isinstance(parsed, dict):
        fail("--parameters must be a JSON object")
    body = {
        "type": job_type,
        "idempotency_key": idempotency_key,
        "apply": apply,
        "parameters": parsed,
        "options": limits.options(),
    }
    _call(port, lambda transport: transport.create(body))


@maintenance_group.command("status")
@job_option
@click.option(
    "--markdown",
    is_flag=True,
    help="Print a completed rerun preview's report as Markdown tables instead of the JSON.",
)
@port_option
def status(job_id: str, markdown: bool, port: int | None) -> None:
    """Print the job JSON (a rerun preview's report is its `result.preview`)."""
    if not markdown:
        _call(port, lambda transport: transport.get(job_id))
        return
    job = _call(port, lambda transport: transport.get(job_id), emit=lambda _job: None)
    report = (job.get("result") or {}).get("preview")
    if not isinstance(report, dict):
        fail(f"job {job_id} has no preview report (a completed window_rerun dry-run has one)")
    from timeline_pipeline.maintenance.preview_report import markdown as render

    click.echo(render(report), nl=False)


def _action(action: str) -> Callable[[str, int, int | None], None]:
    def command(job_id: str, revision: int, port: int | None) -> None:
        _call(port, lambda transport: transport.post(job_id, action, {"revision": revision}))

    command.__doc__ = {
        "pause": "Pause a ready job (it keeps its cursor).",
        "resume": "Resume a paused job (then drive it with `run`).",
        "cancel": "Cancel a job for good; committed changes stay.",
    }[action]
    return command


for _name in ("pause", "resume", "cancel"):
    maintenance_group.command(_name)(job_option(revision_option(port_option(_action(_name)))))


@maintenance_group.command("configure")
@job_option
@revision_option
@limit_options
@port_option
def configure(
    job_id: str,
    revision: int,
    limits: _Limits,
    port: int | None,
) -> None:
    """Replace a job's limits; its cursor and parameters stay."""
    body = {
        "revision": revision,
        "options": limits.options(),
    }
    _call(port, lambda transport: transport.post(job_id, "configure", body))


@maintenance_group.command("run")
@job_option
@click.option("--max-batches", type=click.IntRange(min=1), required=True, help="Batch budget.")
@click.option(
    "--max-seconds",
    type=click.FloatRange(min=0, min_open=True),
    required=True,
    help="Wall-time budget, requests, delays and retries included.",
)
@click.option("--resume", is_flag=True, help="Resume the job first if it is paused.")
@click.option(
    "--max-retries",
    type=click.IntRange(0, MAX_RETRIES),
    default=DEFAULT_RETRIES,
    show_default=True,
    help="Retries of a busy, unanswered or retryably failed batch (capped exponential backoff).",
)
@port_option
def run(
    job_id: str,
    max_batches: int,
    max_seconds: float,
    resume: bool,
    max_retries: int,
    port: int | None,
) -> None:
    """Advance the job until it completes (exit 0) or a budget runs out (exit 2)."""
    transport = HttpTransport(_port(port))

    def observed(job: dict[str, Any]) -> None:
        _emit(job)
        _progress(job)

    driver = Driver(transport, on_job=observed)
    try:
        report = driver.run(job_id, Budget(max_batches, max_seconds, max_retries, resume))
    except KeyboardInterrupt:
        fail("interrupted: no request is in flight any more; read `status` before continuing")
    finally:
        transport.close()
    if sys.stderr.isatty():
        click.echo("", err=True)
    if report.exit_code:
        click.echo(
            f"{'error' if report.exit_code == EXIT_ERROR else 'incomplete'}: {report.reason}",
            err=True,
        )
    sys.exit(report.exit_code)
