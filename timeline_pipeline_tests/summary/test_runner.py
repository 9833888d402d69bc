"""The summary policy against a real database (SQLite and PostgreSQL), with windows that the
real window runner synthesized: docs/design.md §8, §11 (human rows) and 21."""

from __future__ import annotations

import threading

from sqlalchemy import Engine

from timeline_pipeline.curation.rules import Action
from timeline_pipeline.curation.service import CurationService
from timeline_pipeline.db.engine import transaction
from timeline_pipeline.store import summaries as store
from timeline_pipeline.summary.contract import SummaryInput, SummaryResult, SummaryUnavailable
from timeline_pipeline.summary.deterministic import DeterministicSummarizer
from timeline_pipeline.summary.policy import Decision
from timeline_pipeline.summary.runner import SummaryOutcome, SummaryRunner, plan_summary_requests
from timeline_pipeline_tests.curation.support import (
    CHATTER,
    IMPACT,
    NOW,
    RECOVERED,
    ROLLBACK,
    ROOT_CAUSE,
    W1,
    W2,
    W3,
    entry_titled,
    incident,
    say,
    synthesize,
    window_state,
)


class Recording:
    """The deterministic summarizer, recording every input it is asked to summarize."""

    name = "rules"
    prompt_version = "summary-rules-v1"

    def __init__(self, fail: Exception | None = None) -> None:
        self.inner = DeterministicSummarizer()
        self.inputs: list[SummaryInput] = []
        self.fail = fail
        self.lock = threading.Lock()

    def summarize(self, summary_input: SummaryInput) -> SummaryResult:
        with self.lock:
            self.inputs.append(summary_input)
        if self.fail is not None:
            raise self.fail
        return self.inner.summarize(summary_input)


def runner(engine: Engine, summarizer: Recording, *, enabled: bool = True) -> SummaryRunner:
    return SummaryRunner(engine, summarizer, enabled=enabled)


def summary(engine: Engine) -> store.SummaryRow | None:
    with engine.connect() as conn:
        return store.get_summary(conn, "inc-1")


