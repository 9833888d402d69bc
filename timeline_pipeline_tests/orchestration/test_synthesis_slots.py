"""`maxConcurrentSynthesis` holds for rerun previews and Dagster window runs together (issue
35, item 4; docs/dagster.md, "Concurrency"): a window run whose synthesizer calls a model holds
a synthesis slot of the database (`db.synthesis_slots`) from its first chunk call to the
window's end, the same slots a preview batch holds, so with one slot a preview and a window
never call the model side by side; when no slot comes free within the bounded wait the window
is deferred with backoff, its attempt given back. On PostgreSQL (advisory locks, which end with
their session: a killed run leaks nothing); on SQLite a window run takes no slot (a preview
batch holds the single write lock instead), and the window runs as before.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
from sqlalchemy import Engine, func, select, text

from timeline_pipeline.db.engine import make_engine
from timeline_pipeline.db.schema import window_rerun_previews as pv
from timeline_pipeline.db.synthesis_slots import (
    SLOT_NAMESPACE,
    hold_synthesis_slot,
    take_synthesis_slot,
)
from timeline_pipeline.domain.window_keys import WindowRef
from timeline_pipeline.maintenance.processors import default_registry
from timeline_pipeline.maintenance.service import JobService
from timeline_pipeline.orchestration.resources import DatabaseResource, TimelineSettingsResource
from timeline_pipeline.orchestration.windows import (
    DISCOVERY_SENSOR,
    SYNTHESIS_JOB,
    SynthesizerResource,
    window_defs,
)
from timeline_pipeline.settings import load_timeline_settings
from timeline_pipeline.synthesis.contract import (
    SynthesisChunk,
    SynthesisRejected,
    SynthesisResult,
    SynthesisUnavailable,
)
from timeline_pipeline.synthesis.rules import RuleSynthesizer
from timeline_pipeline.synthesis_run.runner import RunStatus, WindowRunner
from timeline_pipeline_tests.curation.support import NOW, ROLLBACK, W1, W2, incident, say
from timeline_pipeline_tests.maintenance.support import FAST, SteppingClock
from timeline_pipeline_tests.support.anthropic_standin import (
    AnthropicStandIn,
    cite_first_evidence,
    tool_reply,
)
from timeline_pipeline_tests.windows.support import settings, window_states

REPO = Path(__file__).resolve().parents[2]
ONE_SLOT: dict[str, Any] = {
    "enabled": True,
    "max_concurrent_synthesis": 1,
    "synthesis_chunk_max_attempts": 1,
    # The window run's wait for a slot is bounded by its own bound on a model call.
    "model_timeout": "2s",
}


class ModelStandIn(RuleSynthesizer):
    """Stands for a model (the rules' drafts under a model's name, so it takes a slot); each
    call can be held open until the test lets it go, and can fail as told."""

    name = "model-standin"

    def __init__(self, *, hold: bool = False, fail: Exception | None = None) -> None:
        super().__init__()
        self.entered = threading.Event()
        self.release = threading.Event()
        if not hold:
            self.release.set()
        self.fail = fail
        self.calls = 0

    def synthesize(self, chunk: SynthesisChunk) -> SynthesisResult:
        self.calls += 1
        self.entered.set()
        assert self.release.wait(30), "the test never let the call go"
        if self.fail is not None:
            raise self.fail
        return super().synthesize(chunk)


class FakeTime:
    """A timer that a sleep moves forward, so a bounded wait ends at once."""

    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds

    def timer(self) -> float:
        return self.now


def held_slots(engine: Engine) -> int:
    """Synthesis slots held now, by any session (PostgreSQL's lock table)."""
    with engine.connect() as conn:
        return int(
            conn.execute(
                text(
                    "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' "
                    "AND granted AND classid = :ns"
                ),
                {"ns": SLOT_NAMESPACE},
            ).scalar_one()
        )


def scratch_rows(engine: Engine) -> int:
    with engine.connect() as conn:
        return int(conn.execute(select(func.count()).select_from(pv)).scalar_one())


def preview_service(engine: Engine, synthesizer: ModelStandIn) -> JobService:
    return JobService(
        engine,
        default_registry(settings(**ONE_SLOT), synthesizer=lambda: synthesizer),
        clock=SteppingClock(NOW),
    )


def window_runner(engine: Engine, synthesizer: Any, **kw: Any) -> WindowRunner:
    return WindowRunner(engine, settings(**ONE_SLOT), synthesizer, **kw)


# --- the seam ------------------------------------------------------------------------------------


def test_a_taken_slot_is_shared_with_previews_and_a_bounded_wait_gives_up(pg_url: str) -> None:
    engine = make_engine(pg_url)
    clock = FakeTime()
    try:
        held = take_synthesis_slot(engine, 2, wait_seconds=0, sleep=clock.sleep, timer=clock.timer)
        assert held is not None and held.number == 0
        with engine.connect() as preview, preview.begin():
            assert hold_synthesis_slot(preview, 2, holder="job-1") == 1  # the other one
            # Both held: a window run waits its bound, polling, then gives up.
            assert (
                take_synthesis_slot(engine, 2, wait_seconds=3, sleep=clock.sleep, timer=clock.timer)
                is None
            )
            assert clock.now == 3 and len(clock.slept) == 6
        held.release()
        held.release()  # idempotent
        assert held_slots(engine) == 0
    finally:
        engine.dispose()


def test_on_sqlite_there_is_no_slot_to_take(tmp_path: Path) -> None:
    """SQLite: a preview batch holds the single write lock (BEGIN IMMEDIATE) to its end, so a
    window run can neither claim nor commit beside it; the slots have nothing to add."""
    from timeline_pipeline.db.migrate import upgrade

    engine = make_engine(f"sqlite:///{tmp_path / 'timeline.db'}", null_pool=True)
    upgrade(engine)
    clock = FakeTime()
    held = take_synthesis_slot(engine, 1, wait_seconds=5, sleep=clock.sleep, timer=clock.timer)
    assert held is not None and held.number is None and clock.slept == []
    held.release()
    engine.dispose()


# --- a window run and a preview, each holding the only slot ---------------------------------------


@pytest.mark.parametrize("end", ["completed", "deferred", "failed"])
def test_a_window_run_gives_its_slot_back_however_the_window_ends(engine: Engine, end: str) -> None:
    incident(engine)
    say(engine, W1, [ROLLBACK])
    fail = {
        "completed": None,
        "deferred": SynthesisUnavailable("overloaded", retry_after=1.0),
        "failed": SynthesisRejected("bad_request"),
    }[end]
    synthesizer = ModelStandIn(fail=fail)
    report = window_runner(engine, synthesizer).run(WindowRef("inc-1", "oc_chat", W1), owner="r")
    assert synthesizer.calls == 1
    assert report.status.value == end
    if engine.dialect.name == "postgresql":
        assert held_slots(engine) == 0


def test_a_window_run_holding_the_only_slot_pauses_a_preview_until_the_window_ends(
    pg_url: str,
) -> None:
    engine = make_engine(pg_url)
    incident(engine)
    say(engine, W1, [ROLLBACK])
    window_model = ModelStandIn(hold=True)
    reports: list[Any] = []
    running = threading.Thread(
        target=lambda: reports.append(
            window_runner(engine, window_model).run(WindowRef("inc-1", "oc_chat", W1), owner="r")
        )
    )
    running.start()
    try:
        assert window_model.entered.wait(10)
        assert held_slots(engine) == 1
        preview_model = ModelStandIn()
        svc = preview_service(engine, preview_model)
        job, _ = svc.create(
            job_type="window_rerun",
            idempotency_key="preview-beside-a-window",
            parameters={"workspace_id": "inc-1", "processor_version": "model-v2"},
            limits=FAST,
        )
        paused = svc.advance(job.id, revision=job.revision)
        # It waited its lock timeout for the slot, made no model call and wrote nothing.
        assert paused.status == "paused" and paused.error is not None
        assert (paused.error["sqlstate"], paused.error["retryable"]) == ("55P03", True)
        assert preview_model.calls == 0 and scratch_rows(engine) == 0
    finally:
        window_model.release.set()
        running.join(30)
    assert reports[0].status is RunStatus.COMPLETED
    assert held_slots(engine) == 0
    job = svc.resume(paused.id, revision=paused.revision)
    for _ in range(10):
        if job.status != "ready":
            break
        job = svc.advance(job.id, revision=job.revision)
    assert job.status == "completed", job.error
    assert preview_model.calls > 0 and scratch_rows(engine) > 0
    engine.dispose()


@pytest.fixture
def standin() -> Iterator[AnthropicStandIn]:
    with AnthropicStandIn(default=tool_reply(cite_first_evidence)) as made:
        yield made


def one_slot_defs(db_url: str, standin: AnthropicStandIn) -> dg.Definitions:
    resources = dg.Definitions(
        resources={
            "database": DatabaseResource(url=db_url),
            "timeline_settings": TimelineSettingsResource(overrides=ONE_SLOT),
        }
    )
    synthesizer = SynthesizerResource(api_key=standin.api_key, base_url=standin.base_url)
    return dg.Definitions.merge(
        resources, window_defs(load_timeline_settings(**ONE_SLOT), synthesizer)
    )


def run_the_sensors_batch(defs: dg.Definitions, instance: dg.DagsterInstance) -> Any:
    """One discovery tick, its partitions added and its one run executed as the daemon would."""
    sensor = defs.resolve_sensor_def(DISCOVERY_SENSOR)
    with dg.build_sensor_context(
        instance_ref=instance.get_ref(), definitions=defs, resources=defs.resources
    ) as context:
        tick = sensor.evaluate_tick(context)
    for request in tick.dynamic_partitions_requests or []:
        instance.add_dynamic_partitions(request.partitions_def_name, list(request.partition_keys))
    (run,) = tick.run_requests or []
    return defs.resolve_job_def(SYNTHESIS_JOB).execute_in_process(
        instance=instance,
        partition_key=run.partition_key,
        tags=dict(run.tags),
        run_config=run.run_config,
        raise_on_error=False,
    )


def test_a_preview_holding_the_only_slot_defers_a_dagster_batch_instead_of_synthesizing(
    pg_url: str, standin: AnthropicStandIn
) -> None:
    """A listener preview (outside Dagster) calls the model; the Dagster batch run of two
    windows, admitted by its run queue, finds no slot: it waits its bound for the first window,
    then defers both without a model call and without an attempt charged. Once the preview's
    batch ends, the windows run."""
    engine = make_engine(pg_url)
    incident(engine)
    say(engine, W1, [ROLLBACK])
    say(engine, W2, [ROLLBACK])
    preview_model = ModelStandIn(hold=True)
    svc = preview_service(engine, preview_model)
    job, _ = svc.create(
        job_type="window_rerun",
        idempotency_key="preview-beside-a-batch",
        parameters={"workspace_id": "inc-1", "processor_version": "model-v2"},
        limits=FAST,
    )
    previewing = threading.Thread(target=lambda: svc.advance(job.id, revision=job.revision))
    previewing.start()
    try:
        assert preview_model.entered.wait(10)
        with dg.instance_for_test() as instance:
            result = run_the_sensors_batch(one_slot_defs(pg_url, standin), instance)
        assert result.success  # a deferral is no failure
        assert standin.requests == []  # no model call beside the preview's
        states = window_states(engine)
        assert len(states) == 2
        for state in states.values():
            assert (state.status, state.attempt_count, state.deferred) == ("pending", 0, True)
            assert "no synthesis slot free" in (state.last_error or "")
    finally:
        preview_model.release.set()
        previewing.join(30)
    assert held_slots(engine) == 0
    # The slot is free again: the deferred windows run (the sensor requests them once their
    # backoff ends; here a runner claims them directly).
    runner = WindowRunner(
        engine, settings(**ONE_SLOT), ModelStandIn(), clock=lambda: NOW + timedelta(hours=1)
    )
    for start in (W1, W2):
        report = runner.run(WindowRef("inc-1", "oc_chat", start), owner="later")
        assert report.status is RunStatus.COMPLETED
    engine.dispose()


def test_once_a_wait_ran_out_a_batch_defers_its_later_windows_without_waiting(
    pg_url: str,
) -> None:
    engine = make_engine(pg_url)
    incident(engine)
    say(engine, W1, [ROLLBACK])
    say(engine, W2, [ROLLBACK])
    clock = FakeTime()
    model = ModelStandIn()
    runner = window_runner(engine, model, sleep=clock.sleep, timer=clock.timer)
    with engine.connect() as preview, preview.begin():
        assert hold_synthesis_slot(preview, 1, holder="preview") == 0
        first = runner.run(WindowRef("inc-1", "oc_chat", W1), owner="batch")
        assert sum(clock.slept) == 2.0  # modelTimeout: the run's own bound on one call
        second = runner.run(WindowRef("inc-1", "oc_chat", W2), owner="batch")
        assert sum(clock.slept) == 2.0  # tried once, no second wait
    assert first.status is second.status is RunStatus.DEFERRED
    assert model.calls == 0
    # The preview's batch ended: the same runner takes the slot again.
    third = runner.run(WindowRef("inc-1", "oc_chat", W1), owner="batch")
    assert third.status is RunStatus.COMPLETED and model.calls == 1
    assert held_slots(engine) == 0
    engine.dispose()


# --- a crash ------------------------------------------------------------------------------------

KILLED_RUN = textwrap.dedent(
    """
    import sys, threading
    from pathlib import Path
    from timeline_pipeline.db.engine import make_engine
    from timeline_pipeline.domain.window_keys import WindowRef
    from timeline_pipeline.settings import load_timeline_settings
    from timeline_pipeline.synthesis.rules import RuleSynthesizer
    from timeline_pipeline.synthesis_run.runner import WindowRunner
    from datetime import datetime

    url, start, flag = sys.argv[1], datetime.fromisoformat(sys.argv[2]), Path(sys.argv[3])

    class Hanging(RuleSynthesizer):
        name = "model-standin"

        def synthesize(self, chunk):
            flag.write_text("calling")
            threading.Event().wait()  # killed here, holding the slot

    settings = load_timeline_settings(enabled=True, max_concurrent_synthesis=1)
    WindowRunner(make_engine(url), settings, Hanging()).run(
        WindowRef("inc-1", "oc_chat", start), owner="doomed"
    )
    """
)


def test_a_killed_window_runs_slot_ends_with_its_process(pg_url: str, tmp_path: Path) -> None:
    engine = make_engine(pg_url)
    incident(engine)
    say(engine, W1, [ROLLBACK])
    say(engine, W2, [ROLLBACK])
    flag = tmp_path / "flag"
    doomed = subprocess.Popen(
        [sys.executable, "-c", KILLED_RUN, pg_url, W1.isoformat(), str(flag)],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    try:
        deadline = time.monotonic() + 60
        while not flag.exists():
            assert doomed.poll() is None, "the run ended before its model call"
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert held_slots(engine) == 1
    finally:
        doomed.send_signal(signal.SIGKILL)
        doomed.wait(30)
    # Its session ends with it, and the slot with the session: the next run takes it at once.
    report = window_runner(engine, ModelStandIn(), slot_wait=timedelta(seconds=10)).run(
        WindowRef("inc-1", "oc_chat", W2), owner="next"
    )
    assert report.status is RunStatus.COMPLETED
    assert held_slots(engine) == 0
    engine.dispose()
