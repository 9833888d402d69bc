"""What the timeline page's report view shows (docs/report.md), computed from a kept revision and
the milestones as they stand now. No I/O of its own: values in, plain values for `report.html` out.

A revision's content is the stored JSON of `report.render.content_json` (times in UTC); it is
shown in the workspace's language and zone, as the report's Markdown is: the milestone names,
section titles and durations are the `report` catalog's (through `report.render`), so the page
and the Lark document call them the same; the page's own words are msgids of its `page` catalog.

The milestones are shown as they stand now, since their forms change them: when a curator set
or cleared a time after the revision was built, the view says that the next build shows it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, Final

from timeline_pipeline.i18n.catalogs import Domain, translations
from timeline_pipeline.i18n.labels import category_label, status_label
from timeline_pipeline.i18n.locales import Presentation
from timeline_pipeline.i18n.times import show_time, spans_days
from timeline_pipeline.report.milestones import Milestone, Milestones, durations_of
from timeline_pipeline.report.render import MILESTONE_LABELS, human_duration, section_title
from timeline_pipeline.report.sections import SectionKey
from timeline_pipeline.report.views import ReportRead
from timeline_pipeline.ui.language import N_, page_text
from timeline_pipeline.ui.view import input_value, workspace_status_label, zone_offset_minutes

__all__ = [
    "ItemRow",
    "MilestoneRow",
    "ReportPage",
    "SectionBlock",
    "milestone_rows",
    "milestones_changed",
    "report_page",
    "safe_link",
    "timeline_links",
]

_NO_VALUE: Final = "—"
_NARRATIVE: Final = (
    SectionKey.IMPACT,
    SectionKey.ROOT_CAUSE,
    SectionKey.DECISIONS,
    SectionKey.MITIGATIONS,
)
_DURATIONS: Final = (
    ("time_to_detect", N_("Time to detect")),
    ("time_to_mitigate", N_("Time to mitigate")),
    ("time_to_resolve", N_("Time to resolve")),
)


def safe_link(url: object) -> str | None:
    """A link the page may show: http(s) only, so a stored `javascript:` target never becomes
    one (autoescaping keeps an attribute from breaking, not a scheme from running)."""
    if isinstance(url, str) and url.startswith(("https://", "http://")):
        return url
    return None


def _moment(value: object) -> datetime | None:
    """A stored UTC time (`2026-12-04T15:40:05Z`) as an aware datetime; None for anything else."""
    if isinstance(value, datetime):
        return value if value.tzinfo is not None else value.replace(tzinfo=UTC)
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


@dataclass(frozen=True, slots=True)
class MilestoneRow:
    name: str
    """`started`, `detected`, `mitigated`, `resolved`: the form's path and `data-milestone`."""
    label: str
    at_iso: str | None
    at_shown: str
    """With its date and zone (`2026年12月4日 23:40 UTC+8`), or `—` while unknown."""
    at_offset: int
    at_input: str
    """The `datetime-local` value in the workspace's zone; empty while unknown."""
    source: str
    source_link: str | None
    """The Lark message of the entry the time comes from."""
    overridden: bool
    overridden_by: str | None
    duration_label: str | None
    """The duration this milestone ends (`Time to detect`); None for `started`."""
    duration: str | None


@dataclass(frozen=True, slots=True)
class ItemRow:
    entry_id: int
    occurred_iso: str | None
    occurred_shown: str
    occurred_offset: int
    category: str
    category_label: str
    draft: bool
    status_label: str
    text: str
    links: tuple[str, ...]
    owners: str | None
    """The owners a follow-up names, joined in the workspace's language; None without any."""


@dataclass(frozen=True, slots=True)
class SectionBlock:
    key: str
    title: str
    items: tuple[ItemRow, ...]


@dataclass(frozen=True, slots=True)
class ReportPage:
    revision: int
    built_shown: str
    built_by: str
    withdrawn: bool
    document_url: str | None
    # The report's own content: none on a withdrawn revision.
    title: str | None = None
    status: str | None = None
    status_label: str | None = None
    window: str | None = None
    counts: str | None = None
    drafts_banner: str | None = None
    withheld_note: str | None = None
    milestones_changed: bool = False
    """A curator set or cleared a time since this revision was built."""
    narrative: tuple[SectionBlock, ...] = ()
    timeline: SectionBlock | None = None
    follow_ups: SectionBlock | None = None
    unconfirmed: SectionBlock | None = None


