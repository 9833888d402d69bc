"""Dagster: the incident report as an asset per workspace, its sensor, and the follow-up tasks.

* `incident_report` is partitioned by workspace (`timeline_workspaces`, the summary's
  partitions). Each materialization builds the report (`report/service.py`: a new revision only
  when what it shows changed), writes it into the workspace's Lark document when
  `reportLarkDocEnabled` (`report/publisher.py`), and records as metadata the revision, the
  durations (seconds, so the UI plots time-to-resolve across incidents), the entry counts and
  the document's link (docs/report.md).
* `incident_report_sensor` requests a workspace's build when it has left `firing` and has no
  report yet, when its confirmed entries, status or milestone times changed since the newest
  revision (the revision's input stamp), when a recall withdrew the newest revision, when the
  document is behind its report (a publisher died mid-write), and when the newest revision was
  built outside Dagster (`report build` from the CLI) so the UI records it too. The run key
  names the workspace and what it saw, so repeated ticks request one run.
* `create_follow_up_tasks` creates the Lark tasks of confirmed next steps
  (`followUpTasksEnabled`), requested by the same sensor while tasks are queued.

An operator builds a workspace's report from the UI by materializing its partition; the asset
does not look at `reportEnabled`, which only gates the sensor: a build someone asks for runs.

No `from __future__ import annotations`: Dagster reads the annotations of assets and sensors.
"""

import hashlib
import json
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import dagster as dg
from sqlalchemy import Connection, Engine

from timeline_pipeline.db.engine import connection
from timeline_pipeline.orchestration.collection import LarkClientResource
from timeline_pipeline.orchestration.partition_runs import runs_with_new_partitions
from timeline_pipeline.orchestration.resources import DatabaseResource, TimelineSettingsResource
from timeline_pipeline.orchestration.summary import partition_workspace_id, workspace_partitions
from timeline_pipeline.orchestration.windows import RUN_KEY_TAG, scan_paced_sensor
from timeline_pipeline.report.service import BuiltReport, ReportService, Trigger, input_stamp
from timeline_pipeline.settings import LarkTimelineSettings, load_timeline_settings
from timeline_pipeline.store import (
    follow_up_tasks,
    incident_reports,
    report_documents,
)
from timeline_pipeline.store import workspaces as workspace_store
from timeline_pipeline.store.audit import dagster_actor

if TYPE_CHECKING:
    from timeline_pipeline.lark.client import LarkClient

REPORT_KEY = dg.AssetKey("incident_report")
REPORT_JOB = "build_incident_reports"
FOLLOW_UP_JOB = "create_follow_up_tasks"
RETIRE_JOB = "retire_report_documents"
REPORT_SENSOR = "incident_report_sensor"
TAG_TRIGGER = "timeline/report-trigger"
MAX_WORKSPACES_PER_TICK = 1000
"""The newest closed workspaces the sensor looks at per tick; older ones keep their last
report unless built on demand (docs/report.md, "When it is built")."""
CLOSED_STATUSES = ("recovered", "archived")

report_job = dg.define_asset_job(
    REPORT_JOB,
    executor_def=dg.in_process_executor,
    selection=dg.AssetSelection.assets(REPORT_KEY),
    description="Build a workspace's incident report; launched by incident_report_sensor.",
)


def report_metadata(built: BuiltReport, document_url: str | None) -> dict[str, Any]:
    """What the UI shows and plots per materialization (docs/report.md, "In Dagster")."""
    content = built.report.content
    durations = content.get("durations") or {}
    counts = content.get("counts") or {}
    metadata: dict[str, Any] = {
        "revision": built.report.revision,
        "new_revision": built.created,
        "trigger": built.report.trigger,
        "entries_confirmed": int(counts.get("confirmed", 0)),
        "entries_drafts": int(counts.get("drafts", 0)),
        "entries_hidden": int(counts.get("hidden", 0)),
        "entries_withheld": int(counts.get("withheld", 0)),
    }
    for name in ("time_to_detect", "time_to_mitigate", "time_to_resolve"):
        value = durations.get(name)
        if isinstance(value, int):
            metadata[f"{name}_seconds"] = dg.MetadataValue.int(value)
            metadata[f"{name}_minutes"] = dg.MetadataValue.float(round(value / 60, 1))
    if document_url:
        metadata["document_url"] = dg.MetadataValue.url(document_url)
    return metadata


