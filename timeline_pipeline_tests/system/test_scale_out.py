"""Scale-out: synthesis steps on two Celery workers over the machine's RabbitMQ, one of them
killed with SIGKILL in the middle of a window (docs/deployment.md).

The deployment is the documented one: `dagster-daemon` and `dagster-webserver` on an instance
configured by an unchanged copy of `deploy/celery/dagster.yaml` (PostgreSQL storage, synthesis
limits for two workers), `TIMELINE_EXECUTOR=celery` choosing the executor in definitions.py,
and two `dagster-celery worker start -y deploy/celery.yaml` processes, each in its own process
group like a machine of its own. Claude synthesizes through the loopback Messages API stand-in,
so that one call can be held open while its worker is killed.

A backlog of closed windows over several workspaces is seeded into the product database; the
window sensor requests their runs and the queue runs them. The test proves, from the product
database, Dagster's runs and the workers' own step log lines:

* every window ends completed exactly once, with one materialization, and no entry or evidence
  binding is duplicated;
* never two runs of one workspace at once, never more steps on a worker than its
  `worker_concurrency`, both workers executed steps;
* the killed worker's step is handed back to the queue (`task_acks_late`,
  `task_reject_on_worker_lost`): the surviving worker runs it, finds the window still leased by
  the dead attempt and ends, so the run worker waiting for it ends too; after the stale timeout
  the sensor requeues the window and a new run completes it;
* each run carries the worker that ran its step and the queue in its tags, and the
  `timeline_synthesis_workers` asset shows the queued runs and both workers with its checks
  passing.

The Celery queue is named for this test run and deleted afterwards, so that parallel runs on
the one broker never take each other's steps.
"""

from __future__ import annotations

import json
import shutil
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
import yaml
from kombu import Connection
from sqlalchemy import Engine, select

from timeline_pipeline.db.engine import make_engine
from timeline_pipeline.db.schema import workspace_timeline_evidence as ev
from timeline_pipeline.db.schema import workspace_timeline_sync_states as ss
from timeline_pipeline.domain.window_keys import WindowRef, window_start_of
from timeline_pipeline.orchestration.celery_worker import FINISHED, STARTED
from timeline_pipeline.orchestration.scale_out import (
    QUEUE_CAPACITY_CHECK,
    QUEUE_TAG,
    WORKER_TAG,
    WORKERS_JOB,
    WORKERS_KEY,
    WORKERS_ONLINE_CHECK,
    QueueState,
    measure_queue,
)
from timeline_pipeline.orchestration.windows import SYNTHESIS_JOB, WINDOW_DRAFTS_KEY
from timeline_pipeline.windows.run_queue import TAG_SYNTHESIS, TAG_WORKSPACE
from timeline_pipeline_tests.faults.synthesis_support import (
    binding_counts,
    cited_ids,
    entry_rows,
    one_finding,
)
from timeline_pipeline_tests.support.anthropic_standin import (
    AnthropicStandIn,
    ReceivedRequest,
    SlowReply,
    tool_reply,
)
from timeline_pipeline_tests.support.processes import ManagedProcess, free_port
from timeline_pipeline_tests.support.windows import WINDOW
from timeline_pipeline_tests.system import concurrency
from timeline_pipeline_tests.system.conftest import BIN, REPO, STARTUP_TIMEOUT, _process_env
from timeline_pipeline_tests.system.graphql import DagsterGraphQL, RepositoryAddress, Run
from timeline_pipeline_tests.system.processes import Processes, wait_for
from timeline_pipeline_tests.windows.support import post, workspace

pytestmark = [pytest.mark.system, pytest.mark.slow]

