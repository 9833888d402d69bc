"""Dagster: the pipeline health asset, its checks and its schedule (docs/design.md §9, §12).

* `timeline_pipeline_health` measures the pipeline from the product database
  (`windows.health`): windows by status, the backlog, the oldest uncovered evidence, stale
  `processing` windows, whole-window retries, failed windows, collection and summary lag. The
  figures are its materialization metadata (numbers, so the UI plots them over time) with a
  table per workspace.
* Its asset checks are the alerts (`windows.health_checks`): `window_backlog_within_limit`
  and `oldest_uncovered_age_within_limit` fail with severity ERROR past `backlogAlertWindows`
  and `backlogAlertOldestUncoveredAge`; `no_stale_processing_windows` and `no_failed_windows`
  warn. The UI shows their history; Dagster+ alert policies can notify on them.
* `timeline_pipeline_health_schedule` materializes it every five minutes, skipped while the
  Lark timeline is disabled or while the previous run is still going.

No `from __future__ import annotations`: Dagster reads the annotations of assets at definition
time.
"""

from datetime import UTC, datetime
from typing import Any

import dagster as dg

from timeline_pipeline.orchestration.resources import DatabaseResource, TimelineSettingsResource
from timeline_pipeline.review_cards.card_figures import review_card_figures
from timeline_pipeline.windows.health import measure_health
from timeline_pipeline.windows.health_checks import (
    BACKLOG_CHECK,
    FAILED_CHECK,
    STALE_CHECK,
    UNCOVERED_CHECK,
    CheckOutcome,
    HealthLimits,
    Severity,
    evaluate,
)
from timeline_pipeline.windows.health_model import PipelineHealth, WorkspaceHealth

HEALTH_KEY = dg.AssetKey("timeline_pipeline_health")
HEALTH_JOB = "timeline_pipeline_health_job"
HEALTH_SCHEDULE = "timeline_pipeline_health_schedule"
HEALTH_CRON = "*/5 * * * *"
MAX_WORKSPACE_ROWS = 50
"""Workspaces listed in the per-workspace table, most backlog first; totals count them all."""

_CHECK_DESCRIPTIONS = {
    BACKLOG_CHECK: "Pending plus processing windows at most backlogAlertWindows.",
    UNCOVERED_CHECK: (
        "The oldest eligible evidence not covered by a finished window is at most "
        "backlogAlertOldestUncoveredAge old."
    ),
    STALE_CHECK: "No window processing longer than synthesisStaleTimeout.",
    FAILED_CHECK: "No failed window in the horizon (ingestion lookback).",
}
_SEVERITY = {Severity.ERROR: dg.AssetCheckSeverity.ERROR, Severity.WARN: dg.AssetCheckSeverity.WARN}
_IN_FLIGHT = [
    dg.DagsterRunStatus.QUEUED,
    dg.DagsterRunStatus.NOT_STARTED,
    dg.DagsterRunStatus.STARTING,
    dg.DagsterRunStatus.STARTED,
]

_WORKSPACE_COLUMNS = [
    dg.TableColumn("workspace_id", "string"),
    dg.TableColumn("backlog", "int", description="pending + processing"),
    dg.TableColumn("pending", "int"),
    dg.TableColumn("processing", "int"),
    dg.TableColumn("stale", "int", description="processing past synthesisStaleTimeout"),
    dg.TableColumn("failed", "int"),
    dg.TableColumn("failed_exhausted", "int", description="failed with no attempts left"),
    dg.TableColumn("completed", "int"),
    dg.TableColumn("ignored", "int"),
    dg.TableColumn("window_retries", "int"),
    dg.TableColumn("oldest_uncovered_age_seconds", "float"),
    dg.TableColumn("collection_lag_seconds", "float"),
]


def _seconds(health: PipelineHealth, moment: datetime | None) -> float | None:
    if moment is None:
        return None
    return round(max(0.0, (health.measured_at - moment).total_seconds()), 3)


def _workspace_record(health: PipelineHealth, workspace: WorkspaceHealth) -> dg.TableRecord:
    windows = workspace.windows
    return dg.TableRecord(
        {
            "workspace_id": workspace.workspace_id,
            "backlog": workspace.backlog,
            "pending": windows.get("pending", 0),
            "processing": windows.get("processing", 0),
            "stale": workspace.stale_processing,
            "failed": windows.get("failed", 0),
            "failed_exhausted": workspace.failed_exhausted,
            "completed": windows.get("completed", 0),
            "ignored": windows.get("ignored", 0),
            "window_retries": workspace.window_retries,
            "oldest_uncovered_age_seconds": _seconds(health, workspace.oldest_uncovered_at),
            "collection_lag_seconds": _seconds(health, workspace.oldest_collected_until),
        }
    )


def _workspace_table(health: PipelineHealth) -> dg.TableMetadataValue:
    def urgency(workspace: WorkspaceHealth) -> tuple[int, int, float, str]:
        waited = _seconds(health, workspace.oldest_uncovered_at) or 0.0
        return (-workspace.backlog, -workspace.failed_exhausted, -waited, workspace.workspace_id)

    shown = sorted(health.workspaces, key=urgency)[:MAX_WORKSPACE_ROWS]
    return dg.MetadataValue.table(
        [_workspace_record(health, workspace) for workspace in shown],
        schema=dg.TableSchema(columns=_WORKSPACE_COLUMNS),
    )


