"""Window drain under the real daemon: windows a minute against the same synthesis in-process.

    python -m bench.drain.run [--workspaces 200] [--windows-per-workspace 3] [--backlog 100]
                              [--baseline-windows 120] [--timeout 1200] [--rows FILE]
    python -m bench --only drain --output bench/results/drain.md

Builds closed windows in a fresh PostgreSQL product database (default: 600 windows over 200
workspaces, one chat each, plus one workspace with a 100-window backlog; four fact-stating
messages a window, so rule synthesis writes entries), then starts the real `dagster-daemon` on
a fresh PostgreSQL Dagster database with an unchanged copy of `deploy/dagster.yaml` and the
product's default settings (collection and summaries off: only windows are measured), and
waits until every window is terminal. Reported (docs/scaling.md):

* windows a minute under the daemon, from the first synthesis run's creation to the last
  window's end, beside the in-process rate: the same synthesis (`WindowRunner`, rules) called
  directly by two processes at once over the first `--baseline-windows` windows of a copy of
  the same data, measured in the same run; the ratio is what Dagster's runs cost;
* the time for the backlog workspace's windows to drain (from the same start);
* run launches per window, CPU seconds per window of the daemon's process group (daemon,
  code server, run processes, sampled every half second), the sensor ticks used.

Then the steady state (`--steady-chats`, `--steady-minutes`; 0 minutes skips it): as many
chats as active incidents, each posting a message every `--steady-post-every` seconds (so
every chat fills every window: 200 chats are 20 windows a minute), under a fresh daemon for
that many minutes of wall time, and at least until the windows of the next 10-minute boundary
have closed and had five minutes (so up to about 18 minutes); every five seconds the oldest
uncovered age is sampled: how long ago the oldest closed window that has evidence and is not
yet terminal ended. The targets: under 15 minutes all along (a window waits its close grace and
the sensor's scan interval, then runs), and every chat's window synthesized in the time.

Self-contained and bounded: its own databases (dropped afterwards), its own daemon (its
process group stopped on every exit path), `--timeout` seconds for the drain at most.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import multiprocessing
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from queue import Empty
from typing import Any

from sqlalchemy import func, select

from bench.cli import add_rows_option, exit_on_sigterm, finish
from bench.database import database_url, fresh_database
from bench.table import BenchRow, Target, measured
from bench.window import WINDOW
from timeline_pipeline.db.engine import make_engine
from timeline_pipeline.db.migrate import upgrade
from timeline_pipeline.db.schema import workspace_timeline_sync_states as ss
from timeline_pipeline.domain.evidence import EvidenceRecord, content_hash
from timeline_pipeline.domain.keys import SOURCE_LARK, SOURCE_TYPE_LARK_MESSAGE, message_source_key
from timeline_pipeline.domain.window_keys import WindowRef, window_start_of
from timeline_pipeline.store import evidence, workspaces

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
MINUTE = timedelta(minutes=1)
RATE_TARGET = 100.0
RATIO_TARGET = 0.5
BACKLOG_TARGET_SECONDS = 300.0
BACKLOG_ID = "drain-backlog"
TERMINAL = ("completed", "ignored")
LINES = (
    "Error rate on checkout-api jumped to 12% since 09:40",
    "Deploy 4812 went out at 09:35, suspect it",
    "Rolling back deploy 4812 as mitigation",
    "Rollback finished, p99 latency back under 300ms",
)
SETTINGS_ENV = {
    "TIMELINE_LARK_ENABLED": "true",
    "TIMELINE_LARK_EVENT_INGESTION_ENABLED": "true",
    # Stored evidence only: windows do not wait for a collection checkpoint, nothing calls Lark.
    "TIMELINE_LARK_RECONCILIATION_ENABLED": "false",
    # Summaries would add runs of their own; this benchmark measures window synthesis.
    "TIMELINE_LARK_SUMMARY_ENABLED": "false",
}


@dataclass(frozen=True)
class Scenario:
    refs: list[WindowRef]
    backlog: list[WindowRef]


def scenario(workspaces_count: int, per_workspace: int, backlog: int, now: datetime) -> Scenario:
    """The backlog workspace's windows are the oldest (they wait longest), then the others."""
    last = window_start_of(now - timedelta(minutes=30), WINDOW)
    backlog_refs = [
        WindowRef(BACKLOG_ID, "oc_drain_backlog", last - (backlog + per_workspace - i) * WINDOW)
        for i in range(backlog)
    ]
    refs: list[WindowRef] = []
    for w in range(workspaces_count):
        for i in range(per_workspace):
            start = last - (per_workspace - 1 - i) * WINDOW
            refs.append(WindowRef(f"drain-{w:04d}", f"oc_drain_{w:04d}", start))
    return Scenario(refs=backlog_refs + refs, backlog=backlog_refs)