BROKER = "pyamqp://guest:guest@127.0.0.1:5672//"
WORKSPACES = 3
WINDOWS_PER_WORKSPACE = 4
MESSAGES_PER_WINDOW = 3
STALE = "20s"
MODEL_TIMEOUT_SECONDS = 8.0
HANG_SECONDS = 600.0
FINISHED_RUN = {"SUCCESS", "FAILURE", "CANCELED"}
PARTITION_TAG = "dagster/partition"
ASSET = WINDOW_DRAFTS_KEY.path[-1]

SETTINGS_ENV = {
    # Collection would need a Lark; this test seeds the evidence itself.
    "TIMELINE_LARK_RECONCILIATION_ENABLED": "false",
    "TIMELINE_LARK_SYNTHESIS_STALE_TIMEOUT": STALE,
    "TIMELINE_LARK_MODEL_TIMEOUT": f"{MODEL_TIMEOUT_SECONDS:g}s",
    "TIMELINE_LARK_SYNTHESIS_CHUNK_MAX_ATTEMPTS": "1",
    "TIMELINE_LARK_RETRY_BACKOFF_BASE": "10ms",
    "TIMELINE_LARK_RETRY_BACKOFF_CAP": "20ms",
    # One window a run, so that the backlog is more runs than the workers have slots and the
    # queue, the per-worker limit and a lost step are each seen on a run of their own (batches
    # of windows are the daemon system test's; a batch is one step to a worker all the same).
    "TIMELINE_LARK_SYNTHESIS_RUN_MAX_WINDOWS": "1",
    # As many lanes as the workers have slots (docs/deployment-n-machines.md, "Limits").
    "TIMELINE_LARK_MAX_CONCURRENT_SYNTHESIS": str(
        next(
            int(limit["limit"])
            for limit in yaml.safe_load(
                REPO.joinpath("deploy", "celery", "dagster.yaml").read_text()
            )["concurrency"]["runs"]["tag_concurrency_limits"]
            if limit["key"] == TAG_SYNTHESIS
        )
    ),
    # Starting a run is one gRPC call to the code server, which forks the run worker; on a
    # machine loaded by other work it can outlast Dagster's 60 s default and the run is then
    # dequeued again a minute later.
    "DAGSTER_GRPC_TIMEOUT_SECONDS": "180",
}


def _deploy_yaml(*parts: str) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(REPO.joinpath("deploy", *parts).read_text())
    return loaded


WORKER_CONCURRENCY = int(
    _deploy_yaml("celery.yaml")["execution"]["config"]["config_source"]["worker_concurrency"]
)
SYNTHESIS_LIMIT = next(
    int(limit["limit"])
    for limit in _deploy_yaml("celery", "dagster.yaml")["concurrency"]["runs"][
        "tag_concurrency_limits"
    ]
    if limit["key"] == TAG_SYNTHESIS
)


@dataclass
class Worker:
    name: str
    node: str
    process: ManagedProcess
    killed_at: float | None = None


@dataclass
class ScaleOut:
    graphql: DagsterGraphQL
    repo: RepositoryAddress
    engine: Engine
    instance: dg.DagsterInstance
    processes: Processes
    """What must stay alive: the daemon, the webserver and the workers not killed on purpose."""
    core: list[ManagedProcess]
    standin: AnthropicStandIn
    queue: str
    workers: list[Worker]
    windows: list[WindowRef]
    evidence: dict[str, list[int]]
    figures: dict[str, Any] = field(default_factory=dict)

    @property
    def partition_keys(self) -> list[str]:
        return [ref.partition_key for ref in self.windows]