def health_metadata(health: PipelineHealth) -> dict[str, Any]:
    """The figures as metadata: numbers stay numbers so that the UI plots them over time."""
    by_status = health.windows_by_status
    uncovered = health.oldest_uncovered
    metadata: dict[str, Any] = {f"windows_{status}": count for status, count in by_status.items()}
    metadata.update(
        {
            "windows_by_status": dg.MetadataValue.json(by_status),
            "window_backlog": health.backlog,
            "stale_processing_windows": health.stale_processing,
            "failed_windows": health.failed,
            "failed_windows_exhausted": health.failed_exhausted,
            "retried_windows": health.retried_windows,
            "window_retries": health.window_retries,
            "late_evidence": health.late_evidence,
            "late_evidence_windows": health.late_evidence_windows,
            "oldest_uncovered_evidence_age_seconds": dg.MetadataValue.float(
                _seconds(health, uncovered.at if uncovered else None) or 0.0
            ),
            "oldest_uncovered_evidence_at": uncovered.at.isoformat() if uncovered else "none",
            "oldest_uncovered_workspace_id": uncovered.workspace_id if uncovered else "none",
            "oldest_uncovered_chat_id": uncovered.chat_id if uncovered else "none",
            "chats_followed": health.chats_followed,
            "workspaces": len(health.workspaces),
            "horizon_start": health.horizon_start.isoformat(),
            "per_workspace": _workspace_table(health),
        }
    )
    if health.collection_measured:
        collected = health.oldest_collected
        metadata["collection_lag_seconds"] = dg.MetadataValue.float(
            _seconds(health, collected.at if collected else None) or 0.0
        )
        metadata["chats_never_collected"] = health.chats_never_collected
    if health.summary_measured:
        metadata["summary_lag_seconds"] = dg.MetadataValue.float(
            _seconds(health, health.oldest_summary_pending_since) or 0.0
        )
        metadata["summary_pending_windows"] = health.summary_pending_windows
    return metadata


def _check_result(outcome: CheckOutcome) -> dg.AssetCheckResult:
    metadata = {
        key: dg.MetadataValue.json(value) if isinstance(value, list) else value
        for key, value in outcome.metadata.items()
    }
    return dg.AssetCheckResult(
        check_name=outcome.name,
        asset_key=HEALTH_KEY,
        passed=outcome.passed,
        severity=_SEVERITY[outcome.severity],
        description=outcome.description,
        metadata=metadata,
    )


@dg.asset(
    key=HEALTH_KEY,
    group_name="timeline",
    check_specs=[
        dg.AssetCheckSpec(name, asset=HEALTH_KEY, description=description)
        for name, description in _CHECK_DESCRIPTIONS.items()
    ],
    description=(
        "Pipeline health (docs/design.md §9, §12): windows by status, backlog, oldest "
        "uncovered evidence age, stale processing windows, whole-window retries, failed "
        "windows, collection and summary lag. Its checks are the backlog alerts."
    ),
)
def timeline_pipeline_health(
    context: dg.AssetExecutionContext,
    database: DatabaseResource,
    timeline_settings: TimelineSettingsResource,
) -> dg.MaterializeResult:  # type: ignore[type-arg]
    settings = timeline_settings.timeline
    now = datetime.now(UTC)
    health = measure_health(database.engine, settings, now)
    outcomes = evaluate(health, HealthLimits.from_settings(settings))
    metadata = health_metadata(health)
    if settings.review_cards_enabled:
        metadata.update(review_card_figures(database.engine, now))
    for outcome in outcomes:
        if not outcome.passed:
            context.log.warning("%s: %s", outcome.name, outcome.description)
    return dg.MaterializeResult(
        metadata=metadata,
        check_results=[_check_result(outcome) for outcome in outcomes],
    )


health_job = dg.define_asset_job(
    HEALTH_JOB,
    executor_def=dg.in_process_executor,
    selection=dg.AssetSelection.assets(HEALTH_KEY),
    description="Measure the pipeline's health and evaluate its alert checks.",
)


@dg.schedule(
    name=HEALTH_SCHEDULE,
    cron_schedule=HEALTH_CRON,
    job=health_job,
    execution_timezone="UTC",
    default_status=dg.DefaultScheduleStatus.RUNNING,
    description="Pipeline health every five minutes; skipped while the Lark timeline is disabled.",
)
def timeline_pipeline_health_schedule(
    context: dg.ScheduleEvaluationContext, timeline_settings: TimelineSettingsResource
) -> dg.RunRequest | dg.SkipReason:
    if not timeline_settings.timeline.enabled:
        return dg.SkipReason("the Lark timeline is disabled (enabled: false)")
    in_flight = context.instance.get_runs(
        filters=dg.RunsFilter(job_name=HEALTH_JOB, statuses=_IN_FLIGHT), limit=1
    )
    if in_flight:
        return dg.SkipReason(f"run {in_flight[0].run_id} of {HEALTH_JOB} is in flight")
    return dg.RunRequest()


def health_defs() -> dg.Definitions:
    """Everything pipeline health adds to the code location."""
    return dg.Definitions(
        assets=[timeline_pipeline_health],
        jobs=[health_job],
        schedules=[timeline_pipeline_health_schedule],
    )
