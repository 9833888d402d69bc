"""Dagster: synthesis on Celery workers, and what the operator sees of them (docs/deployment.md).

* `celery_synthesis_executor` is the executor definitions.py gives the synthesis job when
  `TIMELINE_EXECUTOR=celery`: the run worker sends the window's step to a Celery queue over the
  broker named by `TIMELINE_CELERY_BROKER_URL` (read when a run starts, like `dg.EnvVar`), and a
  `dagster-celery worker` started with `deploy/celery.yaml` executes it. The run queue's limits
  (timeline/synthesis, timeline/workspace) still act on runs in the daemon, whatever executes
  the step; a worker's `--concurrency` is its own synthesis limit.
* `WORKER_SETTINGS` are the Celery settings both sides share (deploy/celery.yaml repeats them,
  which a test checks): a step is acknowledged only once it finished, and a step whose worker
  died is handed back to the queue. A lost task would otherwise leave its run worker polling
  for a result forever; redelivered, it runs on another worker, finds the window still leased
  by the dead attempt and ends, and the stale path requeues the window (docs/deployment.md,
  "A lost worker").
* `timeline_synthesis_workers` measures the queue and the workers: messages waiting in the
  synthesis queue, the workers consuming it with their concurrency and active steps, and the
  synthesis runs Dagster has queued or started. Its checks are the alerts: no worker consumes
  the queue (ERROR), more steps waiting than the workers can take at once (WARN).

No `from __future__ import annotations`: Dagster reads the annotations of assets at definition
time.
"""

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import dagster as dg

from timeline_pipeline.windows.run_queue import TAG_SYNTHESIS

EXECUTOR_ENV: Final = "TIMELINE_EXECUTOR"
"""`in_process` (the default) or `celery`."""
BROKER_ENV: Final = "TIMELINE_CELERY_BROKER_URL"
"""e.g. `pyamqp://user:password@rabbitmq:5672//`; read by the run worker when a run starts."""
QUEUE_ENV: Final = "TIMELINE_CELERY_QUEUE"
"""The Celery queue the synthesis steps go to; workers listen on it with `-q`."""
DEFAULT_QUEUE: Final = "timeline-synthesis"
EXECUTORS: Final = ("in_process", "celery")

RESULT_BACKEND: Final = "rpc://"
"""Results travel back over the broker to the one run worker waiting for them: no second
service to run, and nothing to expire (docs/deployment.md, "Result backend")."""

WORKER_SETTINGS: Final[Mapping[str, Any]] = {
    # Acknowledge a step when it finished, and hand it back when its worker process is lost,
    # so that a kill -9 never strands the run worker waiting on a result.
    "task_acks_late": True,
    "task_reject_on_worker_lost": True,
    # A worker reserves no more steps than it runs: waiting steps stay in the queue, where
    # another worker can take them (and where the backlog is visible).
    "worker_prefetch_multiplier": 1,
}

WORKER_TAG: Final = "timeline/celery_worker"
"""Run tag: the Celery worker (node name) that last executed the run's synthesis step."""
QUEUE_TAG: Final = "timeline/celery_queue"
"""Run tag: the Celery queue the run's synthesis step was taken from."""

WORKERS_KEY = dg.AssetKey("timeline_synthesis_workers")
WORKERS_JOB = "timeline_synthesis_workers_job"
WORKERS_SCHEDULE = "timeline_synthesis_workers_schedule"
WORKERS_ONLINE_CHECK = "synthesis_workers_online"
QUEUE_CAPACITY_CHECK = "synthesis_queue_within_capacity"
INSPECT_TIMEOUT_SECONDS = 2.0


def executor_choice(value: str | None) -> str:
    """The executor named by TIMELINE_EXECUTOR; a name outside EXECUTORS is refused at load."""
    chosen = (value or "in_process").strip()
    if chosen not in EXECUTORS:
        raise dg.DagsterInvalidDefinitionError(
            f"{EXECUTOR_ENV}={chosen!r} is not one of {', '.join(EXECUTORS)}"
        )
    return chosen


def celery_config(queue: str) -> dict[str, Any]:
    """The celery executor's configuration: the broker from the environment at run start."""
    return {
        "broker": {"env": BROKER_ENV},
        "backend": RESULT_BACKEND,
        "config_source": {**WORKER_SETTINGS, "task_default_queue": queue},
    }


def celery_synthesis_executor(queue: str) -> dg.ExecutorDefinition:
    """dagster-celery's executor, configured for the synthesis queue (see the module doc)."""
    from dagster_celery import celery_executor

    configured: dg.ExecutorDefinition = celery_executor.configured(
        celery_config(queue), name="timeline_celery"
    )
    return configured


# --- the workers' state --------------------------------------------------------------------------


@dataclass(frozen=True)
class WorkerState:
    name: str
    concurrency: int
    active: int


@dataclass(frozen=True)
class QueueState:
    queue: str
    waiting: int
    """Steps in the queue that no worker has taken yet."""
    consumers: int
    workers: list[WorkerState] = field(default_factory=list)

    @property
    def capacity(self) -> int:
        return sum(worker.concurrency for worker in self.workers)

    @property
    def active(self) -> int:
        return sum(worker.active for worker in self.workers)


def _queue_names(queues: Any) -> set[str]:
    return {str(q.get("name")) for q in queues or [] if isinstance(q, Mapping)}


