"""Event ingestion benchmark: signed Lark events over HTTP into `serve` on PostgreSQL.

    python -m bench.ingest.run [--events 5000] [--concurrency 16] [--chats 4] [--json]
                               [--wrk-seconds 15] [--wrk-warmup-seconds 3] [--wrk-threads 2]
                               [--wrk-connections 16] [--no-wrk] [--rows FILE]

Creates a fresh PostgreSQL database (dropped afterwards), migrates it, binds chats to firing
workspaces, then:

1. measures the raw rate of the same write with psycopg alone: one prepared
   `INSERT ... ON CONFLICT DO UPDATE` per transaction, one row at a time, on the evidence table
   (again after the load: the baseline is the mean of the two rates);
2. starts `timeline-pipeline serve` as a real uvicorn process on loopback;
3. sends pre-signed, encrypted `im.message.receive_v1` callbacks (built as Lark builds them, by
   the simulator) from a concurrent load generator on httpx's HTTP engine, after a warm-up;
4. replays pre-signed, encrypted callbacks of one chat with wrk, the C load generator
   (`bench/ingest/replay.lua`, each event sent once; 2 threads, 16 keep-alive connections,
   15 s after a 3 s warm-up), whose own CPU cost is small enough not to hide the receiver's;
   without wrk installed a row says so (`apt-get install wrk`);
5. prints accepted events/s and ack latency percentiles of both load generators beside the raw
   rate and their ratio, checks that every event became exactly one evidence row, and shows
   the CPU that the receiver and the Python load generator each spent per event (they share
   the machine's cores with PostgreSQL).

Bounded: at most --max-seconds of load, loopback only; the database and the server are cleaned
up on every exit path. Targets (2-core machine): >= 1,000 events/s, p99 < 50 ms, >= 1/3 of raw.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import resource
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpcore
import httpx
import psycopg
from psycopg.types.json import Jsonb

from bench.cli import add_rows_option, exit_on_sigterm, finish
from bench.database import database_url, fresh_database
from bench.ingest import wrk
from bench.table import BenchRow, Target, measured
from timeline_pipeline.db.engine import make_engine, transaction
from timeline_pipeline.db.migrate import upgrade
from timeline_pipeline.lark.simulator.events import EventIdentity, message_receive_event
from timeline_pipeline.lark.simulator.fixtures import make_chat_messages
from timeline_pipeline.lark.simulator.signing import SignedRequest, sign_payload
from timeline_pipeline.store import workspaces

VERIFICATION_TOKEN = "bench-verification-token"  # a throwaway loopback credential
ENCRYPT_KEY = "bench-encrypt-key"
MAX_EVENTS = 200_000
TARGET_EVENTS_PER_SECOND = 1000.0
TARGET_P99_MS = 50.0
TARGET_RATIO = 1 / 3
RAW_ROWS = 3000
"""Rows of each raw-rate measurement (one before the load, one after)."""
WRK_CHAT = "oc_bench_wrk"
WRK_WORKSPACE = "bench-wrk"
WRK_SUPPLY_PER_SECOND = 2500
"""Events built per second of wrk run: more than 2 cores can take, so the supply lasts."""


@dataclass
class WrkFigures:
    """The C load generator's run: one chat, keep-alive connections, a fixed duration."""

    threads: int
    connections: int
    seconds: float
    warmup_seconds: float
    events_built: int
    issued: int
    responses: int
    accepted: int
    other: int
    errors: dict[str, int]
    exhausted_threads: int
    events_per_second: float
    p50_ms: float
    p90_ms: float
    p99_ms: float
    p99_9_ms: float
    max_ms: float
    rows_stored: int
    rows_expected: int
    receiver_cpu_us_per_event: float


@dataclass
class Figures:
    events: int
    concurrency: int
    chats: int
    load_average: float
    seconds: float
    accepted: int
    statuses: dict[str, int]
    events_per_second: float
    p50_ms: float
    p99_ms: float
    raw_rows: int
    raw_seconds: float
    raw_rows_per_second: float
    raw_rows_per_second_before: float
    raw_rows_per_second_after: float
    ratio: float
    rows_stored: int
    rows_expected: int
    receiver_cpu_us_per_event: float
    load_generator_cpu_us_per_event: float
    wrk: WrkFigures | None = None
    wrk_missing: str = ""
    """Why there are no wrk figures (not installed, or it failed), when there are none."""


