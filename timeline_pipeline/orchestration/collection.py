"""Dagster: the Lark chat-collection asset, its two schedules and the manual refresh job.

* `lark_chat_collection` reconciles every bound chat of every eligible workspace (firing, within
  the lookback, an ingested type): incremental runs every `reconcileInterval`, a refresh run
  (edits and recalls over `evidenceRefreshLookback`) every `evidenceRefreshInterval`. Automatic
  scans therefore stop by themselves when a workspace leaves `firing` or ages out. Both schedules
  request their run even when they fire in the same minute: collection runs carry
  `timeline/collection` and the run queue starts one at a time (dagster.yaml), so neither
  schedule loses its tick to the other.
* Each materialization records pages, messages, inserted/updated/duplicate counts, skips by
  reason, lag and failures, in total and per chat. One chat's failure does not hide the others'
  work: the materialization is recorded and the asset check fails, naming the chat.
* `lark_manual_reconcile` is "Refresh from sources" for one explicitly selected workspace (and
  optionally one chat), allowed even when the workspace is no longer eligible, still bounded by
  its creation time and the ingestion lookback; it records a materialization of the same asset.

lark-oapi takes seconds to import, so the reconciliation code is imported inside the run, and
loading the code location stays fast. No `from __future__ import annotations` here: Dagster reads
the config and resource annotations of assets and ops at definition time.
"""

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import dagster as dg

from timeline_pipeline.db.engine import connection
from timeline_pipeline.ingest.eligibility import AUTOMATIC, MANUAL
from timeline_pipeline.orchestration.resources import DatabaseResource, TimelineSettingsResource
from timeline_pipeline.reconcile.cadence import cadence_for
from timeline_pipeline.reconcile.planning import Mode
from timeline_pipeline.reconcile.report import RunReport
from timeline_pipeline.reconcile.targets import (
    ReconcileRefused,
    automatic_refusal,
    automatic_targets,
    manual_refusal,
    manual_targets,
)
from timeline_pipeline.settings import LarkTimelineSettings, Settings, load_timeline_settings
from timeline_pipeline.store.workspaces import WorkspaceNotFound
from timeline_pipeline.windows.run_queue import TAG_COLLECTION

if TYPE_CHECKING:
    from timeline_pipeline.lark.client import LarkClient
    from timeline_pipeline.reconcile.runner import Reconciler

CHAT_COLLECTION_KEY = dg.AssetKey("lark_chat_collection")
FAILURE_CHECK = "chats_reconciled_without_errors"
THREADS_CHECK = "threads_within_budget"
COLLECTION_JOB = "lark_chat_collection_job"
MANUAL_JOB = "lark_manual_reconcile"
RECONCILE_SCHEDULE = "lark_reconcile_schedule"
REFRESH_SCHEDULE = "lark_evidence_refresh_schedule"
MODE_TAG = "timeline/reconcile_mode"
COLLECTION_TAGS = {TAG_COLLECTION: "lark"}
"""Every collection run carries them; the run queue (dagster.yaml) starts one run of
`timeline/collection` at a time (`windows.run_queue`), so the two schedules' runs wait for
each other instead of racing on the chat checkpoints."""
_WAITING = [dg.DagsterRunStatus.QUEUED, dg.DagsterRunStatus.NOT_STARTED]


class LarkClientResource(dg.ConfigurableResource):  # type: ignore[type-arg]
    """The Lark OpenAPI client; unset fields fall back to LARK_APP_ID, LARK_APP_SECRET and
    LARK_BASE_URL, the same variables the CLI and the receiver read."""

    app_id: str | None = None
    app_secret: str | None = None
    base_url: str | None = None

    def resolved_app_id(self, settings: Settings) -> str:
        return self.app_id or settings.runtime.lark_app_id

    def build(self, settings: Settings) -> "LarkClient":
        from timeline_pipeline.lark.client import LarkClient
        from timeline_pipeline.lark.client_factory import client_config

        runtime = settings.runtime
        return LarkClient(
            client_config(
                settings.timeline,
                app_id=self.resolved_app_id(settings),
                app_secret=self.app_secret or runtime.lark_app_secret.get_secret_value(),
                base_url=self.base_url or runtime.lark_base_url,
            )
        )


class ChatCollectionConfig(dg.Config):
    refresh: bool = False
    """Also re-read the evidence refresh lookback (edits and recalls), not just the overlap."""


class ManualReconcileConfig(dg.Config):
    workspace_id: str
    chat_id: str | None = None
    refresh: bool = False