@dg.asset(
    key=REPORT_KEY,
    partitions_def=workspace_partitions,
    group_name="timeline",
    description=(
        "The incident report (docs/report.md): milestones, durations, impact, root cause, "
        "decisions, mitigations, the timeline and its follow-ups, from the visible entries; "
        "written into the workspace's Lark document when reportLarkDocEnabled. Partition: the "
        "workspace id."
    ),
)
def incident_report(
    context: dg.AssetExecutionContext,
    database: DatabaseResource,
    timeline_settings: TimelineSettingsResource,
    lark: LarkClientResource,
) -> Iterator[dg.MaterializeResult]:  # type: ignore[type-arg]
    workspace_id = partition_workspace_id(context)
    settings = timeline_settings.load()
    service = ReportService(database.engine, settings.timeline)
    trigger = context.run.tags.get(TAG_TRIGGER, Trigger.MANUAL)
    built = service.build(workspace_id, actor=dagster_actor(context.run_id), trigger=trigger)
    document_url: str | None = None
    if settings.timeline.report_lark_doc_enabled:
        # Imported here: a code location without the document imports no Lark SDK module
        # (a synthesis run loads these definitions too).
        from timeline_pipeline.report.publisher import DocumentPublisher

        publisher = DocumentPublisher(database.engine, settings.timeline, lark.build(settings))
        publisher.plan(workspace_id, built.report.revision)
        outcome = publisher.publish(workspace_id)
        document_url = outcome.document_url
        context.log.info(
            "report of %s: document at revision %s", workspace_id, outcome.written_revision
        )
    context.log.info(
        "report of %s: revision %d (%s)",
        workspace_id,
        built.report.revision,
        "new" if built.created else "unchanged",
    )
    yield dg.MaterializeResult(metadata=report_metadata(built, document_url))


def _lark_op_job(
    job_name: str,
    op_name: str,
    description: str,
    work: Callable[[dg.OpExecutionContext, Engine, LarkTimelineSettings, "LarkClient"], None],
) -> dg.JobDefinition:
    """A job of one op that does the report's Lark work: `work` is given the run's context, the
    product database, the settings and a Lark client built from them."""

    @dg.op(name=op_name, description=description)
    def lark_op(
        context: dg.OpExecutionContext,
        database: DatabaseResource,
        timeline_settings: TimelineSettingsResource,
        lark: LarkClientResource,
    ) -> None:
        settings = timeline_settings.load()
        work(context, database.engine, settings.timeline, lark.build(settings))

    @dg.job(name=job_name, executor_def=dg.in_process_executor)
    def lark_job() -> None:
        lark_op()

    return lark_job


def _create_follow_up_tasks(
    context: dg.OpExecutionContext,
    engine: Engine,
    settings: LarkTimelineSettings,
    client: "LarkClient",
) -> None:
    from timeline_pipeline.lark.documents import LarkDocuments
    from timeline_pipeline.report.follow_ups import FollowUpWorker

    outcome = FollowUpWorker(engine, settings, LarkDocuments(client)).run()
    context.log.info(
        "follow-up tasks: %d created, %d failed, %d deferred",
        outcome.created,
        outcome.failed,
        outcome.deferred,
    )


def _retire_report_documents(
    context: dg.OpExecutionContext,
    engine: Engine,
    settings: LarkTimelineSettings,
    client: "LarkClient",
) -> None:
    from timeline_pipeline.report.publisher import DocumentPublisher

    publisher = DocumentPublisher(engine, settings, client)
    context.log.info("report documents retired: %d", publisher.retire_orphans())


