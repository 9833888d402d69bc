"""The pure lineage rules of a window run: what a retry may trust, and what counts as late."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from timeline_pipeline.domain.window_keys import encode_window_cursor
from timeline_pipeline.synthesis.contract import EvidenceItem
from timeline_pipeline.synthesis_run.lineage import (
    aggregate_hash,
    in_order,
    late_evidence,
    late_lineage,
    plan_resume,
)

T0 = datetime(2026, 11, 29, 10, 0, tzinfo=UTC)


def item(n: int, *, second: int | None = None, version: str = "v1") -> EvidenceItem:
    return EvidenceItem(
        id=n,
        occurred_at=T0 + timedelta(seconds=n if second is None else second),
        actor_id="ou_a",
        text=f"message {n}",
        content_hash=f"{n}-{version}",
        message_id=f"om_{n}",
        chat_id="oc_chat",
    )


def cursor_at(entry: EvidenceItem) -> str:
    return encode_window_cursor(entry.occurred_at, entry.id)


def held(done: list[EvidenceItem]) -> dict[str, object]:
    return {"processed_count": len(done), "processed_hash": aggregate_hash(done)}


WINDOW = [item(n) for n in range(1, 7)]


def test_a_first_run_does_everything() -> None:
    resume = plan_resume(WINDOW, None, {})
    assert (resume.done, resume.todo, resume.restarted) == ([], WINDOW, False)


def test_a_retry_whose_done_part_is_unchanged_resumes_after_the_cursor() -> None:
    resume = plan_resume(WINDOW, cursor_at(WINDOW[2]), held(WINDOW[:3]))
    assert (resume.done, resume.todo, resume.restarted) == (WINDOW[:3], WINDOW[3:], False)


@pytest.mark.parametrize(
    ("case", "now"),
    [
        (
            "a late message before the cursor",
            sorted([*WINDOW, item(9, second=2)], key=lambda i: i.occurred_at),
        ),
        ("an edit before the cursor", [WINDOW[0], item(2, version="v2"), *WINDOW[2:]]),
        ("a recall before the cursor", [WINDOW[0], *WINDOW[2:]]),
    ],
)
def test_a_changed_done_part_starts_the_window_over(case: str, now: list[EvidenceItem]) -> None:
    resume = plan_resume(now, cursor_at(WINDOW[2]), held(WINDOW[:3]))
    assert resume.restarted, case
    assert (resume.done, resume.todo) == ([], now)


def test_a_state_without_the_processed_record_cannot_be_trusted() -> None:
    assert plan_resume(WINDOW, cursor_at(WINDOW[2]), {"chunk_count": 1}).restarted


def test_late_evidence_is_what_no_chunk_sent_in_this_version() -> None:
    now = [*WINDOW[:2], item(3, version="v2"), *WINDOW[3:], item(7)]
    assert [(i.id, i.content_hash) for i in late_evidence(now, WINDOW)] == [
        (3, "3-v2"),
        (7, "7-v1"),
    ]
    assert late_evidence(WINDOW, WINDOW) == []


def test_processed_evidence_is_hashed_in_window_order_with_one_version_per_id() -> None:
    late = item(9, second=2)
    assert [i.id for i in in_order([*WINDOW, late])] == [1, 2, 9, 3, 4, 5, 6]
    assert [i.content_hash for i in in_order([item(2), item(2, version="v2")])] == ["2-v2"]


def test_late_lineage_counts_and_lists_ids() -> None:
    assert late_lineage([item(7), item(8)]) == {"late_evidence": 2, "late_evidence_ids": [7, 8]}
    assert late_lineage([]) == {"late_evidence": 0, "late_evidence_ids": []}
