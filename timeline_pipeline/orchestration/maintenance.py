"""Dagster: maintenance jobs seen from the UI (docs/maintenance.md; docs/maintenance.md).

Job `maintenance_status_job` shows one maintenance job's status: the run's tags carry its
status, phase, revision and batches, and the op's output metadata holds the job. It never
advances, resumes or changes a job: driving a job goes through the loopback listener, with its
checks, from inside the container (`timeline-pipeline maintenance run`), because anyone who can
open the Dagster UI would otherwise drive (or resume) a destructive job from outside that door.

`drive_job` remains for the window rerun job (`rerun_windows`), which creates and drives its
own `window_rerun` job; it refuses a job of any other processor (they delete or rewrite content).

No `from __future__ import annotations`: Dagster reads the annotations of ops at definition
time.
"""

import json
import time
from typing import Any

import dagster as dg

from timeline_pipeline.domain.errors import Refused
from timeline_pipeline.maintenance.driver import (
    DEFAULT_RETRIES,
    EXIT_BUDGET,
    EXIT_COMPLETED,
    Budget,
    Driver,
    RunReport,
)
from timeline_pipeline.maintenance.processors import default_registry
from timeline_pipeline.maintenance.processors.window_rerun import WindowRerun
from timeline_pipeline.maintenance.service import JobService, job_json
from timeline_pipeline.maintenance.transports import ServiceTransport
from timeline_pipeline.orchestration.resources import DatabaseResource, TimelineSettingsResource
from timeline_pipeline.store.audit import dagster_actor
from timeline_pipeline.synthesis_run.synthesizers import build_synthesizer

MAINTENANCE_STATUS_JOB = "maintenance_status_job"
TAG_PREFIX = "timeline/maintenance_"
TAG_INTERVAL_SECONDS = 1.0


class DriveBudgetConfig(dg.Config):
    max_batches: int = 1000
    """Stop after this many committed batches (the run then succeeds as incomplete)."""
    max_seconds: float = 600.0
    """Stop after this much wall time, requests, delays and retries included."""
    max_retries: int = DEFAULT_RETRIES
    """Retries of a busy or retryably failed batch, with capped exponential backoff (0..10)."""
    resume: bool = False
    """Resume the job first if it is paused (never done without being asked)."""

    def budget(self) -> Budget:
        if self.max_batches < 1 or self.max_seconds <= 0:
            raise dg.Failure(description="max_batches and max_seconds must be positive")
        if not 0 <= self.max_retries <= 10:
            raise dg.Failure(description="max_retries must be between 0 and 10")
        return Budget(self.max_batches, self.max_seconds, self.max_retries, self.resume)


def job_service(database: DatabaseResource, settings: TimelineSettingsResource) -> JobService:
    # A rerun preview runs the synthesizer the window runs use (docs/maintenance.md).
    registry = default_registry(
        settings.timeline, synthesizer=lambda: build_synthesizer(settings.load())
    )
    return JobService(database.engine, registry)