def post(conn: Any, workspace_id: str, chat_id: str, at: datetime, index: int, *, tag: str) -> None:
    """One of the four fact-stating lines (by `index`), as a stored Lark message of the chat."""
    line = LINES[index % len(LINES)]
    message_id = f"om_{hashlib.sha1(f'{tag}/{index}'.encode()).hexdigest()[:20]}"
    evidence.upsert(
        conn,
        EvidenceRecord(
            workspace_id=workspace_id,
            source=SOURCE_LARK,
            source_type=SOURCE_TYPE_LARK_MESSAGE,
            source_key=message_source_key(chat_id, message_id),
            occurred_at=at,
            source_updated_at=at,
            content=line,
            content_hash=content_hash(line),
            actor_id="ou_drain_responder",
            scope_key=chat_id,
            ai_eligible=True,
            metadata={"chat_id": chat_id, "message_type": "text"},
        ),
    )


def seed(url: str, refs: Sequence[WindowRef], now: datetime) -> None:
    engine = make_engine(url)
    upgrade(engine)
    created: set[str] = set()
    with engine.begin() as conn:
        for ref in refs:
            if ref.workspace_id not in created:
                created.add(ref.workspace_id)
                workspaces.create(conn, ref.workspace_id, created_at=now - timedelta(days=2))
                workspaces.bind_chat(conn, ref.workspace_id, ref.chat_id)
            for index in range(len(LINES)):
                at = ref.window_start + timedelta(minutes=1 + 2 * index)
                post(conn, ref.workspace_id, ref.chat_id, at, index, tag=ref.partition_key)
    engine.dispose()


# --- the in-process baseline ------------------------------------------------------------------


def _worker(url: str, keys: list[str], start_at: float, queue: Any) -> None:
    """One of the two direct callers: the synthesis a run does, without Dagster."""
    from timeline_pipeline.domain.window_keys import parse_partition_key
    from timeline_pipeline.settings import load_timeline_settings
    from timeline_pipeline.synthesis.rules import RuleSynthesizer
    from timeline_pipeline.synthesis_run.runner import WindowRunner

    engine = make_engine(url)
    settings = load_timeline_settings(enabled=True)
    runner = WindowRunner(engine, settings, RuleSynthesizer())
    while time.time() < start_at:  # both callers warm, then start together
        time.sleep(0.01)
    began = time.time()
    statuses = [runner.run(parse_partition_key(k), owner="bench").status.value for k in keys]
    queue.put((began, time.time(), statuses))
    engine.dispose()


def in_process_rate(url: str, refs: Sequence[WindowRef]) -> float:
    keys = [ref.partition_key for ref in refs]
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    start_at = time.time() + 15.0
    workers = [
        context.Process(target=_worker, args=(url, keys[i::2], start_at, queue)) for i in (0, 1)
    ]
    for worker in workers:
        worker.start()
    results: list[Any] = []
    deadline = time.monotonic() + 900
    while len(results) < len(workers):
        try:
            results.append(queue.get(timeout=1.0))
        except Empty:
            crashed = [w.exitcode for w in workers if w.exitcode not in (None, 0)]
            if crashed or time.monotonic() > deadline:
                raise RuntimeError(f"in-process baseline: a caller failed ({crashed})") from None
    for worker in workers:
        worker.join(timeout=30)
    statuses = [s for _, _, part in results for s in part]
    bad = [s for s in statuses if s not in TERMINAL]
    if bad:
        raise RuntimeError(f"in-process baseline: {len(bad)} windows did not finish ({bad[:3]})")
    seconds = float(max(end for _, end, _ in results) - min(began for began, _, _ in results))
    return len(keys) / seconds * 60.0


# --- the daemon -------------------------------------------------------------------------------


