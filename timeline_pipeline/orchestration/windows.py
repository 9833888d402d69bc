"""Dagster: window partitions, the discovery sensor, the synthesis asset and the rerun job.

* `timeline_windows` is a DynamicPartitionsDefinition: each non-empty window is a partition
  keyed `<workspace>:<chat>:<YYYYMMDDTHHMMZ>[:<processor version>]` (`domain.window_keys`).
* `timeline_window_sensor` discovers closed, uncovered windows (`windows.discovery`), adds their
  partitions and requests their runs in the same tick, oldest first, within the backlog limits.
* `timeline_window_drafts` synthesizes one window partition (`synthesis_run.runner`); its
  materialization records the lineage: evidence ids (or range and count), aggregate hash,
  chunks, entries created/updated, tokens, model, prompt version and status.
* A run synthesizes one window or a batch of closed windows (a partition-range run), one
  after another, oldest first, each window with its own claim and its own materialization
  (`windows.batches`, docs/scaling.md).
* Concurrency is Dagster's: the asset is in pool `synthesis`, and every run carries
  `timeline/synthesis=1` and `timeline/lane=<crc32(workspace) mod maxConcurrentSynthesis>`
  (a one-window run also `timeline/workspace=<id>`; a summary run carries its workspace and
  its lane too, so it never runs beside a batch of its lane), which the run queue limits in
  `dagster.yaml` (one run per lane, so `maxConcurrentSynthesis` at once and never two runs of
  one workspace). Runs the sensor requests carry the tags; launches of job `synthesize_windows`
  from the UI get them from the job's partition tag function; a run without them (e.g.
  materialized from the asset graph, which uses Dagster's implicit job and no tag function)
  is refused at start rather than run outside the limits. The run queue is the first gate: a
  window whose synthesizer calls a model also holds a synthesis slot of the database while it
  runs (`synthesis_run.runner`, `db.synthesis_slots`), shared with rerun previews driven outside
  Dagster, so that `maxConcurrentSynthesis` holds for both together.
* Operators: launching `synthesize_windows` for a partition from the UI replays the window as a
  whole (the launchpad's default config is `replay: true`; set it to false to resume instead).
  A run with tag `timeline/replay=true` replays as well. Re-executing a failed sensor run keeps
  its config (`replay: false`) and so resumes. Job `rerun_windows` starts an explicit full
  regeneration under a new processor version (partitions with the `:<version>` suffix): it
  creates and drives a `window_rerun` maintenance job in checkpointed batches.

No `from __future__ import annotations`: Dagster reads the annotations of assets, ops and
sensors at definition time.
"""

from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import dagster as dg
from dagster._core.definitions.unresolved_asset_job_definition import (
    UnresolvedAssetJobDefinition,
)

from timeline_pipeline.domain.errors import Refused
from timeline_pipeline.domain.window_keys import InvalidPartitionKey, WindowRef, parse_partition_key
from timeline_pipeline.durations import format_duration
from timeline_pipeline.llm.setup import model_key
from timeline_pipeline.maintenance.errors import OpenJobExists
from timeline_pipeline.maintenance.limits import Limits, check_limits
from timeline_pipeline.orchestration.maintenance import DriveBudgetConfig, drive_job
from timeline_pipeline.orchestration.rerun_preview import preview_metadata, rerun_service
from timeline_pipeline.orchestration.resources import (
    DatabaseResource,
    TimelineSettingsResource,
)
from timeline_pipeline.settings import LarkTimelineSettings, Settings, load_timeline_settings
from timeline_pipeline.store.audit import dagster_actor
from timeline_pipeline.synthesis.contract import Synthesizer
from timeline_pipeline.synthesis_run.runner import RunStatus, WindowRunner, WindowRunReport
from timeline_pipeline.synthesis_run.synthesizers import build_synthesizer
from timeline_pipeline.windows.batches import PARTITION_TAG, BatchItem, RunScope, plan_runs
from timeline_pipeline.windows.discovery import DiscoveryTick, RunLookup, RunScopes
from timeline_pipeline.windows.planning import DiscoveryCursor
from timeline_pipeline.windows.run_queue import (
    TAG_REQUEST,
    TAG_SYNTHESIS,
    run_tag_problem,
    window_run_tags,
)

