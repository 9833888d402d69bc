"""Reconciliation benchmark: a 72-hour backfill of a 20,000-message chat from the local Lark.

    python -m bench.reconcile.run [--messages 20000] [--thread-every 0] [--pg-url URL] [--json]
                                  [--rows FILE]

Everything is real and on loopback: the local Lark (`SimulatorServer`'s app under uvicorn), the
product's LarkClient with its 50 requests/s and 1,000 requests/min limiter, the runner, and a
fresh PostgreSQL database created for the run and dropped afterwards. It reports

* pages fetched by the backfill against the minimum (ceil(listed / 50)) and pages fetched by the
  incremental run that follows, which must re-read only the overlap;
* end-to-end messages/s, split into time waiting on Lark (HTTP and the rate limiter), time
  normalizing, and time writing (eligibility, batch upserts, the per-page checkpoint marker,
  commits);
* the same records upserted alone with `evidence.upsert_many` (no HTTP, no normalization), once
  in page-sized transactions like the pipeline and once in a single 500-row-batch transaction,
  both before and after the pipeline run (the baseline is the mean of the two);
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

from bench.cli import add_rows_option, exit_on_sigterm, finish
from bench.database import ADMIN_URL, database_url, fresh_database
from bench.table import BenchRow, measured
from bench.table import Target as Goal
from timeline_pipeline.db.engine import make_engine
from timeline_pipeline.db.migrate import upgrade
from timeline_pipeline.ingest.eligibility import MANUAL
from timeline_pipeline.ingest.records import evidence_record
from timeline_pipeline.lark.client import LarkClient
from timeline_pipeline.lark.client_factory import client_config
from timeline_pipeline.lark.normalize import normalize_list_item
from timeline_pipeline.lark.simulator import ChatStore, LoopbackUvicorn, make_chat_messages
from timeline_pipeline.lark.simulator.faults import SimulatorFaults
from timeline_pipeline.lark.simulator.server import SimulatorState, create_app
from timeline_pipeline.reconcile.planning import Mode
from timeline_pipeline.reconcile.runner import Reconciler
from timeline_pipeline.reconcile.targets import Target
from timeline_pipeline.settings import load_timeline_settings
from timeline_pipeline.store import evidence, workspaces

CHAT = "oc_bench_chat"
APP_SECRET = "bench-secret"
PAGE = 50
LOOKBACK = timedelta(hours=72)
RATE_PER_SECOND = 50
RATE_PER_MINUTE = 1000
TARGET_WRITE_RATIO = 2.0

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


class RequestLog:
    """ASGI wrapper that stamps every HTTP request as the server receives it: where Lark counts
    its quota, so delivery jitter counts too."""

    def __init__(self, app: Callable[[Scope, Receive, Send], Awaitable[None]]) -> None:
        self.app = app
        self.stamps: list[float] = []
        self.token_stamps: list[float] = []
        """Tenant token requests: lark-oapi makes them inside a call (the limiter counts them)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            now = time.monotonic()
            self.stamps.append(now)
            if scope["path"].endswith("/tenant_access_token/internal"):
                self.token_stamps.append(now)
        await self.app(scope, receive, send)

    def busiest(self, window: float) -> tuple[int, int]:
        """The most requests in any `window` seconds, and how many of those were token requests."""
        stamps = sorted(self.stamps)
        count, start = 0, 0.0
        for index, stamp in enumerate(stamps):
            inside = bisect.bisect_left(stamps, stamp + window) - index
            if inside > count:
                count, start = inside, stamp
        tokens = sum(1 for t in self.token_stamps if start <= t < start + window)
        return count, tokens


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
    busiest_1s_token_requests: int
    busiest_60s: int
    wall_seconds: float
    fetch_seconds: float
    normalize_seconds: float
    write_seconds: float
    messages_per_second: float
    bare_page_tx_seconds: float
    bare_page_tx_seconds_before: float
    bare_page_tx_seconds_after: float
    bare_single_tx_seconds: float
    write_ratio_page_tx: float
    write_ratio_single_tx: float
    processing_ratio_page_tx: float
    wall_ratio_page_tx: float


