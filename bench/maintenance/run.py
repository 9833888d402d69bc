"""Maintenance benchmark: a `content_hash_backfill` apply against a bare keyset UPDATE.

    python -m bench.maintenance.run [--rows-count 200000] [--batch-size 500] [--delay-ms 1]
                                    [--json] [--rows FILE]

A fresh PostgreSQL database (dropped afterwards) gets one workspace with `--rows-count` evidence
rows (about 300 bytes of text each, loaded with COPY) whose stored content hashes are all stale.
Then, on the same rows and in the same run:

* the baseline: a bare batched keyset UPDATE, `--batch-size` ids a transaction in id order,
  computing the hash in SQL (`sha256`), with the same `--delay-ms` between batches: the least a
  batched rewrite of these rows can cost on this server;
* the maintenance job: a `content_hash_backfill` apply job driven to completion by the driver
  (`maintenance.driver`, talking to the job service in process), with the same batch size and
  delay and a 500 ms lock and 3000 ms statement timeout. Each batch locks the job row NOWAIT,
  reads an id page, recomputes every hash in Python from the row's normalized content, writes
  the stale ones back, and commits them with the checkpoint, counters and revision; then a
  verification pass reads every row again.

The hashes are made stale again (and the table vacuumed) before each pass. The baseline runs
before and after the job and its figure is the mean of the two, so both share whatever else the
machine is doing. Reported: the apply pass's rows/s (scan and rewrite) against the baseline, and
the whole job's rows/s (apply plus verification) for context.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg

from bench.cli import add_rows_option, exit_on_sigterm, finish
from bench.database import database_url, fresh_database
from bench.table import BenchRow, Target, measured
from timeline_pipeline.db.engine import make_engine
from timeline_pipeline.db.migrate import upgrade
from timeline_pipeline.maintenance.driver import Budget, Driver
from timeline_pipeline.maintenance.limits import Limits
from timeline_pipeline.maintenance.processors import default_registry
from timeline_pipeline.maintenance.service import JobService
from timeline_pipeline.maintenance.transports import ServiceTransport
from timeline_pipeline.observability.logs import configure_logging
from timeline_pipeline.settings import load_timeline_settings

WORKSPACE = "ws-bench"
CHAT = "oc_bench"
MAX_ROWS = 2_000_000
TARGET_RATIO = 0.25
"""The job, with its row lock, checkpoint write and Python hashing per batch, keeps at least a
quarter of the bare UPDATE's rate."""
FILLER = (
    "the checkout service returns 502 for one in five requests since the 14:05 deploy; "
    "rolling back payments-api to v41 while the database team checks replica lag and the "
    "connection pool on the primary, next update in ten minutes "
)
EVIDENCE_COLUMNS = (
    "workspace_id, source, source_type, source_key, occurred_at, source_updated_at, "
    "observed_at, actor_id, content, content_hash, metadata_json, scope_key, ai_eligible, "
    "deleted, revision, updated_at"
)


@dataclass
class Figures:
    rows: int
    batch_size: int
    delay_ms: int
    load_seconds: float
    baseline_seconds: list[float]
    apply_seconds: float
    job_seconds: float
    job_batches: int
    updated: int

    @property
    def baseline_rows_per_second(self) -> float:
        return self.rows / (sum(self.baseline_seconds) / len(self.baseline_seconds))

    @property
    def apply_rows_per_second(self) -> float:
        return self.rows / self.apply_seconds

    @property
    def job_rows_per_second(self) -> float:
        return self.rows / self.job_seconds


def _plain(name: str) -> str:
    return database_url(name, driver="postgresql")


def load(db: str, rows: int) -> float:
    started = time.perf_counter()
    now = datetime.now(UTC)
    with psycopg.connect(_plain(db)) as conn:
        conn.execute(
            "INSERT INTO workspaces (id, type, status, created_at, updated_at) "
            "VALUES (%s, 'incident', 'firing', %s, %s)",
            (WORKSPACE, now - timedelta(days=1), now),
        )
        with conn.cursor().copy(
            f"COPY workspace_timeline_evidence ({EVIDENCE_COLUMNS}) FROM STDIN"
        ) as copy:
            for n in range(rows):
                at = now - timedelta(seconds=rows - n)
                copy.write_row(
                    (
                        WORKSPACE, "lark", "lark_message", f"chat/{CHAT}/message/om_{n}",
                        at, at, at, "ou_bench", f"{n}: {FILLER}", "stale",
                        json.dumps({"chat_id": CHAT, "message_type": "text",
                                    "sender_type": "user"}),
                        CHAT, True, False, 1, at,
                    )
                )  # fmt: skip
    vacuum(db)
    return time.perf_counter() - started


def make_stale(db: str) -> None:
    with psycopg.connect(_plain(db)) as conn:
        conn.execute("UPDATE workspace_timeline_evidence SET content_hash = 'stale'")
    vacuum(db)


def vacuum(db: str) -> None:
    with psycopg.connect(_plain(db), autocommit=True) as conn:
        conn.execute("VACUUM (ANALYZE) workspace_timeline_evidence")