WINDOW_PARTITIONS = "timeline_windows"
WINDOW_DRAFTS_KEY = dg.AssetKey("timeline_window_drafts")
SYNTHESIS_JOB = "synthesize_windows"
RERUN_JOB = "rerun_windows"
WINDOW_RERUN = "window_rerun"
DISCOVERY_SENSOR = "timeline_window_sensor"
REPLAY_TAG = "timeline/replay"
RUN_KEY_TAG = "dagster/run_key"
_FINISHED = {
    dg.DagsterRunStatus.SUCCESS,
    dg.DagsterRunStatus.FAILURE,
    dg.DagsterRunStatus.CANCELED,
}

window_partitions = dg.DynamicPartitionsDefinition(name=WINDOW_PARTITIONS)
_OP_NAME = WINDOW_DRAFTS_KEY.to_python_identifier()


def _resolved(value: str | None) -> str | None:
    """A field's value: Dagster resolves `dg.EnvVar` fields when a run starts, but a resource
    built outside a run (a probe, a script) still holds the variable's name."""
    return value.get_value() if isinstance(value, dg.EnvVar) else value


class SynthesizerResource(dg.ConfigurableResource):  # type: ignore[type-arg]
    """Builds the synthesizer: Claude when an Anthropic key is set, the rule-based one otherwise.

    Unset fields fall back to ANTHROPIC_API_KEY and ANTHROPIC_BASE_URL, the variables the rest
    of the product reads; the model, timeouts and retry bounds come from the timeline settings.
    """

    api_key: str | None = None
    base_url: str | None = None

    def build(self, settings: Settings) -> Synthesizer:
        return build_synthesizer(settings, _resolved(self.api_key), _resolved(self.base_url))

    def run_max_windows(self, settings: Settings) -> int:
        """Windows a batch run takes at most: fewer when each is a model call (seconds) than
        when the rules synthesize (milliseconds); see docs/scaling.md."""
        timeline = settings.timeline
        if model_key(settings, _resolved(self.api_key)):
            return timeline.synthesis_run_max_windows
        return timeline.synthesis_run_max_windows_rules


class WindowSynthesisConfig(dg.Config):
    replay: bool = False
    """Reset the window and synthesize it again from its first chunk (an explicit rerun)."""


class WindowRerunConfig(DriveBudgetConfig):
    """A `window_rerun` maintenance job and the budgets to drive it with (docs/runbooks.md,
    "Prompt/schema upgrade")."""

    workspace_id: str
    processor_version: str
    """The new namespace, e.g. `v2`: state keys chat/<chat>/processor/v2/window/<start>."""
    chat_id: str | None = None
    since: str | None = None
    """ISO 8601; default: the workspace's creation."""
    until: str | None = None
    """ISO 8601; default: the time of the first batch."""
    batch_size: int = 100
    """Windows per batch (one short transaction each)."""
    delay_ms: int = 10
    lock_timeout_ms: int = 500
    statement_timeout_ms: int = 3000
    preview: bool = False
    """Preview instead of applying: the dry-run that synthesizes each window into a scratch
    table and reports, per window, the drafts added, changed and dropped and the entries left
    alone (docs/maintenance.md, "Preview a rerun"); the report is this run's metadata."""


# --- run tags: the per-workspace limit must hold however a run is launched (windows.run_queue) -


def run_lanes() -> int:
    """Lanes of the run queue: `maxConcurrentSynthesis`, read where the run or tick happens."""
    return load_timeline_settings().max_concurrent_synthesis


def partition_tags(partition_key: str) -> Mapping[str, str]:
    """Tags of a window partition's run: what dagster.yaml's run-queue limits act on
    (`windows.run_queue`)."""
    return window_run_tags(parse_partition_key(partition_key).workspace_id, run_lanes())


def _launchpad_config(partition_key: str) -> Mapping[str, Any]:
    # What the UI's launchpad pre-fills for a partition of the job: an operator's explicit
    # rerun replays the window. Sensor requests pass their own config (replay: false).
    return {"ops": {_OP_NAME: {"config": {"replay": True}}}}


def synthesis_job_with(executor: dg.ExecutorDefinition) -> UnresolvedAssetJobDefinition:
    """The synthesis job on the executor the deployment chose in definitions.py
    (docs/deployment-n-machines.md): in-process by default, Celery workers in a scale-out
    deployment."""
    return dg.define_asset_job(
        SYNTHESIS_JOB,
        executor_def=executor,
        selection=dg.AssetSelection.assets(WINDOW_DRAFTS_KEY),
        tags={TAG_SYNTHESIS: "1"},
        config=dg.PartitionedConfig(
            partitions_def=window_partitions,
            run_config_for_partition_key_fn=_launchpad_config,
            tags_for_partition_key_fn=partition_tags,
        ),
        description=(
            "Synthesize window partitions. Launched by timeline_window_sensor; launch a "
            "partition here to replay that window (config replay: true)."
        ),
    )