def _seed(engine: Engine, tag: str, now: datetime) -> tuple[list[WindowRef], dict[str, list[int]]]:
    """WORKSPACES firing incidents, each with a chat active in WINDOWS_PER_WORKSPACE closed
    windows of MESSAGES_PER_WINDOW messages (one chunk each)."""
    first = window_start_of(now - timedelta(minutes=80), WINDOW)
    windows: list[WindowRef] = []
    evidence: dict[str, list[int]] = {}
    for n in range(WORKSPACES):
        workspace_id, chat_id = f"so-{n}-{tag}", f"oc_so_{n}_{tag}"
        workspace(engine, workspace_id, (chat_id,), created_at=first - timedelta(minutes=5))
        for w in range(WINDOWS_PER_WORKSPACE):
            ref = WindowRef(workspace_id, chat_id, first + w * WINDOW)
            times = [ref.window_start + timedelta(minutes=1 + 2 * m) for m in range(3)]
            evidence.setdefault(workspace_id, []).extend(
                post(
                    engine,
                    times,
                    workspace_id=workspace_id,
                    chat_id=chat_id,
                    text=f"payments-api error rate step {w}: pool resized on shard {n}",
                )
            )
            windows.append(ref)
    return windows, evidence


def _delete_queue(queue: str) -> None:
    with Connection(BROKER) as connection:
        channel = connection.default_channel
        try:
            channel.queue_delete(queue)
        except Exception:  # never declared: nothing left behind
            return


def _both_online(queue: str) -> QueueState | None:
    state = measure_queue(BROKER, queue)
    return state if len(state.workers) == 2 else None


