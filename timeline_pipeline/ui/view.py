"""What the timeline page shows, computed from the curation views. No I/O of its own: views and the
workspace's `Presentation` in, plain values for the templates out (docs/timeline-page.md).

Labels live here, not in the templates, so the page and its tests agree on what an entry is
called: category and status names are the shared ones of `i18n/labels.py` (what the cards, the
summary and the export call them too); the page's own words are msgids of its `page` catalog
(docs/i18n.md). Times are shown in the workspace's zone with its offset (`14:08 UTC+8`), and
with their date wherever the times shown together span more than one local day (`dated`).
The `datetime-local` fields are read and filled in that zone; stored times stay UTC.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from timeline_pipeline.curation.rules import CATEGORIES, EARLIEST, LATEST
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
from timeline_pipeline.i18n.labels import category_label, status_label
from timeline_pipeline.i18n.locales import Locale, Presentation
from timeline_pipeline.i18n.times import local, show_date, show_time, zone_label
from timeline_pipeline.ui.language import N_, page_text

__all__ = [
    "INPUT_FORMAT",
    "EntryCard",
    "EvidenceItem",
    "Filters",
    "SummaryPanel",
    "TimeNotAccepted",
    "category_options",
    "entry_card",
    "evidence_item",
    "input_value",
    "moment_from_input",
    "parse_filters",
    "source_label",
    "status_options",
    "summary_panel",
    "timeline_version",
    "workspace_status_label",
    "zone_name",
    "zone_offset_minutes",
]

INPUT_FORMAT = "%Y-%m-%dT%H:%M"
"""A `datetime-local` field's value: a wall-clock time with no zone."""
_STAMP_FORMAT = "%Y-%m-%d %H:%M"

_WORKSPACE_STATUSES: dict[str, str] = {
    "firing": N_("Firing"),
    "recovered": N_("Recovered"),
    "archived": N_("Archived"),
}
"""The msgids of a workspace's statuses (the page's badge); other surfaces do not show them."""

_ACTIONS: dict[str, str] = {
    "confirm": N_("Confirm"),
    "hide": N_("Hide"),
    "restore": N_("Restore"),
}
"""The visible names of the action buttons; each keeps its stored action as `data-action`."""


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


def category_options(locale: Locale) -> list[tuple[str, str]]:
    """(stored value, shown name) of every category, in the order the rules list them."""
    return [(value, category_label(value, locale)) for value in CATEGORIES]


def status_options(locale: Locale) -> list[tuple[str, str]]:
    """(stored value, shown name) of every entry status, for the filters."""
    return [(value, status_label(value, locale)) for value in ENTRY_STATUSES]


def workspace_status_label(status: str, locale: Locale) -> str:
    """`firing` as `Firing` or `处理中`; an unknown value as it is stored."""
    english = _WORKSPACE_STATUSES.get(status)
    return page_text(locale).gettext(english) if english else status


def source_label(source: str, status: str, human_edited: bool) -> str:
    """Where an entry's words come from: AI draft, AI, Rule, Human or Human-edited (the English
    msgid; the card shows it in the workspace's language)."""
    if source == EntrySource.HUMAN:
        return N_("Human")
    if human_edited:
        return N_("Human-edited")
    if source == EntrySource.RULE:
        return N_("Rule")
    return N_("AI draft") if status == EntryStatus.DRAFT else N_("AI")