# One step per run: executing it in the run's own process saves starting a second Python
# process per window (3.5-7 s of each 7-15 s run under the daemon on two cores).
synthesis_job = synthesis_job_with(dg.in_process_executor)


# --- the asset ---------------------------------------------------------------------------------


def report_metadata(report: WindowRunReport) -> dict[str, Any]:
    metadata: dict[str, Any] = {}
    for key, value in report.metadata().items():
        metadata[key] = dg.MetadataValue.json(value) if isinstance(value, list) else value
    metadata["dagster/row_count"] = len(report.evidence)
    return metadata


@dg.asset(
    key=WINDOW_DRAFTS_KEY,
    partitions_def=window_partitions,
    pool="synthesis",
    group_name="timeline",
    output_required=False,
    description=(
        "Draft timeline entries of one window of one chat, bound to their evidence "
        "(docs/design.md §7). Partition: <workspace>:<chat>:<YYYYMMDDTHHMMZ>[:<version>]."
    ),
)
def timeline_window_drafts(
    context: dg.AssetExecutionContext,
    config: WindowSynthesisConfig,
    database: DatabaseResource,
    timeline_settings: TimelineSettingsResource,
    synthesizer: SynthesizerResource,
) -> Iterator[dg.MaterializeResult]:  # type: ignore[type-arg]
    """One window, or a batch of windows one after another (a partition-range run).

    Each window is claimed, synthesized and committed on its own: a finished window gets its
    own materialization (partition, metadata, lineage) as soon as it is done, a failed one does
    not stop the others, and the run fails at the end naming the windows that failed.
    """
    keys = list(context.partition_keys)
    batch = context.has_partition_key_range
    settings = timeline_settings.load()
    lanes = settings.timeline.max_concurrent_synthesis
    refs: list[WindowRef] = []
    for key in keys:
        try:
            refs.append(parse_partition_key(key))
        except InvalidPartitionKey as exc:
            if not batch:
                raise dg.Failure(description=str(exc)) from None
            context.log.warning("skipping %s: %s", key, exc)
    if not batch:
        problem = run_tag_problem(context.run.tags, refs[0], lanes, job=SYNTHESIS_JOB)
        if problem is not None:
            raise dg.Failure(description=problem)
    replay = config.replay or context.run.tags.get(REPLAY_TAG, "").lower() == "true"
    runner = WindowRunner(database.engine, settings.timeline, synthesizer.build(settings))
    if not batch:
        report = runner.run(refs[0], owner=context.run.run_id, replay=replay)
        if report.status is RunStatus.FAILED:
            raise dg.Failure(description=report.reason, metadata=report_metadata(report))
        _record(context, report)
        return
    failed: list[WindowRunReport] = []
    statuses: Counter[str] = Counter()
    for ref in sorted(refs, key=WindowRef.sort_key):
        problem = run_tag_problem(context.run.tags, ref, lanes, job=SYNTHESIS_JOB, batch=True)
        if problem is not None:
            # Only a partition added by someone else between the sensor's keys can land here.
            context.log.warning(problem)
            statuses["refused"] += 1
            continue
        if _released(context):
            # The sensor marked this run failed (a window's lease expired): its lane slot went
            # to another run, so this one must not claim anything more. The windows left are
            # still requested and are requested again (docs/scaling.md).
            context.log.warning("run released by %s: stopping before %s", DISCOVERY_SENSOR, ref)
            statuses["stopped"] += 1
            break
        try:
            # The runner ends and releases a window it claimed whatever the error; what can
            # still raise here comes before the claim, with nothing held.
            report = runner.run(ref, owner=context.run.run_id, replay=replay)
        except Exception as exc:  # one window's crash must not lose the others
            context.log.error("window %s raised %s", ref.partition_key, type(exc).__name__)
            report = WindowRunReport(ref=ref, status=RunStatus.FAILED, reason=repr(exc)[:500])
        statuses[report.status.value] += 1
        if report.status is RunStatus.FAILED:
            failed.append(report)
            context.log.error("window %s failed: %s", ref.partition_key, report.reason)
            continue
        _record(context, report)
    context.log.info("batch of %d windows: %s", len(keys), dict(sorted(statuses.items())))
    if failed:
        raise dg.Failure(
            description=(
                f"{len(failed)} of {len(keys)} windows failed: "
                + ", ".join(r.ref.partition_key for r in failed[:20])
            ),
            metadata={
                "failed_windows": dg.MetadataValue.json(
                    [{"window": r.ref.partition_key, "reason": r.reason} for r in failed]
                ),
                "statuses": dg.MetadataValue.json(dict(statuses)),
            },
        )
    return
    yield  # a generator: results are logged per window, never one output for the range


