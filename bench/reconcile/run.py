"""Reconciliation benchmark: a 72-hour backfill of a 20,000-message chat from the local Lark.

    python -m bench.reconcile.run [--messages 20000] [--thread-every 0] [--pg-url URL] [--json]

Everything is real and on loopback: the local Lark (`SimulatorServer`'s app under uvicorn), the
product's LarkClient with its 50 requests/s and 1,000 requests/min limiter, the runner, and a
fresh PostgreSQL database created for the run and dropped afterwards. It reports

* pages fetched by the backfill against the minimum (ceil(listed / 50)) and pages fetched by the
  incremental run that follows, which must re-read only the overlap;
* end-to-end messages/s, split into time waiting on Lark (HTTP and the rate limiter), time
  normalizing, and time writing (eligibility, batch upserts, the per-page checkpoint marker,
  commits);
* the same records upserted alone with `evidence.upsert_many` (no HTTP, no normalization), once
  in page-sized transactions like the pipeline and once in a single 500-row-batch transaction;
* the write-time ratio against those bare upserts (target: <= 2x), and the busiest 1-second and
  60-second request windows seen by the server (limits: 50 and 1,000).

At 50 requests/s the end-to-end time has a floor of pages / 50 seconds, so the 2x target is
applied to the pipeline's own write path; the end-to-end ratio is printed as well.
"""

from __future__ import annotations

import argparse
import bisect
import json
import math
import os
import sys
import time
import uuid
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg

from timeline_pipeline.db.engine import make_engine
from timeline_pipeline.db.migrate import upgrade
from timeline_pipeline.ingest.eligibility import MANUAL
from timeline_pipeline.ingest.records import evidence_record
from timeline_pipeline.lark.client import LarkClient
from timeline_pipeline.lark.normalize import normalize_list_item
from timeline_pipeline.lark.simulator import ChatStore, LoopbackUvicorn, make_chat_messages
from timeline_pipeline.lark.simulator.faults import SimulatorFaults
from timeline_pipeline.lark.simulator.server import SimulatorState, create_app
from timeline_pipeline.reconcile.lark_factory import client_config
from timeline_pipeline.reconcile.planning import Mode
from timeline_pipeline.reconcile.runner import Reconciler
from timeline_pipeline.reconcile.targets import Target
from timeline_pipeline.settings import load_timeline_settings
from timeline_pipeline.store import evidence, workspaces

CHAT = "oc_bench_chat"
APP_SECRET = "bench-secret"
PAGE = 50
LOOKBACK = timedelta(hours=72)
DEFAULT_ADMIN_URL = os.environ.get(
    "TIMELINE_TEST_PG_URL", "postgresql://postgres@127.0.0.1:5432/postgres"
)

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


class RequestLog:
    """ASGI wrapper that stamps every HTTP request as the server receives it."""

    def __init__(self, app: Callable[[Scope, Receive, Send], Awaitable[None]]) -> None:
        self.app = app
        self.stamps: list[float] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            self.stamps.append(time.monotonic())
        await self.app(scope, receive, send)

    def busiest(self, window: float) -> int:
        stamps = sorted(self.stamps)
        return max(
            (bisect.bisect_left(stamps, t + window) - i for i, t in enumerate(stamps)), default=0
        )


@dataclass
class Figures:
    messages: int
    listed: int
    min_pages: int
    backfill_pages: int
    thread_pages: int
    incremental_pages: int
    incremental_expected_pages: int
    incremental_messages: int
    overlap_messages: int
    requests: int
    busiest_1s: int
    busiest_60s: int
    wall_seconds: float
    fetch_seconds: float
    normalize_seconds: float
    write_seconds: float
    messages_per_second: float
    bare_page_tx_seconds: float
    bare_single_tx_seconds: float
    write_ratio_page_tx: float
    write_ratio_single_tx: float
    processing_ratio_page_tx: float
    wall_ratio_page_tx: float

    @property
    def pages_ok(self) -> bool:
        return (
            self.backfill_pages == self.min_pages
            and self.incremental_pages == self.incremental_expected_pages
        )