def rows(f: Figures, cores: int | None = None) -> list[BenchRow]:
    """The table rows: each target of the issue once per load generator, against the raw rate
    of the same run."""
    cores = cores or os.cpu_count() or 1
    cpu_per_event_us = f.receiver_cpu_us_per_event + f.load_generator_cpu_us_per_event
    ceiling = cores * 1e6 / cpu_per_event_us if cpu_per_event_us > 0 else float("nan")
    setup = f"Python load generator, {f.events:,} signed events, {f.concurrency} in flight"
    load = f"load average {f.load_average:.1f} on {cores} cores after the load"
    cpu_note = (
        f"CPU per event: receiver {f.receiver_cpu_us_per_event:,.0f} us, load generator "
        f"{f.load_generator_cpu_us_per_event:,.0f} us on the same {cores} cores: at most "
        f"~{ceiling:,.0f} events/s before PostgreSQL and other processes take their share; {load}"
    )
    python_rows = [
        measured(
            "ingest",
            f"accepted events/s ({setup}, {f.chats} chats)",
            f.events_per_second,
            "events/s",
            target=Target(">=", TARGET_EVENTS_PER_SECOND),
            note=cpu_note,
        ),
        _ratio_row("Python", f.events_per_second, f),
        measured(
            "ingest",
            "ack latency p99 (Python load generator)",
            f.p99_ms,
            "ms",
            target=Target("<", TARGET_P99_MS),
            note=f"p50 {f.p50_ms:.1f} ms; statuses {_statuses(f.statuses)}; {load}",
        ),
        _rows_row("Python", f.rows_stored, f.rows_expected, "events sent, warm-up included"),
    ]
    return python_rows + wrk_rows(f, load)


def wrk_rows(f: Figures, load: str) -> list[BenchRow]:
    """The same targets measured with wrk, or one row saying why there are no wrk figures."""
    w = f.wrk
    if w is None:
        return [
            BenchRow(
                benchmark="ingest",
                figure="wrk (C load generator): no figures",
                value=None,
                target="measured",
                met=False,
                note=f.wrk_missing or f"wrk is not installed: install it with `{wrk.INSTALL_HINT}`",
            )
        ]
    setup = (
        f"wrk, {w.threads} threads, {w.connections} keep-alive connections, one chat, "
        f"{w.seconds:g} s after a {w.warmup_seconds:g} s warm-up"
    )
    errors = ", ".join(f"{k} {v}" for k, v in sorted(w.errors.items()) if v) or "none"
    supply = (
        f"; {w.exhausted_threads} thread(s) ran out of the {w.events_built:,} events built"
        if w.exhausted_threads
        else ""
    )
    return [
        measured(
            "ingest",
            f"accepted events/s ({setup})",
            w.events_per_second,
            "events/s",
            target=Target(">=", TARGET_EVENTS_PER_SECOND),
            note=f"receiver CPU per event {w.receiver_cpu_us_per_event:,.0f} us; {load}",
        ),
        _ratio_row("wrk", w.events_per_second, f),
        measured(
            "ingest",
            "ack latency p99 (wrk)",
            w.p99_ms,
            "ms",
            target=Target("<", TARGET_P99_MS),
            note=(
                f"wrk's distribution: p50 {w.p50_ms:.1f} ms, p90 {w.p90_ms:.1f} ms, "
                f"p99.9 {w.p99_9_ms:.1f} ms, max {w.max_ms:.1f} ms; {w.responses:,} responses, "
                f"{w.other:,} not accepted; socket errors: {errors}"
            ),
        ),
        _rows_row(
            "wrk",
            w.rows_stored,
            w.rows_expected,
            "events wrk sent, warm-up included",
            note=supply.removeprefix("; "),
        ),
    ]


def _ratio_row(generator: str, rate: float, f: Figures) -> BenchRow:
    return measured(
        "ingest",
        f"accepted events/s against the raw upsert rate ({generator} load generator)",
        rate,
        "events/s",
        baseline="raw psycopg single-row upsert, one row per transaction",
        baseline_value=f.raw_rows_per_second,
        baseline_unit="rows/s",
        target=Target(">=", TARGET_RATIO, of="ratio"),
        note=(
            f"raw rate {f.raw_rows_per_second_before:,.0f} rows/s before the load and "
            f"{f.raw_rows_per_second_after:,.0f} after (the baseline is their mean)"
        ),
    )


