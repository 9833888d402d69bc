"""The fault suite, synthesis half: a run killed mid-chunk and an AI outage across many windows
(docs/design.md §6, §7, §9, §11), on real processes, a real Dagster instance, the real
anthropic SDK against the loopback stand-in, and both databases.

What the product does after a crash, measured here: the stale window is re-queued by the sensor
and the next run RESUMES AFTER THE LAST COMMITTED CHUNK (the window cursor, docs/design.md §5);
the window is the unit of scheduling and retry, but its committed chunks are not synthesized again.
No entry is duplicated either way: a chunk's drafts commit with the cursor in one transaction.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
from sqlalchemy import Engine

from timeline_pipeline.db.engine import make_engine
from timeline_pipeline.db.migrate import upgrade
from timeline_pipeline.domain.window_keys import (
    WindowRef,
    decode_window_cursor,
    parse_partition_key,
    window_start_of,
)
from timeline_pipeline.orchestration.windows import SYNTHESIS_JOB, SynthesizerResource
from timeline_pipeline.settings import load_settings
from timeline_pipeline.synthesis_run.runner import RunStatus, WindowRunner
from timeline_pipeline.windows.discovery import DiscoveryTick
from timeline_pipeline.windows.planning import DiscoveryCursor
from timeline_pipeline.windows.run_queue import lane_of
from timeline_pipeline_tests.faults.synthesis_support import (
    RunProcess,
    binding_counts,
    cited_ids,
    dagster_home,
    defs_for,
    entry_rows,
    entry_shapes,
    evidence_snapshot,
    find_window_state,
    finding_and_action,
    one_finding,
    request_tags,
    run_process_env,
    seconds_until,
    sensor_tick,
    wait_until,
    window_state,
)
from timeline_pipeline_tests.support.anthropic_standin import (
    AnthropicStandIn,
    SlowReply,
    overloaded,
    tool_reply,
)
from timeline_pipeline_tests.support.windows import WINDOW
from timeline_pipeline_tests.windows.support import post, workspace

pytestmark = [pytest.mark.fault, pytest.mark.slow]

Report = Callable[[str], None]


# --- 1. kill -9 of a synthesis run in the middle of a chunk --------------------------------------

KILL_MESSAGES = 30
KILL_BATCH = 8  # chunks of 8, 8, 8 and 6 evidence rows
KILL_SETTINGS: dict[str, Any] = {
    "enabled": True,
    "evidence_batch_limit": KILL_BATCH,
    "synthesis_chunk_max_attempts": 1,
    # The hung call must outlive the kill: the model timeout is long next to the ~0.1 s between
    # the stand-in receiving the call and the kill, and the stale timeout must exceed it.
    "model_timeout": "8s",
    "synthesis_stale_timeout": "10s",
    "retry_backoff_base": "10ms",
    "retry_backoff_cap": "20ms",
}
STALE = timedelta(seconds=10)
HANG_SECONDS = 600.0


def kill_chat(engine: Engine, window: datetime) -> list[int]:
    """One workspace, one chat, 30 messages 15 s apart inside one window."""
    workspace(engine, created_at=window - timedelta(hours=2))
    ids: list[int] = []
    for n in range(KILL_MESSAGES):
        at = window + timedelta(seconds=15 * n)
        ids += post(engine, [at], text=f"payments-api step {n}: pool resized on shard {n}")
    return ids


def clean_database(request: pytest.FixtureRequest, db_url: str, tmp_path: Path) -> str:
    """A second, freshly migrated database of the same kind as `db_url`."""
    if db_url.startswith("postgresql"):
        return str(request.getfixturevalue("pg_url"))
    url = f"sqlite:///{tmp_path / 'clean.db'}"
    made = make_engine(url, null_pool=True)
    upgrade(made)
    made.dispose()
    return url


def test_a_run_killed_mid_chunk_is_requeued_after_the_stale_timeout_and_finishes_without_duplicates(
    db_url: str,
    engine: Engine,
    tmp_path: Path,
    request: pytest.FixtureRequest,
    fault_report: Report,
) -> None:
    now = datetime.now(UTC)
    window = window_start_of(now - timedelta(hours=1), WINDOW)
    ref = WindowRef("inc-1", "oc_chat", window)
    ids = kill_chat(engine, window)
    evidence_before = evidence_snapshot(engine)
    home = dagster_home(tmp_path / "dagster")
    answer = tool_reply(finding_and_action)
    runs: list[RunProcess] = []

    with (
        AnthropicStandIn(
            script=[answer, answer, SlowReply(HANG_SECONDS, answer)], default=answer
        ) as standin,
        dg.DagsterInstance.from_config(str(home)) as instance,
    ):
        defs = defs_for(db_url, KILL_SETTINGS, standin)
        env = run_process_env(db_url, home, standin, KILL_SETTINGS)
        try:
            # The sensor discovers the closed window and requests its run ...
            first = sensor_tick(defs, instance, None)
            (requested,) = first.run_requests or []
            assert requested.partition_key == ref.partition_key
            # ... which runs in its own process, like a run the daemon launched.
            victim = RunProcess(
                env=env,
                partition_key=ref.partition_key,
                tags=request_tags(requested),
                run_config=requested.run_config,
                workdir=tmp_path,
                name="victim",
            )
            runs.append(victim)
            wait_until(
                lambda: len(standin.requests) >= 3 or not victim.alive(),
                180,
                "the run to reach its third chunk",
            )
            assert victim.alive(), f"the run ended early:\n{victim.tail(15)}"
            code = victim.kill()  # the run is inside the model call of chunk 3 of 4
            killed_at = time.monotonic()
            assert code == -9

            # What the kill left: two chunks committed with the cursor, the third not started.
            state = window_state(engine, ref)
            assert (state.status, state.attempt_count) == ("processing", 1)
            assert state.lease_owner and state.processing_started_at is not None
            # Dagster itself still records the dead run as started: nothing reports its end.
            dead = instance.get_run_by_id(state.lease_owner)
            assert dead is not None and dead.status is dg.DagsterRunStatus.STARTED
            assert state.last_seen_cursor is not None
            assert decode_window_cursor(state.last_seen_cursor)[1] == ids[2 * KILL_BATCH - 1]
            assert state.metadata["chunk_count"] == 2
            assert [cited_ids(r.body) for r in standin.requests] == [
                ids[0:8],
                ids[8:16],
                ids[16:24],
            ]
            at_kill = binding_counts(engine, "inc-1")
            assert at_kill == Counter({evidence_id: 1 for evidence_id in ids[:16]})
            entries_at_kill = len(entry_rows(engine, "inc-1"))
            assert entries_at_kill == 4

            # Within the stale timeout, discovery counts the window as in flight and leaves it.
            early = DiscoveryTick(
                engine,
                load_settings(**KILL_SETTINGS).timeline,
                DiscoveryCursor.from_json(first.cursor),
                state.processing_started_at + STALE / 2,
            ).run()
            assert early.requests == [] and early.counts["in_flight"] == 1

            # The process is really gone: nothing calls the model or moves the state any more.
            stale_at = state.processing_started_at + STALE
            wait_until(
                lambda: seconds_until(stale_at, datetime.now(UTC)) == 0,
                60,
                "the stale timeout",
            )
            assert len(standin.requests) == 3
            assert window_state(engine, ref).revision == state.revision

            # After it, the real sensor re-queues the window and requests a new run.
            second = sensor_tick(defs, instance, first.cursor)
            (retry,) = second.run_requests or []
            requeued_after = time.monotonic() - killed_at
            assert retry.partition_key == ref.partition_key
            assert retry.run_key != requested.run_key
            requeued = window_state(engine, ref)
            assert (requeued.status, requeued.attempt_count) == ("pending", 1)
            assert requeued.last_seen_cursor == state.last_seen_cursor
            # ...and ends the dead run in Dagster, so it stops holding its workspace's slot.
            released = instance.get_run_by_id(state.lease_owner)
            assert released is not None and released.status is dg.DagsterRunStatus.FAILURE

            rerun = RunProcess(
                env=env,
                partition_key=ref.partition_key,
                tags=request_tags(retry),
                run_config=retry.run_config,
                workdir=tmp_path,
                name="retry",
            )
            runs.append(rerun)
            assert rerun.wait(180) == 0, f"the retry run failed:\n{rerun.tail(15)}"
        finally:
            for run in runs:
                run.stop()

        # The retry resumed after the last committed chunk: chunks 3 and 4 only.
        retry_calls = [cited_ids(r.body) for r in standin.requests[3:]]
        assert retry_calls == [ids[16:24], ids[24:30]]
        done = window_state(engine, ref)
        assert (done.status, done.attempt_count) == ("completed", 2)
        assert done.metadata["chunk_count"] == 4 and done.metadata["evidence_count"] == 30
        event = instance.get_latest_materialization_event(dg.AssetKey("timeline_window_drafts"))
        assert event is not None and event.asset_materialization is not None
        lineage = {k: v.value for k, v in event.asset_materialization.metadata.items()}
        assert lineage["resumed_after"] == state.last_seen_cursor
        assert lineage["evidence_ids"] == ids and lineage["chunks"] == 4

        # No duplicates: one entry per fingerprint, each evidence row bound exactly once.
        made = entry_rows(engine, "inc-1")
        fingerprints = Counter(fingerprint for *_, fingerprint in made)
        assert all(count == 1 for count in fingerprints.values())
        assert binding_counts(engine, "inc-1") == Counter({i: 1 for i in ids})
        assert evidence_snapshot(engine) == evidence_before

        # The same window synthesized once, cleanly, on a fresh database, with the same answers.
        clean_url = clean_database(request, db_url, tmp_path)
        clean = make_engine(clean_url)
        try:
            clean_ids = kill_chat(clean, window)
            settings = load_settings(**KILL_SETTINGS)
            synthesizer = SynthesizerResource(
                api_key=standin.api_key, base_url=standin.base_url
            ).build(settings)
            report = WindowRunner(clean, settings.timeline, synthesizer).run(ref, owner="clean")
            assert report.status is RunStatus.COMPLETED
            assert len(entry_rows(clean, "inc-1")) == len(made) == 8
            assert entry_shapes(clean, "inc-1", clean_ids) == entry_shapes(engine, "inc-1", ids)
        finally:
            clean.dispose()

    fault_report(
        f"injected: SIGKILL to the run's process group (run worker pid {victim.pid} and its step "
        f"process) while chunk 3/4 of a {KILL_MESSAGES}-evidence window waited on the model; "
        f"counted: at the kill 2 chunks committed ({entries_at_kill} entries, {len(at_kill)} "
        f"bindings), window processing at attempt 1; requeued by the sensor "
        f"{requeued_after:.1f}s after the kill ({STALE.seconds}s stale timeout); the retry "
        f"resumed after chunk 2 ({len(retry_calls)} model calls) and completed at attempt 2 "
        f"with {len(made)} entries, "
        f"{sum(binding_counts(engine, 'inc-1').values())} bindings for {len(ids)} evidence, "
        f"0 duplicates; a clean run on a fresh database: 8 entries, same shapes"
    )


# --- 2. an AI outage across many windows, then the backlog resumes by itself, oldest first ------

WORKSPACES = (("ws-a", "oc_a"), ("ws-b", "oc_b"), ("ws-c", "oc_c"))
OUTAGE_WINDOWS = 15
CHUNK_ATTEMPTS = 2
PER_WORKSPACE = 2
GLOBAL_BACKLOG = 4
MAX_ATTEMPTS = 2
STALE_SECONDS = 2.0
OUTAGE_SECONDS = 4 * STALE_SECONDS  # several stale timeouts: every window would be exhausted
OUTAGE_SETTINGS: dict[str, Any] = {
    "enabled": True,
    "synthesis_chunk_max_attempts": CHUNK_ATTEMPTS,
    "synthesis_window_max_attempts": MAX_ATTEMPTS,
    "window_backlog_limit_per_workspace": PER_WORKSPACE,
    "window_backlog_limit_global": GLOBAL_BACKLOG,
    "retry_backoff_base": "10ms",
    "retry_backoff_cap": "20ms",
    "max_retry_after": "50ms",
    "model_timeout": "1s",
    "synthesis_stale_timeout": "2s",
    # Short window-level backoff, so that the test runs in seconds: doubles from 200ms to 1s.
    "synthesis_outage_backoff_base": "200ms",
    "synthesis_outage_backoff_cap": "1s",
}
TICK_PAUSE = 0.2
DRAIN_SECONDS = 120.0  # a hang guard: runs take 1-2 s each on a busy machine


def outage_chats(engine: Engine, first: datetime) -> dict[str, list[int]]:
    """15 closed windows, 10 minutes apart, taking turns across three workspaces (two messages
    each), so that window order and workspace order differ. Evidence ids per partition key."""
    for workspace_id, chat_id in WORKSPACES:
        workspace(engine, workspace_id, (chat_id,), created_at=first - timedelta(hours=1))
    windows: dict[str, list[int]] = {}
    for n in range(OUTAGE_WINDOWS):
        workspace_id, chat_id = WORKSPACES[n % len(WORKSPACES)]
        start = first + n * WINDOW
        windows[WindowRef(workspace_id, chat_id, start).partition_key] = post(
            engine,
            [start + timedelta(minutes=1), start + timedelta(minutes=2)],
            workspace_id=workspace_id,
            chat_id=chat_id,
            text=f"error rate on checkout cluster {n} back under 1%",
        )
    return windows


def min_deferrals(engine: Engine, keys: list[str]) -> int:
    """Fewest deferrals among the windows holding the backlog slots (0 before they exist)."""
    states = [find_window_state(engine, ref_of(key)) for key in keys[:GLOBAL_BACKLOG]]
    return min(state.deferral_count if state is not None else 0 for state in states)


class Driver:
    """What the daemon does between ticks, in process: tick the sensor, run what it requests."""

    def __init__(self, defs: dg.Definitions, instance: dg.DagsterInstance, engine: Engine):
        self.defs = defs
        self.instance = instance
        self.engine = engine
        self.cursor: str | None = None
        self.completed: list[str] = []
        self.runs = Counter[str]()

    def tick(self) -> list[dg.RunRequest]:
        data = sensor_tick(self.defs, self.instance, self.cursor)
        self.cursor = data.cursor
        requests = list(data.run_requests or [])
        added = [k for r in data.dynamic_partitions_requests or [] for k in r.partition_keys]
        windows = {id(r): keys_of(r, added) for r in requests}
        per_workspace = Counter(ref_of(k).workspace_id for keys in windows.values() for k in keys)
        assert sum(per_workspace.values()) <= GLOBAL_BACKLOG
        assert max(per_workspace.values(), default=0) <= PER_WORKSPACE
        for run_request in requests:
            result = self.defs.resolve_job_def(SYNTHESIS_JOB).execute_in_process(
                partition_key=run_request.partition_key,
                instance=self.instance,
                run_config=run_request.run_config,
                tags=request_tags(run_request),
                raise_on_error=False,
            )
            self.runs["succeeded" if result.success else "failed"] += 1
            for key in windows[id(run_request)]:
                if result.success and window_state(self.engine, ref_of(key)).status == "completed":
                    self.completed.append(key)
        return requests


def keys_of(request: dg.RunRequest, added: list[str]) -> list[str]:
    """The windows of a request: its partition, or its range over the tick's added keys."""
    if request.partition_key is not None:
        return [request.partition_key]
    start = added.index(request.tags["dagster/asset_partition_range_start"])
    end = added.index(request.tags["dagster/asset_partition_range_end"])
    return added[start : end + 1]