def drive_job(
    context: dg.OpExecutionContext, service: JobService, job_id: str, budget: Budget
) -> dg.Output[dict[str, Any]]:
    """Drive the job within `budget`, its progress on the run's tags; the final job as output
    (with metadata), or a Failure naming why the job stopped. Its transitions are audited as
    the run's (`dagster:<run id>`, docs/design.md "Who did it")."""
    current = service.get(job_id)
    if current.job_type != WindowRerun.type:
        # Only the rerun's own job: a job that deletes or rewrites content (a redaction, a
        # hash backfill) is driven through the loopback listener and its checks, never from
        # the UI (docs/maintenance.md). A rerun's apply only creates window states; the hold
        # gate still refuses it in a held workspace, as it declares what its windows rewrite.
        raise dg.Failure(
            description=f"maintenance job {job_id} is a {current.job_type} job: drive it with "
            "`timeline-pipeline maintenance run` through the loopback listener"
        )
    last_tagged = [0.0]

    def observed(job: dict[str, Any]) -> None:
        now = time.monotonic()
        finished = job["status"] != "ready"
        if finished or now - last_tagged[0] >= TAG_INTERVAL_SECONDS:
            last_tagged[0] = now
            context.instance.add_run_tags(context.run_id, _tags(job))
        context.log.debug(
            "maintenance job %s: %s %s revision %s batches %s",
            job["id"],
            job["status"],
            job["phase"],
            job["revision"],
            job["batches"],
        )

    transport = ServiceTransport(service, actor=dagster_actor(context.run_id))
    report = Driver(transport, on_job=observed).run(job_id, budget)
    if report.job is not None:
        context.instance.add_run_tags(context.run_id, _tags(report.job))
    if report.exit_code not in (EXIT_COMPLETED, EXIT_BUDGET):
        raise dg.Failure(
            description=f"maintenance job {job_id}: {report.reason}",
            metadata=_metadata(report),
        )
    context.log.info(
        "maintenance job %s: %s after %d batch(es)", job_id, report.reason, report.batches
    )
    return dg.Output(report.job or {}, metadata=_metadata(report))


def _tags(job: dict[str, Any]) -> dict[str, str]:
    return {
        f"{TAG_PREFIX}id": str(job["id"]),
        f"{TAG_PREFIX}status": str(job["status"]),
        f"{TAG_PREFIX}phase": str(job["phase"]),
        f"{TAG_PREFIX}revision": str(job["revision"]),
        f"{TAG_PREFIX}batches": str(job["batches"]),
    }


def _metadata(report: RunReport) -> dict[str, Any]:
    job = report.job or {}
    outcome = {EXIT_COMPLETED: "completed", EXIT_BUDGET: "incomplete"}.get(
        report.exit_code, "stopped"
    )
    return {
        "outcome": outcome,
        "reason": report.reason,
        "batches_this_run": report.batches,
        "job_id": str(job.get("id", "")),
        "status": str(job.get("status", "")),
        "revision": int(job.get("revision", 0)),
        "progress": dg.MetadataValue.json(job.get("progress") or {}),
        "result": dg.MetadataValue.json(job.get("result") or {}),
        "error": dg.MetadataValue.json(job.get("error") or {}),
        "job": dg.MetadataValue.json(json.loads(json.dumps(job))),
    }


class MaintenanceStatusConfig(dg.Config):
    job_id: str
    """The maintenance job's id, as `timeline-pipeline maintenance create` printed it."""


@dg.op(description="Show one maintenance job's status (read-only: never advances it).")
def maintenance_status(
    context: dg.OpExecutionContext,
    config: MaintenanceStatusConfig,
    database: DatabaseResource,
    timeline_settings: TimelineSettingsResource,
) -> dg.Output[dict[str, Any]]:
    service = job_service(database, timeline_settings)
    try:
        job = job_json(service.get(config.job_id))
    except Refused as exc:
        raise dg.Failure(description=f"maintenance job {config.job_id}: {exc}") from None
    context.instance.add_run_tags(context.run_id, _tags(job))
    return dg.Output(
        job,
        metadata={
            "job_id": str(job["id"]),
            "status": str(job["status"]),
            "phase": str(job["phase"]),
            "revision": int(job["revision"]),
            "batches": int(job["batches"]),
            "progress": dg.MetadataValue.json(job.get("progress") or {}),
            "result": dg.MetadataValue.json(job.get("result") or {}),
            "error": dg.MetadataValue.json(job.get("error") or {}),
        },
    )


@dg.job(
    name=MAINTENANCE_STATUS_JOB,
    executor_def=dg.in_process_executor,
    description=(
        "Show one maintenance job's status on the run's tags and metadata; jobs are driven "
        "only through the loopback listener (`timeline-pipeline maintenance run`)."
    ),
)
def maintenance_status_job() -> None:
    maintenance_status()


def maintenance_defs() -> dg.Definitions:
    return dg.Definitions(jobs=[maintenance_status_job])