class Daemon:
    """`dagster-daemon run` in its own process group, which holds what it spawns."""

    def __init__(self, env: dict[str, str], log_path: Path) -> None:
        self._log = log_path.open("wb")
        self.log_path = log_path
        self.process = subprocess.Popen(
            [str(BIN / "dagster-daemon"), "run", "-w", str(ROOT / "workspace.yaml")],
            cwd=ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.cpu: dict[int, float] = {}

    def sample_cpu(self) -> None:
        """CPU seconds of every live process in the daemon's group, kept per pid (max seen)."""
        tick = os.sysconf("SC_CLK_TCK")
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) != self.process.pid:  # field 5: process group
                continue
            seconds = (int(fields[11]) + int(fields[12])) / tick  # utime + stime
            pid = int(entry.name)
            self.cpu[pid] = max(self.cpu.get(pid, 0.0), seconds)

    def stop(self) -> None:
        for sig, grace in ((signal.SIGTERM, 30.0), (signal.SIGKILL, 10.0)):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, sig)
            try:
                self.process.wait(timeout=grace)
                break
            except subprocess.TimeoutExpired:
                continue
        # The daemon leaving first does not take its code server with it: end the whole group.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self._log.close()

    def tail(self, lines: int = 15) -> str:
        text = self.log_path.read_text(encoding="utf-8", errors="replace")
        return "\n".join(text.splitlines()[-lines:])


@contextlib.contextmanager
def daemon(product_url: str, dagster_url: str, home: Path) -> Iterator[Daemon]:
    shutil.copy(ROOT / "deploy" / "dagster.yaml", home / "dagster.yaml")  # unchanged
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("TIMELINE_", "LARK_", "ANTHROPIC_", "DAGSTER_"))
    }
    env.update(SETTINGS_ENV)
    env.update(
        DAGSTER_HOME=str(home),
        DAGSTER_PG_URL=dagster_url,
        TIMELINE_DATABASE_URL=product_url,
        PYTHONUNBUFFERED="1",
    )
    running = Daemon(env, home / "daemon.log")
    try:
        yield running
    finally:
        running.stop()


@dataclass
class DrainFigures:
    windows: int
    seconds: float
    backlog_seconds: float
    runs: int
    cpu_seconds: float
    ticks: int
    failed: int
    expected: int


def drain(product_url: str, dagster_url: str, plan: Scenario, timeout: float) -> DrainFigures:
    import dagster as dg

    expected = len(plan.refs)
    engine = make_engine(product_url)
    with tempfile.TemporaryDirectory(prefix="bench-drain-") as scratch:
        home = Path(scratch)
        with daemon(product_url, dagster_url, home) as running:
            deadline = time.monotonic() + timeout
            done = failed = 0
            while time.monotonic() < deadline:
                running.sample_cpu()
                with engine.connect() as conn:
                    counts: dict[str, int] = {
                        str(status): int(count)
                        for status, count in conn.execute(
                            select(ss.c.status, func.count())
                            .where(ss.c.source_type == "lark_timeline_window")
                            .group_by(ss.c.status)
                        ).all()
                    }
                done = sum(counts.get(s, 0) for s in TERMINAL)
                failed = counts.get("failed", 0)
                if done + failed >= expected:
                    break
                if running.process.poll() is not None:
                    raise RuntimeError(f"the daemon exited:\n{running.tail()}")
                time.sleep(0.5)
            else:
                # Figures of what drained, and a row that says the rest did not.
                print(f"timed out: {done} of {expected} windows in {timeout:g} s", flush=True)
            os.environ["DAGSTER_HOME"] = str(home)
            os.environ["DAGSTER_PG_URL"] = dagster_url
            with dg.DagsterInstance.get() as instance:
                records = instance.get_run_records(
                    filters=dg.RunsFilter(job_name="synthesize_windows")
                )
                first = min(record.create_timestamp for record in records)
                ticks = 0
                for state in instance.all_instigator_state():
                    if state.instigator_name == "timeline_window_sensor":
                        ticks += len(
                            instance.get_ticks(state.instigator_origin_id, state.selector_id)
                        )
        with engine.connect() as conn:
            rows = conn.execute(
                select(ss.c.workspace_id, ss.c.updated_at).where(
                    ss.c.source_type == "lark_timeline_window", ss.c.status.in_(TERMINAL)
                )
            ).all()
    engine.dispose()
    started = first if first.tzinfo else first.replace(tzinfo=UTC)
    if not rows:
        raise RuntimeError(f"no window drained in {timeout:g} s")
    last = max(row.updated_at for row in rows)
    backlog = [row.updated_at for row in rows if row.workspace_id == BACKLOG_ID]
    # A backlog that did not drain counts as the whole time limit, not as its last window.
    backlog_last = (
        max(backlog) if len(backlog) == len(plan.backlog) else started + timedelta(seconds=timeout)
    )
    return DrainFigures(
        windows=len(rows),
        seconds=(last - started).total_seconds(),
        backlog_seconds=(backlog_last - started).total_seconds(),
        runs=len(records),
        cpu_seconds=sum(running.cpu.values()),
        ticks=ticks,
        failed=failed,
        expected=expected,
    )