def _record(context: dg.AssetExecutionContext, report: WindowRunReport) -> None:
    """The window's own event: a materialization when it finished, else an observation."""
    metadata = report_metadata(report)
    key = report.ref.partition_key
    if report.status in (RunStatus.SKIPPED, RunStatus.EMPTY, RunStatus.DEFERRED):
        # Nothing was finished: the partition's last materialization (its lineage) stays as it
        # was. A deferred window (the model was unavailable) is not a failed run: the sensor
        # requests it again once its window-level backoff ends.
        context.log.info("window %s %s: %s", key, report.status, report.reason)
        context.log_event(
            dg.AssetObservation(asset_key=WINDOW_DRAFTS_KEY, partition=key, metadata=metadata)
        )
        return
    context.log_event(
        dg.AssetMaterialization(asset_key=WINDOW_DRAFTS_KEY, partition=key, metadata=metadata)
    )


def _released(context: dg.AssetExecutionContext) -> bool:
    run = context.instance.get_run_by_id(context.run.run_id)
    return run is not None and run.status not in _ALIVE


# --- the discovery sensor ----------------------------------------------------------------------


def _tagged_run_lookup(instance: dg.DagsterInstance, tag: str, *, every: bool) -> RunLookup:
    """Which values of `tag` have runs, and whether any (or, with `every`, all) of them
    finished: one query per 100 values."""

    def lookup(values: Sequence[str]) -> Mapping[str, bool]:
        found: dict[str, bool] = {}
        for start in range(0, len(values), 100):
            batch = list(values[start : start + 100])
            for run in instance.get_runs(filters=dg.RunsFilter(tags={tag: batch})):
                value = run.tags.get(tag)
                if value is None:
                    continue
                finished = run.status in _FINISHED
                if every:
                    found[value] = found.get(value, True) and finished
                else:
                    found[value] = found.get(value, False) or finished
        return found

    return lookup


def dagster_run_lookup(instance: dg.DagsterInstance) -> RunLookup:
    """Which run keys have runs, and whether those runs have finished (one query per 100)."""
    return _tagged_run_lookup(instance, RUN_KEY_TAG, every=False)


def request_group_lookup(instance: dg.DagsterInstance) -> RunLookup:
    """Which request groups have runs, and whether all of them finished (one query per 100)."""
    return _tagged_run_lookup(instance, TAG_REQUEST, every=True)


_ALIVE = {dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.STARTED}


def run_scope_lookup(instance: dg.DagsterInstance) -> RunScopes:
    """The windows each run the sensor requested was asked to synthesize, from its tags (its
    request group and partition or range), minus the windows of its group that got runs of
    their own. Asked only for runs whose windows went stale: rare, two queries a run."""

    def lookup(run_ids: Sequence[str]) -> Mapping[str, RunScope]:
        scopes: dict[str, RunScope] = {}
        for run in instance.get_runs(filters=dg.RunsFilter(run_ids=list(run_ids))):
            group = run.tags.get(TAG_REQUEST)
            if not group:
                continue
            others = {
                key
                for other in instance.get_runs(filters=dg.RunsFilter(tags={TAG_REQUEST: group}))
                if other.run_id != run.run_id and (key := other.tags.get(PARTITION_TAG))
            }
            scope = RunScope.from_tags(run.tags, others)
            if scope is not None:
                scopes[run.run_id] = scope
        return scopes

    return lookup


def release_abandoned_runs(
    instance: dg.DagsterInstance, run_ids: Sequence[str], stale_timeout: str
) -> list[str]:
    """Mark the Dagster runs whose windows went stale as failed; returns the ids marked.

    A run killed with SIGKILL stays STARTED in Dagster's storage, and the default run launcher
    cannot tell it is gone, so it would hold its workspace's one run-queue slot (dagster.yaml)
    until run monitoring's max runtime: the window's retry would wait behind a dead run. Once
    the window's lease has expired the worker has lost it (its writes are compare-and-set on
    the window's revision), so ending the run in Dagster only tells the queue what is true.
    """
    released: list[str] = []
    for run_id in dict.fromkeys(run_ids):
        run = instance.get_run_by_id(run_id)
        if run is None or run.status not in _ALIVE:
            continue
        instance.report_run_failed(
            run,
            message=(
                f"window lease expired: no chunk committed for {stale_timeout}; "
                f"{DISCOVERY_SENSOR} requeued the window and released this run's queue slot"
            ),
        )
        released.append(run_id)
    return released


