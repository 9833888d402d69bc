"""A storm of duplicated, reordered and edited callbacks against a real receiver process.

Lark delivers at least once and in no particular order, and an edit can overtake the message
it edits. However the copies land, each message must end as one row holding its newest edit.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine

from timeline_pipeline_tests.faults.support_edits import (
    EditedChat,
    check_newest_edits,
    check_writes,
)
from timeline_pipeline_tests.faults.support_evidence import bound_workspace
from timeline_pipeline_tests.faults.support_serve import Burst, ServeProcess, describe, labels

WORKSPACE = "inc-storm"
CHAT = "oc_fault_storm"
MESSAGES = 150
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
    chat = EditedChat.make(WORKSPACE, CHAT, MESSAGES, seed=5)
    storm, overtaking = _storm(chat.versions, random.Random(17))

    with ServeProcess(chat.app.runtime(pg_url), tmp_path) as serve:
        serve.start()
        answers = Burst(serve.events_url, chat.app, storm, concurrency=8).start().join()
        metrics = serve.metrics()

    assert labels(answers) == {"200 accepted": len(storm)}, describe(labels(answers))
    found = check_newest_edits(bound, chat)
    writes = check_writes([metrics], found, chat, deliveries=len(storm))
    edited, kept, counted = chat.edited, found.kept, found.counted

    fault_report(
        f"injected: {len(storm)} deliveries ({COPIES} copies of each of {MESSAGES} messages and "
        f"{2 * len(edited)} edits of {len(edited)} of them), shuffled, 8 in flight, the newest "
        f"edit sent before its original for {overtaking} messages; counted: "
        f"{counted.describe()}, {int(writes['inserted'])} inserts, {int(writes['updated'])} "
        f"updates, {int(writes['duplicate'])} duplicates, newest edit kept for "
        f"{len(kept)}/{len(edited)} edited messages"
    )
