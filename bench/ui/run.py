"""Timeline page benchmark: the first view's server time beside the JSON API's, on PostgreSQL.

    python -m bench.ui.run [--entries 500] [--evidence 20000] [--repeat 15] [--rows FILE]

A fresh PostgreSQL database (dropped afterwards) gets one workspace with `--entries` entries
(drafts and confirmed ones, all categories) and `--evidence` evidence rows, every entry bound
to `evidence / entries` of them. One real `serve` app runs under uvicorn on 127.0.0.1; a signed-in
session asks for the page (`GET /ui/workspaces/{id}`, the first view: 200 entries, no message
bodies) and a bearer token asks the API for the same entries (`GET /api/workspaces/{id}/timeline?
limit=200`), alternately, `--repeat` times each after a warm-up. Figures are medians:

* the page's server time (its `Server-Timing: app;dur=...` header: listing, rendering) against
  the API's response time at the client for the same data; the target is under 300 ms;
* the page's response time at the client against the API's (same HTTP path, same data);
* one entry's messages (`.../entries/{id}/evidence`, one keyset page of 20) against the API's
  evidence page of 20;
* message bodies in the first view: 0 (evidence opens a page at a time, never all at once).
"""

from __future__ import annotations

import argparse
import re
import statistics
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import httpx
from sqlalchemy import Engine, insert

from bench.cli import add_rows_option, exit_on_sigterm, finish
from bench.database import database_url, fresh_database
from bench.table import BenchRow, Target, measured
from timeline_pipeline.curation.rules import CATEGORIES
from timeline_pipeline.db.engine import make_engine
from timeline_pipeline.db.migrate import upgrade
from timeline_pipeline.db.schema import workspace_timeline_entries as en
from timeline_pipeline.db.schema import workspace_timeline_entry_evidence as ee
from timeline_pipeline.domain.evidence import EvidenceRecord, content_hash
from timeline_pipeline.domain.keys import SOURCE_LARK, SOURCE_TYPE_LARK_MESSAGE
from timeline_pipeline.http.app import create_app
from timeline_pipeline.lark.simulator.runner import LoopbackUvicorn
from timeline_pipeline.settings import LarkTimelineSettings, RuntimeEnvironment, Settings
from timeline_pipeline.store import api_tokens, evidence, ui_sessions, workspaces
from timeline_pipeline.ui.pages import SESSION_COOKIE

NAME = "ui"
WORKSPACE = "bench-ui"
CHAT = "oc_bench_ui"
TARGET_MS = 300.0
FIRST_VIEW = 200
MARKER = "zq-body-marker"
"""In every message body, so that the page can be searched for any body it should not hold."""


