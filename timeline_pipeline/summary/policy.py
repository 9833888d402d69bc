"""When the workspace summary may be regenerated, and from which entries (docs/design.md §8).

Pure, so the whole policy is one table of cases in the tests:

* a completed window is the coalescing boundary: nothing happens for a message or a chunk;
* each terminal window gets at most one decision (`summary_attempted` flips once);
* regenerate only when the window created or materially changed at least one entry that is
  still visible (an ignored window proposes nothing, so it never changes the summary);
* never when the workspace has a human summary: that text is the curator's, not ours;
* the input is the visible entries: hidden ones never feed it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from timeline_pipeline.domain.entries import EntryStatus, SummarySource
from timeline_pipeline.domain.states import TERMINAL_WINDOW_STATUSES
from timeline_pipeline.i18n.locales import Presentation
from timeline_pipeline.summary.contract import SummaryEntry, SummaryInput

__all__ = ["MAX_SUMMARY_ENTRIES", "Decision", "WindowFacts", "decide", "summary_input"]

MAX_SUMMARY_ENTRIES = 300
"""Input bound: an incident timeline is tens of entries; a runaway one must not blow the prompt."""


class Decision(StrEnum):
    ATTEMPT = "attempt"
    DISABLED = "disabled"
    NOT_TERMINAL = "not_terminal"
    ALREADY_ATTEMPTED = "already_attempted"
    HUMAN_SUMMARY = "human_summary"
    NO_VISIBLE_CHANGE = "no_visible_change"

    @property
    def settles_window(self) -> bool:
        """Whether this decision is final for the window (so `summary_attempted` is set).

        A disabled feature or an unfinished window decides nothing yet: the window is looked
        at again once the flag is on or the window is done.
        """
        return self in (Decision.ATTEMPT, Decision.HUMAN_SUMMARY, Decision.NO_VISIBLE_CHANGE)


@dataclass(frozen=True, slots=True)
class WindowFacts:
    """What the policy needs to know about one window."""

    status: str
    summary_attempted: bool
    entries_created: int
    entries_updated: int
    visible_entries: int
    """Entries still visible (draft or confirmed) that this window last created or changed."""


def decide(window: WindowFacts, summary_source: str | None, *, enabled: bool = True) -> Decision:
    """The decision for one window, given the source of the current summary (None: none)."""
    if not enabled:
        return Decision.DISABLED
    if window.status not in TERMINAL_WINDOW_STATUSES:
        return Decision.NOT_TERMINAL
    if window.summary_attempted:
        return Decision.ALREADY_ATTEMPTED
    if summary_source == SummarySource.HUMAN:
        return Decision.HUMAN_SUMMARY
    if window.entries_created + window.entries_updated == 0 or window.visible_entries == 0:
        return Decision.NO_VISIBLE_CHANGE
    return Decision.ATTEMPT


def summary_input(
    workspace_id: str,
    entries: Sequence[SummaryEntry],
    *,
    max_entries: int = MAX_SUMMARY_ENTRIES,
    presentation: Presentation | None = None,
) -> SummaryInput:
    """The visible entries in time order, bounded, to be read in `presentation` (the
    workspace's language and zone; English and UTC when not given).

    Hidden entries are dropped here as well as in the query, so no caller can feed them by
    mistake. Over the bound, curated entries (confirmed, human, human-edited) are kept first,
    earliest first, because they are what reviewers vouched for; the remaining room goes to
    the newest drafts, because the latest state matters most in a live incident.
    """
    shown = presentation or Presentation.default()
    visible = [e for e in entries if e.status != EntryStatus.HIDDEN]
    ordered = sorted(visible, key=lambda e: (e.occurred_at, e.id))
    if len(ordered) <= max_entries:
        return SummaryInput(workspace_id=workspace_id, entries=ordered, presentation=shown)
    curated = [e for e in ordered if e.curated][:max_entries]
    room = max_entries - len(curated)
    drafts = [e for e in ordered if not e.curated]
    newest = drafts[len(drafts) - room :] if room > 0 else []
    kept = sorted([*curated, *newest], key=lambda e: (e.occurred_at, e.id))
    return SummaryInput(
        workspace_id=workspace_id,
        entries=kept,
        omitted=len(ordered) - len(kept),
        presentation=shown,
    )