def _rows_row(generator: str, stored: int, expected: int, what: str, note: str = "") -> BenchRow:
    return measured(
        "ingest",
        f"evidence rows stored per event sent ({generator} load generator)",
        stored,
        "rows",
        baseline=what,
        baseline_value=expected,
        baseline_unit="events",
        target=Target("==", 1.0, of="ratio", text="= events sent"),
        note=note,
    )


def _statuses(statuses: dict[str, int]) -> str:
    return ", ".join(f"{name}: {count}" for name, count in sorted(statuses.items())) or "none"


# --- database -----------------------------------------------------------------------------


def _db_url(name: str, driver: str = "postgresql+psycopg") -> str:
    return database_url(name, driver=driver)


def prepare(url: str, chats: list[str], created_at: datetime) -> None:
    engine = make_engine(url, null_pool=True)
    try:
        upgrade(engine)
        with transaction(engine) as conn:
            for index, chat in enumerate(chats):
                workspaces.create(conn, f"bench-{index}", created_at=created_at)
                workspaces.bind_chat(conn, f"bench-{index}", chat)
            workspaces.create(conn, WRK_WORKSPACE, created_at=created_at)
            workspaces.bind_chat(conn, WRK_WORKSPACE, WRK_CHAT)
            workspaces.create(conn, "bench-raw", created_at=created_at)
    finally:
        engine.dispose()


RAW_UPSERT = """
INSERT INTO workspace_timeline_evidence (
    workspace_id, source, source_type, source_key, occurred_at, source_updated_at, observed_at,
    actor_id, actor_display_name, content, content_hash, metadata_json, scope_key, ai_eligible,
    deleted, revision, updated_at)
VALUES (%s, 'lark', 'lark_message', %s, %s, %s, %s, %s, NULL, %s, %s, %s, %s, true, false, 1, %s)
ON CONFLICT (workspace_id, source, source_type, source_key) DO UPDATE SET
    source_updated_at = EXCLUDED.source_updated_at, content = EXCLUDED.content,
    content_hash = EXCLUDED.content_hash, metadata_json = EXCLUDED.metadata_json,
    revision = workspace_timeline_evidence.revision + 1, updated_at = EXCLUDED.updated_at
WHERE workspace_timeline_evidence.content_hash <> EXCLUDED.content_hash
RETURNING revision
"""


def raw_upsert_rate(db_name: str, rows: int, tag: str) -> tuple[int, float]:
    """Rows/s of the bare statement: prepared, one row per committed transaction (new keys per
    `tag`, so a second measurement inserts as the first did)."""
    now = datetime.now(UTC)
    with psycopg.connect(_db_url(db_name, "postgresql"), autocommit=True) as conn:
        for index in range(rows + 200):  # the first 200 warm the connection and the plan
            if index == 200:
                started = time.perf_counter()
            key = f"chat/oc_raw/message/om_raw_{tag}_{index}"
            conn.execute(
                RAW_UPSERT,
                (
                    "bench-raw",
                    key,
                    now,
                    now,
                    now,
                    "ou_raw",
                    "Rolling back deploy 4812",
                    f"{index:064x}",
                    Jsonb({"chat_id": "oc_raw", "message_type": "text"}),
                    "oc_raw",
                    now,
                ),
                prepare=True,
            ).fetchone()
        return rows, time.perf_counter() - started


PYTHON_LOAD_ROWS = (
    "SELECT count(*) FROM workspace_timeline_evidence WHERE workspace_id NOT IN ('bench-raw', %s)"
)
WRK_LOAD_ROWS = "SELECT count(*) FROM workspace_timeline_evidence WHERE workspace_id = %s"


def count_rows(db_name: str, *, wrk_workspace: bool = False) -> int:
    """Evidence rows of the Python load's workspaces, or of the wrk load's one."""
    query = WRK_LOAD_ROWS if wrk_workspace else PYTHON_LOAD_ROWS
    with psycopg.connect(_db_url(db_name, "postgresql")) as conn:
        row = conn.execute(query, (WRK_WORKSPACE,)).fetchone()
        return int(row[0]) if row else 0


def settled_rows(db_name: str, expected: int, *, timeout: float = 10.0) -> int:
    """The wrk workspace's row count once the writes still in flight when wrk stopped are
    committed: it reaches `expected`, or stops changing for a second."""
    deadline = time.monotonic() + timeout
    last, since = -1, time.monotonic()
    while True:
        stored = count_rows(db_name, wrk_workspace=True)
        now = time.monotonic()
        if stored != last:
            last, since = stored, now
        if stored >= expected or now - since >= 1.0 or now > deadline:
            return stored
        time.sleep(0.1)