def milestone_rows(
    milestones: Milestones,
    presentation: Presentation,
    links: Mapping[int, str] | None = None,
) -> tuple[MilestoneRow, ...]:
    """The four milestones as they stand now, each with the duration it ends. `links` gives the
    Lark message of an entry a milestone comes from (the report's timeline, when there is one)."""
    t = page_text(presentation.locale)
    report_words = translations(Domain.REPORT, presentation.locale)
    durations = durations_of(milestones)
    ends = dict(zip(("detected", "mitigated", "resolved"), _DURATIONS, strict=True))
    rows = []
    for milestone in milestones:
        name = milestone.name.value
        ended = ends.get(name)
        seconds = getattr(durations, ended[0]) if ended else None
        rows.append(
            MilestoneRow(
                name=name,
                label=report_words.gettext(MILESTONE_LABELS[milestone.name]),
                at_iso=_iso(milestone.at) if milestone.at is not None else None,
                at_shown=_shown(milestone.at, presentation, dated=True),
                at_offset=zone_offset_minutes(milestone.at, presentation.time_zone)
                if milestone.at is not None
                else 0,
                at_input=input_value(milestone.at, presentation.time_zone)
                if milestone.at is not None
                else "",
                source=_source(milestone, presentation),
                source_link=(links or {}).get(milestone.entry_id)
                if milestone.entry_id is not None
                else None,
                overridden=milestone.overridden,
                overridden_by=milestone.overridden_by,
                duration_label=t.gettext(ended[1]) if ended else None,
                duration=human_duration(seconds, presentation) if ended else None,
            )
        )
    return tuple(rows)


def _shown(moment: datetime | None, presentation: Presentation, *, dated: bool) -> str:
    if moment is None:
        return _NO_VALUE
    return show_time(moment, presentation.time_zone, presentation.locale, with_date=dated)


def _source(milestone: Milestone, presentation: Presentation) -> str:
    """Where a milestone's time comes from, as the report's Markdown says it: a person (with
    what the timeline says), an entry, the chat, or nothing yet."""
    t = page_text(presentation.locale)
    if milestone.overridden_by is not None:
        if milestone.derived_at is None:
            return t.gettext("set by {actor}").format(actor=milestone.overridden_by)
        return t.gettext("set by {actor} (timeline: {time})").format(
            actor=milestone.overridden_by,
            time=_shown(milestone.derived_at, presentation, dated=True),
        )
    if milestone.at is None:
        return t.gettext("not yet")
    if milestone.entry_id is not None:
        return t.gettext("entry #{id}").format(id=milestone.entry_id)
    return t.gettext("from the chat")


def milestones_changed(stored: object, milestones: Milestones) -> bool:
    """Whether the milestones differ from those a revision was built with (a time set or
    cleared since, or the timeline moved one)."""
    if not isinstance(stored, Mapping):
        return False
    for milestone in milestones:
        kept = stored.get(milestone.name.value)
        if not isinstance(kept, Mapping):
            return True
        if _moment(kept.get("at")) != milestone.at:
            return True
        if kept.get("overridden_by") != milestone.overridden_by:
            return True
    return False


