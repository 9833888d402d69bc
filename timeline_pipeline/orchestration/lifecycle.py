"""Dagster: the data lifecycle assets, their checks and their daily schedule (docs/lifecycle.md).

* `lifecycle_dry_run` materializes what a purge would do now: per descriptor, rows eligible,
  held, purgeable, blocked, and the oldest cursor (read-only).
* `lifecycle_purge` runs the engine over every generic descriptor, then removes the Dagster
  window partitions whose window states it purged, with their finished runs, so Dagster's own
  data follows the retention. Metadata: scanned, held, archived, purged, redacted, batches,
  duration, failures, per descriptor. Checks: `held_rows_kept` fails (ERROR) when a row held
  before the purge is gone after it; `archive_manifest_verifies` fails when the run's manifest
  does not verify.
* `lifecycle_daily_schedule` materializes both every day at 03:30 UTC; it is shipped stopped
  (docs/lifecycle.md).
* `lifecycle_partitions_sensor` forgets, in Dagster, the window partitions any purge retired
  (CLI or Dagster: the keys are written in the purge's own transaction), and marks them done.
* `lifecycle_hold_released_sensor` requests a purge run when a legal hold is released, so the
  rows and the recalled content it kept go without waiting for the next schedule tick.

No `from __future__ import annotations`: Dagster reads the annotations of assets at definition
time.
"""

import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import dagster as dg

from timeline_pipeline.db.engine import connection, transaction
from timeline_pipeline.domain.errors import Refused
from timeline_pipeline.lifecycle.archive import LocalDirectoryArchive, verify_manifest
from timeline_pipeline.lifecycle.dry_run import DryRunReport, dry_run, read_only
from timeline_pipeline.lifecycle.engine import PurgeEngine, RunOutcome
from timeline_pipeline.lifecycle.errors import ArchiveVerifyFailed
from timeline_pipeline.lifecycle.registry import Registry, configured_defaults, load_registry
from timeline_pipeline.observability.metrics import LifecycleMetrics
from timeline_pipeline.orchestration.resources import DatabaseResource
from timeline_pipeline.orchestration.windows import WINDOW_PARTITIONS
from timeline_pipeline.settings import load_settings
from timeline_pipeline.store import legal_holds, lifecycle_runs, retired_partitions

DRY_RUN_KEY = dg.AssetKey("lifecycle_dry_run")
PURGE_KEY = dg.AssetKey("lifecycle_purge")
LIFECYCLE_JOB = "lifecycle_job"
LIFECYCLE_SCHEDULE = "lifecycle_daily_schedule"
LIFECYCLE_CRON = "30 3 * * *"
PARTITIONS_SENSOR = "lifecycle_partitions_sensor"
HOLD_RELEASED_SENSOR = "lifecycle_hold_released_sensor"
FORGET_BATCH = 500
HELD_CHECK = "held_rows_kept"
MANIFEST_CHECK = "archive_manifest_verifies"
_FINISHED = [dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED]

METRICS = LifecycleMetrics()
"""The process's retention cleanup counters (docs/metrics.md)."""


class LifecycleConfig(dg.Config):
    archive_dir: str | None = None
    """Archive purged rows of archivable tables here first; none: no archive (the default)."""
    batch_limit: int | None = None
    """Rows per batch, at most each descriptor's own limit."""


def _dry_run_table(report: DryRunReport) -> dg.TableMetadataValue:
    return dg.MetadataValue.table(
        [
            dg.TableRecord(
                {
                    "descriptor": d.descriptor,
                    "retention_days": d.retention_days,
                    "eligible": d.eligible,
                    "held": d.held,
                    "purgeable": d.purgeable,
                    "blocked": d.blocked,
                }
            )
            for d in report.descriptors
        ],
        schema=dg.TableSchema(
            columns=[
                dg.TableColumn("descriptor", "string"),
                dg.TableColumn("retention_days", "int"),
                dg.TableColumn("eligible", "int"),
                dg.TableColumn("held", "int"),
                dg.TableColumn("purgeable", "int"),
                dg.TableColumn("blocked", "int", description="kept by live children"),
            ]
        ),
    )


def _registry() -> Registry:
    """The registry with the defaults the settings give (`interactionRetention`)."""
    return load_registry(default_days=configured_defaults(load_settings().timeline))


def _report(database: DatabaseResource, as_of: datetime) -> DryRunReport:
    with read_only(database.engine) as conn:
        return dry_run(conn, _registry(), as_of=as_of)


def _held(report: DryRunReport) -> dict[tuple[str, str | None], int]:
    return {
        (d.descriptor, w.workspace): w.held
        for d in report.descriptors
        for w in d.workspaces
        if w.held
    }