# --- the receiver process -------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def own_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU of a process (Linux /proc), to show what the receiver itself costs."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass
class Receiver:
    url: str
    pid: int


@contextlib.contextmanager
def receiver(db_name: str, port: int) -> Iterator[Receiver]:
    env = {
        **os.environ,
        "TIMELINE_DATABASE_URL": _db_url(db_name),
        "LARK_VERIFICATION_TOKEN": VERIFICATION_TOKEN,
        "LARK_ENCRYPT_KEY": ENCRYPT_KEY,
        "LARK_APP_ID": "cli_bench",
        "TIMELINE_LARK_ENABLED": "true",
        "TIMELINE_LARK_EVENT_INGESTION_ENABLED": "true",
    }
    command = [
        str(Path(sys.executable).parent / "timeline-pipeline"),
        "serve",
        "--port",
        str(port),
        "--json",
        "--log-level",
        "warning",
    ]
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_healthy(base, process)
        yield Receiver(f"{base}/lark/events", process.pid)
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _wait_healthy(base: str, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    with httpx.Client(trust_env=False) as client:
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise SystemExit(f"serve exited with {process.returncode} before answering")
            with contextlib.suppress(httpx.HTTPError):
                if client.get(f"{base}/healthz", timeout=1).status_code == 200:
                    return
            time.sleep(0.1)
    raise SystemExit("serve did not become healthy within 60 s")


# --- load ---------------------------------------------------------------------------------


def build_requests(chats: list[str], count: int, start: datetime) -> list[SignedRequest]:
    """Signed and encrypted callbacks, spread round-robin over the chats, built before timing."""
    identity = EventIdentity(app_id="cli_bench", verification_token=VERIFICATION_TOKEN)
    per_chat = -(-count // len(chats))
    items = [
        make_chat_messages(chat, start, per_chat, seed=index, interval_seconds=0.5)
        for index, chat in enumerate(chats)
    ]
    ordered = [chat_items[i] for i in range(per_chat) for chat_items in items][:count]
    return [
        sign_payload(message_receive_event(item, identity), encrypt_key=ENCRYPT_KEY)
        for item in ordered
    ]


async def _load(
    url: str, requests: list[SignedRequest], concurrency: int, max_seconds: float
) -> tuple[list[float], Counter[str], float]:
    latencies: list[float] = []
    statuses: Counter[str] = Counter()
    queue = iter(requests)
    deadline = time.monotonic() + max_seconds

    async def worker() -> None:
        # httpx's own HTTP engine (httpcore), one keep-alive connection per worker: the httpx
        # client layer on top costs more CPU per request than the receiver's whole handling on
        # this machine, and the load generator shares its two cores with the server.
        async with httpcore.AsyncConnectionPool(max_connections=1) as pool:
            for request in queue:
                if time.monotonic() > deadline:
                    return
                headers = [(k.encode(), v.encode()) for k, v in request.headers.items()]
                sent = time.perf_counter()
                try:
                    response = await pool.request(
                        "POST", url, headers=headers, content=request.body
                    )
                except httpcore.TimeoutException as exc:
                    statuses[type(exc).__name__] += 1
                    continue
                latencies.append(time.perf_counter() - sent)
                outcome = json.loads(response.content).get("status")
                statuses[f"{response.status} {outcome or ''}".strip()] += 1

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return latencies, statuses, time.perf_counter() - started


def load(
    url: str, requests: list[SignedRequest], concurrency: int, max_seconds: float
) -> tuple[list[float], Counter[str], float]:
    return asyncio.run(_load(url, requests, concurrency, max_seconds))


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1]


# --- main ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class WrkOptions:
    seconds: float = 15.0
    warmup_seconds: float = 3.0
    threads: int = 2
    connections: int = 16
    enabled: bool = True


def run(
    events: int,
    concurrency: int,
    warmup: int,
    chats: int,
    max_seconds: float,
    wrk_options: WrkOptions | None = None,
) -> Figures:
    options = wrk_options or WrkOptions()
    binary = wrk.locate() if options.enabled else None
    now = datetime.now(UTC)
    chat_ids = [f"oc_bench_{index}" for index in range(chats)]
    with fresh_database() as db_name, tempfile.TemporaryDirectory(prefix="bench-wrk-") as scratch:
        prepare(_db_url(db_name), chat_ids, created_at=now - timedelta(hours=1))
        # The baseline brackets the load (before and after), so that a change in what else runs
        # on the machine weighs on both sides of the ratio.
        before = raw_upsert_rate(db_name, rows=RAW_ROWS, tag="before")
        requests = build_requests(chat_ids, warmup + events, now - timedelta(minutes=30))
        with receiver(db_name, free_port()) as server:
            load(server.url, requests[:warmup], concurrency, max_seconds)
            cpu_before, own_before = process_cpu_seconds(server.pid), own_cpu_seconds()
            latencies, statuses, seconds = load(
                server.url, requests[warmup:], concurrency, max_seconds
            )
            cpu = process_cpu_seconds(server.pid) - cpu_before
            own = own_cpu_seconds() - own_before
            sent = warmup + sum(statuses.values())
            stored = count_rows(db_name)
            wrk_figures, wrk_missing = None, ""
            if binary is None:
                wrk_missing = (
                    "not run (--no-wrk)"
                    if not options.enabled
                    else f"wrk is not installed: install it with `{wrk.INSTALL_HINT}`"
                )
            else:
                try:
                    wrk_figures = run_wrk(binary, server, db_name, Path(scratch), options, now)
                except wrk.WrkFailed as exc:
                    wrk_missing = f"wrk failed: {exc}"
        after = raw_upsert_rate(db_name, rows=RAW_ROWS, tag="after")
    accepted = statuses.get("200 accepted", 0)
    rate = accepted / seconds
    raw_rows, raw_seconds = before[0] + after[0], before[1] + after[1]
    raw_before, raw_after = before[0] / before[1], after[0] / after[1]
    raw_rate = (raw_before + raw_after) / 2
    return Figures(
        events=events,
        concurrency=concurrency,
        chats=chats,
        load_average=round(os.getloadavg()[0], 2),
        seconds=round(seconds, 3),
        accepted=accepted,
        statuses=dict(statuses),
        events_per_second=round(rate, 1),
        p50_ms=round(percentile(latencies, 50) * 1000, 2),
        p99_ms=round(percentile(latencies, 99) * 1000, 2),
        raw_rows=raw_rows,
        raw_seconds=round(raw_seconds, 3),
        raw_rows_per_second=round(raw_rate, 1),
        raw_rows_per_second_before=round(raw_before, 1),
        raw_rows_per_second_after=round(raw_after, 1),
        ratio=round(rate / raw_rate, 3),
        rows_stored=stored,
        rows_expected=sent,
        receiver_cpu_us_per_event=round(cpu / max(1, len(latencies)) * 1e6, 1),
        load_generator_cpu_us_per_event=round(own / max(1, len(latencies)) * 1e6, 1),
        wrk=wrk_figures,
        wrk_missing=wrk_missing,
    )


def run_wrk(
    binary: str,
    server: Receiver,
    db_name: str,
    scratch: Path,
    options: WrkOptions,
    now: datetime,
) -> WrkFigures:
    """wrk's warm-up, then its timed run, each replaying events of its own (one chat)."""
    warm = math.ceil(options.warmup_seconds * WRK_SUPPLY_PER_SECOND)
    timed = math.ceil(options.seconds * WRK_SUPPLY_PER_SECOND)
    built = build_requests([WRK_CHAT], warm + timed, now - timedelta(minutes=20))
    files = scratch / "warmup.tsv", scratch / "timed.tsv"
    wrk.write_events(files[0], built[:warm])
    wrk.write_events(files[1], built[warm:])
    del built
    shape = {"threads": options.threads, "connections": options.connections}
    warmup = wrk.run(binary, server.url, files[0], seconds=options.warmup_seconds, **shape)
    cpu_before = process_cpu_seconds(server.pid)
    report = wrk.run(binary, server.url, files[1], seconds=options.seconds, **shape)
    cpu = process_cpu_seconds(server.pid) - cpu_before
    expected = warmup.issued + report.issued
    return WrkFigures(
        threads=options.threads,
        connections=options.connections,
        seconds=options.seconds,
        warmup_seconds=options.warmup_seconds,
        events_built=warm + timed,
        issued=report.issued,
        responses=report.requests,
        accepted=report.accepted,
        other=report.other,
        errors=report.errors,
        exhausted_threads=warmup.exhausted_threads + report.exhausted_threads,
        events_per_second=round(report.accepted_per_second, 1),
        p50_ms=round(report.p50_ms, 2),
        p90_ms=round(report.p90_ms, 2),
        p99_ms=round(report.p99_ms, 2),
        p99_9_ms=round(report.p99_9_ms, 2),
        max_ms=round(report.max_ms, 2),
        rows_stored=settled_rows(db_name, expected),
        rows_expected=expected,
        receiver_cpu_us_per_event=round(cpu / max(1, report.requests) * 1e6, 1),
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=5000, help="timed events (after warm-up)")
    parser.add_argument("--concurrency", type=int, default=16, help="requests in flight")
    parser.add_argument("--warmup", type=int, default=500)
    parser.add_argument("--chats", type=int, default=4, help="bound chats the events spread over")
    parser.add_argument("--max-seconds", type=float, default=120.0, help="cap on each load phase")
    parser.add_argument("--wrk-seconds", type=float, default=15.0, help="wrk's timed run")
    parser.add_argument("--wrk-warmup-seconds", type=float, default=3.0, help="wrk's warm-up")
    parser.add_argument("--wrk-threads", type=int, default=2)
    parser.add_argument("--wrk-connections", type=int, default=16, help="keep-alive connections")
    parser.add_argument("--no-wrk", action="store_true", help="only the Python load generator")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    add_rows_option(parser)
    args = parser.parse_args(argv)
    if not 1 <= args.events <= MAX_EVENTS or not 1 <= args.concurrency <= 256:
        parser.error(f"--events must be 1..{MAX_EVENTS}, --concurrency 1..256")
    if not 1 <= args.wrk_seconds <= 120 or not 1 <= args.wrk_warmup_seconds <= 60:
        parser.error("--wrk-seconds must be 1..120, --wrk-warmup-seconds 1..60")
    if not 1 <= args.wrk_threads <= args.wrk_connections <= 256:
        parser.error("wrk needs 1 <= --wrk-threads <= --wrk-connections <= 256")
    exit_on_sigterm()
    options = WrkOptions(
        seconds=args.wrk_seconds,
        warmup_seconds=args.wrk_warmup_seconds,
        threads=args.wrk_threads,
        connections=args.wrk_connections,
        enabled=not args.no_wrk,
    )
    figures = run(
        args.events, args.concurrency, args.warmup, max(1, args.chats), args.max_seconds, options
    )
    table = rows(figures)
    if args.json:
        payload = {**asdict(figures), "rows": [row.to_json() for row in table]}
        print(json.dumps(payload, sort_keys=True))
    else:
        _print(figures)
    return finish(table, args.rows, print_table=not args.json)


def _print(f: Figures) -> None:
    print(
        f"receiver  : {f.accepted} of {f.events} events accepted in {f.seconds:.2f} s "
        f"-> {f.events_per_second:,.0f} events/s ({f.concurrency} in flight, {f.chats} chats)"
    )
    print(f"ack       : p50 {f.p50_ms:.1f} ms, p99 {f.p99_ms:.1f} ms")
    print(
        f"raw upsert: {f.raw_rows} rows in {f.raw_seconds:.2f} s; "
        f"{f.raw_rows_per_second_before:,.0f} rows/s before the load, "
        f"{f.raw_rows_per_second_after:,.0f} after, mean {f.raw_rows_per_second:,.0f} "
        "(psycopg, prepared, one row per transaction)"
    )
    print(f"ratio     : {f.ratio:.2f} of the raw rate")
    print(f"rows      : {f.rows_stored} stored for {f.rows_expected} events sent")
    print(f"statuses  : {f.statuses}")
    print(
        f"cpu/event : receiver {f.receiver_cpu_us_per_event:,.0f} us, load generator "
        f"{f.load_generator_cpu_us_per_event:,.0f} us; load average {f.load_average} "
        f"on {os.cpu_count()} CPUs at the end"
    )
    w = f.wrk
    if w is None:
        print(f"wrk       : {f.wrk_missing}")
        return
    print(
        f"wrk       : {w.accepted} accepted in {w.seconds:g} s -> {w.events_per_second:,.0f} "
        f"events/s ({w.threads} threads, {w.connections} connections, one chat)"
    )
    print(
        f"wrk ack   : p50 {w.p50_ms:.1f} ms, p90 {w.p90_ms:.1f} ms, p99 {w.p99_ms:.1f} ms, "
        f"p99.9 {w.p99_9_ms:.1f} ms, max {w.max_ms:.1f} ms; errors {w.errors}"
    )
    print(
        f"wrk rows  : {w.rows_stored} stored for {w.rows_expected} events sent; receiver "
        f"{w.receiver_cpu_us_per_event:,.0f} us CPU/event"
    )


if __name__ == "__main__":
    raise SystemExit(main())
