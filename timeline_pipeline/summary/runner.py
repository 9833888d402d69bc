"""Apply the summary policy to the database (docs/design.md §8).

The order of operations is the guarantee:

1. In one transaction, read the terminal windows of the workspace that have no decision yet,
   decide each one (`policy.decide`), and flip `summary_attempted` with a compare-and-set
   (`window_states.mark_summary_attempted`). Only the windows whose flag this run flipped are
   ours: a concurrent run (a burst of sensor ticks, a UI launch) flips none of them again, so
   each completed window causes at most one attempt, however many runs race.
2. If at least one of our windows calls for an attempt, make exactly one: read the visible
   entries, and unless they are exactly what the current AI summary was written from, ask the
   summarizer once.
3. Store the text with the conditional upsert of `store.summaries.write_ai_summary`, which
   writes nothing when the summary is (or has just become) human.

The flag is set before the attempt, so a crash or a failed model call spends the window's one
attempt rather than retrying it: the next completed window that changes the timeline brings
the summary up to date.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

import structlog
from sqlalchemy import Connection, Engine

from timeline_pipeline.curation.presentation import presentation_of
from timeline_pipeline.domain.entries import EntryRow, SummarySource
from timeline_pipeline.settings import LarkTimelineSettings
from timeline_pipeline.store import window_states
from timeline_pipeline.store.entries import visible_entries, visible_entry_counts
from timeline_pipeline.store.summaries import get_summary, summary_sources, write_ai_summary
from timeline_pipeline.store.window_states import SummaryWindow, windows_awaiting_summary
from timeline_pipeline.store.workspaces import WorkspaceNotFound
from timeline_pipeline.summary.contract import Summarizer, SummaryEntry, SummaryError
from timeline_pipeline.summary.policy import (
    MAX_SUMMARY_ENTRIES,
    Decision,
    WindowFacts,
    decide,
    summary_input,
)

__all__ = [
    "ScanPosition",
    "SummaryOutcome",
    "SummaryPlan",
    "SummaryReport",
    "SummaryRunner",
    "WorkspaceRequest",
    "plan_summary_requests",
    "sanitize_generated",
    "summary_entry",
]

log = structlog.get_logger(__name__)

MAX_WINDOWS_PER_RUN = 500
MAX_LISTED_WINDOWS = 50
ENTRY_READ_FACTOR = 10
"""Visible entries read per attempt: this many times the input bound, so that curated entries
can be preferred over drafts without reading an unbounded timeline."""


class SummaryOutcome(StrEnum):
    WRITTEN = "written"  # a new AI summary text is stored
    UNCHANGED = "unchanged"  # attempted; the visible entries are what the summary came from
    HUMAN_SUMMARY = "human_summary"  # a curator's summary holds: nothing automatic is written
    NO_VISIBLE_CHANGE = "no_visible_change"  # the windows changed no visible entry
    NOTHING_TO_DO = "nothing_to_do"  # no window awaits a decision (or another run took them)
    DISABLED = "disabled"  # the summary feature flag is off
    FAILED = "failed"  # the attempt was made and failed; the windows' attempt is spent


@dataclass
class SummaryReport:
    """What one run did; the Dagster materialization's (or observation's) metadata."""

    workspace_id: str
    outcome: SummaryOutcome
    windows: list[tuple[SummaryWindow, Decision]] = field(default_factory=list)
    summary_revision: int | None = None
    input_digest: str | None = None
    entry_count: int = 0
    omitted: int = 0
    summarizer: str = ""
    model: str = ""
    prompt_version: str = ""
    input_tokens: int = 0
    output_tokens: int = 0
    reason: str | None = None
    locale: str | None = None
    time_zone: str | None = None

    @property
    def attempted(self) -> bool:
        return any(decision is Decision.ATTEMPT for _, decision in self.windows)

    def metadata(self) -> dict[str, Any]:
        counts: dict[str, int] = defaultdict(int)
        for _, decision in self.windows:
            counts[decision.value] += 1
        data: dict[str, Any] = {
            "outcome": self.outcome.value,
            "workspace_id": self.workspace_id,
            "attempted": self.attempted,
            "windows_decided": len(self.windows),
            "window_decisions": dict(sorted(counts.items())),
            "window_state_ids": [w.state_id for w, _ in self.windows][:MAX_LISTED_WINDOWS],
            "window_keys": [w.source_key for w, _ in self.windows][:MAX_LISTED_WINDOWS],
            "entry_count": self.entry_count,
            "entries_omitted": self.omitted,
            "summarizer": self.summarizer,
            "model": self.model,
            "prompt_version": self.prompt_version,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
        }
        if self.summary_revision is not None:
            data["summary_revision"] = self.summary_revision
        if self.input_digest is not None:
            data["input_digest"] = self.input_digest
        if self.reason:
            data["reason"] = self.reason
        if self.locale is not None:
            data["locale"] = self.locale
            data["time_zone"] = self.time_zone
        return data


def summary_entry(row: EntryRow) -> SummaryEntry:
    """The entry's fields a summarizer reads, by their names (docs/design.md §8)."""
    return SummaryEntry.model_validate(row, from_attributes=True)


