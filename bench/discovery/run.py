"""Window discovery benchmark: sensor tick time against history size, on PostgreSQL.

    python -m bench.discovery.run [--sizes 10000,1000000] [--workspaces 2000] [--uncovered 200]
                                  [--repeat 5] [--json] [--rows FILE]

For each size, a fresh PostgreSQL database (dropped afterwards) gets `--workspaces` firing
workspaces with one bound chat each, and that many evidence rows spread over the 72-hour
lookback. Every window of that history is already covered (a `completed` state row, as after
normal operation), and the same `--uncovered` closed windows (one message each, in distinct
workspaces) are not. Rows are loaded with COPY. Then it times the real sensor evaluation
(`evaluate_discovery`, with a Dagster instance) for:

* cold: an empty cursor (first tick, or after a sensor reset) that must find the uncovered
  windows among all chats;
* warm: a running cursor when `--uncovered` new messages arrive in other closed windows;
* idle: nothing new (the one-statement tick; the statements it sends are counted).

Every size is loaded first; then each kind of tick runs on the sizes in turn (alternating the
order), so the largest size and its baseline share whatever else the machine is doing. Each
figure is the median of `--repeat` ticks; between repeats the window states a tick created are
deleted, so every repeat does the same work. The target is a ratio largest/smallest size under
2 (ticks cost O(uncovered windows), never O(history)). Bounded: sizes up to 2,000,000 rows,
every tick has the sensor's own 40 s budget.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import random
import statistics
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import dagster as dg
import psycopg
from sqlalchemy import Engine, event

from bench.cli import add_rows_option, exit_on_sigterm, finish
from bench.database import database_url, fresh_database
from bench.table import BenchRow, Target, measured
from bench.window import WINDOW
from timeline_pipeline.db.engine import make_engine
from timeline_pipeline.db.migrate import upgrade
from timeline_pipeline.domain.window_keys import window_start_of
from timeline_pipeline.orchestration.resources import DatabaseResource, TimelineSettingsResource
from timeline_pipeline.orchestration.windows import evaluate_discovery
from timeline_pipeline.windows.run_queue import TAG_WINDOWS

MAX_ROWS = 2_000_000
TARGET_RATIO = 2.0
EVIDENCE_COLUMNS = (
    "workspace_id, source, source_type, source_key, occurred_at, source_updated_at, "
    "observed_at, actor_id, content, content_hash, metadata_json, scope_key, ai_eligible, "
    "deleted, revision, updated_at"
)
STATE_COLUMNS = (
    "workspace_id, source, source_type, source_key, status, attempt_count, revision, "
    "processing_started_at, last_seen_updated_at, last_seen_content_hash, metadata_json, "
    "scope_key, window_start, window_end, summary_attempted, created_at, updated_at"
)


@dataclass
class SizeFigures:
    rows: int
    window_states: int
    load_seconds: float
    cold_ms: float
    warm_ms: float
    idle_ms: float
    idle_statements: int
    cold_requests: int
    warm_requests: int
    uncovered: int


def _db_url(name: str) -> str:
    return database_url(name)


def _plain_url(name: str) -> str:
    return database_url(name, driver="postgresql")


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def load(db: str, rows: int, workspaces: int, now: datetime, seed: int = 7) -> int:
    """History in [now-70h, now-2h), every window covered; returns the window states written."""
    engine = make_engine(_db_url(db), null_pool=True)
    upgrade(engine)
    engine.dispose()
    rng = random.Random(seed)
    start, end = now - timedelta(hours=70), now - timedelta(hours=2)
    span = (end - start).total_seconds()
    per_workspace = max(1, rows // workspaces)
    states = 0
    with psycopg.connect(_plain_url(db)) as conn:
        with conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO workspaces (id, type, status, created_at, updated_at) "
                "VALUES (%s, 'incident', 'firing', %s, %s)",
                [(f"ws-{i}", now - timedelta(hours=71), now) for i in range(workspaces)],
            )
            cur.executemany(
                "INSERT INTO workspace_collaboration_resources "
                "(workspace_id, resource_type, resource_key, created_at) "
                "VALUES (%s, 'lark_chat', %s, %s)",
                [(f"ws-{i}", f"oc_{i}", now) for i in range(workspaces)],
            )
        windows: list[tuple[str, str, datetime]] = []
        with conn.cursor().copy(
            f"COPY workspace_timeline_evidence ({EVIDENCE_COLUMNS}) FROM STDIN"
        ) as copy:
            for w in range(workspaces):
                ws, chat = f"ws-{w}", f"oc_{w}"
                starts: set[datetime] = set()
                for n in range(per_workspace):
                    at = start + timedelta(seconds=rng.random() * span)
                    starts.add(window_start_of(at, WINDOW))
                    copy.write_row(
                        (
                            ws,
                            "lark",
                            "lark_message",
                            f"chat/{chat}/message/om_{w}_{n}",
                            at,
                            at,
                            at,
                            "ou_bench",
                            f"status update {n}",
                            hashlib.sha256(f"{w}/{n}".encode()).hexdigest(),
                            json.dumps({"chat_id": chat, "message_type": "text"}),
                            chat,
                            True,
                            False,
                            1,
                            at,
                        )
                    )
                windows.extend((ws, chat, s) for s in sorted(starts))
        with conn.cursor().copy(
            f"COPY workspace_timeline_sync_states ({STATE_COLUMNS}) FROM STDIN"
        ) as copy:
            for ws, chat, s in windows:
                copy.write_row(
                    (
                        ws,
                        "system",
                        "lark_timeline_window",
                        f"chat/{chat}/window/{_iso(s)}",
                        "completed",
                        1,
                        3,
                        s + WINDOW,
                        s + WINDOW,
                        "h",
                        "{}",
                        chat,
                        s,
                        s + WINDOW,
                        True,
                        s + WINDOW,
                        s + WINDOW,
                    )
                )
        states = len(windows)
        conn.commit()
    with psycopg.connect(_plain_url(db), autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")
    return states


def post_messages(db: str, workspaces: list[int], at: datetime, tag: str) -> None:
    """One eligible message per workspace at `at` (a closed window with no state yet)."""
    with psycopg.connect(_plain_url(db)) as conn, conn.cursor() as cur:
        cur.executemany(
            f"INSERT INTO workspace_timeline_evidence ({EVIDENCE_COLUMNS}) VALUES "
            "(%s, 'lark', 'lark_message', %s, %s, %s, %s, 'ou_bench', 'db primary failed over', "
            "%s, %s, %s, true, false, 1, %s)",
            [
                (
                    f"ws-{w}",
                    f"chat/oc_{w}/message/{tag}_{w}",
                    at,
                    at,
                    at,
                    hashlib.sha256(f"{tag}/{w}".encode()).hexdigest(),
                    json.dumps({"chat_id": f"oc_{w}", "message_type": "text"}),
                    f"oc_{w}",
                    at,
                )
                for w in workspaces
            ],
        )
        conn.commit()


def drop_states(db: str, ids: list[int]) -> None:
    with psycopg.connect(_plain_url(db)) as conn:
        conn.execute("DELETE FROM workspace_timeline_sync_states WHERE id = ANY(%s)", (ids,))
        conn.commit()


@contextlib.contextmanager
def statements(engine: Engine) -> Iterator[list[str]]:
    """The SQL statements (not BEGIN/COMMIT) the product database receives meanwhile."""
    seen: list[str] = []

    def record(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        verb = statement.lstrip().split(None, 1)[0].upper()
        if verb in {"SELECT", "INSERT", "UPDATE", "DELETE", "WITH"}:
            seen.append(verb)

    event.listen(engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        event.remove(engine, "before_cursor_execute", record)


def timed_tick(
    instance: dg.DagsterInstance,
    database: DatabaseResource,
    settings: TimelineSettingsResource,
    cursor: str | None,
    now: datetime,
) -> tuple[float, dg.SensorResult]:
    context = dg.build_sensor_context(instance=instance, cursor=cursor)
    began = time.perf_counter()
    result = evaluate_discovery(context, database, settings, now=now)
    return (time.perf_counter() - began) * 1000, result


def interleaved(
    repeat: int,
    runs: list[SizeRun],
    tick: Callable[[SizeRun], tuple[float, dg.SensorResult]],
    undo: Callable[[SizeRun], None],
) -> list[tuple[float, dg.SensorResult]]:
    """The median of `repeat` ticks per size, the sizes taking turns (in alternating order), so
    that what else runs on the machine weighs on the largest size and its baseline alike."""
    times: list[list[float]] = [[] for _ in runs]
    last: list[dg.SensorResult | None] = [None for _ in runs]
    for index in range(repeat):
        order = list(enumerate(runs))
        for position, run in order if index % 2 == 0 else reversed(order):
            took, last[position] = tick(run)
            times[position].append(took)
            if index < repeat - 1:
                undo(run)
    results = []
    for samples, result in zip(times, last, strict=True):
        assert result is not None
        results.append((statistics.median(samples), result))
    return results


def created_state_ids(db: str, since: datetime) -> list[int]:
    with psycopg.connect(_plain_url(db)) as conn:
        rows = conn.execute(
            "SELECT id FROM workspace_timeline_sync_states WHERE source_type = "
            "'lark_timeline_window' AND status = 'pending' AND created_at >= %s",
            (since,),
        ).fetchall()
    return [row[0] for row in rows]


class SizeRun:
    """One history size in its own database, ready to tick; each phase's tick and its undo."""

    def __init__(
        self, db: str, instance: dg.DagsterInstance, rows: int, workspaces: int, uncovered: int
    ) -> None:
        self.db, self.instance, self.uncovered = db, instance, uncovered
        self.now = datetime.now(UTC).replace(microsecond=0)
        began = time.perf_counter()
        self.window_states = load(db, rows, workspaces, self.now)
        # The same uncovered windows for every size: one message in distinct workspaces,
        # 50 minutes ago (closed), no state.
        post_messages(db, list(range(uncovered)), self.now - timedelta(minutes=50), "gap")
        self.load_seconds = time.perf_counter() - began
        self.rows = rows + uncovered
        self.database = DatabaseResource(url=_db_url(db))
        self.settings = TimelineSettingsResource(
            overrides={
                "enabled": True,
                "window_backlog_limit_global": max(500, 2 * uncovered),
                "window_backlog_limit_per_workspace": 50,
            }
        )
        self.warm_cursor: str | None = None
        self.first_warm: set[int] = set()
        self.idle_cursor: str | None = None

    def tick(self, cursor: str | None, at: datetime) -> tuple[float, dg.SensorResult]:
        return timed_tick(self.instance, self.database, self.settings, cursor, at)

    def _created(self) -> set[int]:
        return set(created_state_ids(self.db, self.now - timedelta(seconds=1)))

    def cold(self) -> tuple[float, dg.SensorResult]:
        return self.tick(None, self.now)

    def undo_cold(self) -> None:
        drop_states(self.db, sorted(self._created()))

    def start_warm(self, cold: dg.SensorResult) -> None:
        """The cursor after the cold tick; new messages arrive in other workspaces."""
        self.warm_cursor = cold.cursor
        others = list(range(self.uncovered, 2 * self.uncovered))
        post_messages(self.db, others, self.now - timedelta(minutes=40), "new")
        self.first_warm = self._created()

    def warm(self) -> tuple[float, dg.SensorResult]:
        return self.tick(self.warm_cursor, self.now)

    def undo_warm(self) -> None:
        drop_states(self.db, sorted(self._created() - self.first_warm))

    def start_idle(self, warm: dg.SensorResult) -> None:
        """Nothing new, once the ids read in the warm tick are settled."""
        cursor = warm.cursor
        for step in (1, 2):
            cursor = self.tick(cursor, self._later(step))[1].cursor
        self.idle_cursor = cursor

    def idle(self) -> tuple[float, dg.SensorResult]:
        return self.tick(self.idle_cursor, self._later(3))

    def _later(self, seconds: int) -> datetime:
        return self.now + timedelta(minutes=5, seconds=seconds)


