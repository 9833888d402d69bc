"""The contract between the summary policy, the summarizers and the runner that stores text.

A summarizer sees only `SummaryInput`, the visible entries of the timeline, never raw chat
messages: the timeline is what curators review, so the summary says nothing they could not
check line by line, and an ignored message can never reach it.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from typing import Protocol

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, InstanceOf

from timeline_pipeline.curation.rules import SUMMARY_MAX_CHARS
from timeline_pipeline.domain.entries import EntrySource, EntryStatus
from timeline_pipeline.i18n.locales import Presentation

__all__ = [
    "InvalidSummaryOutput",
    "Summarizer",
    "SummaryEntry",
    "SummaryError",
    "SummaryInput",
    "SummaryRejected",
    "SummaryResult",
    "SummaryUnavailable",
]

_FROZEN = ConfigDict(frozen=True, extra="forbid")


class SummaryEntry(BaseModel):
    """One visible timeline entry as a summarizer sees it."""

    model_config = _FROZEN

    id: int
    occurred_at: AwareDatetime
    title: str
    detail: str | None = None
    category: str
    status: str
    source: str
    human_edited: bool = False

    @property
    def curated(self) -> bool:
        """A person vouched for it: confirmed, written or edited by a curator."""
        return (
            self.status == EntryStatus.CONFIRMED
            or self.source == EntrySource.HUMAN
            or self.human_edited
        )


class SummaryInput(BaseModel):
    """The entries a summary is written from, in time order; `omitted` counts what the bound
    on input size left out (so that the text can say it is partial); `presentation` is the
    language and zone the workspace is read in (docs/i18n.md), English and UTC unless the
    caller says otherwise."""

    model_config = _FROZEN

    workspace_id: str
    entries: list[SummaryEntry]
    omitted: int = Field(default=0, ge=0)
    presentation: InstanceOf[Presentation] = Field(default_factory=Presentation.default)

    def digest(self) -> str:
        """sha256 of what the text depends on: equal digests, equal summaries (for a given
        summarizer), so an unchanged timeline need not be summarized again. The language and
        zone are part of it once they differ from English and UTC (a workspace switched to
        Chinese gets a Chinese summary at its next attempt), and left out otherwise, so that
        the digests of summaries written before workspaces had a language still match."""
        canonical = [
            [e.id, _iso(e.occurred_at), e.title, e.detail, e.category, e.curated]
            for e in self.entries
        ]
        parts: list[object] = [canonical, self.omitted]
        shown = self.presentation
        if (shown.locale, shown.time_zone.key) != _DEFAULT_SHOWN:
            parts.append([shown.locale.value, shown.time_zone.key])
        payload = json.dumps(parts, ensure_ascii=False, separators=(",", ":"))
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()


_DEFAULT_SHOWN = (Presentation.default().locale, Presentation.default().time_zone.key)


def _iso(moment: datetime) -> str:
    return moment.isoformat()


class SummaryResult(BaseModel):
    model_config = _FROZEN

    content: str = Field(min_length=1, max_length=SUMMARY_MAX_CHARS)
    summarizer: str
    model: str
    prompt_version: str
    input_tokens: int = Field(default=0, ge=0)
    output_tokens: int = Field(default=0, ge=0)


class SummaryError(Exception):
    """Base of summary failures; `reason` is a short stable code, messages carry no text."""

    def __init__(self, reason: str, message: str | None = None) -> None:
        super().__init__(message or reason)
        self.reason = reason


class SummaryUnavailable(SummaryError):
    """A transient failure outlived the summarizer's bounded retries."""


class SummaryRejected(SummaryError):
    """The service refused the request for a reason retrying will not fix."""


class InvalidSummaryOutput(SummaryError):
    """The summarizer answered with something that is not a usable summary."""


class Summarizer(Protocol):
    """Writes a summary of the given entries; must be safe to call again."""

    name: str
    prompt_version: str

    def summarize(self, summary_input: SummaryInput) -> SummaryResult: ...
