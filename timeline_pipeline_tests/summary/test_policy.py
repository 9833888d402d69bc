"""The summary policy of docs/design.md §8, as a table, and what the summary is written from."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from timeline_pipeline.summary.contract import SummaryEntry
from timeline_pipeline.summary.policy import Decision, WindowFacts, decide, summary_input

T = datetime(2026, 11, 29, 10, 0, tzinfo=UTC)


def window(
    status: str = "completed",
    *,
    attempted: bool = False,
    created: int = 1,
    updated: int = 0,
    visible: int = 1,
) -> WindowFacts:
    return WindowFacts(status, attempted, created, updated, visible)


@pytest.mark.parametrize(
    ("facts", "summary_source", "expected"),
    [
        (window(), None, Decision.ATTEMPT),
        (window(), "ai", Decision.ATTEMPT),
        (window(created=0, updated=2), "ai", Decision.ATTEMPT),  # materially changed drafts
        # The coalescing boundary is the completed window, never a message or a chunk.
        (window("processing"), None, Decision.NOT_TERMINAL),
        (window("pending"), None, Decision.NOT_TERMINAL),
        (window("failed"), None, Decision.NOT_TERMINAL),
        # At most one attempt per window.
        (window(attempted=True), None, Decision.ALREADY_ATTEMPTED),
        # A human summary is never replaced automatically.
        (window(), "human", Decision.HUMAN_SUMMARY),
        # Ignored windows propose nothing, so they never change the summary.
        (window("ignored", created=0, visible=0), None, Decision.NO_VISIBLE_CHANGE),
        # Only re-found (unchanged) entries: nothing new to say.
        (window(created=0, updated=0, visible=3), None, Decision.NO_VISIBLE_CHANGE),
        # What the window created was hidden by a curator before the summary ran.
        (window(created=2, visible=0), None, Decision.NO_VISIBLE_CHANGE),
    ],
)
def test_the_decision_for_one_window(
    facts: WindowFacts, summary_source: str | None, expected: Decision
) -> None:
    assert decide(facts, summary_source) is expected


def test_a_disabled_feature_decides_nothing_so_the_window_waits_for_it() -> None:
    assert decide(window(), None, enabled=False) is Decision.DISABLED
    assert not Decision.DISABLED.settles_window
    assert not Decision.NOT_TERMINAL.settles_window
    assert Decision.ATTEMPT.settles_window and Decision.NO_VISIBLE_CHANGE.settles_window
    assert Decision.HUMAN_SUMMARY.settles_window


def item(entry_id: int, minutes: int, status: str = "draft", **fields: object) -> SummaryEntry:
    values: dict[str, object] = {
        "id": entry_id,
        "occurred_at": T + timedelta(minutes=minutes),
        "title": f"entry {entry_id}",
        "category": "finding",
        "status": status,
        "source": "ai",
    }
    values.update(fields)
    return SummaryEntry.model_validate(values)


def test_hidden_entries_never_reach_the_summary_input() -> None:
    given = summary_input("inc-1", [item(2, 5), item(1, 9, "hidden"), item(3, 1, "confirmed")])
    assert [e.id for e in given.entries] == [3, 2]
    assert given.omitted == 0


def test_over_the_bound_curated_entries_come_first_then_the_newest_drafts() -> None:
    entries = [
        item(1, 1),
        item(2, 2, "confirmed"),
        item(3, 3),
        item(4, 4, source="human", status="confirmed"),
        item(5, 5),
        item(6, 6, human_edited=True),
    ]
    given = summary_input("inc-1", entries, max_entries=4)
    assert [e.id for e in given.entries] == [2, 4, 5, 6]  # time order kept
    assert given.omitted == 2


def test_the_digest_follows_the_text_the_summary_depends_on() -> None:
    base = summary_input("inc-1", [item(1, 1), item(2, 2)])
    same = summary_input("inc-1", [item(2, 2), item(1, 1)])
    retitled = summary_input("inc-1", [item(1, 1), item(2, 2, title="new words")])
    confirmed = summary_input("inc-1", [item(1, 1), item(2, 2, "confirmed")])
    assert base.digest() == same.digest()
    assert len({base.digest(), retitled.digest(), confirmed.digest()}) == 3