@dg.asset(
    key=DRY_RUN_KEY,
    group_name="lifecycle",
    description="What a purge would do now, per descriptor (read-only; holds first).",
)
def lifecycle_dry_run(
    context: dg.AssetExecutionContext, database: DatabaseResource
) -> dg.MaterializeResult:  # type: ignore[type-arg]
    started = time.monotonic()
    report = _report(database, datetime.now(UTC))
    return dg.MaterializeResult(
        metadata={
            "as_of": report.as_of,
            "eligible": sum(d.eligible for d in report.descriptors),
            "held": sum(d.held for d in report.descriptors),
            "purgeable": sum(d.purgeable for d in report.descriptors),
            "blocked": sum(d.blocked for d in report.descriptors),
            "duration_seconds": dg.MetadataValue.float(round(time.monotonic() - started, 3)),
            "per_descriptor": _dry_run_table(report),
        }
    )


def forget_window_partitions(instance: dg.DagsterInstance, keys: Sequence[str]) -> int:
    """Remove purged windows' partitions and their finished runs; the number removed."""
    if not keys:
        return 0
    existing = instance.get_existing_dynamic_partitions(WINDOW_PARTITIONS, list(keys))
    for key in sorted(existing):
        for record in instance.get_run_records(
            dg.RunsFilter(tags={"dagster/partition": key}, statuses=_FINISHED)
        ):
            instance.delete_run(record.dagster_run.run_id)
        instance.delete_dynamic_partition(WINDOW_PARTITIONS, key)
    return len(existing)


def forget_retired(instance: dg.DagsterInstance, database: DatabaseResource) -> int:
    """Forget every pending retired partition (oldest first, in batches) and mark it done;
    idempotent, so a tick that dies half-way is repeated by the next. The number removed."""
    removed = 0
    while True:
        with connection(database.engine) as conn:
            keys = retired_partitions.pending(conn, FORGET_BATCH)
        if not keys:
            return removed
        removed += forget_window_partitions(instance, keys)
        with transaction(database.engine) as conn:
            retired_partitions.mark_done(conn, keys, now=datetime.now(UTC))
        if len(keys) < FORGET_BATCH:
            return removed


def _outcome_table(outcome: RunOutcome) -> dg.TableMetadataValue:
    names = ("scanned", "held", "archived", "purged", "redacted", "batches")
    return dg.MetadataValue.table(
        [
            dg.TableRecord(
                {
                    "descriptor": d.descriptor,
                    **{n: int(getattr(d, n)) for n in names},
                    "duration_seconds": d.duration_seconds,
                    "skipped": d.skipped or "",
                }
            )
            for d in outcome.descriptors
        ],
        schema=dg.TableSchema(
            columns=[
                dg.TableColumn("descriptor", "string"),
                *(dg.TableColumn(n, "int") for n in names),
                dg.TableColumn("duration_seconds", "float"),
                dg.TableColumn("skipped", "string"),
            ]
        ),
    )


def held_rows_check(
    before: Mapping[tuple[str, str | None], int], after: Mapping[tuple[str, str | None], int]
) -> dg.AssetCheckResult:
    """Every row held before the purge is still there (a held row gone fails, ERROR)."""
    lost = {
        f"{key}@{ws}": n - after.get((key, ws), 0)
        for (key, ws), n in before.items()
        if after.get((key, ws), 0) < n
    }
    return dg.AssetCheckResult(
        check_name=HELD_CHECK,
        asset_key=PURGE_KEY,
        passed=not lost,
        severity=dg.AssetCheckSeverity.ERROR,
        description="held rows kept" if not lost else f"held rows gone: {lost}",
        metadata={"held_before": sum(before.values()), "held_after": sum(after.values())},
    )


def manifest_check(manifest: str | None) -> dg.AssetCheckResult:
    if manifest is None:
        return dg.AssetCheckResult(
            check_name=MANIFEST_CHECK,
            asset_key=PURGE_KEY,
            passed=True,
            description="no archive in this run",
        )
    try:
        checked = verify_manifest(Path(manifest))
    except ArchiveVerifyFailed as exc:
        return dg.AssetCheckResult(
            check_name=MANIFEST_CHECK,
            asset_key=PURGE_KEY,
            passed=False,
            severity=dg.AssetCheckSeverity.ERROR,
            description=str(exc),
        )
    return dg.AssetCheckResult(
        check_name=MANIFEST_CHECK,
        asset_key=PURGE_KEY,
        passed=True,
        metadata={"manifest": manifest, "rows": checked.total_rows},
    )


