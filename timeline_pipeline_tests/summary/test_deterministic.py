"""The default summarizer: useful on its own, traceable, and the same text for the same input."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from timeline_pipeline.summary.contract import SummaryEntry, SummaryInput
from timeline_pipeline.summary.deterministic import DeterministicSummarizer

T = datetime(2026, 11, 29, 10, 0, tzinfo=UTC)


def item(
    entry_id: int, minutes: int, category: str, title: str, status: str = "draft"
) -> SummaryEntry:
    return SummaryEntry(
        id=entry_id,
        occurred_at=T + timedelta(minutes=minutes),
        title=title,
        category=category,
        status=status,
        source="ai",
    )


INCIDENT = [
    item(1, 2, "impact", "Checkout latency above 2s for EU customers", "confirmed"),
    item(2, 9, "finding", "Errors started with the 09:55 deploy"),
    item(3, 14, "mitigation", "Rolled back payments-api to v41", "confirmed"),
    item(4, 21, "root_cause", "Connection pool exhausted after the config change"),
    item(5, 35, "recovery", "Error rate back to normal", "confirmed"),
    item(6, 40, "next_step", "Add alerting on pool saturation"),
]


def test_it_answers_the_questions_of_someone_joining_the_incident() -> None:
    text = DeterministicSummarizer().render(SummaryInput(workspace_id="inc-1", entries=INCIDENT))
    assert text.splitlines() == [
        "6 timeline entries from 2026-11-29 10:02 UTC to 2026-11-29 10:40 UTC "
        "(3 confirmed by curators, 3 drafts).",
        "Impact: Checkout latency above 2s for EU customers.",
        "Root cause: Connection pool exhausted after the config change.",
        "Findings: Errors started with the 09:55 deploy.",
        "Mitigation: Rolled back payments-api to v41.",
        "Recovery: Error rate back to normal.",
        "Next steps: Add alerting on pool saturation.",
        "Status: recovered at 2026-11-29 10:35 UTC.",
    ]


def test_an_ongoing_incident_names_its_latest_entry_and_long_sections_are_bounded() -> None:
    many = [item(10 + i, 50 + i, "mitigation", f"Action {i}") for i in range(5)]
    text = DeterministicSummarizer().render(
        SummaryInput(workspace_id="inc-1", entries=INCIDENT[:1] + many, omitted=4)
    )
    assert "4 further entries are not covered here." in text
    # Actions are told from the latest ones, and the rest is counted, not dropped silently.
    assert "Mitigation: Action 2. Action 3. Action 4. (+2 more)" in text
    assert text.endswith("Status: ongoing; latest at 2026-11-29 10:54 UTC: Action 4.")


def test_the_same_entries_give_the_same_text() -> None:
    summarizer = DeterministicSummarizer()
    given = SummaryInput(workspace_id="inc-1", entries=INCIDENT)
    result = summarizer.summarize(given)
    assert result.content == summarizer.summarize(given).content
    assert result.summarizer == "rules" and result.prompt_version == "summary-rules-v2"
    assert summarizer.render(SummaryInput(workspace_id="inc-1", entries=[])) == (
        "No timeline entries yet."
    )


def test_a_title_that_already_carries_its_sections_label_is_not_labelled_twice() -> None:
    """Authors label their own messages ("Root cause (draft): ...", "Decision: ..."), and a
    title keeps the author's words; the summary's heading says it once."""
    labelled = [
        item(1, 2, "impact", "Impact: checkout down for EU cards"),
        item(2, 9, "root_cause", "Root cause (draft): payments-config #4471 raised the timeout"),
        item(3, 10, "decision", "Decision: we roll back payments-config to r811"),
        item(4, 11, "decision", "decisions - freeze payment deploys"),
        item(5, 20, "next_step", "INC-2291 follow-ups: fix the rollback path"),
        item(6, 21, "finding", "Root cause is still unknown, pools are full"),
    ]

    lines = (
        DeterministicSummarizer()
        .render(SummaryInput(workspace_id="inc-1", entries=labelled))
        .splitlines()
    )

    assert lines[1:6] == [
        "Impact: Checkout down for EU cards.",
        "Root cause: (draft) payments-config #4471 raised the timeout.",
        "Findings: Root cause is still unknown, pools are full.",
        "Decisions: We roll back payments-config to r811. Freeze payment deploys.",
        "Next steps: Fix the rollback path.",
    ]