def _database(admin_url: str) -> tuple[str, Callable[[], None]]:
    name = f"tp_bench_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(admin_url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')

    def drop() -> None:
        with psycopg.connect(admin_url, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    base = admin_url.rsplit("/", 1)[0].replace("postgresql://", "postgresql+psycopg://", 1)
    return f"{base}/{name}", drop


def _spread(items: list[dict[str, Any]], first: datetime, last: datetime) -> list[dict[str, Any]]:
    """Stretch the generated times onto [first, last] exactly, keeping their order and gaps'
    proportions, so the whole chat lies inside the 72 hours and before now."""
    times = [int(i["create_time"]) for i in items]
    low, high = min(times), max(times)
    first_ms, last_ms = int(first.timestamp() * 1000), int(last.timestamp() * 1000)
    scale = (last_ms - first_ms) / max(1, high - low)
    for item, created in zip(items, times, strict=True):
        moved = str(first_ms + round((created - low) * scale))
        item["create_time"] = item["update_time"] = moved
    return items


def _chat_listed(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What a chat listing returns: everything but replies inside threads."""
    return [i for i in items if not (i.get("root_id") and i.get("thread_id"))]


def run(count: int, thread_every: int, admin_url: str) -> Figures:
    now = datetime.now(UTC)
    created = now - LOOKBACK
    items = _spread(
        make_chat_messages(CHAT, created, count, seed=72, thread_every=thread_every),
        created + timedelta(minutes=5),
        now - timedelta(minutes=5),
    )
    listed = len(_chat_listed(items))
    settings = load_timeline_settings(enabled=True, reconciliation_enabled=True)
    app_id = f"cli_bench_{uuid.uuid4().hex[:8]}"
    state = SimulatorState(ChatStore(items), SimulatorFaults(), {app_id: APP_SECRET})
    log = RequestLog(create_app(state))
    url, drop = _database(admin_url)
    engine = make_engine(url, pool_size=2)
    try:
        upgrade(engine)
        with engine.begin() as conn:
            workspace = workspaces.create(conn, "bench-pipeline", created_at=created)
            workspaces.bind_chat(conn, "bench-pipeline", CHAT)
        with LoopbackUvicorn(log) as server:
            client = LarkClient(
                client_config(
                    settings, app_id=app_id, app_secret=APP_SECRET, base_url=server.base_url
                )
            )
            reconciler = Reconciler(engine, client, settings, app_id=app_id, fill_names=False)
            target = Target(workspace, CHAT)
            started = time.perf_counter()
            backfill = reconciler.run([target], mode=Mode.INCREMENTAL, scope=MANUAL, now=now)
            wall = time.perf_counter() - started
            [chat] = backfill.chats
            if not chat.ok:
                raise SystemExit(f"backfill failed: {chat.error}")
            requests = len(log.stamps)
            busiest_1s, busiest_60s = log.busiest(1.0), log.busiest(60.0)
            assert chat.newest_message_at is not None
            overlap_from = chat.newest_message_at - settings.reconcile_overlap
            overlap_ms = int(overlap_from.timestamp()) * 1000  # Lark filters by whole seconds
            in_overlap = sum(
                1
                for i in items
                if int(i["create_time"]) >= overlap_ms
                and not (i.get("root_id") and i.get("thread_id"))
            )
            later = now + timedelta(seconds=1)
            incremental = reconciler.run([target], mode=Mode.INCREMENTAL, scope=MANUAL, now=later)
            if incremental.failures:
                raise SystemExit(f"incremental run failed: {incremental.failure_summary()}")
        bare_page, bare_single = _bare_upserts(engine, items, created, now)
    finally:
        engine.dispose()
        drop()
    return Figures(
        messages=count,
        listed=listed,
        min_pages=math.ceil(listed / PAGE),
        backfill_pages=chat.chat_pages,
        thread_pages=chat.thread_pages,
        incremental_pages=incremental.chats[0].chat_pages,
        incremental_expected_pages=max(1, math.ceil(in_overlap / PAGE)),
        incremental_messages=incremental.chats[0].messages,
        overlap_messages=in_overlap,
        requests=requests,
        busiest_1s=busiest_1s,
        busiest_60s=busiest_60s,
        wall_seconds=wall,
        fetch_seconds=chat.fetch_seconds,
        normalize_seconds=chat.normalize_seconds,
        write_seconds=chat.write_seconds,
        messages_per_second=chat.messages / wall,
        bare_page_tx_seconds=bare_page,
        bare_single_tx_seconds=bare_single,
        write_ratio_page_tx=chat.write_seconds / bare_page,
        write_ratio_single_tx=chat.write_seconds / bare_single,
        processing_ratio_page_tx=(chat.normalize_seconds + chat.write_seconds) / bare_page,
        wall_ratio_page_tx=wall / bare_page,
    )


def _bare_upserts(
    engine: Any, items: list[dict[str, Any]], created: datetime, now: datetime
) -> tuple[float, float]:
    """The same messages as evidence rows, upserted with no HTTP and no normalization timed."""
    settings = load_timeline_settings()
    normalized = [normalize_list_item(i, max_text_chars=settings.max_message_chars) for i in items]
    timings: list[float] = []
    for workspace_id, page_size in (("bench-bare-pages", PAGE), ("bench-bare-single", None)):
        with engine.begin() as conn:
            workspaces.create(conn, workspace_id, created_at=created)
        records = [evidence_record(m, workspace_id) for m in normalized]
        started = time.perf_counter()
        if page_size is None:
            with engine.begin() as conn:
                evidence.upsert_many(conn, records, now=now, batch_size=500)
        else:
            for offset in range(0, len(records), page_size):
                with engine.begin() as conn:
                    evidence.upsert_many(conn, records[offset : offset + page_size], now=now)
        timings.append(time.perf_counter() - started)
    return timings[0], timings[1]


def _print(figures: Figures) -> None:
    f = figures
    print(f"72-hour backfill of {f.messages} messages ({f.listed} in the chat listing)")
    print(
        f"  pages: backfill {f.backfill_pages} (minimum {f.min_pages}), thread pages "
        f"{f.thread_pages}, incremental {f.incremental_pages} re-reading "
        f"{f.incremental_messages} messages (overlap holds {f.overlap_messages}, "
        f"{f.incremental_expected_pages} page(s)) -> {'OK' if f.pages_ok else 'MISMATCH'}"
    )
    print(
        f"  requests {f.requests}: busiest 1 s window {f.busiest_1s} (limit 50), "
        f"busiest 60 s window {f.busiest_60s} (limit 1000)"
    )
    print(
        f"  pipeline: {f.wall_seconds:.2f} s wall, {f.messages_per_second:.0f} messages/s "
        f"(waiting on Lark {f.fetch_seconds:.2f} s, normalizing {f.normalize_seconds:.2f} s, "
        f"writing {f.write_seconds:.2f} s; rate-limit floor {f.requests / 50:.1f} s)"
    )
    print(
        f"  bare upsert_many: {f.bare_page_tx_seconds:.2f} s in {PAGE}-row transactions, "
        f"{f.bare_single_tx_seconds:.2f} s in one transaction"
    )
    print(
        f"  write path / bare: {f.write_ratio_page_tx:.2f}x (page transactions), "
        f"{f.write_ratio_single_tx:.2f}x (one transaction); target <= 2x"
    )
    print(f"  normalize + write / bare (page transactions): {f.processing_ratio_page_tx:.2f}x")
    print(f"  end to end / bare (page transactions): {f.wall_ratio_page_tx:.2f}x")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--thread-every", type=int, default=0, help="0: no threads")
    parser.add_argument("--pg-url", default=DEFAULT_ADMIN_URL, help="admin URL (CREATE DATABASE)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    os.environ.setdefault("NO_PROXY", "127.0.0.1,localhost")
    figures = run(args.messages, args.thread_every, args.pg_url)
    if args.json:
        print(json.dumps({**asdict(figures), "pages_ok": figures.pages_ok}, sort_keys=True))
    else:
        _print(figures)
    ok = figures.pages_ok and figures.busiest_1s <= 50 and figures.busiest_60s <= 1000
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