# --- the steady state -------------------------------------------------------------------------


STEADY_AGE_TARGET_SECONDS = 15 * 60.0


@dataclass
class SteadyFigures:
    chats: int
    seconds: float
    windows: int
    """Windows that reached a terminal state while the chats posted."""
    max_age: float
    """The oldest uncovered age, at its largest over the samples (seconds)."""
    samples: int


def oldest_uncovered_age(
    conn: Any, now: datetime, close_grace: timedelta, *, since: datetime
) -> float:
    """Seconds since the oldest closed, non-empty, non-terminal window ended (0: none), of the
    windows that ended after `since`."""
    from timeline_pipeline.db.schema import workspace_timeline_evidence as ev

    windows: set[tuple[str, datetime]] = set()
    for workspace_id, occurred_at in conn.execute(select(ev.c.workspace_id, ev.c.occurred_at)):
        at = occurred_at if occurred_at.tzinfo else occurred_at.replace(tzinfo=UTC)
        windows.add((workspace_id, window_start_of(at, WINDOW)))
    done = {
        (workspace_id, key)
        for workspace_id, key in conn.execute(
            select(ss.c.workspace_id, ss.c.source_key).where(
                ss.c.source_type == "lark_timeline_window", ss.c.status.in_(TERMINAL)
            )
        )
    }
    ages = [
        (now - (start + WINDOW)).total_seconds()
        for workspace_id, start in windows
        if start + WINDOW + close_grace <= now
        and start + WINDOW > since
        and (workspace_id, WindowRef(workspace_id, _chat(workspace_id), start).source_key)
        not in done
    ]
    return max(ages, default=0.0)


def _chat(workspace_id: str) -> str:
    return "oc_" + workspace_id.replace("-", "_")


def steady(
    product_url: str, dagster_url: str, chats: int, minutes: float, post_every: float
) -> SteadyFigures:
    """Chats post for `minutes` under the daemon; the oldest uncovered age is sampled."""
    from timeline_pipeline.settings import load_timeline_settings

    grace = load_timeline_settings(enabled=True).synthesis_window_close_grace
    engine = make_engine(product_url)
    upgrade(engine)
    now = datetime.now(UTC)
    ids = [f"steady-{c:04d}" for c in range(chats)]
    with engine.begin() as conn:
        for workspace_id in ids:
            workspaces.create(conn, workspace_id, created_at=now - timedelta(hours=1))
            workspaces.bind_chat(conn, workspace_id, _chat(workspace_id))
    # Long enough for the windows of at least one boundary to close and be synthesized.
    boundary = window_start_of(now, WINDOW) + WINDOW
    ends_at = max(now + timedelta(minutes=minutes), boundary + grace + 5 * MINUTE)
    max_age = 0.0
    samples = posted = 0
    with (
        tempfile.TemporaryDirectory(prefix="bench-steady-") as scratch,
        daemon(product_url, dagster_url, Path(scratch)) as running,
    ):
        began = time.monotonic()
        end = began + (ends_at - datetime.now(UTC)).total_seconds()
        next_post = began
        while time.monotonic() < end:
            if time.monotonic() >= next_post:
                # Every chat posts once per `post_every`, spread over the interval.
                at = datetime.now(UTC)
                with engine.begin() as conn:
                    for workspace_id in ids:
                        chat = _chat(workspace_id)
                        post(conn, workspace_id, chat, at, posted, tag=f"{chat}/{at}")
                posted += 1
                next_post += post_every
            with engine.connect() as conn:
                max_age = max(
                    max_age, oldest_uncovered_age(conn, datetime.now(UTC), grace, since=now)
                )
            samples += 1
            if running.process.poll() is not None:
                raise RuntimeError(f"the daemon exited:\n{running.tail()}")
            time.sleep(5.0)
        seconds = time.monotonic() - began
    with engine.connect() as conn:
        windows = int(
            conn.execute(
                select(func.count()).where(
                    ss.c.source_type == "lark_timeline_window", ss.c.status.in_(TERMINAL)
                )
            ).scalar_one()
        )
    engine.dispose()
    return SteadyFigures(chats, seconds, windows, max_age, samples)


