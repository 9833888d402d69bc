"""Dagster: the workspace summary as an asset per workspace, and the sensor that requests it.

* `timeline_workspaces` is a DynamicPartitionsDefinition with one partition per workspace id;
  `timeline_summary` is partitioned by it, so the UI shows each workspace's summary history
  (every materialization records which windows caused it, the input digest and the model).
* `timeline_summary_sensor` polls the windows that reached a terminal state and have no
  summary decision yet (one indexed query when idle), driven by their own flag with no lookback
  (a window that finishes long after its start still gets its decision), as a keyset scan whose
  position the sensor cursor keeps (`~scan`), so windows whose runs keep failing cannot hold
  the front of it. Windows that need no attempt (no visible
  change, or a human summary) are settled in the tick itself; for a workspace with windows that
  call for an attempt it adds the partition and requests one run. Its run key is derived from
  those windows, so a burst of ticks requests one run, and a new completed window a new one.
  A run that finished without taking its windows (it failed before reaching the database) is
  requested again under a new key, at most `MAX_RERUNS` times for the same windows.
* The asset run takes its windows with a compare-and-set on `summary_attempted` and makes at
  most one attempt (summary/runner.py): at most one attempt per completed window, however many
  runs race, never over a human summary, never from hidden entries.
* Runs carry `timeline/workspace=<id>` and the workspace's lane, `timeline/lane=<crc32(id) mod
  maxConcurrentSynthesis>`, the tags dagster.yaml limits to one run per value: a summary never
  runs beside its workspace's synthesis, whether a run of one window (same workspace tag) or a
  batch of several workspaces of its lane (same lane tag; a batch has no single workspace
  value, docs/scaling.md, "Limits"). UI launches of job `summarize_workspaces` get both from
  the job's partition tag function.

No `from __future__ import annotations`: Dagster reads the annotations of assets and sensors.
"""

import hashlib
import json
from collections.abc import Iterator, Mapping
from datetime import datetime
from typing import Any

import dagster as dg

from timeline_pipeline.domain.keys import InvalidKey, check_workspace_id
from timeline_pipeline.orchestration.partition_runs import runs_with_new_partitions
from timeline_pipeline.orchestration.resources import (
    DatabaseResource,
    TimelineSettingsResource,
    claude_setup,
)
from timeline_pipeline.orchestration.windows import (
    dagster_run_lookup,
    run_lanes,
    scan_paced_sensor,
)
from timeline_pipeline.settings import LarkTimelineSettings, Settings, load_timeline_settings
from timeline_pipeline.summary.contract import Summarizer
from timeline_pipeline.summary.deterministic import DeterministicSummarizer
from timeline_pipeline.summary.runner import (
    ScanPosition,
    SummaryOutcome,
    SummaryReport,
    SummaryRunner,
    plan_summary_requests,
)
from timeline_pipeline.windows.run_queue import TAG_SUMMARY, summary_run_tags

WORKSPACE_PARTITIONS = "timeline_workspaces"
SUMMARY_KEY = dg.AssetKey("timeline_summary")
SUMMARY_JOB = "summarize_workspaces"
SUMMARY_SENSOR = "timeline_summary_sensor"
MAX_WINDOWS_PER_TICK = 1000
MAX_RERUNS = 3

workspace_partitions = dg.DynamicPartitionsDefinition(name=WORKSPACE_PARTITIONS)


def partition_workspace_id(context: dg.AssetExecutionContext) -> str:
    """The workspace id a `workspace_partitions` asset runs for: its partition key, checked; a
    malformed key fails the run."""
    try:
        return check_workspace_id(context.partition_key)
    except InvalidKey as exc:
        raise dg.Failure(description=str(exc)) from None