def _reconciler(
    database: DatabaseResource, settings: Settings, lark: LarkClientResource
) -> "Reconciler":
    from timeline_pipeline.lark.client_factory import LarkNotConfigured
    from timeline_pipeline.reconcile.runner import Reconciler

    try:
        client = lark.build(settings)
    except (ReconcileRefused, LarkNotConfigured) as exc:
        raise dg.Failure(description=str(exc)) from None
    return Reconciler(
        database.engine, client, settings.timeline, app_id=lark.resolved_app_id(settings)
    )


def run_metadata(report: RunReport) -> dict[str, Any]:
    """Materialization metadata: totals as numbers (plottable in the UI), details as JSON."""
    totals = report.totals()
    metadata: dict[str, Any] = {
        "mode": totals["mode"],
        "chats": totals["chats"],
        "pages": totals["pages"],
        "chat_pages": totals["chat_pages"],
        "thread_pages": totals["thread_pages"],
        "messages": totals["messages"],
        "threads_fetched": totals["threads_fetched"],
        "threads_skipped": totals["threads_skipped"],
        "inserted": totals["inserted"],
        "updated": totals["updated"],
        "duplicate": totals["duplicate"],
        "failures": totals["failures"],
        "duration_seconds": dg.MetadataValue.float(float(totals["duration_seconds"])),
        "names_filled": totals["names_filled"],
        "skipped": dg.MetadataValue.json(totals["skipped"]),
        "excluded": dg.MetadataValue.json(totals["excluded"]),
        "workspaces_skipped": dg.MetadataValue.json(totals["workspaces_skipped"]),
        "failures_by_kind": dg.MetadataValue.json(totals["failures_by_kind"]),
        "per_chat": dg.MetadataValue.json([chat.as_dict() for chat in report.chats]),
    }
    if totals["max_lag_seconds"] is not None:
        metadata["lag_seconds"] = dg.MetadataValue.float(float(totals["max_lag_seconds"]))
    return metadata


def _threads_check(report: RunReport) -> dg.AssetCheckResult:
    """Warns while `reconcileMaxThreads` leaves threads out: their turn comes in later runs, and
    until then the chat's coverage (so synthesis of the windows after it) waits for them."""
    skipped = {
        f"{chat.workspace_id}/{chat.chat_id}": chat.threads_skipped
        for chat in report.chats
        if chat.threads_skipped
    }
    total = sum(skipped.values())
    return dg.AssetCheckResult(
        check_name=THREADS_CHECK,
        asset_key=CHAT_COLLECTION_KEY,
        passed=total == 0,
        severity=dg.AssetCheckSeverity.WARN,
        description=(
            f"{total} thread(s) left for later runs by reconcileMaxThreads" if total else None
        ),
        metadata={"threads_skipped": total, "per_chat": dg.MetadataValue.json(skipped)},
    )


def _checks(report: RunReport) -> list[dg.AssetCheckResult]:
    return [_failure_check(report), _threads_check(report)]


def _failure_check(report: RunReport) -> dg.AssetCheckResult:
    return dg.AssetCheckResult(
        check_name=FAILURE_CHECK,
        asset_key=CHAT_COLLECTION_KEY,
        passed=not report.failures,
        severity=dg.AssetCheckSeverity.ERROR,
        description=report.failure_summary() if report.failures else None,
        metadata={"failures": len(report.failures)},
    )


@dg.asset(
    key=CHAT_COLLECTION_KEY,
    group_name="lark",
    check_specs=[
        dg.AssetCheckSpec(FAILURE_CHECK, asset=CHAT_COLLECTION_KEY),
        dg.AssetCheckSpec(THREADS_CHECK, asset=CHAT_COLLECTION_KEY),
    ],
    description="Lark chat history reconciled into workspace evidence (docs/design.md §3).",
)
def lark_chat_collection(
    context: dg.AssetExecutionContext,
    config: ChatCollectionConfig,
    database: DatabaseResource,
    timeline_settings: TimelineSettingsResource,
    lark: LarkClientResource,
) -> dg.MaterializeResult:  # type: ignore[type-arg]
    settings = timeline_settings.load()
    mode = Mode.REFRESH if config.refresh else Mode.INCREMENTAL
    refusal = automatic_refusal(settings.timeline)
    if refusal is not None:
        context.log.info("reconciliation skipped: %s", refusal)
        return dg.MaterializeResult(
            metadata={"mode": mode.value, "skipped": refusal, "chats": 0},
            check_results=_checks(RunReport(mode.value, datetime.now(UTC))),
        )
    now = datetime.now(UTC)
    with connection(database.engine) as conn:
        targets, skipped = automatic_targets(conn, settings.timeline, now)
    report = RunReport(mode.value, now, workspaces_skipped=skipped)
    if targets:
        reconciler = _reconciler(database, settings, lark)
        report = reconciler.run(
            targets, mode=mode, scope=AUTOMATIC, now=now, workspaces_skipped=skipped
        )
    if report.failures:
        context.log.warning(report.failure_summary())
    return dg.MaterializeResult(metadata=run_metadata(report), check_results=_checks(report))