def steady_rows(figures: SteadyFigures) -> list[BenchRow]:
    name = "drain"
    return [
        measured(
            name,
            f"steady state: oldest uncovered age, largest over {figures.seconds / 60:.0f} min "
            f"of {figures.chats} chats posting",
            figures.max_age / 60.0,
            "min",
            target=Target("<", STEADY_AGE_TARGET_SECONDS / 60.0, text="< 15 min"),
        ),
        measured(
            name,
            "steady state: windows synthesized while the chats posted",
            figures.windows,
            "windows",
            # Every chat's window of the boundary the run waits for: the age is not vacuous.
            target=Target(">=", figures.chats, text=f">= {figures.chats}"),
        ),
    ]


def rows(figures: DrainFigures, baseline: float, baseline_windows: int) -> list[BenchRow]:
    rate = figures.windows / figures.seconds * 60.0
    name = "drain"
    return [
        measured(
            name,
            f"windows a minute under the daemon ({figures.windows} windows, rules)",
            rate,
            "windows/min",
            baseline=f"in-process, 2 at a time, {baseline_windows} windows",
            baseline_value=baseline,
            target=Target(">=", RATE_TARGET),
        ),
        measured(
            name,
            "daemon rate / in-process rate",
            rate / baseline,
            "x",
            target=Target(">=", RATIO_TARGET),
        ),
        measured(
            name,
            "time for the backlog workspace's windows to drain",
            figures.backlog_seconds,
            "s",
            target=Target("<=", BACKLOG_TARGET_SECONDS),
        ),
        measured(name, "run launches per window", figures.runs / figures.windows, "runs"),
        measured(
            name,
            "CPU seconds per window (daemon, code server and run processes)",
            figures.cpu_seconds / figures.windows,
            "s",
        ),
        measured(name, "sensor ticks used", figures.ticks, "ticks"),
        measured(
            name, "windows failed", figures.failed, "windows", target=Target("==", 0, text="= 0")
        ),
        measured(
            name,
            "windows drained before the time limit",
            figures.windows,
            "windows",
            target=Target(">=", figures.expected, text=f"all {figures.expected}"),
        ),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.drain.run")
    parser.add_argument("--workspaces", type=int, default=200)
    parser.add_argument("--windows-per-workspace", type=int, default=3)
    parser.add_argument("--backlog", type=int, default=100)
    parser.add_argument("--baseline-windows", type=int, default=120)
    parser.add_argument("--timeout", type=float, default=1200.0, help="seconds for the drain")
    parser.add_argument("--steady-chats", type=int, default=200)
    parser.add_argument("--steady-minutes", type=float, default=10.0, help="0: skip it")
    parser.add_argument("--steady-post-every", type=float, default=120.0, help="seconds")
    add_rows_option(parser)
    args = parser.parse_args(argv)
    if min(args.workspaces, args.windows_per_workspace, args.baseline_windows) < 1:
        parser.error("sizes must be positive")
    exit_on_sigterm()
    now = datetime.now(UTC)
    plan = scenario(args.workspaces, args.windows_per_workspace, args.backlog, now)
    print(f"drain: {len(plan.refs)} windows over {args.workspaces + 1} workspaces", flush=True)
    sample = plan.refs[len(plan.backlog) :][: args.baseline_windows]
    with fresh_database() as baseline_db:
        baseline_url = database_url(baseline_db)
        seed(baseline_url, sample, now)
        baseline = in_process_rate(baseline_url, sample)
    print(f"in-process: {baseline:.1f} windows/min", flush=True)
    with fresh_database() as product_db, fresh_database() as dagster_db:
        product_url = database_url(product_db)
        seed(product_url, plan.refs, now)
        figures = drain(
            product_url,
            database_url(dagster_db, driver="postgresql+psycopg2"),
            plan,
            args.timeout,
        )
    print(f"daemon: {figures}", flush=True)
    results = rows(figures, baseline, len(sample))
    if args.steady_minutes > 0:
        with fresh_database() as product_db, fresh_database() as dagster_db:
            kept = steady(
                database_url(product_db),
                database_url(dagster_db, driver="postgresql+psycopg2"),
                args.steady_chats,
                args.steady_minutes,
                args.steady_post_every,
            )
        print(f"steady state: {kept}", flush=True)
        results += steady_rows(kept)
    return finish(results, args.rows)


if __name__ == "__main__":
    raise SystemExit(main())
