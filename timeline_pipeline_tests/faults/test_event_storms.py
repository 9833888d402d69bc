"""A storm of duplicated, reordered and edited callbacks against a real receiver process.

Lark delivers at least once and in no particular order, and an edit can overtake the message
it edits. However the copies land, each message must end as one row holding its newest edit.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine

from timeline_pipeline.lark.simulator import ChatStore, make_chat_messages, message_receive_event
from timeline_pipeline.settings import load_timeline_settings
from timeline_pipeline_tests.faults.support_evidence import (
    all_evidence,
    bound_workspace,
    expected_from_events,
    expected_records,
    message_versions,
    rows_by_message,
    tally,
)
from timeline_pipeline_tests.faults.support_serve import (
    Burst,
    LarkApp,
    ServeProcess,
    describe,
    labels,
    metric_value,
)

WORKSPACE = "inc-storm"
CHAT = "oc_fault_storm"
MESSAGES = 150
EDIT_EVERY = 4
"""Every 4th message is edited twice, so it has three versions in flight."""
COPIES = 5


@pytest.fixture
def bound(pg_url: str) -> Iterator[Engine]:
    """The fresh PostgreSQL database with a firing workspace bound to CHAT."""
    with bound_workspace(pg_url, WORKSPACE, CHAT) as made:
        yield made


def _storm(
    versions: dict[str, list[dict[str, Any]]], rng: random.Random
) -> tuple[list[dict[str, Any]], int]:
    """Every version's event COPIES times, shuffled; for half the edited messages, every copy
    of the newest edit is moved ahead of all the older versions. Returns (storm, that count)."""
    storm = [
        (message_id, version, event)
        for message_id, events in versions.items()
        for version, event in enumerate(events)
        for _ in range(COPIES)
    ]
    rng.shuffle(storm)
    edited = sorted(m for m, events in versions.items() if len(events) > 1)
    overtaking = set(rng.sample(edited, len(edited) // 2))

    def ahead(entry: tuple[str, int, dict[str, Any]]) -> bool:
        message_id, version, _ = entry
        return message_id in overtaking and version == len(versions[message_id]) - 1

    ordered = [entry for entry in storm if ahead(entry)] + [e for e in storm if not ahead(e)]
    return [event for _, _, event in ordered], len(overtaking)


@pytest.mark.fault
@pytest.mark.slow
def test_a_storm_of_duplicates_and_reordered_edits_leaves_one_row_each_with_the_newest_edit(
    pg_url: str, bound: Engine, tmp_path: Path, fault_report: Callable[[str], None]
) -> None:
    app = LarkApp.fresh()
    items = make_chat_messages(CHAT, datetime.now(UTC) - timedelta(hours=2), MESSAGES, seed=5)
    store = ChatStore(items)
    versions = {
        message_id: [message_receive_event(item, app.identity) for item in kept]  # one id each
        for message_id, kept in message_versions(store, items, EDIT_EVERY).items()
    }
    storm, overtaking = _storm(versions, random.Random(17))

    with ServeProcess(app.runtime(pg_url), tmp_path) as serve:
        serve.start()
        answers = Burst(serve.events_url, app, storm, concurrency=8).start().join()
        metrics = serve.metrics()

    assert labels(answers) == {"200 accepted": len(storm)}, describe(labels(answers))
    settings = load_timeline_settings()
    # The reference is the newest version's callback as the receiver reads it: the history
    # item of an edited message also carries `updated: true`, which the event shape has no
    # field for and which the content hash includes, so the two shapes' hashes differ there.
    newest = [events[-1] for events in versions.values()]
    expected = expected_from_events(
        newest, WORKSPACE, app_id=app.app_id, max_text_chars=settings.max_message_chars
    )
    rows = all_evidence(bound)
    counted = tally(rows, expected)
    assert counted.exact, counted.describe()
    # The newest edit is what Lark's history now shows for each edited message.
    edited = [message_id for message_id, events in versions.items() if len(events) > 1]
    history = expected_records(
        store.messages(CHAT),
        WORKSPACE,
        app_id=app.app_id,
        max_text_chars=settings.max_message_chars,
    )
    stored = rows_by_message(rows)
    kept = [
        m
        for m in edited
        if (stored[m].content, stored[m].source_updated_at)
        == (history[m].content, history[m].source_updated_at)
    ]
    assert kept == edited

    writes = {
        outcome: metric_value(metrics, "timeline_lark_evidence_writes_total", outcome=outcome)
        for outcome in ("inserted", "updated", "duplicate")
    }
    assert writes["inserted"] == MESSAGES
    assert sum(writes.values()) == len(storm)
    # An edit lands at most once per version; an older version after a newer one is a no-op.
    assert writes["updated"] <= 2 * len(edited)
    assert max(row.revision for row in rows) <= 3

    fault_report(
        f"injected: {len(storm)} deliveries ({COPIES} copies of each of {MESSAGES} messages and "
        f"{2 * len(edited)} edits of {len(edited)} of them), shuffled, 8 in flight, the newest "
        f"edit sent before its original for {overtaking} messages; counted: "
        f"{counted.describe()}, {int(writes['inserted'])} inserts, {int(writes['updated'])} "
        f"updates, {int(writes['duplicate'])} duplicates, newest edit kept for "
        f"{len(kept)}/{len(edited)} edited messages"
    )
