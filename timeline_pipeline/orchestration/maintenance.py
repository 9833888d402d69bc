"""Dagster: drive one maintenance job from the launchpad (README, "Maintenance jobs").

For operators who live in the UI: job `drive_maintenance_job` advances an existing maintenance
job with the same budgets and rules as `timeline-pipeline maintenance run` (the driver loop of
`maintenance.driver`, here talking to the job service in the run's process rather than over
the loopback listener). Progress is run metadata: the run's tags follow the job's status,
phase, revision and batches while it runs, and the op's output metadata holds the final job.
A budget that runs out ends the run successfully with `outcome: incomplete` (launch again to
continue); a paused, cancelled or failing job fails the run with the reason.

No `from __future__ import annotations`: Dagster reads the annotations of ops at definition
time.
"""

import json
import time
from typing import Any

import dagster as dg

from timeline_pipeline.maintenance.driver import (
    DEFAULT_RETRIES,
    EXIT_BUDGET,
    EXIT_COMPLETED,
    Budget,
    Driver,
    RunReport,
)
from timeline_pipeline.maintenance.processors import default_registry
from timeline_pipeline.maintenance.service import JobService
from timeline_pipeline.maintenance.transports import ServiceTransport
from timeline_pipeline.orchestration.resources import DatabaseResource, TimelineSettingsResource
from timeline_pipeline.synthesis_run.synthesizers import build_synthesizer

MAINTENANCE_JOB = "drive_maintenance_job"
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


class DriveMaintenanceConfig(DriveBudgetConfig):
    job_id: str
    """The maintenance job's id, as `timeline-pipeline maintenance create` printed it."""


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
    (with metadata), or a Failure naming why the job stopped."""
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

    report = Driver(ServiceTransport(service), on_job=observed).run(job_id, budget)
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


@dg.op(description="Advance one maintenance job within a batch and time budget.")
def drive_maintenance(
    context: dg.OpExecutionContext,
    config: DriveMaintenanceConfig,
    database: DatabaseResource,
    timeline_settings: TimelineSettingsResource,
) -> dg.Output[dict[str, Any]]:
    return drive_job(
        context, job_service(database, timeline_settings), config.job_id, config.budget()
    )


@dg.job(
    name=MAINTENANCE_JOB,
    executor_def=dg.in_process_executor,
    description=(
        "Drive one maintenance job (created with `timeline-pipeline maintenance create`) with "
        "batch and time budgets; its progress is on the run's tags and output metadata."
    ),
)
def drive_maintenance_job() -> None:
    drive_maintenance()


def maintenance_defs() -> dg.Definitions:
    return dg.Definitions(jobs=[drive_maintenance_job])