def zone_offset_minutes(moment: datetime, zone: ZoneInfo) -> int:
    """The zone's offset from UTC at `moment`, in minutes: ui.js leaves out the viewer's local
    time beside a time when the viewer's offset is the same (it would repeat it)."""
    offset = local(moment, zone).utcoffset()
    return int(offset.total_seconds() // 60) if offset is not None else 0


def zone_name(zone: ZoneInfo, moment: datetime) -> str:
    """The zone as the page's hint names it: `UTC`, or `Asia/Shanghai (UTC+8)` (its name, and
    its offset at `moment`)."""
    return "UTC" if zone.key == "UTC" else f"{zone.key} ({zone_label(moment, zone)})"


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
    by_curator: bool
    """Added by a curator (a pin or the page's form): it has no supporting messages to show."""
    occurred_iso: str
    """The stored UTC time, ISO 8601 (`<time datetime>`, the viewer's local time in ui.js)."""
    occurred_shown: str
    """In the workspace's zone: `14:08 UTC+8`, with the date when the list is `dated`."""
    occurred_date: str
    """The local date alone (the time's tooltip)."""
    occurred_offset: int
    occurred_input: str
    """The time as a `datetime-local` input value, in the workspace's zone."""
    zone: str
    """The zone's label at this time (`UTC+8`), beside the input that reads it."""
    revision: int
    evidence_count: int
    actions: tuple[tuple[str, str], ...]
    """(action, its shown name): the buttons the entry's status allows."""
    recalled_evidence: bool = False
    """One of its messages was recalled (docs/lifecycle.md): the page shows a badge."""


def _actions(status: str) -> tuple[str, ...]:
    if status == EntryStatus.DRAFT:
        return ("confirm", "hide")
    if status == EntryStatus.CONFIRMED:
        return ("hide",)
    return ("restore",)


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def entry_card(view: EntryView | EntryRow, presentation: Presentation, *, dated: bool) -> EntryCard:
    """A card from an entry as read for one entry (`EntryView`) or for a list (`EntryRow`)."""
    zone, locale = presentation.time_zone, presentation.locale
    t = page_text(presentation.locale)
    moment = view.occurred_at
    return EntryCard(
        id=view.id,
        status=view.status,
        status_label=status_label(view.status, locale),
        category=view.category,
        category_label=category_label(view.category, locale),
        title=view.title,
        detail=view.detail,
        source_label=t.gettext(source_label(view.source, view.status, view.human_edited)),
        by_curator=view.source == EntrySource.HUMAN,
        occurred_iso=_iso(moment),
        occurred_shown=show_time(moment, zone, locale, with_date=dated),
        occurred_date=show_date(moment, zone, locale),
        occurred_offset=zone_offset_minutes(moment, zone),
        occurred_input=input_value(moment, zone),
        zone=zone_label(moment, zone),
        revision=view.revision,
        evidence_count=len(view.evidence_ids),
        actions=tuple((action, t.gettext(_ACTIONS[action])) for action in _actions(view.status)),
        recalled_evidence=view.recalled_evidence,
    )


@dataclass(frozen=True, slots=True)
class SummaryPanel:
    content: str | None
    paragraphs: tuple[str, ...]
    origin: str | None
    by_curator: bool
    revision: int | None
    updated: str | None
    """When it was last written, always with its date, in the workspace's zone: the ISO date the
    stamp always had (`2026-12-05 04:05 UTC+8`), readable in every language."""


def summary_panel(view: SummaryView | None, presentation: Presentation) -> SummaryPanel:
    if view is None:
        return SummaryPanel(None, (), None, False, None, None)
    t = page_text(presentation.locale)
    paragraphs = tuple(p.strip() for p in view.content.split("\n\n") if p.strip())
    by_curator = view.source == SummarySource.HUMAN
    origin = t.gettext("Written by a curator") if by_curator else t.gettext("Generated")
    zone, at = presentation.time_zone, view.updated_at
    updated = f"{local(at, zone).strftime(_STAMP_FORMAT)} {zone_label(at, zone)}"
    return SummaryPanel(view.content, paragraphs, origin, by_curator, view.revision, updated)


@dataclass(frozen=True, slots=True)
class EvidenceItem:
    id: int
    sender: str
    occurred_iso: str
    occurred_shown: str
    """In the workspace's zone, to the second (`14:08:05 UTC+8`), dated as the entry is."""
    occurred_offset: int
    text: str | None
    """None for a recalled (redacted) message: its text is gone."""
    link: str | None


def evidence_item(
    row: EvidenceRow, link: str | None, presentation: Presentation, *, dated: bool
) -> EvidenceItem:
    zone = presentation.time_zone
    sender = row.actor_display_name or row.actor_id
    return EvidenceItem(
        id=row.id,
        sender=sender or page_text(presentation.locale).gettext("Unknown sender"),
        occurred_iso=_iso(row.occurred_at),
        occurred_shown=show_time(
            row.occurred_at, zone, presentation.locale, with_date=dated, seconds=True
        ),
        occurred_offset=zone_offset_minutes(row.occurred_at, zone),
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


def input_value(moment: datetime, zone: ZoneInfo) -> str:
    """`moment` as a `datetime-local` value: the wall-clock time in `zone`."""
    return local(moment, zone).strftime(INPUT_FORMAT)


class TimeNotAccepted(ValueError):
    """A `datetime-local` value the page cannot store; `reason` is the page's msgid for why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def moment_from_input(value: str, zone: ZoneInfo) -> datetime:
    """A `datetime-local` value (no zone) read as a wall-clock time in `zone`, as UTC.

    TimeNotAccepted when it is not a date and time, or falls outside the times an entry may
    have (`curation.rules`: 2000 to 2100): a year-1 value in a UTC+14 zone has no UTC time at
    all, and must be the form's error, never a crash.
    """
    try:
        moment = datetime.fromisoformat(value.strip())
    except ValueError:
        raise TimeNotAccepted(N_("the time is not a date and time")) from None
    try:
        aware = moment if moment.tzinfo is not None else moment.replace(tzinfo=zone)
        utc = aware.astimezone(UTC)
    except (OverflowError, ValueError):
        raise TimeNotAccepted(N_("the time must be between 2000 and 2100")) from None
    if not EARLIEST <= utc < LATEST:
        raise TimeNotAccepted(N_("the time must be between 2000 and 2100"))
    return utc