def measure_queue(broker_url: str, queue: str) -> QueueState:
    """The queue's depth from the broker, and the workers listening on it (remote control)."""
    from celery import Celery

    app = Celery("timeline-synthesis-status", broker=broker_url, backend=RESULT_BACKEND)
    try:
        with app.connection_for_read() as connection:
            channel = connection.default_channel
            try:
                _, waiting, consumers = channel.queue_declare(queue=queue, passive=True)
            except Exception:  # the queue does not exist yet: no worker ever declared it
                waiting, consumers = 0, 0
        inspect = app.control.inspect(timeout=INSPECT_TIMEOUT_SECONDS)
        listening = inspect.active_queues() or {}
        stats = inspect.stats() or {}
        active = inspect.active() or {}
        workers = [
            WorkerState(
                name=name,
                concurrency=int(stats.get(name, {}).get("pool", {}).get("max-concurrency", 0)),
                active=len(active.get(name, [])),
            )
            for name, queues in sorted(listening.items())
            if queue in _queue_names(queues)
        ]
    finally:
        app.close()
    return QueueState(queue=queue, waiting=int(waiting), consumers=int(consumers), workers=workers)


_QUEUED = [dg.DagsterRunStatus.QUEUED, dg.DagsterRunStatus.NOT_STARTED]
_RUNNING = [dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.STARTED]


def _workers_table(state: QueueState) -> dg.TableMetadataValue:
    return dg.MetadataValue.table(
        [
            dg.TableRecord({"worker": w.name, "concurrency": w.concurrency, "active": w.active})
            for w in state.workers
        ],
        schema=dg.TableSchema(
            columns=[
                dg.TableColumn("worker", "string"),
                dg.TableColumn("concurrency", "int", description="its synthesis limit"),
                dg.TableColumn("active", "int", description="steps it is executing"),
            ]
        ),
    )


def workers_outcome(
    state: QueueState, queued_runs: int, started_runs: int
) -> tuple[dict[str, Any], list[dg.AssetCheckResult]]:
    """The materialization's metadata and its two checks, from one measurement."""
    metadata: dict[str, Any] = {
        "queue": state.queue,
        "queue_waiting_steps": state.waiting,
        "queue_consumers": state.consumers,
        "workers_online": len(state.workers),
        "worker_capacity": state.capacity,
        "worker_active_steps": state.active,
        "dagster_queued_synthesis_runs": queued_runs,
        "dagster_started_synthesis_runs": started_runs,
        "workers": _workers_table(state),
    }
    online = dg.AssetCheckResult(
        check_name=WORKERS_ONLINE_CHECK,
        asset_key=WORKERS_KEY,
        passed=bool(state.workers),
        severity=dg.AssetCheckSeverity.ERROR,
        description=(
            f"{len(state.workers)} worker(s) consume queue {state.queue}"
            if state.workers
            else f"no worker consumes queue {state.queue}: synthesis steps wait forever"
        ),
        metadata={"workers_online": len(state.workers), "queue_waiting_steps": state.waiting},
    )
    within = state.waiting <= state.capacity
    capacity = dg.AssetCheckResult(
        check_name=QUEUE_CAPACITY_CHECK,
        asset_key=WORKERS_KEY,
        passed=within,
        severity=dg.AssetCheckSeverity.WARN,
        description=(
            f"{state.waiting} step(s) wait for {state.capacity} worker slot(s)"
            + ("" if within else ": add workers or raise their concurrency")
        ),
        metadata={"queue_waiting_steps": state.waiting, "worker_capacity": state.capacity},
    )
    return metadata, [online, capacity]


def _synthesis_runs(instance: dg.DagsterInstance, statuses: list[dg.DagsterRunStatus]) -> int:
    return instance.get_runs_count(
        filters=dg.RunsFilter(statuses=statuses, tags={TAG_SYNTHESIS: "1"})
    )


def scale_out_defs(queue: str) -> dg.Definitions:
    """The workers' asset, its checks, job and schedule: part of the code location only when
    synthesis runs on Celery (definitions.py)."""

    @dg.asset(
        key=WORKERS_KEY,
        group_name="timeline",
        check_specs=[
            dg.AssetCheckSpec(
                WORKERS_ONLINE_CHECK, asset=WORKERS_KEY, description="A worker consumes the queue."
            ),
            dg.AssetCheckSpec(
                QUEUE_CAPACITY_CHECK,
                asset=WORKERS_KEY,
                description="No more steps wait in the queue than the workers run at once.",
            ),
        ],
        description=(
            "The Celery synthesis queue and its workers (docs/deployment.md): steps waiting, "
            "workers with their concurrency and active steps, Dagster's queued synthesis runs."
        ),
    )
    def timeline_synthesis_workers(
        context: dg.AssetExecutionContext,
    ) -> dg.MaterializeResult:  # type: ignore[type-arg]
        broker = dg.EnvVar(BROKER_ENV).get_value()
        if not broker:
            raise dg.Failure(description=f"{BROKER_ENV} is not set")
        state = measure_queue(broker, queue)
        metadata, checks = workers_outcome(
            state,
            _synthesis_runs(context.instance, _QUEUED),
            _synthesis_runs(context.instance, _RUNNING),
        )
        for check in checks:
            if not check.passed:
                context.log.warning("%s: %s", check.check_name, check.description)
        return dg.MaterializeResult(metadata=metadata, check_results=checks)

    job = dg.define_asset_job(
        WORKERS_JOB,
        executor_def=dg.in_process_executor,
        selection=dg.AssetSelection.assets(WORKERS_KEY),
        description="Measure the Celery synthesis queue and its workers.",
    )
    schedule = dg.ScheduleDefinition(
        name=WORKERS_SCHEDULE,
        cron_schedule="*/5 * * * *",
        job=job,
        execution_timezone="UTC",
        default_status=dg.DefaultScheduleStatus.RUNNING,
        description="The synthesis queue and its workers every five minutes.",
    )
    return dg.Definitions(assets=[timeline_synthesis_workers], jobs=[job], schedules=[schedule])