def bare_keyset_update(db: str, batch_size: int, delay_ms: int) -> float:
    """Rewrite every hash in id-ordered batches, one transaction each: the baseline."""
    statement = (
        "UPDATE workspace_timeline_evidence SET content_hash = "
        "encode(sha256(convert_to(content, 'UTF8')), 'hex'), updated_at = now() "
        "WHERE id IN (SELECT id FROM workspace_timeline_evidence "
        "WHERE workspace_id = %s AND id > %s ORDER BY id LIMIT %s) RETURNING id"
    )
    started = time.perf_counter()
    after = 0
    with psycopg.connect(_plain(db)) as conn:
        while True:
            ids = [row[0] for row in conn.execute(statement, (WORKSPACE, after, batch_size))]
            conn.commit()
            if not ids:
                break
            after = max(ids)
            if len(ids) < batch_size:
                break
            time.sleep(delay_ms / 1000)
    return time.perf_counter() - started


def maintenance_job(db: str, batch_size: int, delay_ms: int) -> tuple[float, float, int, int]:
    """(apply seconds, whole job seconds, batches, rows updated) of one apply job."""
    engine = make_engine(database_url(db), pool_size=2)
    service = JobService(engine, default_registry(load_timeline_settings()))
    job, _ = service.create(
        job_type="content_hash_backfill",
        idempotency_key=f"bench-{time.time_ns()}",
        parameters={"workspace_id": WORKSPACE},
        limits=Limits(batch_size, delay_ms, 500, 3000),
        apply=True,
    )
    started = time.perf_counter()
    scan_done: list[float] = []

    def observed(state: dict[str, Any]) -> None:
        if state["phase"] == "verify" and not scan_done:
            scan_done.append(time.perf_counter())

    report = Driver(ServiceTransport(service), on_job=observed).run(
        job.id, Budget(max_batches=1_000_000, max_seconds=3600)
    )
    finished = time.perf_counter()
    engine.dispose()
    if report.exit_code != 0 or report.job is None:
        raise SystemExit(f"the maintenance job did not complete: {report.reason}")
    apply_end = scan_done[0] if scan_done else finished
    return (
        apply_end - started,
        finished - started,
        int(report.job["batches"]),
        int(report.job["progress"]["updated"]),
    )


def measure(rows: int, batch_size: int, delay_ms: int) -> Figures:
    with fresh_database() as db:
        engine = make_engine(database_url(db), null_pool=True)
        upgrade(engine)
        engine.dispose()
        load_seconds = load(db, rows)
        first = bare_keyset_update(db, batch_size, delay_ms)
        make_stale(db)
        apply_seconds, job_seconds, batches, updated = maintenance_job(db, batch_size, delay_ms)
        make_stale(db)
        second = bare_keyset_update(db, batch_size, delay_ms)
    return Figures(rows, batch_size, delay_ms, load_seconds, [first, second], apply_seconds,
                   job_seconds, batches, updated)  # fmt: skip


def rows_of(f: Figures) -> list[BenchRow]:
    baseline = f"bare keyset UPDATE, batch {f.batch_size}, delay {f.delay_ms} ms (mean of 2)"
    return [
        measured(
            "maintenance",
            f"content_hash_backfill apply over {f.rows:,} rows, batch {f.batch_size}, "
            f"delay {f.delay_ms} ms",
            f.apply_rows_per_second,
            "rows/s",
            baseline=baseline,
            baseline_value=f.baseline_rows_per_second,
            target=Target(">=", TARGET_RATIO, of="ratio"),
            note=f"{f.updated:,} rows rewritten; NOWAIT job-row lock, checkpoint and revision "
            "committed with every batch",
        ),
        measured(
            "maintenance",
            "whole job: apply plus verification pass",
            f.job_rows_per_second,
            "rows/s",
            baseline=baseline,
            baseline_value=f.baseline_rows_per_second,
            note=f"{f.job_batches:,} batches in {f.job_seconds:.1f} s",
        ),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows-count", type=int, default=200_000, help="evidence rows")
    parser.add_argument("--batch-size", type=int, default=500)
    parser.add_argument("--delay-ms", type=int, default=1)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    add_rows_option(parser)
    args = parser.parse_args(argv)
    if not 1 <= args.rows_count <= MAX_ROWS:
        parser.error(f"--rows-count must be 1..{MAX_ROWS}")
    if not 1 <= args.batch_size <= 5000 or not 1 <= args.delay_ms <= 60000:
        parser.error("--batch-size must be 1..5000 and --delay-ms 1..60000")
    exit_on_sigterm()
    # One line per batch at info would be timed with the job: warnings only, as in production
    # runs that log at warning.
    configure_logging(json=True, level="WARNING")
    figures = measure(args.rows_count, args.batch_size, args.delay_ms)
    table = rows_of(figures)
    if args.json:
        print(json.dumps({"figures": asdict(figures), "rows": [r.to_json() for r in table]}))
    else:
        print(
            f"rows {figures.rows:,}: load {figures.load_seconds:.1f} s, bare UPDATE "
            f"{', '.join(f'{s:.1f}' for s in figures.baseline_seconds)} s, apply "
            f"{figures.apply_seconds:.1f} s, whole job {figures.job_seconds:.1f} s "
            f"({figures.job_batches} batches)"
        )
    return finish(table, args.rows, print_table=not args.json)


if __name__ == "__main__":
    raise SystemExit(main())