def load(engine: Engine, entries: int, rows: int, now: datetime) -> None:
    start = now - timedelta(hours=6)
    with engine.begin() as conn:
        workspaces.create(conn, WORKSPACE, created_at=start, title="Benchmark incident")
        workspaces.bind_chat(conn, WORKSPACE, CHAT)
        records = []
        for i in range(rows):
            at = start + timedelta(seconds=i)
            text = f"{MARKER} message {i}: checkout latency on shard {i % 17} is {i % 900} ms"
            records.append(
                EvidenceRecord(
                    workspace_id=WORKSPACE, source=SOURCE_LARK,
                    source_type=SOURCE_TYPE_LARK_MESSAGE,
                    source_key=f"chat/{CHAT}/message/om_{i:06d}", occurred_at=at,
                    source_updated_at=at, content=text, content_hash=content_hash(text),
                    actor_id=f"ou_{i % 12}", actor_display_name=f"Person {i % 12}",
                    scope_key=CHAT, ai_eligible=True, deleted=False, metadata={},
                )
            )  # fmt: skip
        evidence.upsert_many(conn, records, now=now)
        ids = [row.id for row in evidence.page(conn, WORKSPACE, after=None, limit=rows)]
        per_entry = max(1, len(ids) // entries)
        entry_rows: list[dict[str, object]] = [
            {
                "workspace_id": WORKSPACE,
                "occurred_at": start + timedelta(seconds=i * per_entry),
                "title": f"Finding {i}: checkout latency above 2s on shard {i % 17}",
                "detail": "p99 went from 800 ms to 7 s" if i % 3 == 0 else None,
                "category": CATEGORIES[i % len(CATEGORIES)],
                "source": "ai" if i % 5 else "rule",
                "status": "confirmed" if i % 4 == 0 else "draft",
                "fingerprint": f"bench-{i}",
                "human_edited": False,
                "revision": 1,
                "metadata_json": {},
                "created_at": now,
                "updated_at": now,
            }
            for i in range(entries)
        ]
        entry_ids = conn.execute(insert(en).returning(en.c.id), entry_rows).scalars().all()
        bindings = [
            {
                "workspace_id": WORKSPACE,
                "entry_id": entry_id,
                "evidence_id": ids[n * per_entry + k],
                "created_at": now,
            }
            for n, entry_id in enumerate(entry_ids)
            for k in range(per_entry)
        ]
        conn.execute(insert(ee), bindings)


def timed(call: Callable[[], httpx.Response]) -> tuple[float, httpx.Response]:
    started = time.perf_counter()
    response = call()
    elapsed = (time.perf_counter() - started) * 1000
    response.raise_for_status()
    return elapsed, response


def run(entries: int, rows: int, repeat: int) -> list[BenchRow]:
    now = datetime.now(UTC)
    with fresh_database() as name:
        engine = make_engine(database_url(name))
        try:
            upgrade(engine)
            started = time.perf_counter()
            load(engine, entries, rows, now)
            load_seconds = time.perf_counter() - started
            with engine.begin() as conn:
                token = api_tokens.create(conn, WORKSPACE).token
                secret = ui_sessions.open_session(
                    conn, WORKSPACE, link_id=None, now=now, ttl=timedelta(hours=1)
                ).secret
            settings = Settings(
                LarkTimelineSettings(), RuntimeEnvironment(LARK_VERIFICATION_TOKEN="bench")
            )
            with LoopbackUvicorn(create_app(settings, engine)) as server:
                return measure(server.base_url, token, secret, entries, rows, repeat, load_seconds)
        finally:
            engine.dispose()


def measure(
    base: str, token: str, secret: str, entries: int, rows: int, repeat: int, load_s: float
) -> list[BenchRow]:
    page_url = f"/ui/workspaces/{WORKSPACE}"
    api_url = f"/api/workspaces/{WORKSPACE}/timeline?limit={FIRST_VIEW}"
    bearer = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=base, timeout=60, cookies={SESSION_COOKIE: secret}) as client:

        def page() -> httpx.Response:
            return client.get(page_url)

        def api() -> httpx.Response:
            return client.get(api_url, headers=bearer)

        for _ in range(3):
            page(), api()
        page_ms: list[float] = []
        page_server_ms: list[float] = []
        api_ms: list[float] = []
        html = ""
        for i in range(repeat):
            order = (page, api) if i % 2 == 0 else (api, page)
            for call in order:
                elapsed, response = timed(call)
                if call is page:
                    page_ms.append(elapsed)
                    timing = re.search(r"dur=([0-9.]+)", response.headers["server-timing"])
                    assert timing is not None
                    page_server_ms.append(float(timing.group(1)))
                    html = response.text
                else:
                    api_ms.append(elapsed)
        shown = html.count("data-entry-id=")
        bodies = html.count(MARKER)
        api_entries = client.get(api_url, headers=bearer).json()["entries"]
        entry_id = api_entries[len(api_entries) // 2]["id"]
        evidence_ms, api_evidence_ms = [], []
        for _ in range(repeat):
            evidence_ms.append(
                timed(lambda: client.get(f"{page_url}/entries/{entry_id}/evidence"))[0]
            )
            api_evidence_ms.append(
                timed(lambda: client.get(
                    f"/api/workspaces/{WORKSPACE}/evidence?limit=20", headers=bearer
                ))[0]
            )  # fmt: skip
    assert client is not None
    median = statistics.median
    api_p50 = median(api_ms)
    data = f"{entries:,} entries, {rows:,} evidence rows"
    quantiles = statistics.quantiles(page_server_ms, n=20) if len(page_server_ms) > 1 else [0] * 19
    return [
        measured(
            NAME,
            f"first view, server time (Server-Timing), {data}, {shown} entries shown",
            median(page_server_ms),
            "ms",
            baseline=f"JSON API, same {FIRST_VIEW} entries (GET .../timeline?limit={FIRST_VIEW}), "
            "response time at the client",
            baseline_value=api_p50,
            target=Target("<", TARGET_MS),
            note=f"p95 {quantiles[18]:.1f} ms over {repeat} views; data loaded in {load_s:.1f} s",
        ),
        measured(
            NAME,
            "first view, response time at the client",
            median(page_ms),
            "ms",
            baseline="JSON API, same entries, response time at the client",
            baseline_value=api_p50,
            note=f"page {len(html):,} bytes of HTML",
        ),
        measured(
            NAME,
            "one entry's messages (one keyset page of 20), response time at the client",
            median(evidence_ms),
            "ms",
            baseline="JSON API evidence page of 20 (GET .../evidence?limit=20)",
            baseline_value=median(api_evidence_ms),
        ),
        measured(
            NAME,
            "message bodies in the first view",
            float(bodies),
            "bodies",
            target=Target("==", 0, text="= 0 (evidence opens a page at a time)"),
            note=f"of {rows:,} evidence rows; {shown} of {entries} entries listed, more by keyset",
        ),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=500)
    parser.add_argument("--evidence", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=15)
    add_rows_option(parser)
    args = parser.parse_args(argv)
    if not 1 <= args.entries <= args.evidence <= 200_000 or args.repeat < 1:
        parser.error("give 1 <= --entries <= --evidence <= 200000 and --repeat >= 1")
    exit_on_sigterm()
    rows = run(args.entries, args.evidence, args.repeat)
    return finish(rows, args.rows)


if __name__ == "__main__":
    raise SystemExit(main())