def evaluate_discovery(
    context: dg.SensorEvaluationContext,
    database: DatabaseResource,
    timeline_settings: TimelineSettingsResource,
    now: datetime | None = None,
    synthesizer: SynthesizerResource | None = None,
) -> dg.SensorResult:
    loaded = timeline_settings.load()
    settings = loaded.timeline
    cursor = DiscoveryCursor.from_json(context.cursor)
    tick = DiscoveryTick(
        database.engine,
        settings,
        cursor,
        now or datetime.now(UTC),
        run_lookup=request_group_lookup(context.instance),
        run_scopes=run_scope_lookup(context.instance),
    )
    outcome = tick.run()
    released = release_abandoned_runs(
        context.instance,
        outcome.abandoned_owners,
        format_duration(settings.synthesis_stale_timeout),
    )
    if released:
        context.log.warning(
            "marked %d abandoned synthesis run(s) failed: %s", len(released), released
        )
    if outcome.skip_reason is not None:
        return dg.SensorResult(skip_reason=outcome.skip_reason, cursor=context.cursor)
    requests = sorted(outcome.requests, key=lambda r: r.ref.sort_key())
    counts = dict(sorted(outcome.counts.items()))
    oldest = outcome.oldest_uncovered.isoformat() if outcome.oldest_uncovered else None
    context.log.info("window discovery: %s; oldest uncovered window: %s", counts, oldest)
    keys = list(dict.fromkeys(r.ref.partition_key for r in requests))
    existing = (
        context.instance.get_existing_dynamic_partitions(WINDOW_PARTITIONS, keys) if keys else set()
    )
    plan = plan_runs(
        [BatchItem(r.ref, r.group, r.tags) for r in requests],
        existing,
        (synthesizer or SynthesizerResource()).run_max_windows(loaded),
    )
    run_config = {"ops": {_OP_NAME: {"config": {"replay": False}}}}
    by_key = {r.ref.partition_key: r for r in requests}
    run_requests = []
    for run in plan.runs:
        if run.is_range:
            run_requests.append(
                dg.RunRequest(run_key=run.run_key, tags=dict(run.tags), run_config=run_config)
            )
        else:
            single = by_key[run.keys[0]]
            run_requests.append(
                dg.RunRequest(
                    partition_key=run.keys[0],
                    run_key=single.run_key,
                    tags=dict(run.tags),
                    run_config=run_config,
                )
            )
    if plan.runs:
        context.log.info(
            "requested %d windows in %d runs (%d new partitions)",
            len(keys),
            len(plan.runs),
            len(plan.add_keys),
        )
    return dg.SensorResult(
        run_requests=run_requests,
        # One add request, in plan order: each range's keys are contiguous in Dagster's
        # insertion order, so the range covers exactly the windows of its batch.
        dynamic_partitions_requests=(
            [window_partitions.build_add_request(list(plan.add_keys))] if plan.add_keys else []
        ),
        cursor=outcome.cursor.to_json(),
        skip_reason=None if run_requests else "no closed, uncovered window to request",
    )


def scan_paced_sensor(
    settings: LarkTimelineSettings,
    *,
    name: str,
    description: str,
    job: dg.JobDefinition | UnresolvedAssetJobDefinition | None = None,
    jobs: Sequence[dg.JobDefinition | UnresolvedAssetJobDefinition] | None = None,
) -> Callable[[Callable[..., Any]], dg.SensorDefinition]:
    """The sensors that follow window synthesis (discovery, the summary, the report): running
    from the start and ticking at the synthesis scan interval, 30 seconds at the least."""
    return dg.sensor(
        name=name,
        job=job,
        jobs=jobs,
        minimum_interval_seconds=max(30, int(settings.synthesis_scan_interval.total_seconds())),
        default_status=dg.DefaultSensorStatus.RUNNING,
        description=description,
    )