@dg.asset(
    key=PURGE_KEY,
    group_name="lifecycle",
    deps=[DRY_RUN_KEY],
    check_specs=[
        dg.AssetCheckSpec(HELD_CHECK, asset=PURGE_KEY, description="No held row is gone."),
        dg.AssetCheckSpec(
            MANIFEST_CHECK, asset=PURGE_KEY, description="The run's archive manifest verifies."
        ),
    ],
    description=(
        "Archive (when configured) and purge aged-out rows in bounded batches, holds first; "
        "then retire the purged windows' Dagster partitions and their old runs."
    ),
)
def lifecycle_purge(
    context: dg.AssetExecutionContext, config: LifecycleConfig, database: DatabaseResource
) -> dg.MaterializeResult:  # type: ignore[type-arg]
    as_of = datetime.now(UTC)
    before = _held(_report(database, as_of))
    engine = PurgeEngine(
        database.engine,
        _registry(),
        archive=LocalDirectoryArchive(Path(config.archive_dir)) if config.archive_dir else None,
        batch_limit=config.batch_limit,
        metrics=METRICS,
    )
    try:
        outcome = engine.run(as_of=as_of)
    except Refused as exc:
        context.log.error("lifecycle purge failed: %s (%s)", exc.code, exc)
        raise
    after = _held(_report(database, as_of))
    forgotten = forget_retired(context.instance, database)
    with connection(database.engine) as conn:
        failures = lifecycle_runs.failed_since(conn, as_of - timedelta(days=1))
    return dg.MaterializeResult(
        metadata={
            "run_id": outcome.run_id,
            "as_of": outcome.as_of,
            "scanned": outcome.total("scanned"),
            "held": outcome.total("held"),
            "archived": outcome.total("archived"),
            "purged": outcome.total("purged"),
            "redacted": outcome.total("redacted"),
            "batches": outcome.total("batches"),
            "failures": failures,
            "stale_runs_failed": len(outcome.stale_runs_failed),
            "duration_seconds": dg.MetadataValue.float(outcome.duration_seconds),
            "window_partitions_removed": forgotten,
            "manifest": outcome.manifest or "none",
            "per_descriptor": _outcome_table(outcome),
        },
        check_results=[held_rows_check(before, after), manifest_check(outcome.manifest)],
    )


lifecycle_job = dg.define_asset_job(
    LIFECYCLE_JOB,
    executor_def=dg.in_process_executor,
    selection=dg.AssetSelection.assets(DRY_RUN_KEY, PURGE_KEY),
    description="Dry-run, then archive and purge aged-out rows (holds first).",
)


@dg.schedule(
    name=LIFECYCLE_SCHEDULE,
    cron_schedule=LIFECYCLE_CRON,
    job=lifecycle_job,
    execution_timezone="UTC",
    default_status=dg.DefaultScheduleStatus.STOPPED,
    description="The daily retention run; start it once the retention table is approved.",
)
def lifecycle_daily_schedule(context: dg.ScheduleEvaluationContext) -> dg.RunRequest:
    return dg.RunRequest()


@dg.sensor(
    name=PARTITIONS_SENSOR,
    minimum_interval_seconds=60,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Forget the window partitions a purge retired (CLI or Dagster), idempotently.",
)
def lifecycle_partitions_sensor(
    context: dg.SensorEvaluationContext, database: DatabaseResource
) -> dg.SkipReason:
    removed = forget_retired(context.instance, database)
    return dg.SkipReason(f"forgot {removed} retired window partition(s)")


@dg.sensor(
    name=HOLD_RELEASED_SENSOR,
    job=lifecycle_job,
    minimum_interval_seconds=60,
    default_status=dg.DefaultSensorStatus.STOPPED,
    description="Request a purge run when a legal hold is released (start with the schedule).",
)
def lifecycle_hold_released_sensor(
    context: dg.SensorEvaluationContext, database: DatabaseResource
) -> dg.SensorResult:
    with connection(database.engine) as conn:
        latest = legal_holds.last_released_at(conn)
    stamp = latest.isoformat() if latest is not None else ""
    if not stamp or stamp == context.cursor:
        return dg.SensorResult(skip_reason=dg.SkipReason("no hold released since the last run"))
    if context.cursor is None:
        # First tick: remember where releases stand; an old release asks for nothing now.
        return dg.SensorResult(cursor=stamp, skip_reason=dg.SkipReason("cursor set"))
    return dg.SensorResult(
        run_requests=[dg.RunRequest(run_key=f"hold-released-{stamp}")], cursor=stamp
    )


def lifecycle_defs() -> dg.Definitions:
    return dg.Definitions(
        assets=[lifecycle_dry_run, lifecycle_purge],
        jobs=[lifecycle_job],
        schedules=[lifecycle_daily_schedule],
        sensors=[lifecycle_partitions_sensor, lifecycle_hold_released_sensor],
    )