class SummarizerResource(dg.ConfigurableResource):  # type: ignore[type-arg]
    """Claude when an Anthropic key is set (ANTHROPIC_API_KEY unless given here), else the
    deterministic summarizer; model, timeout and retry bounds are the synthesis settings."""

    api_key: str | None = None
    base_url: str | None = None

    def build(self, settings: Settings) -> Summarizer:
        setup = claude_setup(settings, self.api_key, self.base_url)
        if setup is None:
            return DeterministicSummarizer()
        from timeline_pipeline.summary.claude import ClaudeSummarizer

        return ClaudeSummarizer(
            setup.client,
            model=setup.model,
            max_output_tokens=min(settings.timeline.synthesis_max_output_tokens, 2048),
            retry=setup.retry,
        )


def summary_enabled(settings: LarkTimelineSettings) -> bool:
    return settings.enabled and settings.summary_enabled


def summary_tags(partition_key: str, lanes: int | None = None) -> Mapping[str, str]:
    """Tags of a workspace's summary run: its workspace and its lane, which dagster.yaml's run
    queue limits to one run each, so the summary waits for its workspace's synthesis (and the
    synthesis for it). `lanes`: `maxConcurrentSynthesis`, read from the settings if not given
    (a UI launch through the job's partition tag function); see `windows.run_queue`."""
    return summary_run_tags(partition_key, run_lanes() if lanes is None else lanes)


summary_job = dg.define_asset_job(
    SUMMARY_JOB,
    executor_def=dg.in_process_executor,
    selection=dg.AssetSelection.assets(SUMMARY_KEY),
    tags={TAG_SUMMARY: "1"},
    config=dg.PartitionedConfig(
        partitions_def=workspace_partitions,
        run_config_for_partition_key_fn=lambda _key: {},
        tags_for_partition_key_fn=lambda key: summary_tags(key),
    ),
    description="Regenerate workspace summaries; launched by timeline_summary_sensor.",
)


def report_metadata(report: SummaryReport) -> dict[str, Any]:
    metadata: dict[str, Any] = {}
    for key, value in report.metadata().items():
        metadata[key] = dg.MetadataValue.json(value) if isinstance(value, list | dict) else value
    return metadata


@dg.asset(
    key=SUMMARY_KEY,
    partitions_def=workspace_partitions,
    group_name="timeline",
    output_required=False,
    description=(
        "The workspace summary (docs/design.md §8): regenerated at most once per completed "
        "window that created or changed a visible entry, never over a human summary, from the "
        "visible entries only. Partition: the workspace id."
    ),
)
def timeline_summary(
    context: dg.AssetExecutionContext,
    database: DatabaseResource,
    timeline_settings: TimelineSettingsResource,
    summarizer: SummarizerResource,
) -> Iterator[dg.MaterializeResult]:  # type: ignore[type-arg]
    workspace_id = partition_workspace_id(context)
    settings = timeline_settings.load()
    runner = SummaryRunner(
        database.engine,
        summarizer.build(settings),
        enabled=summary_enabled(settings.timeline),
        settings=settings.timeline,
    )
    report = runner.run(workspace_id)
    metadata = report_metadata(report)
    context.log.info("summary of %s: %s", workspace_id, report.outcome.value)
    if report.outcome is SummaryOutcome.FAILED:
        raise dg.Failure(description=report.reason, metadata=metadata)
    if report.outcome is SummaryOutcome.WRITTEN:
        yield dg.MaterializeResult(metadata=metadata)
        return
    # Nothing new was written: the partition's last materialization stays the current text.
    context.log_event(
        dg.AssetObservation(asset_key=SUMMARY_KEY, partition=workspace_id, metadata=metadata)
    )


# --- the sensor --------------------------------------------------------------------------------


def _digest(state_ids: tuple[int, ...]) -> str:
    return hashlib.sha256(",".join(map(str, state_ids)).encode()).hexdigest()[:16]


SCAN_KEY = "~scan"
"""The cursor's key for the scan position; no workspace id can start with `~`."""