def windows_requested(result: dg.SensorResult) -> int:
    """The windows a tick's run requests cover: a run of one window names its partition, a
    batch run a range whose size is its `timeline/windows` tag (docs/scaling.md)."""
    return sum(
        1 if request.partition_key is not None else int(request.tags[TAG_WINDOWS])
        for request in result.run_requests or []
    )


def measure(sizes: list[int], workspaces: int, uncovered: int, repeat: int) -> list[SizeFigures]:
    """Every size loaded first, then each phase ticked on the sizes in turn."""
    with contextlib.ExitStack() as stack:
        runs = []
        for size in sizes:
            db = stack.enter_context(fresh_database())
            instance = stack.enter_context(dg.instance_for_test())
            runs.append(SizeRun(db, instance, size, workspaces, uncovered))
            stack.callback(runs[-1].database.engine.dispose)
        cold = interleaved(repeat, runs, SizeRun.cold, SizeRun.undo_cold)
        for run, (_, result) in zip(runs, cold, strict=True):
            run.start_warm(result)
        warm = interleaved(repeat, runs, SizeRun.warm, SizeRun.undo_warm)
        for run, (_, result) in zip(runs, warm, strict=True):
            run.start_idle(result)
        idle = interleaved(repeat, runs, SizeRun.idle, lambda _run: None)
        figures = []
        for run, (cold_ms, cold_result), (warm_ms, warm_result), (idle_ms, _) in zip(
            runs, cold, warm, idle, strict=True
        ):
            with statements(run.database.engine) as seen:
                run.idle()
            figures.append(
                SizeFigures(
                    rows=run.rows,
                    window_states=run.window_states,
                    load_seconds=round(run.load_seconds, 2),
                    cold_ms=round(cold_ms, 1),
                    warm_ms=round(warm_ms, 1),
                    idle_ms=round(idle_ms, 2),
                    idle_statements=len(seen),
                    cold_requests=windows_requested(cold_result),
                    warm_requests=windows_requested(warm_result),
                    uncovered=run.uncovered,
                )
            )
        return figures