follow_up_job = _lark_op_job(
    FOLLOW_UP_JOB,
    "create_follow_up_tasks_op",
    "Create the Lark tasks of confirmed next steps (docs/report.md).",
    _create_follow_up_tasks,
)
retire_job = _lark_op_job(
    RETIRE_JOB,
    "retire_report_documents_op",
    "Delete in Lark the documents whose reports aged out (docs/report.md).",
    _retire_report_documents,
)


# --- the sensor --------------------------------------------------------------------------------


def _due(
    conn: Connection, workspace_id: str, settings: LarkTimelineSettings, *, closed: bool
) -> tuple[str, str] | None:
    """(trigger, run key) when the workspace's report is due, else None. A workspace still
    firing is rebuilt only to take a recalled message out or to finish its document; the rest
    waits until it closes."""
    latest = incident_reports.latest(conn, workspace_id)
    stamp = input_stamp(conn, workspace_id)
    document = (
        report_documents.get(conn, workspace_id) if settings.report_lark_doc_enabled else None
    )
    document_behind = (
        settings.report_lark_doc_enabled
        and latest is not None
        and (document is None or not document.up_to_date or document.reply_pending)
    )
    if latest is None and closed:
        trigger = Trigger.CLOSED
    elif latest is None:
        return None
    elif latest.withdrawn:
        trigger = Trigger.RECALL
    elif closed and latest.input_stamp != stamp:
        trigger = Trigger.CONFIRMED_CHANGE
    elif document_behind:
        trigger = Trigger.DOCUMENT
    elif not latest.built_by.startswith("dagster:"):
        return Trigger.RECORD, f"report-record:{workspace_id}:{latest.revision}"
    else:
        return None
    seen = "-" if latest is None else f"{latest.revision}{'w' if latest.withdrawn else ''}"
    step = "-" if document is None else str(document.revision)
    return trigger, f"report:{workspace_id}:{stamp[:16]}:{seen}:{step}"


class _Revisioned(Protocol):
    @property
    def id(self) -> int: ...
    @property
    def revision(self) -> int: ...


def _rows_run(job_name: str, prefix: str, rows: Sequence[_Revisioned]) -> dg.RunRequest:
    """A run of `job_name` for the queued `rows`, keyed by their ids and revisions: repeated
    ticks over the same rows request one run."""
    digest = hashlib.sha256(",".join(f"{r.id}.{r.revision}" for r in rows).encode()).hexdigest()
    return dg.RunRequest(job_name=job_name, run_key=f"{prefix}:{digest[:16]}")


def report_requests(
    database: DatabaseResource, settings: LarkTimelineSettings
) -> tuple[list[dg.RunRequest], list[str]]:
    """(run requests, one line per reason) for this tick; reads of the database only."""
    requests: list[dg.RunRequest] = []
    reasons: list[str] = []
    with connection(database.engine) as conn:
        if settings.report_enabled:
            closed = {
                w.id
                for w in workspace_store.newest_with_status(
                    conn, CLOSED_STATUSES, limit=MAX_WORKSPACES_PER_TICK
                )
            }
            pending = set(incident_reports.withdrawn_latest(conn, limit=MAX_WORKSPACES_PER_TICK))
            pending.update(d.workspace_id for d in report_documents.unwritten(conn, limit=200))
            for workspace_id in sorted(closed | pending):
                due = _due(conn, workspace_id, settings, closed=workspace_id in closed)
                if due is None:
                    continue
                trigger, key = due
                requests.append(
                    dg.RunRequest(
                        job_name=REPORT_JOB,
                        partition_key=workspace_id,
                        run_key=key,
                        tags={TAG_TRIGGER: trigger},
                    )
                )
                reasons.append(f"{workspace_id}: {trigger}")
        if settings.follow_up_tasks_enabled:
            queued = follow_up_tasks.pending(conn, limit=200)
            if queued:
                requests.append(_rows_run(FOLLOW_UP_JOB, "tasks", queued))
                reasons.append(f"{len(queued)} follow-up task(s) queued")
        orphans = report_documents.orphaned(conn, limit=200)
        if orphans:
            requests.append(_rows_run(RETIRE_JOB, "retire", orphans))
            reasons.append(f"{len(orphans)} document(s) whose reports aged out")
    return requests, reasons