def ref_of(key: str) -> WindowRef:
    return parse_partition_key(key)


def test_an_ai_outage_across_many_windows_uses_no_attempts_and_the_backlog_resumes_by_itself(
    db_url: str, engine: Engine, fault_report: Report
) -> None:
    now = datetime.now(UTC)
    first = window_start_of(now - timedelta(hours=4), WINDOW)
    windows = outage_chats(engine, first)
    keys = list(windows)  # oldest first
    evidence_before = evidence_snapshot(engine)
    started = time.monotonic()

    with (
        AnthropicStandIn(default=overloaded()) as standin,
        dg.instance_for_test() as instance,
    ):
        driver = Driver(defs_for(db_url, OUTAGE_SETTINGS, standin), instance, engine)

        # The outage: every Messages API call answers 529 for four stale timeouts, and at least
        # until every window in a slot was tried as often as it has attempts (before, that
        # exhausted them: they waited for an operator's replay).
        outage_ticks = 0
        outage_ends = time.monotonic() + OUTAGE_SECONDS
        while time.monotonic() < outage_ends or min_deferrals(engine, keys) < MAX_ATTEMPTS:
            assert outage_ticks < 50
            driver.tick()
            outage_ticks += 1
            time.sleep(TICK_PAUSE)
        outage_calls = len(standin.requests)

        # The oldest four windows hold every backlog slot through the outage, deferred with a
        # window-level backoff: no attempt used, nothing failed, nothing exhausted. The rest
        # wait behind the backlog limit without a state row.
        states = {key: window_state(engine, ref_of(key)) for key in keys[:GLOBAL_BACKLOG]}
        for key, state in states.items():
            assert (state.status, state.attempt_count, state.deferred) == ("pending", 0, True)
            assert state.deferral_count >= MAX_ATTEMPTS, key  # tried again and again, backing off
            assert state.last_error is not None and "overloaded" in state.last_error
        assert [find_window_state(engine, ref_of(key)) for key in keys[GLOBAL_BACKLOG:]] == [
            None
        ] * (OUTAGE_WINDOWS - GLOBAL_BACKLOG)
        deferrals = sum(state.deferral_count for state in states.values())
        # Each deferred run made the SDK's own backed-off calls once, then gave up.
        assert outage_calls == deferrals * CHUNK_ATTEMPTS
        assert driver.runs["failed"] == 0 and driver.completed == []
        assert evidence_snapshot(engine) == evidence_before
        for workspace_id, _ in WORKSPACES:
            assert entry_rows(engine, workspace_id) == []

        # The model answers again: with no replay, every window completes by itself.
        standin.reset(default=tool_reply(one_finding))
        resumed = time.monotonic()
        drain_ticks = 0
        while len(driver.completed) < OUTAGE_WINDOWS:
            assert time.monotonic() - resumed < DRAIN_SECONDS, driver.completed
            driver.tick()
            drain_ticks += 1
            time.sleep(TICK_PAUSE)
        drain_seconds = time.monotonic() - resumed
        assert driver.tick() == []

    # Oldest first in each lane (the lanes run side by side), each window exactly once, every
    # attempt the first: no replay, no duplicate.
    assert sorted(driver.completed) == sorted(keys) and len(set(driver.completed)) == len(keys)
    for lane in {lane_of(ref_of(key).workspace_id, 2) for key in keys}:
        in_lane = [k for k in keys if lane_of(ref_of(k).workspace_id, 2) == lane]
        assert [k for k in driver.completed if k in in_lane] == in_lane
    assert driver.runs["failed"] == 0
    for key, evidence_ids in windows.items():
        ref = ref_of(key)
        state = window_state(engine, ref)
        assert (state.status, state.attempt_count, state.deferred) == ("completed", 1, False)
        assert {i: binding_counts(engine, ref.workspace_id)[i] for i in evidence_ids} == {
            i: 1 for i in evidence_ids
        }
    assert sum(len(entry_rows(engine, ws)) for ws, _ in WORKSPACES) == OUTAGE_WINDOWS
    assert evidence_snapshot(engine) == evidence_before
    elapsed = time.monotonic() - started

    fault_report(
        f"injected: HTTP 529 on all {outage_calls} Messages API calls for {OUTAGE_SECONDS:g} s "
        f"({OUTAGE_SECONDS / STALE_SECONDS:g} stale timeouts, {outage_ticks} sensor ticks) across "
        f"{OUTAGE_WINDOWS} windows in {len(WORKSPACES)} workspaces, backlog "
        f"{PER_WORKSPACE}/workspace {GLOBAL_BACKLOG} global; counted: {GLOBAL_BACKLOG} windows "
        f"deferred {deferrals} times in all with 0 attempts used, 0 failed, "
        f"{OUTAGE_WINDOWS - GLOBAL_BACKLOG} untouched behind the backlog, 0 entries; after the "
        f"outage all {OUTAGE_WINDOWS} windows completed by themselves in window order in "
        f"{drain_seconds:.1f} s ({drain_ticks} ticks), attempt 1 each, no replay, "
        f"{OUTAGE_WINDOWS} entries, every evidence bound once; test {elapsed:.1f} s"
    )
