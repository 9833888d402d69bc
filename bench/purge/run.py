"""Purge benchmark: rows purged per second from a large evidence table, by the lifecycle engine
with the archive off and on, beside a bare batched keyset DELETE of the same batch size.

    python -m bench.purge.run [--rows 1000000] [--batch 5000] [--pg-url URL] [--json]
                              [--rows-file FILE]

Everything is real: a fresh PostgreSQL database migrated to head, one workspace whose evidence
table is filled with `--rows` aged-out rows (three share each timestamp, so batch boundaries fall
inside runs of equal cursors), refilled the same way before each of the three phases:

* bare: `DELETE ... WHERE id IN (SELECT id ... ORDER BY occurred_at, id LIMIT batch)`, one
  transaction per batch, until nothing is left: the floor any purge of this table pays;
* the engine, archive off: `PurgeEngine` on the evidence descriptor (holds read twice per batch,
  the live-child probe, ids bound as parameters, the run's counters in the batch's transaction);
* the engine, archive on: the same, each batch first written as gzip JSON Lines, fsynced, read
  back and verified, and the manifest rewritten.

`VACUUM (ANALYZE)` after the purge is timed on its own (the bare loop has none). Target: the
engine with the archive off at least 70% of the bare rate.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import Engine, text

from bench.cli import exit_on_sigterm, finish
from bench.database import ADMIN_URL, database_url, fresh_database
from bench.table import BenchRow, Target, measured
from timeline_pipeline.db.engine import make_engine
from timeline_pipeline.db.migrate import upgrade
from timeline_pipeline.lifecycle.archive import LocalDirectoryArchive
from timeline_pipeline.lifecycle.engine import PurgeEngine
from timeline_pipeline.lifecycle.registry import load_registry
from timeline_pipeline.store import workspaces
from timeline_pipeline.store.evidence import DESCRIPTOR

NAME = "purge"
WORKSPACE = "bench"
AS_OF = datetime(2026, 6, 1, tzinfo=UTC)
TARGET_RATIO = 0.7

FILL = text(
    """
    INSERT INTO workspace_timeline_evidence (
        workspace_id, source, source_type, source_key, occurred_at, source_updated_at,
        observed_at, actor_id, content, content_hash, metadata_json, scope_key, ai_eligible,
        deleted, revision, updated_at)
    SELECT :ws, 'lark', 'lark_message', 'chat/oc_bench/message/om_' || g, t, t, t, 'ou_a',
           'an incident chat message of ordinary length, number ' || g,
           md5(g::text) || md5((g + 1)::text),
           '{"chat_id": "oc_bench", "message_type": "text"}'::jsonb, 'oc_bench', true, false, 1, t
    FROM generate_series(1, :n) AS g,
         LATERAL (SELECT timestamptz '2025-01-01 00:00:00+00' + (g / 3) * interval '1 second'
                  AS t) AS x
    """
)
BARE = text(
    """
    DELETE FROM workspace_timeline_evidence WHERE id IN (
        SELECT id FROM workspace_timeline_evidence
        WHERE workspace_id = :ws AND occurred_at < :cutoff
        ORDER BY occurred_at, id LIMIT :batch)
    """
)


@dataclass
class Figures:
    rows: int
    batch: int
    bare_seconds: float
    engine_seconds: float
    archive_seconds: float
    vacuum_seconds: float
    engine_purged: int
    archive_purged: int
    archive_bytes: int

    def rate(self, seconds: float) -> float:
        return self.rows / seconds if seconds else float("nan")


def fill(engine: Engine, rows: int) -> None:
    with engine.begin() as conn:
        conn.execute(FILL, {"ws": WORKSPACE, "n": rows})
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text("VACUUM (ANALYZE) workspace_timeline_evidence"))


def bare(engine: Engine, batch: int) -> tuple[float, int]:
    cutoff = AS_OF - (AS_OF - AS_OF.replace(year=2025))  # any instant after every row
    started = time.perf_counter()
    total = 0
    while True:
        with engine.begin() as conn:
            gone = conn.execute(BARE, {"ws": WORKSPACE, "cutoff": cutoff, "batch": batch}).rowcount
        total += gone
        if gone == 0:
            return time.perf_counter() - started, total


def engine_run(engine: Engine, batch: int, archive: Path | None) -> tuple[float, int]:
    purge = PurgeEngine(
        engine,
        load_registry(),
        archive=LocalDirectoryArchive(archive) if archive is not None else None,
        batch_limit=batch,
        vacuum_threshold=10**12,  # timed on its own below
    )
    started = time.perf_counter()
    outcome = purge.run(descriptor_key=DESCRIPTOR.key, workspace_id=WORKSPACE, as_of=AS_OF)
    return time.perf_counter() - started, outcome.total("purged")


def run(rows: int, batch: int, admin_url: str) -> Figures:
    with fresh_database(admin_url) as name:
        engine = make_engine(database_url(name, admin_url))
        try:
            upgrade(engine)
            with engine.begin() as conn:
                workspaces.create(conn, WORKSPACE, created_at=AS_OF.replace(year=2024))
            fill(engine, rows)
            print(f"bare batched DELETE of {rows:,} rows ...", file=sys.stderr)
            bare_s, bare_n = bare(engine, batch)
            assert bare_n == rows, (bare_n, rows)
            fill(engine, rows)
            print("engine, archive off ...", file=sys.stderr)
            engine_s, engine_n = engine_run(engine, batch, None)
            started = time.perf_counter()
            with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
                conn.execute(text("VACUUM (ANALYZE) workspace_timeline_evidence"))
            vacuum_s = time.perf_counter() - started
            fill(engine, rows)
            print("engine, archive on ...", file=sys.stderr)
            with tempfile.TemporaryDirectory(prefix="tp_bench_archive_") as directory:
                archive_s, archive_n = engine_run(engine, batch, Path(directory))
                size = sum(p.stat().st_size for p in Path(directory).rglob("*") if p.is_file())
        finally:
            engine.dispose()
    return Figures(rows, batch, bare_s, engine_s, archive_s, vacuum_s, engine_n, archive_n, size)


def table(f: Figures) -> list[BenchRow]:
    bare_rate = f.rate(f.bare_seconds)
    baseline = f"bare batched keyset DELETE, {f.batch:,} rows per batch"
    return [
        measured(
            NAME,
            f"rows purged/s by the engine, archive off ({f.rows:,} evidence rows)",
            f.rate(f.engine_seconds),
            "rows/s",
            baseline=baseline,
            baseline_value=bare_rate,
            baseline_unit="rows/s",
            target=Target(">=", TARGET_RATIO, of="ratio"),
            note=f"{f.engine_seconds:.1f} s against {f.bare_seconds:.1f} s bare; "
            f"purged {f.engine_purged:,}",
        ),
        measured(
            NAME,
            f"rows purged/s by the engine, archive on ({f.rows:,} evidence rows)",
            f.rate(f.archive_seconds),
            "rows/s",
            baseline=baseline,
            baseline_value=bare_rate,
            baseline_unit="rows/s",
            note=f"{f.archive_seconds:.1f} s; archive {f.archive_bytes / 2**20:.1f} MiB "
            f"(gzip JSON Lines, every part fsynced and verified before its rows were deleted)",
        ),
        measured(
            NAME,
            "VACUUM (ANALYZE) after the purge",
            f.vacuum_seconds,
            "s",
            note="run by the engine after a purge of 10,000 rows or more; not in the rates above",
        ),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--table-rows", "--size", dest="size", type=int, default=1_000_000)
    parser.add_argument("--batch", type=int, default=DESCRIPTOR.batch_limit)
    parser.add_argument("--pg-url", default=ADMIN_URL, help="admin URL (CREATE DATABASE)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--rows", type=Path, metavar="FILE", help="write the table rows here")
    args = parser.parse_args(argv)
    if args.size < 1 or args.batch < 1:
        parser.error("--size and --batch must be at least 1")
    exit_on_sigterm()
    figures = run(args.size, args.batch, args.pg_url)
    rows = table(figures)
    if args.json:
        print(json.dumps({**asdict(figures), "rows": [r.to_json() for r in rows]}))
    return finish(rows, args.rows, print_table=not args.json)


if __name__ == "__main__":
    sys.exit(main())