def _discovery_sensor(
    settings: LarkTimelineSettings, job: UnresolvedAssetJobDefinition
) -> dg.SensorDefinition:
    @scan_paced_sensor(
        settings,
        name=DISCOVERY_SENSOR,
        job=job,
        description=(
            "Finds closed, non-empty, uncovered windows (docs/design.md §6), adds their "
            "partitions and requests their synthesis runs, oldest first, within the backlog "
            "limits. Idle ticks cost one indexed query."
        ),
    )
    def timeline_window_sensor(
        context: dg.SensorEvaluationContext,
        database: DatabaseResource,
        timeline_settings: TimelineSettingsResource,
        synthesizer: SynthesizerResource,
    ) -> dg.SensorResult:
        return evaluate_discovery(context, database, timeline_settings, synthesizer=synthesizer)

    return timeline_window_sensor


# --- the versioned rerun -------------------------------------------------------------------------


@dg.op(
    description="Create versioned window states for an explicit full rerun, in checkpointed "
    "batches of a window_rerun maintenance job."
)
def create_rerun_windows(
    context: dg.OpExecutionContext,
    config: WindowRerunConfig,
    database: DatabaseResource,
    timeline_settings: TimelineSettingsResource,
    synthesizer: SynthesizerResource,
) -> dg.Output[dict[str, Any]]:
    """Create (or continue) the `window_rerun` apply job of these parameters and drive it.

    A new run creates a new job; when an open job of the workspace has the same parameters
    (a run that stopped on its budget, or was interrupted) it is continued instead, resumed
    first only with `resume: true`. The sensor then adds the `:<version>` partitions and runs
    them oldest first within the backlog limits.
    """
    service = rerun_service(database, timeline_settings, synthesizer.build)
    parameters = {
        key: value
        for key, value in {
            "workspace_id": config.workspace_id,
            "processor_version": config.processor_version,
            "chat_id": config.chat_id,
            "since": config.since,
            "until": config.until,
        }.items()
        if value is not None
    }
    try:
        limits = check_limits(
            Limits(
                config.batch_size,
                config.delay_ms,
                config.lock_timeout_ms,
                config.statement_timeout_ms,
            )
        )
        job, _ = service.create(
            job_type=WINDOW_RERUN,
            idempotency_key=f"{RERUN_JOB}-{context.run_id}",
            parameters=parameters,
            limits=limits,
            apply=not config.preview,
            actor=dagster_actor(context.run_id),
        )
    except OpenJobExists as exc:
        wanted = service.registry.latest(WINDOW_RERUN).validate(parameters).parameters
        if (
            exc.current is None
            or exc.current.parameters != wanted
            or exc.current.apply == config.preview
        ):
            raise dg.Failure(description=str(exc)) from None
        job = exc.current
        context.log.info("continuing the open window_rerun job %s", job.id)
    except Refused as exc:
        raise dg.Failure(description=str(exc)) from None
    output = drive_job(context, service, job.id, config.budget())
    if not config.preview:
        return output
    return dg.Output(output.value, metadata={**output.metadata, **preview_metadata(output.value)})


# A preview synthesizes every window it walks (model calls): the run counts in dagster.yaml's
# `timeline/synthesis` limit (maxConcurrentSynthesis) like a window run. Its workspace is in its
# config, which no tag function of an unpartitioned job can read; the preview's model calls
# also hold a synthesis slot of the database (`db.synthesis_slots`), shared with the
# previews the maintenance listener drives outside Dagster (docs/dagster.md).
RERUN_TAGS = {TAG_SYNTHESIS: "1"}


@dg.job(
    name=RERUN_JOB,
    executor_def=dg.in_process_executor,
    tags=RERUN_TAGS,
    description=(
        "Explicit full rerun of a workspace's windows under a new processor version namespace; "
        "the window sensor then runs them oldest first within the backlog limits."
    ),
)
def rerun_windows_job() -> None:
    create_rerun_windows()


def window_defs(
    settings: LarkTimelineSettings | None = None,
    synthesizer: SynthesizerResource | None = None,
    synthesis_executor: dg.ExecutorDefinition | None = None,
) -> dg.Definitions:
    """Everything window synthesis adds to the code location; the sensor interval comes from
    the settings, the synthesizer from ANTHROPIC_API_KEY unless one is given, the synthesis
    job's executor from definitions.py (in-process unless one is given)."""
    timeline = settings or load_timeline_settings()
    job = synthesis_job if synthesis_executor is None else synthesis_job_with(synthesis_executor)
    return dg.Definitions(
        assets=[timeline_window_drafts],
        jobs=[job, rerun_windows_job],
        sensors=[_discovery_sensor(timeline, job)],
        resources={"synthesizer": synthesizer or SynthesizerResource()},
    )