def _load_cursor(raw: str | None) -> dict[str, Any]:
    try:
        data = json.loads(raw) if raw else {}
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def _scan_position(cursor: Mapping[str, Any]) -> ScanPosition | None:
    """The stored keyset position, or None (from the oldest) when absent or unreadable."""
    raw = cursor.get(SCAN_KEY)
    if not isinstance(raw, list) or len(raw) != 2:
        return None
    start, state_id = raw
    if not isinstance(start, str) or not isinstance(state_id, int):
        return None
    try:
        parsed = datetime.fromisoformat(start)
    except ValueError:
        return None
    return (parsed, state_id) if parsed.tzinfo is not None else None


def evaluate_summary_sensor(
    context: dg.SensorEvaluationContext,
    database: DatabaseResource,
    timeline_settings: TimelineSettingsResource,
) -> dg.SensorResult:
    settings = timeline_settings.timeline
    if not summary_enabled(settings):
        return dg.SensorResult(
            skip_reason="summary is disabled (enabled and summaryEnabled must both be on)",
            cursor=context.cursor,
        )
    previous = _load_cursor(context.cursor)
    plan = plan_summary_requests(
        database.engine, limit=MAX_WINDOWS_PER_TICK, after=_scan_position(previous)
    )
    if plan.settled:
        context.log.info("summary: settled %d window(s) needing no attempt", len(plan.settled))
    keys: dict[str, str] = {}
    state: dict[str, Any] = {}
    if plan.next_after is not None:
        state[SCAN_KEY] = [plan.next_after[0].isoformat(), plan.next_after[1]]
    for request in plan.requests:
        digest = _digest(request.state_ids)
        held = previous.get(request.workspace_id, {})
        reruns = int(held.get("n", 0)) if held.get("d") == digest else 0
        keys[request.workspace_id] = f"summary:{request.workspace_id}:{digest}:{reruns}"
        state[request.workspace_id] = {"d": digest, "n": reruns}
    finished = dagster_run_lookup(context.instance)(list(keys.values())) if keys else {}
    run_requests: list[dg.RunRequest] = []
    for workspace_id, run_key in keys.items():
        if finished.get(run_key):
            # The run for these very windows finished and they still await a decision: it
            # failed before taking them. Ask again, a bounded number of times.
            if state[workspace_id]["n"] >= MAX_RERUNS:
                context.log.warning("summary of %s: windows still untaken", workspace_id)
                continue
            state[workspace_id]["n"] += 1
            run_key = f"{run_key.rsplit(':', 1)[0]}:{state[workspace_id]['n']}"
        run_requests.append(
            dg.RunRequest(
                partition_key=workspace_id,
                run_key=run_key,
                tags=dict(summary_tags(workspace_id, settings.max_concurrent_synthesis)),
            )
        )
    return runs_with_new_partitions(
        context.instance,
        workspace_partitions,
        run_requests,
        cursor=json.dumps(state, sort_keys=True),
        idle_reason="no completed window calls for a summary",
    )


def _summary_sensor(settings: LarkTimelineSettings) -> dg.SensorDefinition:
    @scan_paced_sensor(
        settings,
        name=SUMMARY_SENSOR,
        job=summary_job,
        description=(
            "Requests a workspace's summary run when windows that created or changed visible "
            "entries reach a terminal state (docs/design.md §8); settles the others."
        ),
    )
    def timeline_summary_sensor(
        context: dg.SensorEvaluationContext,
        database: DatabaseResource,
        timeline_settings: TimelineSettingsResource,
    ) -> dg.SensorResult:
        return evaluate_summary_sensor(context, database, timeline_settings)

    return timeline_summary_sensor


def summary_defs(
    settings: LarkTimelineSettings | None = None, summarizer: SummarizerResource | None = None
) -> dg.Definitions:
    """Everything the summary adds to the code location."""
    timeline = settings or load_timeline_settings()
    return dg.Definitions(
        assets=[timeline_summary],
        jobs=[summary_job],
        sensors=[_summary_sensor(timeline)],
        resources={"summarizer": summarizer or SummarizerResource()},
    )