@pytest.fixture
def scale_out(
    pg_url: str, dagster_storage_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[ScaleOut]:
    tag = uuid.uuid4().hex[:8]
    queue = f"timeline-synthesis-test-{tag}"
    engine = make_engine(pg_url)
    windows, evidence = _seed(engine, tag, datetime.now(UTC))

    home = tmp_path / "dagster_home"
    home.mkdir()
    shutil.copy(REPO / "deploy" / "celery" / "dagster.yaml", home / "dagster.yaml")  # unchanged
    processes = Processes()
    port = free_port()
    graphql = DagsterGraphQL(f"http://127.0.0.1:{port}")
    workspace_args = ["-w", str(REPO / "workspace.yaml")]
    answer = tool_reply(one_finding)
    with AnthropicStandIn(default=answer) as standin:
        env = _process_env(
            {
                **SETTINGS_ENV,
                "DAGSTER_HOME": str(home),
                "DAGSTER_PG_URL": dagster_storage_url,
                "TIMELINE_DATABASE_URL": pg_url,
                "ANTHROPIC_API_KEY": standin.api_key,
                "ANTHROPIC_BASE_URL": standin.base_url,
                "TIMELINE_EXECUTOR": "celery",
                "TIMELINE_CELERY_BROKER_URL": BROKER,
                "TIMELINE_CELERY_QUEUE": queue,
            }
        )
        # `dagster-celery worker start` runs `celery` from PATH: this environment's.
        env["PATH"] = f"{BIN}:{env.get('PATH', '')}"
        monkeypatch.setenv("DAGSTER_PG_URL", dagster_storage_url)
        instance = dg.DagsterInstance.from_config(str(home))
        workers: list[Worker] = []
        core: list[ManagedProcess] = []
        try:
            for name, args in {
                "dagster-daemon": ["run", *workspace_args],
                "dagster-webserver": ["-h", "127.0.0.1", "-p", str(port), *workspace_args],
            }.items():
                command = [str(BIN / name), *args]
                log_path = tmp_path / f"{name}.log"
                core.append(
                    processes.start(
                        ManagedProcess(name, command, cwd=REPO, env=env, log_path=log_path)
                    )
                )
            for n in (1, 2):
                name = f"w{n}-{tag}"
                command = [
                    str(BIN / "dagster-celery"),
                    *("worker", "start", "-A", "dagster_celery.app"),
                    *("-y", str(REPO / "deploy" / "celery.yaml"), "-q", queue, "-n", name),
                    # Two test workers on one broker need not gossip with every other worker.
                    *("--", "--without-mingle", "--without-gossip"),
                ]
                log_path = tmp_path / f"celery-{name}.log"
                process = ManagedProcess(
                    f"celery worker {name}", command, cwd=tmp_path, env=env, log_path=log_path
                )
                workers.append(Worker(name, "", processes.start(process)))
            wait_for(
                "the webserver to answer GraphQL",
                graphql.answers,
                timeout=STARTUP_TIMEOUT,
                processes=processes,
            )
            repo = wait_for(
                "the code location to load in the webserver",
                graphql.repository,
                timeout=STARTUP_TIMEOUT,
                processes=processes,
            )
            online = wait_for(
                f"both Celery workers to consume {queue}",
                lambda: (lambda s: s if len(s.workers) == 2 else None)(
                    measure_queue(BROKER, queue)
                ),
                timeout=STARTUP_TIMEOUT,
                processes=processes,
            )
            for worker in workers:
                (worker.node,) = [s.name for s in online.workers if s.name.startswith(worker.name)]
            yield ScaleOut(
                graphql=graphql,
                repo=repo,
                engine=engine,
                instance=instance,
                processes=processes,
                core=core,
                standin=standin,
                queue=queue,
                workers=workers,
                windows=windows,
                evidence=evidence,
            )
        finally:
            processes.stop_all()
            graphql.close()
            instance.dispose()
            engine.dispose()
            _delete_queue(queue)


# --- what the workers say ------------------------------------------------------------------------


@dataclass(frozen=True)
class Step:
    worker: str
    run_id: str
    started: float
    ended: float | None
    state: str | None
    redelivered: bool


def worker_steps(worker: Worker) -> list[Step]:
    """The worker's own step log lines (timeline_pipeline.orchestration.celery_worker), paired
    by task id; a step still open when its worker was killed ends at the kill."""
    text = worker.process.log_path.read_text(encoding="utf-8", errors="replace")
    started: dict[str, dict[str, Any]] = {}
    finished: dict[str, dict[str, Any]] = {}
    for line in text.splitlines():
        start = line.find('{"')
        if start < 0 or "celery.step." not in line:
            continue
        record = json.loads(line[start:])
        if record["event"] == STARTED:
            started[record["task_id"]] = record
        elif record["event"] == FINISHED:
            finished[record["task_id"]] = record
    steps = []
    for task_id, record in started.items():
        end = finished.get(task_id)
        steps.append(
            Step(
                worker=record["worker"],
                run_id=record["run_id"],
                started=float(record["at"]),
                ended=float(end["at"]) if end else worker.killed_at,
                state=end["state"] if end else None,
                redelivered=bool(record["redelivered"]),
            )
        )
    return sorted(steps, key=lambda step: step.started)


def peak(steps: list[Step]) -> int:
    spans = []
    for step in steps:
        assert step.ended is not None, f"step of run {step.run_id} on {step.worker} never ended"
        spans.append((step.started, step.ended))
    events = sorted([(s, 1) for s, _ in spans] + [(e, -1) for _, e in spans])
    most = current = 0
    for _, change in events:
        current += change
        most = max(most, current)
    return most


# --- phases --------------------------------------------------------------------------------------


def synthesis_runs(d: ScaleOut) -> list[Run]:
    return d.graphql.runs(job=SYNTHESIS_JOB)


def runs_are_queued_behind_the_limits(d: ScaleOut) -> list[Run]:
    def queued() -> list[Run] | None:
        runs = synthesis_runs(d)
        return runs if any(run.status == "QUEUED" for run in runs) else None

    return wait_for(
        "synthesis runs waiting in the run queue",
        queued,
        timeout=240,
        processes=d.processes,
        interval=2.0,
        describe=lambda: str(Counter(run.status for run in synthesis_runs(d))),
    )


def the_workers_asset_shows_the_backlog_and_the_workers(d: ScaleOut) -> None:
    run_id = d.graphql.launch_run(d.repo, WORKERS_JOB, "{}", {})

    def done() -> Run | None:
        runs = [run for run in d.graphql.runs(job=WORKERS_JOB) if run.run_id == run_id]
        return runs[0] if runs and runs[0].status in FINISHED_RUN else None

    run = wait_for(
        f"the run of {WORKERS_JOB}", done, timeout=240, processes=d.processes, interval=2.0
    )
    assert run.status == "SUCCESS", run
    records = d.instance.all_logs(run_id)
    (materialization,) = [
        r.dagster_event.step_materialization_data.materialization
        for r in records
        if r.dagster_event is not None
        and r.dagster_event.event_type is dg.DagsterEventType.ASSET_MATERIALIZATION
    ]
    assert materialization.asset_key == WORKERS_KEY
    metadata = {key: value.value for key, value in materialization.metadata.items()}
    assert metadata["queue"] == d.queue
    assert metadata["workers_online"] == 2
    assert metadata["worker_capacity"] == 2 * WORKER_CONCURRENCY
    assert (
        metadata["dagster_queued_synthesis_runs"] + metadata["dagster_started_synthesis_runs"] > 0
    )
    listed = {row.data["worker"] for row in metadata["workers"].records}
    assert listed == {worker.node for worker in d.workers}
    checks = {
        r.dagster_event.event_specific_data.check_name: r.dagster_event.event_specific_data.passed
        for r in records
        if r.dagster_event is not None
        and r.dagster_event.event_type is dg.DagsterEventType.ASSET_CHECK_EVALUATION
    }
    assert checks == {WORKERS_ONLINE_CHECK: True, QUEUE_CAPACITY_CHECK: True}
    d.figures["workers_asset"] = {
        k: metadata[k]
        for k in ("queue_waiting_steps", "dagster_queued_synthesis_runs", "worker_active_steps")
    }


def both_workers_finish_a_step(d: ScaleOut) -> None:
    def both() -> bool:
        return all(
            any(step.state == "SUCCESS" for step in worker_steps(worker)) for worker in d.workers
        )

    wait_for(
        "both workers to finish a synthesis step",
        both,
        timeout=300,
        processes=d.processes,
        interval=2.0,
        describe=lambda: str({w.name: len(worker_steps(w)) for w in d.workers}),
    )


def window_of_evidence(d: ScaleOut, evidence_id: int) -> WindowRef:
    with d.engine.connect() as conn:
        row = conn.execute(
            select(ev.c.workspace_id, ev.c.scope_key, ev.c.occurred_at).where(
                ev.c.id == evidence_id
            )
        ).one()
    return WindowRef(row.workspace_id, row.scope_key, window_start_of(row.occurred_at, WINDOW))


def state_of(d: ScaleOut, ref: WindowRef) -> Any:
    with d.engine.connect() as conn:
        return conn.execute(
            select(ss).where(
                ss.c.workspace_id == ref.workspace_id,
                ss.c.scope_key == ref.chat_id,
                ss.c.window_start == ref.window_start,
            )
        ).one()


HELD_CALL = 9
"""The model call held open for the kill: after two rounds of the workers' four slots, so both
workers have finished steps by then, and before the twelfth window, so one is always left. It
is scripted from the start: holding "the next call" once both workers had finished a step
raced the backlog, which could drain before the hold was in place. The phases before the kill
can outlast the client's timeout on a loaded machine; `a_held_call_in_flight` then holds the
next call, which the deferred window guarantees."""

KILL_MARGIN_SECONDS = 3.0
"""A held call is killed only while this much of the client's timeout is left, so that the
kill lands in the middle of the call and not after the client gave up on it."""


def hold_a_later_call(d: ScaleOut) -> None:
    made = len(d.standin.requests)
    assert made < HELD_CALL - 1, f"{made} model calls already made: the held call came too late"
    answers = [tool_reply(one_finding)] * (HELD_CALL - 1 - made)
    d.standin.enqueue(*answers, SlowReply(HANG_SECONDS, tool_reply(one_finding)))
    d.figures["holds"] = 1


def a_held_call_in_flight(d: ScaleOut) -> ReceivedRequest | None:
    """The latest held call while the client still waits for it; if the earlier phases outlasted
    it (the client timed out, and its window was deferred without using an attempt), hold the
    next call: the deferred window comes back, so there is always a next call to hold."""
    held = [r for r in list(d.standin.requests) if isinstance(r.reply, SlowReply)]
    if len(held) < d.figures["holds"]:
        return None  # the held call has not come yet
    latest = held[-1]
    if time.monotonic() - latest.received_at < MODEL_TIMEOUT_SECONDS - KILL_MARGIN_SECONDS:
        return latest
    d.standin.enqueue(SlowReply(HANG_SECONDS, tool_reply(one_finding)))
    d.figures["holds"] += 1
    return None


def kill_the_worker_of_a_held_call(d: ScaleOut) -> tuple[WindowRef, str, Worker]:
    """Wait for a held model call, then SIGKILL the worker whose step made it."""
    held = wait_for(
        "a held model call in flight",
        lambda: a_held_call_in_flight(d),
        timeout=240,
        processes=d.processes,
        interval=0.5,
        describe=lambda: f"{len(d.standin.requests)} calls, {d.figures['holds']} held",
    )
    ref = window_of_evidence(d, cited_ids(held.body)[0])
    state = state_of(d, ref)
    assert state.status == "processing", state
    run_id = str(state.lease_owner)
    (run,) = [run for run in synthesis_runs(d) if run.run_id == run_id]
    node = run.tags[WORKER_TAG]
    assert run.tags[QUEUE_TAG] == d.queue
    (victim,) = [worker for worker in d.workers if worker.node == node]
    assert victim.process.kill() == -9
    victim.killed_at = time.time()
    d.figures["killed"] = {"worker": victim.name, "run": run_id, "window": ref.partition_key}
    return ref, run_id, victim


def the_dead_runs_step_is_handed_back_and_its_run_ends(
    d: ScaleOut, run_id: str, victim: Worker
) -> None:
    survivor = next(worker for worker in d.workers if worker is not victim)

    def ended() -> Run | None:
        runs = [run for run in synthesis_runs(d) if run.run_id == run_id]
        return runs[0] if runs and runs[0].status in FINISHED_RUN else None

    run = wait_for(
        f"the run {run_id} whose worker was killed to end",
        ended,
        timeout=240,
        interval=2.0,
        processes=d.processes,
    )
    retried = [step for step in worker_steps(survivor) if step.run_id == run_id]
    assert retried and retried[-1].redelivered, "the surviving worker never got the step back"
    assert run.tags[WORKER_TAG] == survivor.node
    d.figures["dead_run_status"] = run.status


def every_window_completes(d: ScaleOut) -> None:
    def done() -> bool:
        with d.engine.connect() as conn:
            statuses = conn.execute(
                select(ss.c.status).where(
                    ss.c.workspace_id.in_({ref.workspace_id for ref in d.windows}),
                    ss.c.window_start.is_not(None),
                )
            ).scalars()
            finished = [status for status in statuses if status == "completed"]
        runs = synthesis_runs(d)
        return len(finished) == len(d.windows) and all(r.status in FINISHED_RUN for r in runs)

    wait_for(
        f"all {len(d.windows)} windows to complete and every run to end",
        done,
        timeout=900,
        processes=d.processes,
        interval=2.0,
    )


def nothing_lost_or_duplicated(d: ScaleOut, killed: WindowRef) -> None:
    with d.engine.connect() as conn:
        states = conn.execute(
            select(ss.c.workspace_id, ss.c.scope_key, ss.c.window_start, ss.c.status).where(
                ss.c.workspace_id.in_({ref.workspace_id for ref in d.windows}),
                ss.c.window_start.is_not(None),
            )
        ).all()
    assert len(states) == len(d.windows), "a window state is missing or doubled"
    assert {s.status for s in states} == {"completed"}
    assert state_of(d, killed).attempt_count == 2, "the killed window was not retried once"
    for key in d.partition_keys:
        runs = d.graphql.materialization_runs(ASSET, key)
        assert len(runs) == 1, f"window {key} materialized {len(runs)} times"
    for workspace_id, ids in d.evidence.items():
        fingerprints = Counter(fp for *_, fp in entry_rows(d.engine, workspace_id))
        assert fingerprints and all(n == 1 for n in fingerprints.values()), fingerprints
        assert binding_counts(d.engine, workspace_id) == Counter({i: 1 for i in ids})


def the_limits_held_and_both_workers_worked(d: ScaleOut) -> None:
    runs = synthesis_runs(d)
    assert all(run.status in FINISHED_RUN for run in runs)
    groups = concurrency.by_tag(runs, TAG_WORKSPACE)
    for workspace_id, group in groups.items():
        assert concurrency.max_running(group) <= 1, (
            f"runs of {workspace_id} overlapped: {concurrency.overlapping_pairs(group)}"
        )
    assert concurrency.max_waiting(runs) > SYNTHESIS_LIMIT, "the queue never held a backlog"
    assert concurrency.max_running(runs) <= SYNTHESIS_LIMIT
    steps = {worker.name: worker_steps(worker) for worker in d.workers}
    for worker in d.workers:
        assert steps[worker.name], f"worker {worker.name} executed no step"
        assert {step.worker for step in steps[worker.name]} == {worker.node}
        most = peak(steps[worker.name])
        assert most <= WORKER_CONCURRENCY, f"{worker.name} ran {most} steps at once"
        d.figures[f"{worker.name}_steps"] = len(steps[worker.name])
        d.figures[f"{worker.name}_peak"] = most
    # Every run that reached a worker carries the worker that last ran its step. (On a loaded
    # machine the daemon may fail to launch a run at all: it ends failed without a step, and the
    # sensor requests its window again, which the checks above have seen complete.)
    last_worker: dict[str, str] = {}
    for step in sorted((s for listed in steps.values() for s in listed), key=lambda s: s.started):
        last_worker[step.run_id] = step.worker
    by_id = {run.run_id: run for run in runs}
    for run_id, node in last_worker.items():
        assert by_id[run_id].tags.get(WORKER_TAG) == node, f"run {run_id} is not tagged {node}"
        assert by_id[run_id].tags.get(QUEUE_TAG) == d.queue
    assert set(last_worker.values()) == {worker.node for worker in d.workers}
    succeeded = {run.run_id for run in runs if run.status == "SUCCESS"}
    assert succeeded <= last_worker.keys(), "a run succeeded without any worker running its step"
    d.figures["runs"] = len(runs)
    d.figures["runs_failed_to_launch"] = len([r for r in runs if r.run_id not in last_worker])
    d.figures["max_running"] = concurrency.max_running(runs)


# --- the test ------------------------------------------------------------------------------------


def test_two_celery_workers_drain_a_backlog_and_a_killed_worker_loses_nothing(
    scale_out: ScaleOut,
) -> None:
    d = scale_out
    began = time.monotonic()
    runs_are_queued_behind_the_limits(d)
    hold_a_later_call(d)
    the_workers_asset_shows_the_backlog_and_the_workers(d)
    both_workers_finish_a_step(d)
    killed, run_id, victim = kill_the_worker_of_a_held_call(d)
    d.processes = Processes()  # from here on the killed worker's absence is expected
    for process in [*d.core, *(w.process for w in d.workers if w is not victim)]:
        d.processes.start(process)
    the_dead_runs_step_is_handed_back_and_its_run_ends(d, run_id, victim)
    every_window_completes(d)
    nothing_lost_or_duplicated(d, killed)
    the_limits_held_and_both_workers_worked(d)
    d.figures["seconds"] = round(time.monotonic() - began)
    print(f"scale-out system test figures: {d.figures}")