_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def sanitize_generated(text: str) -> str:
    """Generated text as every database stores it: no NUL or control characters, no lone
    surrogates (a model's output is data, and PostgreSQL refuses NUL in text)."""
    cleaned = _CONTROL.sub(" ", text)
    return cleaned.encode("utf-8", "replace").decode("utf-8").strip()


def _settle(
    conn: Connection,
    windows: Sequence[SummaryWindow],
    sources: dict[str, str],
    *,
    enabled: bool,
    only: Callable[[Decision], bool] = lambda _d: True,
) -> tuple[list[tuple[SummaryWindow, Decision]], list[tuple[SummaryWindow, Decision]]]:
    """Decide each window and flip its flag when the decision is final and `only` accepts it.

    Returns (the windows whose flag this call flipped, the final decisions `only` refused),
    each with its decision; a window another run flipped first is in neither list.
    """
    counts = visible_entry_counts(conn, windows)
    settled: list[tuple[SummaryWindow, Decision]] = []
    deferred: list[tuple[SummaryWindow, Decision]] = []
    for window in windows:
        facts = WindowFacts(
            status=window.status,
            summary_attempted=False,
            entries_created=window.entries_created,
            entries_updated=window.entries_updated,
            visible_entries=counts.get(window.state_id, 0),
        )
        decision = decide(facts, sources.get(window.workspace_id), enabled=enabled)
        if not decision.settles_window:
            continue
        if not only(decision):
            deferred.append((window, decision))
        elif window_states.mark_summary_attempted(conn, window.state_id):
            settled.append((window, decision))
    return settled, deferred


class SummaryRunner:
    """Runs the policy for one workspace at a time; the clock is injectable for tests.

    `settings` are the timeline settings whose `locale` and `timeZone` a workspace without its
    own choice is read in (docs/i18n.md); their defaults (`auto`, UTC) when not given."""

    def __init__(
        self,
        engine: Engine,
        summarizer: Summarizer,
        *,
        enabled: bool,
        settings: LarkTimelineSettings | None = None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        max_windows: int = MAX_WINDOWS_PER_RUN,
        max_entries: int = MAX_SUMMARY_ENTRIES,
    ) -> None:
        self.engine = engine
        self.summarizer = summarizer
        self.enabled = enabled
        self.settings = settings if settings is not None else LarkTimelineSettings()
        self.clock = clock
        self.max_windows = max_windows
        self.max_entries = max_entries

    def run(self, workspace_id: str) -> SummaryReport:
        report = SummaryReport(workspace_id, SummaryOutcome.NOTHING_TO_DO)
        if not self.enabled:
            report.outcome = SummaryOutcome.DISABLED
            report.reason = "the summary feature flag (summaryEnabled) is off"
            return report
        with self.engine.begin() as conn:
            windows = windows_awaiting_summary(
                conn, limit=self.max_windows, workspace_id=workspace_id
            )
            sources = summary_sources(conn, [workspace_id])
            report.windows, _ = _settle(conn, windows, sources, enabled=self.enabled)
        if not report.windows:
            return report
        if not report.attempted:
            decisions = {decision for _, decision in report.windows}
            report.outcome = (
                SummaryOutcome.HUMAN_SUMMARY
                if Decision.HUMAN_SUMMARY in decisions
                else SummaryOutcome.NO_VISIBLE_CHANGE
            )
            return report
        return self._attempt(report)

    def _attempt(self, report: SummaryReport) -> SummaryReport:
        workspace_id = report.workspace_id
        with self.engine.connect() as conn:
            rows = visible_entries(conn, workspace_id, limit=self.max_entries * ENTRY_READ_FACTOR)
            current = get_summary(conn, workspace_id)
            try:
                # Once per summary: the language and zone the whole text is written in.
                presentation = presentation_of(conn, workspace_id, self.settings)
            except (WorkspaceNotFound, ValueError) as exc:
                return self._failed(report, "no_presentation", str(exc))
        given = summary_input(
            workspace_id,
            [summary_entry(r) for r in rows],
            max_entries=self.max_entries,
            presentation=presentation,
        )
        digest = given.digest()
        report.input_digest = digest
        report.locale = presentation.locale.value
        report.time_zone = presentation.time_zone.key
        report.entry_count = len(given.entries)
        report.omitted = given.omitted
        report.summarizer = self.summarizer.name
        report.prompt_version = self.summarizer.prompt_version
        if current is not None and current.source == SummarySource.HUMAN:
            report.outcome = SummaryOutcome.HUMAN_SUMMARY
            return report
        if (
            current is not None
            and current.metadata.get("input_digest") == digest
            and current.metadata.get("summarizer") == self.summarizer.name
            and current.metadata.get("prompt_version") == self.summarizer.prompt_version
        ):
            report.outcome = SummaryOutcome.UNCHANGED
            report.summary_revision = current.revision
            return report
        try:
            result = self.summarizer.summarize(given)
        except SummaryError as exc:
            return self._failed(report, exc.reason, str(exc))
        except Exception as exc:  # a summarizer bug fails this attempt, not the caller
            return self._failed(report, "unexpected_error", type(exc).__name__)
        content = sanitize_generated(result.content)
        if not content:
            return self._failed(report, "empty_summary", "the summarizer returned blank text")
        report.model = result.model
        report.prompt_version = result.prompt_version
        report.input_tokens = result.input_tokens
        report.output_tokens = result.output_tokens
        now = self.clock()
        metadata = {
            "input_digest": digest,
            "summarizer": result.summarizer,
            "model": result.model,
            "prompt_version": result.prompt_version,
            "entry_count": len(given.entries),
            "entries_omitted": given.omitted,
            "locale": presentation.locale.value,
            "time_zone": presentation.time_zone.key,
            "entry_ids": [e.id for e in given.entries][:MAX_SUMMARY_ENTRIES],
            "window_state_ids": [w.state_id for w, _ in report.windows][:MAX_LISTED_WINDOWS],
            "generated_at": now.isoformat(),
        }
        with self.engine.begin() as conn:
            written = write_ai_summary(conn, workspace_id, content, metadata, now=now)
        if written is None:
            report.outcome = SummaryOutcome.HUMAN_SUMMARY
            report.reason = "a curator wrote the summary while this one was generated"
            return report
        report.outcome = SummaryOutcome.WRITTEN
        report.summary_revision = written.revision
        log.info(
            "summary.written",
            workspace_id=workspace_id,
            revision=written.revision,
            entries=len(given.entries),
            windows=len(report.windows),
            summarizer=result.summarizer,
        )
        return report

    def _failed(self, report: SummaryReport, reason: str, message: str) -> SummaryReport:
        report.outcome = SummaryOutcome.FAILED
        report.reason = f"{reason}: {message}"[:300]
        log.warning(
            "summary.failed",
            workspace_id=report.workspace_id,
            reason=reason,
            windows=len(report.windows),
        )
        return report


