"""Event ingestion benchmark: signed Lark events over HTTP into `serve` on PostgreSQL.

    python -m bench.ingest.run [--events 5000] [--concurrency 16] [--chats 4] [--json]
                               [--rows FILE]

Creates a fresh PostgreSQL database (dropped afterwards), migrates it, binds chats to firing
workspaces, then:

1. measures the raw rate of the same write with psycopg alone: one prepared
   `INSERT ... ON CONFLICT DO UPDATE` per transaction, one row at a time, on the evidence table
   (again after the load: the baseline is the mean of the two rates);
2. starts `timeline-pipeline serve` as a real uvicorn process on loopback;
3. sends pre-signed, encrypted `im.message.receive_v1` callbacks (built as Lark builds them, by
   the simulator) from a concurrent load generator on httpx's HTTP engine, after a warm-up;
4. prints accepted events/s and p50/p99 ack latency beside the raw rate and their ratio, checks
   that every event became exactly one evidence row, and shows the CPU that the receiver and
   the load generator each spent per event (they share the machine's cores with PostgreSQL).

Bounded: at most --max-seconds of load, loopback only; the database and the server are cleaned
up on every exit path. Targets (2-core machine): >= 1,000 events/s, p99 < 50 ms, >= 1/3 of raw.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import resource
import signal
import socket
import statistics
import subprocess
import sys
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


def rows(f: Figures, cores: int | None = None) -> list[BenchRow]:
    """The table rows: each target of the issue once, against the raw rate of the same run."""
    cores = cores or os.cpu_count() or 1
    cpu_per_event_us = f.receiver_cpu_us_per_event + f.load_generator_cpu_us_per_event
    ceiling = cores * 1e6 / cpu_per_event_us if cpu_per_event_us > 0 else float("nan")
    setup = f"{f.events:,} signed events, {f.concurrency} in flight, {f.chats} chats"
    raw = "raw psycopg single-row upsert, one row per transaction"
    load = f"load average {f.load_average:.1f} on {cores} cores after the load"
    cpu_note = (
        f"CPU per event: receiver {f.receiver_cpu_us_per_event:,.0f} us, load generator "
        f"{f.load_generator_cpu_us_per_event:,.0f} us on the same {cores} cores: at most "
        f"~{ceiling:,.0f} events/s before PostgreSQL and other processes take their share; {load}"
    )
    return [
        measured(
            "ingest",
            f"accepted events/s ({setup})",
            f.events_per_second,
            "events/s",
            target=Target(">=", TARGET_EVENTS_PER_SECOND),
            note=cpu_note,
        ),
        measured(
            "ingest",
            "accepted events/s against the raw upsert rate",
            f.events_per_second,
            "events/s",
            baseline=raw,
            baseline_value=f.raw_rows_per_second,
            baseline_unit="rows/s",
            target=Target(">=", TARGET_RATIO, of="ratio"),
            note=(
                f"raw rate {f.raw_rows_per_second_before:,.0f} rows/s before the load and "
                f"{f.raw_rows_per_second_after:,.0f} after (the baseline is their mean)"
            ),
        ),
        measured(
            "ingest",
            "ack latency p99",
            f.p99_ms,
            "ms",
            target=Target("<", TARGET_P99_MS),
            note=f"p50 {f.p50_ms:.1f} ms; statuses {_statuses(f.statuses)}; {load}",
        ),
        measured(
            "ingest",
            "evidence rows stored per event sent",
            f.rows_stored,
            "rows",
            baseline="events sent, warm-up included",
            baseline_value=f.rows_expected,
            baseline_unit="events",
            target=Target("==", 1.0, of="ratio", text="= events sent"),
        ),
    ]


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


def count_rows(db_name: str) -> int:
    with psycopg.connect(_db_url(db_name, "postgresql")) as conn:
        row = conn.execute(
            "SELECT count(*) FROM workspace_timeline_evidence WHERE workspace_id <> 'bench-raw'"
        ).fetchone()
        return int(row[0]) if row else 0


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


def run(events: int, concurrency: int, warmup: int, chats: int, max_seconds: float) -> Figures:
    now = datetime.now(UTC)
    chat_ids = [f"oc_bench_{index}" for index in range(chats)]
    with fresh_database() as db_name:
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
        after = raw_upsert_rate(db_name, rows=RAW_ROWS, tag="after")
        sent = warmup + sum(statuses.values())
        stored = count_rows(db_name)
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
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=5000, help="timed events (after warm-up)")
    parser.add_argument("--concurrency", type=int, default=16, help="requests in flight")
    parser.add_argument("--warmup", type=int, default=500)
    parser.add_argument("--chats", type=int, default=4, help="bound chats the events spread over")
    parser.add_argument("--max-seconds", type=float, default=120.0, help="cap on each load phase")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    add_rows_option(parser)
    args = parser.parse_args(argv)
    if not 1 <= args.events <= MAX_EVENTS or not 1 <= args.concurrency <= 256:
        parser.error(f"--events must be 1..{MAX_EVENTS}, --concurrency 1..256")
    exit_on_sigterm()
    figures = run(args.events, args.concurrency, args.warmup, max(1, args.chats), args.max_seconds)
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


if __name__ == "__main__":
    raise SystemExit(main())
