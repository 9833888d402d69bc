"""Window discovery benchmark: sensor tick time against history size, on PostgreSQL.

    python -m bench.discovery.run [--sizes 10000,1000000] [--workspaces 2000] [--uncovered 200]

For each size, a fresh PostgreSQL database (dropped afterwards) gets `--workspaces` firing
workspaces with one bound chat each, and that many evidence rows spread over the 72-hour
lookback. Every window of that history is already covered (a `completed` state row, as after
normal operation), and the same `--uncovered` closed windows (one message each, in distinct
workspaces) are not. Rows are loaded with COPY. Then it times the real sensor evaluation
(`evaluate_discovery`, with a Dagster instance) for:

* cold: an empty cursor (first tick, or after a sensor reset) that must find the uncovered
  windows among all chats;
* warm: a running cursor when `--uncovered` new messages arrive in other closed windows;
* idle: nothing new (the one-statement tick).

Each figure is the median of `--repeat` ticks; between repeats the window states a tick created
are deleted, so every repeat does the same work. It prints the times per size and the ratio
largest/smallest size; the target is a ratio under 2 (ticks cost O(uncovered windows), never
O(history)). Bounded: sizes up to 2,000,000 rows, every tick has the sensor's own 40 s budget.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import random
import statistics
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import dagster as dg
import psycopg

from timeline_pipeline.db.engine import make_engine
from timeline_pipeline.db.migrate import upgrade
from timeline_pipeline.orchestration.resources import DatabaseResource, TimelineSettingsResource
from timeline_pipeline.orchestration.windows import evaluate_discovery
from timeline_pipeline.windows.keys import window_start_of

ADMIN_URL = os.environ.get("TIMELINE_BENCH_PG_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
MAX_ROWS = 2_000_000
TARGET_RATIO = 2.0
WINDOW = timedelta(minutes=10)
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
    cold_requests: int
    warm_requests: int


def _db_url(name: str) -> str:
    base = ADMIN_URL.rsplit("/", 1)[0].split("://", 1)[1]
    return f"postgresql+psycopg://{base}/{name}"


def _plain_url(name: str) -> str:
    return ADMIN_URL.rsplit("/", 1)[0] + f"/{name}"


@contextlib.contextmanager
def fresh_database() -> Iterator[str]:
    name = f"tp_bench_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(ADMIN_URL, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield name
    finally:
        with psycopg.connect(ADMIN_URL, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


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


def median_tick(
    repeat: int,
    tick: Callable[[], tuple[float, dg.SensorResult]],
    cleanup: Callable[[dg.SensorResult], None],
) -> tuple[float, dg.SensorResult]:
    times: list[float] = []
    result: dg.SensorResult | None = None
    for index in range(repeat):
        elapsed, result = tick()
        times.append(elapsed)
        if index < repeat - 1:
            cleanup(result)
    assert result is not None
    return statistics.median(times), result


def created_state_ids(db: str, since: datetime) -> list[int]:
    with psycopg.connect(_plain_url(db)) as conn:
        rows = conn.execute(
            "SELECT id FROM workspace_timeline_sync_states WHERE source_type = "
            "'lark_timeline_window' AND status = 'pending' AND created_at >= %s",
            (since,),
        ).fetchall()
    return [row[0] for row in rows]


def measure(rows: int, workspaces: int, uncovered: int, repeat: int) -> SizeFigures:
    now = datetime.now(UTC).replace(microsecond=0)
    with fresh_database() as db, dg.instance_for_test() as instance:
        began = time.perf_counter()
        states = load(db, rows, workspaces, now)
        # The same uncovered windows for every size: one message in distinct workspaces,
        # 50 minutes ago (closed), no state.
        post_messages(db, list(range(uncovered)), now - timedelta(minutes=50), "gap")
        load_seconds = time.perf_counter() - began
        database = DatabaseResource(url=_db_url(db))
        settings = TimelineSettingsResource(
            overrides={
                "enabled": True,
                "window_backlog_limit_global": max(500, 2 * uncovered),
                "window_backlog_limit_per_workspace": 50,
            }
        )
        tick_now = now

        def cold() -> tuple[float, dg.SensorResult]:
            return timed_tick(instance, database, settings, None, tick_now)

        def forget(_result: dg.SensorResult) -> None:
            drop_states(db, created_state_ids(db, tick_now - timedelta(seconds=1)))

        cold_ms, cold_result = median_tick(repeat, cold, forget)
        # Warm: the cursor after the cold tick; new messages arrive in other workspaces.
        warm_cursor = cold_result.cursor
        post_messages(
            db,
            list(range(uncovered, 2 * uncovered)),
            now - timedelta(minutes=40),
            "new",
        )
        first_warm = created_state_ids(db, tick_now - timedelta(seconds=1))

        def warm() -> tuple[float, dg.SensorResult]:
            return timed_tick(instance, database, settings, warm_cursor, tick_now)

        def forget_warm(_result: dg.SensorResult) -> None:
            fresh = set(created_state_ids(db, tick_now - timedelta(seconds=1))) - set(first_warm)
            drop_states(db, sorted(fresh))

        warm_ms, warm_result = median_tick(repeat, warm, forget_warm)
        # Idle: nothing new, once the ids read in the warm tick are settled.
        later = tick_now + timedelta(minutes=5)
        cursor = warm_result.cursor
        for step in (1, 2):
            _, settled = timed_tick(
                instance, database, settings, cursor, later + step * timedelta(seconds=1)
            )
            cursor = settled.cursor

        def idle() -> tuple[float, dg.SensorResult]:
            return timed_tick(instance, database, settings, cursor, later + timedelta(seconds=3))

        idle_ms, _ = median_tick(repeat, idle, lambda _r: None)
        database.engine.dispose()
        return SizeFigures(
            rows=rows + uncovered,
            window_states=states,
            load_seconds=round(load_seconds, 2),
            cold_ms=round(cold_ms, 1),
            warm_ms=round(warm_ms, 1),
            idle_ms=round(idle_ms, 2),
            cold_requests=len(cold_result.run_requests or []),
            warm_requests=len(warm_result.run_requests or []),
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,1000000", help="evidence rows per run")
    parser.add_argument("--workspaces", type=int, default=2000)
    parser.add_argument("--uncovered", type=int, default=200, help="uncovered windows per tick")
    parser.add_argument("--repeat", type=int, default=3, help="ticks per figure (median)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s]
    if not sizes or any(not 1 <= s <= MAX_ROWS for s in sizes):
        parser.error(f"--sizes must be 1..{MAX_ROWS}")
    if not 1 <= args.uncovered <= args.workspaces // 2 or not 1 <= args.repeat <= 10:
        parser.error("--uncovered must be 1..workspaces/2, --repeat 1..10")
    figures = [measure(s, args.workspaces, args.uncovered, args.repeat) for s in sizes]
    small, large = figures[0], figures[-1]
    ratios = {
        "cold": large.cold_ms / small.cold_ms,
        "warm": large.warm_ms / small.warm_ms,
    }
    passed = all(r < TARGET_RATIO for r in ratios.values())
    if args.json:
        payload: dict[str, Any] = {
            "figures": [asdict(f) for f in figures],
            "ratios": ratios,
            "target_ratio": TARGET_RATIO,
            "passed": passed,
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
        verdict = "PASS" if passed else "MISS"
        print(
            f"ratio largest/smallest: cold {ratios['cold']:.2f}, warm {ratios['warm']:.2f} "
            f"(target < {TARGET_RATIO:.0f}) {verdict}"
        )
    return 0 if passed else 1


if __name__ == "__main__":
    raise SystemExit(main())