def test_a_burst_gives_one_summary_attempt_per_completed_window(engine: Engine) -> None:
    incident(engine)
    # A burst: forty messages in one window, then one completed window.
    say(engine, W1, [IMPACT, ROLLBACK, *(CHATTER * 13)][:40])
    assert synthesize(engine, W1).status == "completed"
    recording = Recording()
    # Eight runs race for the same window (sensor ticks, a UI launch, a retry...).
    results: list[SummaryOutcome] = []
    barrier = threading.Barrier(8)

    def run() -> None:
        barrier.wait()
        results.append(runner(engine, recording).run("inc-1").outcome)

    threads = [threading.Thread(target=run) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(recording.inputs) == 1
    assert sorted(results) == sorted([SummaryOutcome.WRITTEN] + [SummaryOutcome.NOTHING_TO_DO] * 7)
    assert window_state(engine, W1).summary_attempted
    written = summary(engine)
    assert written is not None and written.source == "ai" and written.revision == 1
    assert written.metadata["window_state_ids"] == [window_state(engine, W1).id]
    # Later runs find no window awaiting a decision: no second attempt for the same window.
    assert runner(engine, recording).run("inc-1").outcome is SummaryOutcome.NOTHING_TO_DO
    assert len(recording.inputs) == 1
    # The next completed window that changes the timeline brings the summary up to date, once.
    say(engine, W2, [RECOVERED])
    synthesize(engine, W2)
    report = runner(engine, recording).run("inc-1")
    assert report.outcome is SummaryOutcome.WRITTEN and report.summary_revision == 2
    assert len(recording.inputs) == 2
    assert [w.state_id for w, _ in report.windows] == [window_state(engine, W2).id]


def test_a_human_summary_is_never_overwritten(engine: Engine) -> None:
    incident(engine)
    say(engine, W1, [IMPACT])
    synthesize(engine, W1)
    CurationService(engine).write_summary(
        "inc-1", "Curated: EU checkout degraded.", expected_revision=None, check=True, actor="t"
    )
    recording = Recording()
    report = runner(engine, recording).run("inc-1")
    assert report.outcome is SummaryOutcome.HUMAN_SUMMARY
    assert [d for _, d in report.windows] == [Decision.HUMAN_SUMMARY]
    assert recording.inputs == []  # not even attempted
    assert window_state(engine, W1).summary_attempted  # the window's decision is made
    kept = summary(engine)
    assert kept is not None and (kept.source, kept.content) == (
        "human",
        "Curated: EU checkout degraded.",
    )
    # And the store refuses an automatic write outright, whoever calls it.
    with transaction(engine) as conn:
        assert store.write_ai_summary(conn, "inc-1", "machine text", {}, now=NOW) is None
    assert summary(engine) == kept


def test_a_curator_who_writes_the_summary_during_generation_wins(engine: Engine) -> None:
    incident(engine)
    say(engine, W1, [IMPACT])
    synthesize(engine, W1)

    class WritesHumanSummaryMeanwhile(Recording):
        def summarize(self, summary_input: SummaryInput) -> SummaryResult:
            CurationService(engine).write_summary(
                "inc-1", "Curated meanwhile.", expected_revision=None, check=True, actor="t"
            )
            return super().summarize(summary_input)

    report = runner(engine, WritesHumanSummaryMeanwhile()).run("inc-1")
    assert report.outcome is SummaryOutcome.HUMAN_SUMMARY
    kept = summary(engine)
    assert kept is not None and kept.content == "Curated meanwhile."


def test_hidden_entries_never_feed_the_summary(engine: Engine) -> None:
    incident(engine)
    say(engine, W1, [IMPACT, ROLLBACK])
    synthesize(engine, W1)
    curation = CurationService(engine)
    rollback = entry_titled(engine, "rolled back")
    curation.transition(
        "inc-1", rollback.id, Action.HIDE, expected_revision=rollback.revision, actor="t"
    )
    recording = Recording()
    assert runner(engine, recording).run("inc-1").outcome is SummaryOutcome.WRITTEN
    (given,) = recording.inputs
    assert [e.title for e in given.entries] == [entry_titled(engine, "checkout").title]
    stored = summary(engine)
    assert stored is not None and "rolled back" not in stored.content.lower()
    # A window whose only new entry a curator hid before the summary ran changes nothing.
    say(engine, W2, [ROOT_CAUSE])
    synthesize(engine, W2)
    root_cause = entry_titled(engine, "root cause")
    curation.transition(
        "inc-1", root_cause.id, Action.HIDE, expected_revision=root_cause.revision, actor="t"
    )
    # An ignored window (chatter only) never changes the summary either.
    say(engine, W3, CHATTER)
    assert synthesize(engine, W3).status == "ignored"
    report = runner(engine, recording).run("inc-1")
    assert report.outcome is SummaryOutcome.NO_VISIBLE_CHANGE
    assert sorted(d for _, d in report.windows) == [Decision.NO_VISIBLE_CHANGE] * 2
    assert len(recording.inputs) == 1


def test_a_failed_attempt_spends_the_windows_attempt_and_an_unchanged_timeline_is_not_resent(
    engine: Engine,
) -> None:
    incident(engine)
    say(engine, W1, [IMPACT])
    synthesize(engine, W1)
    failing = Recording(fail=SummaryUnavailable("overloaded", "still failing after 3 attempts"))
    report = runner(engine, failing).run("inc-1")
    assert report.outcome is SummaryOutcome.FAILED and report.reason is not None
    assert "overloaded" in report.reason
    assert summary(engine) is None
    assert runner(engine, Recording()).run("inc-1").outcome is SummaryOutcome.NOTHING_TO_DO

    # A replay of a window re-finds the same entries: the attempt is made, the text is kept.
    say(engine, W2, [ROLLBACK])
    synthesize(engine, W2)
    recording = Recording()
    assert runner(engine, recording).run("inc-1").outcome is SummaryOutcome.WRITTEN
    synthesize(engine, W2, replay=True)
    again = runner(engine, recording).run("inc-1")
    assert again.outcome in (SummaryOutcome.UNCHANGED, SummaryOutcome.NO_VISIBLE_CHANGE)
    assert len(recording.inputs) == 1
    stored = summary(engine)
    assert stored is not None and stored.revision == 1


def test_nothing_is_decided_while_the_feature_is_off(engine: Engine) -> None:
    incident(engine)
    say(engine, W1, [IMPACT])
    synthesize(engine, W1)
    recording = Recording()
    assert runner(engine, recording, enabled=False).run("inc-1").outcome is (
        SummaryOutcome.DISABLED
    )
    assert not window_state(engine, W1).summary_attempted  # decided once the flag is on
    assert runner(engine, recording).run("inc-1").outcome is SummaryOutcome.WRITTEN


def test_the_sensors_scan_goes_on_past_windows_whose_runs_keep_failing(engine: Engine) -> None:
    """The scan reads `limit` undecided windows a tick from where the last tick stopped, so
    windows that keep calling for a run that fails cannot hold its front for ever."""
    for workspace_id in ("inc-a", "inc-b", "inc-c"):
        incident(engine, workspace_id)
        say(engine, W1, [ROLLBACK], workspace_id=workspace_id)
        synthesize(engine, W1, workspace_id=workspace_id)
    seen: list[str] = []
    after = None
    for _ in range(4):
        plan = plan_summary_requests(engine, limit=1, after=after)
        seen += [request.workspace_id for request in plan.requests]
        after = plan.next_after
    # Nobody ran a summary, so every window still awaits its run: each workspace was asked
    # for in turn, and the scan wrapped to the oldest after the last.
    assert seen == ["inc-a", "inc-b", "inc-c", "inc-a"]
