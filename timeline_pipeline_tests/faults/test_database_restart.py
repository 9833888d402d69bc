"""PostgreSQL crashes under a real receiver in the middle of a stream of events.

While the database is down the receiver answers 503 with a reason (so Lark redelivers) and
/healthz says 503; nothing is half-written; once the database is back and Lark has redelivered
what was refused, every message is exactly one complete row and the counts agree.

The database is a throwaway cluster made here with initdb and pg_ctl, never the shared server.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import Engine

from timeline_pipeline.db.engine import make_engine, transaction
from timeline_pipeline.db.migrate import upgrade
from timeline_pipeline.lark.simulator import make_chat_messages, message_receive_event
from timeline_pipeline.settings import load_timeline_settings
from timeline_pipeline.store import workspaces
from timeline_pipeline_tests.faults.support_cluster import ThrowawayCluster
from timeline_pipeline_tests.faults.support_evidence import (
    all_evidence,
    expected_records,
    rows_by_message,
    sync_state_count,
    tally,
    windows_without_evidence,
)
from timeline_pipeline_tests.faults.support_serve import (
    Burst,
    LarkApp,
    ServeProcess,
    describe,
    labels,
    metric_value,
    redeliver,
    wait_until,
)

WORKSPACE = "inc-restart"
CHAT = "oc_fault_restart"
MESSAGES = 240
CRASH_AFTER_ACKS = 80
HELD_UNTIL_DOWN = 120
"""Events from this index on are sent only once the database is down, so the stream is
certainly cut in two; the ones between the crash trigger and here race with the crash."""
REDELIVERY_SECONDS = 120.0
UNAVAILABLE = (503, "database_unavailable")


@pytest.fixture
def cluster() -> Iterator[ThrowawayCluster]:
    made = ThrowawayCluster()
    try:
        made.create()
        made.first_start()
        yield made
    finally:
        made.remove()


def _prepare(url: str, created_at: datetime) -> Engine:
    engine = make_engine(url, null_pool=True)  # no pooled connection outlives the crash
    upgrade(engine)
    with transaction(engine) as conn:
        workspaces.create(conn, WORKSPACE, created_at=created_at)
        workspaces.bind_chat(conn, WORKSPACE, CHAT)
    return engine


@pytest.mark.fault
@pytest.mark.slow
def test_postgres_crashing_mid_stream_gives_503s_then_full_recovery(
    cluster: ThrowawayCluster, tmp_path: Path, fault_report: Callable[[str], None]
) -> None:
    now = datetime.now(UTC)
    cluster.create_database("timeline")
    url = cluster.url("timeline")
    engine = _prepare(url, now - timedelta(hours=6))
    app = LarkApp.fresh()
    items = make_chat_messages(CHAT, now - timedelta(hours=2), MESSAGES, seed=23)
    events = [message_receive_event(item, app.identity) for item in items]
    settings = load_timeline_settings()
    down = threading.Event()

    def hold_back(index: int) -> None:
        if index >= HELD_UNTIL_DOWN:
            assert down.wait(REDELIVERY_SECONDS), "the database was never stopped"

    with ServeProcess(app.runtime(url), tmp_path) as serve:
        serve.start()
        burst = Burst(serve.events_url, app, events, concurrency=4, before_send=hold_back)
        burst.start()
        try:
            assert burst.wait_accepted(CRASH_AFTER_ACKS, timeout=120), "the stream stalled"
            cluster.crash()
        finally:
            down.set()
        stream = burst.join()
        health_down = serve.health()
        metrics_while_down = serve.metrics()

        cluster.start()
        wait_until(lambda: serve.health_status() == 200, 60, "/healthz to recover")
        rounds, redelivered = redeliver(
            serve.events_url, app, events, stream, within=REDELIVERY_SECONDS
        )
        health_up = serve.health()
        metrics = serve.metrics()
        still_running = serve.running

    # While down: a reasoned 503 for everything sent after the crash, and nothing but 200 or
    # that 503 for what was in flight when it happened.
    after_crash = stream[HELD_UNTIL_DOWN:]
    assert {(a.status, a.reason) for a in after_crash} == {UNAVAILABLE}, describe(labels(stream))
    assert {(a.status, a.reason) for a in stream} <= {(200, "accepted"), UNAVAILABLE}
    assert health_down == (503, {"status": "unavailable", "database": "down"})
    refused_while_down = sum((a.status, a.reason) == UNAVAILABLE for a in stream)
    assert (
        metric_value(metrics_while_down, "timeline_lark_events_failed_total", reason=UNAVAILABLE[1])
        == refused_while_down
    )
    # Back up: Lark's redelivery is acknowledged, and the process never restarted.
    assert still_running
    assert health_up == (200, {"status": "ok", "database": "ok"})

    rows = all_evidence(engine)
    expected = expected_records(
        items, WORKSPACE, app_id=app.app_id, max_text_chars=settings.max_message_chars
    )
    counted = tally(rows, expected)
    assert counted.exact, counted.describe()
    stored = rows_by_message(rows)
    acked = {items[i]["message_id"] for i, answer in enumerate(stream) if answer.accepted}
    assert acked <= set(stored), "an event acknowledged around the crash lost its row"
    assert windows_without_evidence(engine) == 0
    assert sync_state_count(engine) == 0  # the receiver writes evidence and nothing else

    # The receiver's own counts agree with what Lark saw: one write outcome per acknowledged
    # event, one failure per 503, and no more inserts than messages.
    answers = stream + redelivered
    acks = sum(answer.accepted for answer in answers)
    refusals = sum((a.status, a.reason) == UNAVAILABLE for a in answers)
    writes = {
        outcome: metric_value(metrics, "timeline_lark_evidence_writes_total", outcome=outcome)
        for outcome in ("inserted", "updated", "duplicate")
    }
    failed = metric_value(
        metrics, "timeline_lark_events_failed_total", reason="database_unavailable"
    )
    assert sum(writes.values()) == acks
    assert failed == refusals
    assert writes["inserted"] <= MESSAGES
    assert writes["updated"] == 0
    assert cluster.recovered_from_crash()
    engine.dispose()

    committed_unacked = MESSAGES - int(writes["inserted"])
    fault_report(
        f"injected: pg_ctl stop -m immediate of a throwaway PostgreSQL cluster after "
        f"{CRASH_AFTER_ACKS}/{MESSAGES} events acknowledged; stream answers: "
        f"{describe(labels(stream))}, /healthz 503 while down; restarted (crash recovery), "
        f"{refused_while_down} refused events redelivered in "
        f"{rounds} round(s) ({describe(labels(redelivered))}); "
        f"counted: {counted.describe()}, {committed_unacked} committed but answered 503 "
        f"(deduplicated on redelivery), 0 window states without evidence, /healthz 200 again"
    )