MAX_RERUNS = 3
_GAVE_UP = (dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED)


def _unrecorded(instance: dg.DagsterInstance, request: dg.RunRequest) -> bool:
    """A revision built outside Dagster is asked for once, until the UI has recorded it."""
    if request.tags.get(TAG_TRIGGER) != Trigger.RECORD or request.partition_key is None:
        return True
    found = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=REPORT_KEY, asset_partitions=[request.partition_key]),
        limit=1,
    ).records
    if not found or found[0].asset_materialization is None:
        return True
    recorded = found[0].asset_materialization.metadata.get("revision")
    wanted = int((request.run_key or "0").rsplit(":", 1)[-1])
    return recorded is None or int(recorded.value) < wanted  # type: ignore[arg-type]


def _with_reruns(
    instance: dg.DagsterInstance, requests: list[dg.RunRequest], cursor: str | None
) -> tuple[list[dg.RunRequest], str]:
    """The requests, each under a run key the daemon has not used up: a run that failed or was
    killed (`run_monitoring` marks a dead run failed) leaves its work due under the same key,
    so it is asked again under the next key, at most `MAX_RERUNS` times (the cursor counts)."""
    held: dict[str, int] = json.loads(cursor) if cursor else {}
    kept: dict[str, int] = {}
    chosen: list[dg.RunRequest] = []
    for request in requests:
        base = request.run_key or ""
        count = int(held.get(base, 0))
        key = base if count == 0 else f"{base}#{count}"
        runs = instance.get_runs(filters=dg.RunsFilter(tags={RUN_KEY_TAG: key}))
        kept[base] = count
        if runs and all(run.status in _GAVE_UP for run in runs):
            if count >= MAX_RERUNS:  # given up: the workspace waits for a change or a person
                continue
            count += 1
            kept[base] = count
            key = f"{base}#{count}"
        chosen.append(request.with_replaced_attrs(run_key=key))
    return chosen, json.dumps(kept, sort_keys=True)


def _report_sensor(settings: LarkTimelineSettings) -> dg.SensorDefinition:
    @scan_paced_sensor(
        settings,
        name=REPORT_SENSOR,
        jobs=[report_job, follow_up_job, retire_job],
        description=(
            "Builds a workspace's incident report when it leaves firing and again when its "
            "confirmed entries change; creates follow-up tasks (docs/report.md)."
        ),
    )
    def incident_report_sensor(
        context: dg.SensorEvaluationContext,
        database: DatabaseResource,
        timeline_settings: TimelineSettingsResource,
    ) -> dg.SensorResult:
        timeline = timeline_settings.timeline
        if not (timeline.report_enabled or timeline.follow_up_tasks_enabled):
            return dg.SensorResult(skip_reason="reportEnabled and followUpTasksEnabled are off")
        requests, reasons = report_requests(database, timeline)
        for reason in reasons:
            context.log.info("incident report: %s", reason)
        report_runs, cursor = _with_reruns(
            context.instance,
            [r for r in requests if r.job_name == REPORT_JOB and _unrecorded(context.instance, r)],
            context.cursor,
        )
        others = [r for r in requests if r.job_name != REPORT_JOB]
        result = runs_with_new_partitions(
            context.instance,
            workspace_partitions,
            report_runs,
            cursor=cursor,
            idle_reason="no workspace's report is due",
        )
        if not others:
            return result
        return dg.SensorResult(
            run_requests=[*(result.run_requests or []), *others],
            dynamic_partitions_requests=result.dynamic_partitions_requests,
            cursor=cursor,
        )

    return incident_report_sensor


def report_defs(settings: LarkTimelineSettings | None = None) -> dg.Definitions:
    """Everything the incident report adds to the code location."""
    timeline = settings or load_timeline_settings()
    return dg.Definitions(
        assets=[incident_report],
        jobs=[report_job, follow_up_job, retire_job],
        sensors=[_report_sensor(timeline)],
    )