@dataclass(frozen=True, slots=True)
class WorkspaceRequest:
    """A workspace with windows that call for a summary attempt (for the Dagster sensor)."""

    workspace_id: str
    state_ids: tuple[int, ...]
    window_keys: tuple[str, ...]


ScanPosition = tuple[datetime, int]
"""Where the sensor's keyset scan of undecided windows goes on: the last (window_start, id)."""


@dataclass(frozen=True, slots=True)
class SummaryPlan:
    """What one sensor tick found: the workspaces to run, the windows settled in place, and
    where the next tick's scan goes on (None: from the oldest undecided window again)."""

    requests: list[WorkspaceRequest]
    settled: list[tuple[SummaryWindow, Decision]]
    next_after: ScanPosition | None


def plan_summary_requests(
    engine: Engine, *, limit: int, after: ScanPosition | None = None
) -> SummaryPlan:
    """What the sensor does each tick: settle, in place, every awaiting window whose decision
    needs no summary run (no visible change, human summary), and list the workspaces whose
    windows call for an attempt. Their flags are left for the run to flip, so that the run
    (not the sensor) owns the attempt.

    The scan is a keyset over the undecided windows, driven by their own flag with no lookback
    (a window that finishes late still gets its decision), `limit` rows a tick from `after`:
    windows whose runs keep failing cannot hold the front of the scan, because the next tick
    goes on after them and wraps to the oldest once the end is reached."""
    with engine.begin() as conn:
        windows = windows_awaiting_summary(conn, limit=limit, after=after)
        if after is not None and len(windows) < limit:
            # The end was reached: wrap to the oldest within the same tick.
            taken = {w.state_id for w in windows}
            windows += [
                w
                for w in windows_awaiting_summary(conn, limit=limit - len(windows))
                if w.state_id not in taken
            ]
        sources = summary_sources(conn, sorted({w.workspace_id for w in windows}))
        settled, deferred = _settle(
            conn, windows, sources, enabled=True, only=lambda d: d is not Decision.ATTEMPT
        )
    pending: dict[str, list[SummaryWindow]] = defaultdict(list)
    for window, _decision in deferred:
        pending[window.workspace_id].append(window)
    requests = [
        WorkspaceRequest(
            workspace_id=workspace_id,
            state_ids=tuple(sorted(w.state_id for w in group)),
            window_keys=tuple(w.source_key for w in group),
        )
        for workspace_id, group in sorted(pending.items())
    ]
    last = windows[-1] if len(windows) >= limit else None
    next_after = (
        (last.window_start, last.state_id)
        if last is not None and last.window_start is not None
        else None
    )
    return SummaryPlan(requests, settled, next_after)