def _items(
    raw: object, presentation: Presentation, *, dated: bool, joiner: str
) -> tuple[ItemRow, ...]:
    if not isinstance(raw, Sequence):
        return ()
    locale = presentation.locale
    rows = []
    for item in raw:
        if not isinstance(item, Mapping):
            continue
        moment = _moment(item.get("occurred_at"))
        category = str(item.get("category") or "")
        status = str(item.get("status") or "")
        owners = [str(o) for o in item.get("owners") or () if o]
        rows.append(
            ItemRow(
                entry_id=int(item.get("entry_id") or 0),
                occurred_iso=_iso(moment) if moment is not None else None,
                occurred_shown=_shown(moment, presentation, dated=dated),
                occurred_offset=zone_offset_minutes(moment, presentation.time_zone)
                if moment is not None
                else 0,
                category=category,
                category_label=category_label(category, locale),
                draft=status == "draft",
                status_label=status_label(status, locale),
                text=str(item.get("text") or ""),
                links=tuple(
                    link for link in (safe_link(u) for u in item.get("links") or ()) if link
                ),
                owners=joiner.join(owners) if owners else None,
            )
        )
    return tuple(rows)


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _sections(content: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    found: dict[str, Mapping[str, Any]] = {}
    for section in content.get("sections") or ():
        if isinstance(section, Mapping) and isinstance(section.get("key"), str):
            found[section["key"]] = section
    return found


def timeline_links(read: ReportRead) -> dict[int, str]:
    """The first Lark message of each entry of a revision's timeline, by entry id."""
    if read.report.withdrawn:
        return {}
    section = _sections(read.report.content).get(SectionKey.TIMELINE.value, {})
    links: dict[int, str] = {}
    for item in section.get("items") or ():
        if not isinstance(item, Mapping):
            continue
        first = next((safe_link(u) for u in item.get("links") or () if safe_link(u)), None)
        if first is not None and isinstance(item.get("entry_id"), int):
            links[item["entry_id"]] = first
    return links


def report_page(read: ReportRead, milestones: Milestones, presentation: Presentation) -> ReportPage:
    """The report view of a kept revision; a withdrawn one keeps only its own fields."""
    t = page_text(presentation.locale)
    report = read.report
    kept = ReportPage(
        revision=report.revision,
        built_shown=_shown(report.created_at, presentation, dated=True),
        built_by=report.built_by,
        withdrawn=report.withdrawn,
        document_url=safe_link(read.document_url),
    )
    if report.withdrawn:
        return kept
    content = report.content
    sections = _sections(content)
    joiner = t.gettext(", ")

    def block(key: SectionKey, *, dated: bool) -> SectionBlock:
        section = sections.get(key.value, {})
        items = _items(section.get("items"), presentation, dated=dated, joiner=joiner)
        return SectionBlock(key.value, section_title(key, presentation), items)

    every_time = [
        moment
        for section in sections.values()
        for item in section.get("items") or ()
        if isinstance(item, Mapping) and (moment := _moment(item.get("occurred_at")))
    ]
    dated = spans_days(every_time, presentation.time_zone)
    window = _mapping(content.get("window"))
    start, end = _moment(window.get("start")), _moment(window.get("end"))
    counts = _mapping(content.get("counts"))
    drafts, withheld = int(counts.get("drafts") or 0), int(counts.get("withheld") or 0)
    status = str(content.get("status") or "")
    return replace(
        kept,
        title=str(content.get("title") or report.workspace_id),
        status=status,
        status_label=workspace_status_label(status, presentation.locale),
        window=t.gettext("Window: {start} to {end}").format(
            start=_shown(start, presentation, dated=True),
            end=_shown(end, presentation, dated=True) if end else t.gettext("ongoing"),
        ),
        counts=t.gettext(
            "Entries: confirmed {confirmed} · drafts {drafts} · hidden {hidden} · "
            "withheld {withheld}"
        ).format(
            confirmed=int(counts.get("confirmed") or 0),
            drafts=drafts,
            hidden=int(counts.get("hidden") or 0),
            withheld=withheld,
        ),
        drafts_banner=t.ngettext(
            "Built while {count} draft awaited review: it is marked below, and the report may "
            "still change.",
            "Built while {count} drafts awaited review: they are marked below, and the report "
            "may still change.",
            drafts,
        ).format(count=drafts)
        if content.get("drafts_pending")
        else None,
        withheld_note=t.ngettext(
            "{count} entry is left out because a message it cites was recalled.",
            "{count} entries are left out because a message they cite was recalled.",
            withheld,
        ).format(count=withheld)
        if withheld
        else None,
        milestones_changed=milestones_changed(content.get("milestones"), milestones),
        narrative=tuple(block(key, dated=True) for key in _NARRATIVE),
        timeline=block(SectionKey.TIMELINE, dated=dated),
        follow_ups=block(SectionKey.FOLLOW_UPS, dated=True),
        unconfirmed=block(SectionKey.UNCONFIRMED, dated=True),
    )
