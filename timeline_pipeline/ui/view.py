"""What the timeline page shows, computed from the curation views. Pure: views in, plain values
for the templates out (docs/timeline-page.md).

Labels live here, not in the templates, so the page, its tests and the Markdown export agree on
what an entry is called: the category names are the export's.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from timeline_pipeline.curation.export import CATEGORY_LABELS
from timeline_pipeline.curation.rules import CATEGORIES
from timeline_pipeline.curation.timeline import EntryView, SummaryView
from timeline_pipeline.domain.entries import (
    ENTRY_STATUSES,
    VISIBLE_STATUSES,
    EntryRow,
    EntrySource,
    EntryStatus,
    SummarySource,
)
from timeline_pipeline.domain.evidence import EvidenceRow

__all__ = [
    "STATUS_LABELS",
    "EntryCard",
    "EvidenceItem",
    "Filters",
    "SummaryPanel",
    "category_options",
    "entry_card",
    "evidence_item",
    "parse_filters",
    "source_label",
    "summary_panel",
    "timeline_version",
]

STATUS_LABELS: dict[str, str] = {
    EntryStatus.DRAFT: "Draft",
    EntryStatus.CONFIRMED: "Confirmed",
    EntryStatus.HIDDEN: "Hidden",
}


@dataclass(frozen=True, slots=True)
class Filters:
    statuses: tuple[str, ...]
    category: str | None

    @property
    def is_default(self) -> bool:
        return self.statuses == VISIBLE_STATUSES and self.category is None

    def query(self) -> list[tuple[str, str]]:
        pairs = [("status", status) for status in self.statuses]
        if self.category:
            pairs.append(("category", self.category))
        return pairs


def parse_filters(statuses: Sequence[str], category: str | None) -> Filters:
    """Known values only, in a fixed order; unknown ones are dropped, none means the default."""
    chosen = tuple(s for s in ENTRY_STATUSES if s in set(statuses)) or VISIBLE_STATUSES
    return Filters(chosen, category if category in CATEGORIES else None)


def category_options() -> list[tuple[str, str]]:
    return [(value, CATEGORY_LABELS.get(value, value)) for value in CATEGORIES]


def source_label(source: str, status: str, human_edited: bool) -> str:
    """Where an entry's words come from: AI draft, AI, Rule, Human or Human-edited."""
    if source == EntrySource.HUMAN:
        return "Human"
    if human_edited:
        return "Human-edited"
    if source == EntrySource.RULE:
        return "Rule"
    return "AI draft" if status == EntryStatus.DRAFT else "AI"


@dataclass(frozen=True, slots=True)
class EntryCard:
    id: int
    status: str
    status_label: str
    category: str
    category_label: str
    title: str
    detail: str | None
    source_label: str
    occurred_iso: str
    occurred_utc: str
    occurred_date: str
    occurred_input: str
    """The time as a `datetime-local` input value, in UTC."""
    revision: int
    evidence_count: int
    actions: tuple[str, ...]


def _actions(status: str) -> tuple[str, ...]:
    if status == EntryStatus.DRAFT:
        return ("confirm", "hide")
    if status == EntryStatus.CONFIRMED:
        return ("hide",)
    return ("restore",)


def entry_card(view: EntryView | EntryRow) -> EntryCard:
    """A card from an entry as read for one entry (`EntryView`) or for a list (`EntryRow`)."""
    moment = view.occurred_at.astimezone(UTC)
    return EntryCard(
        id=view.id,
        status=view.status,
        status_label=STATUS_LABELS.get(view.status, view.status),
        category=view.category,
        category_label=CATEGORY_LABELS.get(view.category, view.category),
        title=view.title,
        detail=view.detail,
        source_label=source_label(view.source, view.status, view.human_edited),
        occurred_iso=moment.isoformat().replace("+00:00", "Z"),
        occurred_utc=moment.strftime("%H:%M UTC"),
        occurred_date=moment.strftime("%a %d %b %Y"),
        occurred_input=moment.strftime("%Y-%m-%dT%H:%M"),
        revision=view.revision,
        evidence_count=len(view.evidence_ids),
        actions=_actions(view.status),
    )


@dataclass(frozen=True, slots=True)
class SummaryPanel:
    content: str | None
    paragraphs: tuple[str, ...]
    origin: str | None
    revision: int | None
    updated_utc: str | None


def summary_panel(view: SummaryView | None) -> SummaryPanel:
    if view is None:
        return SummaryPanel(None, (), None, None, None)
    paragraphs = tuple(p.strip() for p in view.content.split("\n\n") if p.strip())
    origin = "Written by a curator" if view.source == SummarySource.HUMAN else "Generated"
    updated = view.updated_at.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")
    return SummaryPanel(view.content, paragraphs, origin, view.revision, updated)


@dataclass(frozen=True, slots=True)
class EvidenceItem:
    id: int
    sender: str
    occurred_iso: str
    occurred_utc: str
    text: str | None
    """None for a recalled (redacted) message: its text is gone."""
    link: str | None


def evidence_item(row: EvidenceRow, link: str | None) -> EvidenceItem:
    moment = row.occurred_at.astimezone(UTC)
    return EvidenceItem(
        id=row.id,
        sender=row.actor_display_name or row.actor_id or "Unknown sender",
        occurred_iso=moment.isoformat().replace("+00:00", "Z"),
        occurred_utc=moment.strftime("%H:%M:%S UTC"),
        text=None if row.deleted else row.content,
        link=None if row.deleted else link,
    )


def timeline_version(
    entries: Sequence[tuple[int, int]], summary_revision: int | None, filters: Filters
) -> str:
    """A short tag of what a listing shows: (id, revision) of each entry, the summary revision
    and the filters. The page polls with it and is answered "no change" while it still holds."""
    digest = hashlib.sha256()
    digest.update(repr((filters.statuses, filters.category, summary_revision)).encode())
    for entry_id, revision in entries:
        digest.update(f"{entry_id}.{revision};".encode())
    return digest.hexdigest()[:16]


def utc_from_input(value: str) -> datetime:
    """A `datetime-local` value (no zone) read as UTC; ValueError when it is not one."""
    moment = datetime.fromisoformat(value.strip())
    if moment.tzinfo is not None:
        return moment.astimezone(UTC)
    return moment.replace(tzinfo=UTC)
