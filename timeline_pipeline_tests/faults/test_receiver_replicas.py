"""Two receiver replicas on one PostgreSQL database, flooded with the same messages at once.

Behind a balancer, Lark's copies of one message (its redeliveries, its edits) can reach
different replicas at the same moment. Here replica A is sent messages 1..N, oldest version
first, and replica B N..1, newest edit first, both at once, every delivery twice. Each replica
commits what arrives together in one transaction, so the two take the same rows at the same
time; the evidence writes take them in key order (docs/deployment-receivers.md), so they wait
for each other and never deadlock. Whatever is refused (a 503) is sent again, as Lark does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Final

import pytest
from sqlalchemy import Engine, text

from timeline_pipeline_tests.faults.support_edits import (
    EditedChat,
    check_newest_edits,
    check_writes,
)
from timeline_pipeline_tests.faults.support_evidence import bound_workspace
from timeline_pipeline_tests.faults.support_serve import (
    Answer,
    Burst,
    ServeProcess,
    describe,
    labels,
    redeliver,
)

WORKSPACE = "inc-replicas"
CHAT = "oc_fault_replicas"
MESSAGES = 120
COPIES = 2
IN_FLIGHT = 8
"""Concurrent deliveries per replica."""
ACCEPTED: Final = "200 accepted"
RETRY: Final = "503 database_unavailable"
MAX_REFUSED_SHARE: Final = 0.02
"""503s allowed, as a share of the deliveries: a replica may refuse what its database could not
take in time, and Lark redelivers it. None are expected; a deadlock would be one."""


@pytest.fixture
def bound(pg_url: str) -> Iterator[Engine]:
    """The fresh PostgreSQL database with a firing workspace bound to CHAT."""
    with bound_workspace(pg_url, WORKSPACE, CHAT) as made:
        yield made


def _stream(
    versions: dict[str, list[dict[str, Any]]], order: Sequence[str], *, newest_first: bool
) -> list[dict[str, Any]]:
    """Every version of every message in `order`, each delivered COPIES times in a row."""
    return [
        event
        for message_id in order
        for event in (versions[message_id][::-1] if newest_first else versions[message_id])
        for _ in range(COPIES)
    ]


def _deadlocks(engine: Engine) -> int:
    """PostgreSQL's own count of deadlocks it broke in this database."""
    with engine.connect() as conn:
        query = "SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()"
        return int(conn.execute(text(query)).scalar_one())


@pytest.mark.fault
@pytest.mark.slow
def test_two_replicas_flooded_with_the_same_messages_in_opposite_orders_keep_one_row_each(
    pg_url: str, bound: Engine, tmp_path: Path, fault_report: Callable[[str], None]
) -> None:
    chat = EditedChat.make(WORKSPACE, CHAT, MESSAGES, seed=23)
    app = chat.app
    order = [item["message_id"] for item in chat.items]
    streams = (
        _stream(chat.versions, order, newest_first=False),
        _stream(chat.versions, order[::-1], newest_first=True),
    )
    deadlocks_before = _deadlocks(bound)

    replicas = []
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        replicas.append(ServeProcess(app.runtime(pg_url), tmp_path / name))
    first: list[list[Answer]] = []
    again: list[list[Answer]] = []
    rounds: list[int] = []
    try:
        with ThreadPoolExecutor(len(replicas)) as pool:
            list(pool.map(ServeProcess.start, replicas))
        bursts = [
            Burst(replica.events_url, app, stream, concurrency=IN_FLIGHT).start()
            for replica, stream in zip(replicas, streams, strict=True)
        ]
        first = [burst.join() for burst in bursts]
        for replica, stream, answers in zip(replicas, streams, first, strict=True):
            count, answered = redeliver(replica.events_url, app, stream, answers)
            rounds.append(count)
            again.append(answered)
        health = [replica.health() for replica in replicas]
        running = [replica.running for replica in replicas]
        metrics = [replica.metrics() for replica in replicas]
    finally:
        for replica in replicas:
            replica.stop()  # a backend's statistics reach pg_stat_database when it ends

    # Only acknowledgements and retryable 503s, few of those, and every 503 recovered.
    answers = [answer for batch in first + again for answer in batch]
    seen = labels(answers)
    assert set(seen) <= {ACCEPTED, RETRY}, describe(seen)
    deliveries = sum(len(stream) for stream in streams)
    refused = seen[RETRY]
    assert refused <= MAX_REFUSED_SHARE * deliveries, describe(seen)
    assert seen[ACCEPTED] == deliveries
    assert running == [True, True]
    assert health == [(200, {"status": "ok", "database": "ok"})] * 2
    deadlocks = _deadlocks(bound) - deadlocks_before
    assert deadlocks == 0

    # One complete row per message, holding its newest edit; across both replicas one insert
    # per message, one write outcome per acknowledged delivery, and each edit applied at most
    # once.
    found = check_newest_edits(bound, chat)
    writes = check_writes(metrics, found, chat, deliveries=deliveries)
    edited, kept, counted = chat.edited, found.kept, found.counted

    fault_report(
        f"injected: 2 serve replicas on one PostgreSQL, {deliveries} deliveries at once "
        f"({COPIES} copies of each version of {MESSAGES} messages, {2 * len(edited)} edits of "
        f"{len(edited)} of them): replica A messages 1..N oldest version first, replica B "
        f"N..1 newest edit first, {IN_FLIGHT} in flight each; counted: {refused} 503s "
        f"redelivered in {max(rounds)} round(s), {deadlocks} deadlocks, {counted.describe()}, "
        f"{int(writes['inserted'])} inserts, {int(writes['updated'])} updates, "
        f"{int(writes['duplicate'])} duplicates, newest edit kept for {len(kept)}/"
        f"{len(edited)} edited messages, both replicas /healthz 200"
    )