def rows(f: Figures) -> list[BenchRow]:
    """The table rows: pages against the minimum, the rate limits, the write path against the
    bare batch upsert of the same records in the same run."""
    name = "reconcile"
    bare = f"bare evidence.upsert_many of the same records, {PAGE}-row transactions"
    return [
        measured(
            name,
            f"backfill pages (72 h, {f.messages:,} messages, {f.listed:,} listed)",
            f.backfill_pages,
            "pages",
            baseline=f"minimum: ceil(listed / {PAGE})",
            baseline_value=f.min_pages,
            target=Goal("==", 1.0, of="ratio", text="= minimum"),
            note=f"plus {f.thread_pages} thread pages",
        ),
        measured(
            name,
            "incremental run: messages re-read",
            f.incremental_messages,
            "messages",
            baseline="messages in the overlap",
            baseline_value=f.overlap_messages,
            target=Goal("==", 1.0, of="ratio", text="= overlap only"),
            note=(
                f"{f.incremental_pages} page(s) fetched, {f.incremental_expected_pages} expected"
            ),
        ),
        measured(
            name,
            "incremental run: pages",
            f.incremental_pages,
            "pages",
            baseline=f"ceil(overlap / {PAGE})",
            baseline_value=f.incremental_expected_pages,
            target=Goal("==", 1.0, of="ratio", text="= overlap pages"),
        ),
        measured(
            name,
            "busiest 1 s window of Lark requests",
            f.busiest_1s,
            "requests",
            target=Goal("<=", RATE_PER_SECOND),
            note=_busiest_second_note(f),
        ),
        measured(
            name,
            "busiest 60 s window of Lark requests",
            f.busiest_60s,
            "requests",
            target=Goal("<=", RATE_PER_MINUTE),
            note=(
                f"the backfill took {f.wall_seconds:.1f} s, so one window holds every request"
                if f.wall_seconds < 60
                else ""
            ),
        ),
        measured(
            name,
            "write path time (eligibility, batch upserts, page markers, commits)",
            f.write_seconds,
            "s",
            baseline=bare,
            baseline_value=f.bare_page_tx_seconds,
            target=Goal("<=", TARGET_WRITE_RATIO, of="ratio"),
            note=(
                f"bare {f.bare_page_tx_seconds_before:.2f} s before the backfill and "
                f"{f.bare_page_tx_seconds_after:.2f} s after (the baseline is their mean); "
                f"{f.write_ratio_single_tx:.2f}x a single-transaction bare upsert "
                f"({f.bare_single_tx_seconds:.2f} s)"
            ),
        ),
        measured(
            name,
            "end-to-end backfill rate",
            f.messages_per_second,
            "messages/s",
            note=(
                f"{f.wall_seconds:.1f} s: waiting on Lark {f.fetch_seconds:.1f} s (rate-limit "
                f"floor {f.requests / RATE_PER_SECOND:.1f} s), normalizing "
                f"{f.normalize_seconds:.1f} s, writing {f.write_seconds:.1f} s"
            ),
        ),
    ]