@dg.op(description="Reconcile one explicitly selected workspace now, even if not eligible.")
def manual_reconcile(
    context: dg.OpExecutionContext,
    config: ManualReconcileConfig,
    database: DatabaseResource,
    timeline_settings: TimelineSettingsResource,
    lark: LarkClientResource,
) -> None:
    settings = timeline_settings.load()
    refusal = manual_refusal(settings.timeline)
    if refusal is not None:
        raise dg.Failure(description=refusal)
    now = datetime.now(UTC)
    try:
        with connection(database.engine) as conn:
            targets = manual_targets(
                conn, settings.timeline, now, config.workspace_id, config.chat_id
            )
    except (ReconcileRefused, WorkspaceNotFound) as exc:
        raise dg.Failure(description=str(exc)) from None
    mode = Mode.REFRESH if config.refresh else Mode.INCREMENTAL
    report = _reconciler(database, settings, lark).run(targets, mode=mode, scope=MANUAL, now=now)
    metadata = {**run_metadata(report), "trigger": "manual", "workspace_id": config.workspace_id}
    context.log_event(dg.AssetMaterialization(asset_key=CHAT_COLLECTION_KEY, metadata=metadata))
    if report.failures:
        raise dg.Failure(
            description=report.failure_summary(),
            metadata={"failures": len(report.failures)},
        )


@dg.job(
    name=MANUAL_JOB,
    description="Refresh one workspace's Lark chats from history now.",
    executor_def=dg.in_process_executor,
    tags=COLLECTION_TAGS,
)
def lark_manual_reconcile_job() -> None:
    manual_reconcile()


chat_collection_job = dg.define_asset_job(
    COLLECTION_JOB,
    executor_def=dg.in_process_executor,
    selection=dg.AssetSelection.assets(CHAT_COLLECTION_KEY),
    description="Reconcile every eligible workspace's Lark chats.",
    tags=COLLECTION_TAGS,
)


def _collection_schedule(name: str, interval: timedelta, *, refresh: bool) -> dg.ScheduleDefinition:
    cadence = cadence_for(interval)
    mode = Mode.REFRESH if refresh else Mode.INCREMENTAL

    @dg.schedule(
        name=name,
        cron_schedule=cadence.cron,
        job=chat_collection_job,
        execution_timezone="UTC",
        default_status=dg.DefaultScheduleStatus.RUNNING,
        description=(
            f"{mode.value} reconciliation every {interval}; queued behind a collection run in "
            "flight, skipped while disabled or while a run of this mode is still queued."
        ),
    )
    def _schedule(
        context: dg.ScheduleEvaluationContext, timeline_settings: TimelineSettingsResource
    ) -> dg.RunRequest | dg.SkipReason:
        refusal = automatic_refusal(timeline_settings.timeline)
        if refusal is not None:
            return dg.SkipReason(refusal)
        tick = context.scheduled_execution_time
        if tick is not None and not cadence.is_due(tick):
            return dg.SkipReason(f"not due: runs every {cadence.every_minutes} minute(s)")
        # The run queue serializes collection runs (TAG_COLLECTION), so a run of the other
        # schedule in flight is no reason to skip: this tick's run waits for it. Only a run of
        # this same mode that has not started yet makes this tick redundant (it will read the
        # same range), which also keeps the queue from growing behind a slow run.
        waiting = context.instance.get_runs(
            filters=dg.RunsFilter(
                job_name=COLLECTION_JOB, statuses=_WAITING, tags={MODE_TAG: mode.value}
            ),
            limit=1,
        )
        if waiting:
            return dg.SkipReason(
                f"run {waiting[0].run_id} ({mode.value}) is already queued for this range"
            )
        return dg.RunRequest(
            run_config={"ops": {CHAT_COLLECTION_KEY.path[-1]: {"config": {"refresh": refresh}}}},
            tags={**COLLECTION_TAGS, MODE_TAG: mode.value},
        )

    return _schedule


def collection_schedules(settings: LarkTimelineSettings) -> list[dg.ScheduleDefinition]:
    return [
        _collection_schedule(RECONCILE_SCHEDULE, settings.reconcile_interval, refresh=False),
        _collection_schedule(REFRESH_SCHEDULE, settings.evidence_refresh_interval, refresh=True),
    ]


def collection_defs(settings: LarkTimelineSettings | None = None) -> dg.Definitions:
    """Everything chat collection adds to the code location; intervals come from settings."""
    timeline = settings or load_timeline_settings()
    return dg.Definitions(
        assets=[lark_chat_collection],
        jobs=[chat_collection_job, lark_manual_reconcile_job],
        schedules=collection_schedules(timeline),
        resources={"lark": LarkClientResource()},
    )