def rows(figures: list[SizeFigures]) -> list[BenchRow]:
    """The largest size against the smallest, measured in the same run: the same uncovered
    windows, so any growth is the cost of history."""
    small, large = figures[0], figures[-1]
    against = f"same tick, {small.rows:,} rows"
    history = f"{large.rows:,} evidence rows, {large.window_states:,} window states"
    ratio_target = Target("<", TARGET_RATIO, of="ratio")
    requested = sum(f.cold_requests + f.warm_requests for f in figures)
    return [
        measured(
            "discovery",
            f"cold tick (empty cursor), {history}",
            large.cold_ms,
            "ms",
            baseline=against,
            baseline_value=small.cold_ms,
            target=ratio_target,
            note=f"finds {large.uncovered} uncovered windows among {large.rows:,} rows",
        ),
        measured(
            "discovery",
            f"warm tick ({large.uncovered} new messages), {large.rows:,} rows",
            large.warm_ms,
            "ms",
            baseline=against,
            baseline_value=small.warm_ms,
            target=ratio_target,
        ),
        measured(
            "discovery",
            f"idle tick, {large.rows:,} rows",
            large.idle_ms,
            "ms",
            baseline=against,
            baseline_value=small.idle_ms,
            note="no time target (the target is one statement): scheduling noise moves it",
        ),
        measured(
            "discovery",
            "statements in an idle tick (largest size)",
            large.idle_statements,
            "statements",
            target=Target("==", 1, text="exactly 1"),
            note="at each size: " + ", ".join(str(f.idle_statements) for f in figures),
        ),
        measured(
            "discovery",
            "windows requested, all sizes (cold + warm ticks)",
            requested,
            "windows",
            baseline="uncovered windows posted",
            baseline_value=sum(2 * f.uncovered for f in figures),
            target=Target("==", 1.0, of="ratio", text="= uncovered windows"),
            note="a tick that finds less would look faster than it is",
        ),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,1000000", help="evidence rows per run")
    parser.add_argument("--workspaces", type=int, default=2000)
    parser.add_argument("--uncovered", type=int, default=200, help="uncovered windows per tick")
    parser.add_argument("--repeat", type=int, default=5, help="ticks per figure (median)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    add_rows_option(parser)
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s]
    if not sizes or any(not 1 <= s <= MAX_ROWS for s in sizes):
        parser.error(f"--sizes must be 1..{MAX_ROWS}")
    if not 1 <= args.uncovered <= args.workspaces // 2 or not 1 <= args.repeat <= 10:
        parser.error("--uncovered must be 1..workspaces/2, --repeat 1..10")
    exit_on_sigterm()
    figures = measure(sizes, args.workspaces, args.uncovered, args.repeat)
    table = rows(figures)
    if args.json:
        payload: dict[str, Any] = {
            "figures": [asdict(f) for f in figures],
            "target_ratio": TARGET_RATIO,
            "rows": [row.to_json() for row in table],
        }
        print(json.dumps(payload, sort_keys=True))
    else:
        print(
            f"{'evidence rows':>14} {'window states':>14} {'load s':>8} {'cold tick ms':>13} "
            f"{'warm tick ms':>13} {'idle tick ms':>13} {'requests':>9}"
        )
        for f in figures:
            print(
                f"{f.rows:>14,} {f.window_states:>14,} {f.load_seconds:>8.1f} {f.cold_ms:>13.1f} "
                f"{f.warm_ms:>13.1f} {f.idle_ms:>13.2f} {f.cold_requests:>4}/{f.warm_requests:<4}"
            )
    return finish(table, args.rows, print_table=not args.json)


if __name__ == "__main__":
    raise SystemExit(main())