def _busiest_second_note(f: Figures) -> str:
    note = (
        f"{f.requests} requests in the backfill, counted on arrival at the server (the client's "
        f"limiter holds each of its {RATE_PER_SECOND} slots per second from admission until the "
        "response plus a second, so delivery jitter cannot push a server-side second over)"
    )
    if f.busiest_1s_token_requests:
        note += (
            f"; {f.busiest_1s_token_requests} of the busiest second's requests fetched the tenant "
            "token inside a list call"
        )
    return note


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
    with fresh_database(admin_url) as name:
        engine = make_engine(database_url(name, admin_url), pool_size=2)
        try:
            upgrade(engine)
            with engine.begin() as conn:
                workspace = workspaces.create(conn, "bench-pipeline", created_at=created)
                workspaces.bind_chat(conn, "bench-pipeline", CHAT)
            # The bare baseline brackets the pipeline run (before and after), so that a change in
            # what else runs on the machine weighs on both sides of the ratio.
            before = _bare_upserts(engine, items, created, now, "before")
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
                (busiest_1s, busiest_1s_tokens), (busiest_60s, _) = (
                    log.busiest(1.0),
                    log.busiest(60.0),
                )
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
                incremental = reconciler.run(
                    [target], mode=Mode.INCREMENTAL, scope=MANUAL, now=later
                )
                if incremental.failures:
                    raise SystemExit(f"incremental run failed: {incremental.failure_summary()}")
            after = _bare_upserts(engine, items, created, now, "after")
        finally:
            engine.dispose()
    bare_page, bare_single = (before[0] + after[0]) / 2, (before[1] + after[1]) / 2
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
        busiest_1s_token_requests=busiest_1s_tokens,
        busiest_60s=busiest_60s,
        wall_seconds=wall,
        fetch_seconds=chat.fetch_seconds,
        normalize_seconds=chat.normalize_seconds,
        write_seconds=chat.write_seconds,
        messages_per_second=chat.messages / wall,
        bare_page_tx_seconds=bare_page,
        bare_page_tx_seconds_before=before[0],
        bare_page_tx_seconds_after=after[0],
        bare_single_tx_seconds=bare_single,
        write_ratio_page_tx=chat.write_seconds / bare_page,
        write_ratio_single_tx=chat.write_seconds / bare_single,
        processing_ratio_page_tx=(chat.normalize_seconds + chat.write_seconds) / bare_page,
        wall_ratio_page_tx=wall / bare_page,
    )


def _bare_upserts(
    engine: Any, items: list[dict[str, Any]], created: datetime, now: datetime, tag: str
) -> tuple[float, float]:
    """The same messages as evidence rows, upserted with no HTTP and no normalization timed
    (into workspaces of their own per `tag`, so every measurement inserts the same rows)."""
    settings = load_timeline_settings()
    normalized = [normalize_list_item(i, max_text_chars=settings.max_message_chars) for i in items]
    timings: list[float] = []
    for workspace_id, page_size in (
        (f"bench-bare-pages-{tag}", PAGE),
        (f"bench-bare-single-{tag}", None),
    ):
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
        f"{f.incremental_expected_pages} page(s))"
    )
    print(
        f"  requests {f.requests}: busiest 1 s window {f.busiest_1s} (limit {RATE_PER_SECOND}), "
        f"busiest 60 s window {f.busiest_60s} (limit {RATE_PER_MINUTE})"
    )
    print(
        f"  pipeline: {f.wall_seconds:.2f} s wall, {f.messages_per_second:.0f} messages/s "
        f"(waiting on Lark {f.fetch_seconds:.2f} s, normalizing {f.normalize_seconds:.2f} s, "
        f"writing {f.write_seconds:.2f} s; rate-limit floor {f.requests / RATE_PER_SECOND:.1f} s)"
    )
    print(
        f"  bare upsert_many: {f.bare_page_tx_seconds:.2f} s in {PAGE}-row transactions, "
        f"{f.bare_single_tx_seconds:.2f} s in one transaction"
    )
    print(
        f"  write path / bare: {f.write_ratio_page_tx:.2f}x (page transactions), "
        f"{f.write_ratio_single_tx:.2f}x (one transaction); target <= {TARGET_WRITE_RATIO:.0f}x"
    )
    print(f"  normalize + write / bare (page transactions): {f.processing_ratio_page_tx:.2f}x")
    print(f"  end to end / bare (page transactions): {f.wall_ratio_page_tx:.2f}x")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--thread-every", type=int, default=0, help="0: no threads")
    parser.add_argument("--pg-url", default=ADMIN_URL, help="admin URL (CREATE DATABASE)")
    parser.add_argument("--json", action="store_true")
    add_rows_option(parser)
    args = parser.parse_args(argv)
    if args.messages < 1:
        parser.error("--messages must be at least 1")
    os.environ.setdefault("NO_PROXY", "127.0.0.1,localhost")
    exit_on_sigterm()
    figures = run(args.messages, args.thread_every, args.pg_url)
    table = rows(figures)
    if args.json:
        payload = {**asdict(figures), "rows": [row.to_json() for row in table]}
        print(json.dumps(payload, sort_keys=True))
    else:
        _print(figures)
    return finish(table, args.rows, print_table=not args.json)


if __name__ == "__main__":
    sys.exit(main())
