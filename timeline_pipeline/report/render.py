"""The report written out: Markdown for people (a Lark document, `report show`) and JSON for
machines (the API, `report show --format json`) (docs/report.md, "Formats").

No I/O of its own: a `ReportContent` in, text or a dict out. The Markdown keeps to what Lark's
Markdown converter turns into blocks (docs/report.md, "Write"): headings,
paragraphs, bullets, pipe tables and links, no HTML. Text from people and models goes through
the export's `escape_markdown`, after its line breaks are folded into spaces, so that a `|`
cannot break a table, a typed `[link](...)` or `<b>` shows as typed, and no `<br>` reaches the
converter.

It is written in the workspace's language (the `report` catalog; category names from
`i18n.labels`) with times in the workspace's zone, each dated and its offset named (docs/i18n.md),
so an incident across midnight reads in order. The JSON is language-neutral and in UTC, except
the section titles, which are there to be shown.
"""

from __future__ import annotations

import gettext
from datetime import UTC, datetime
from typing import Any

from timeline_pipeline.curation.export import escape_markdown
from timeline_pipeline.i18n.catalogs import Domain, translations
from timeline_pipeline.i18n.labels import category_label
from timeline_pipeline.i18n.locales import Presentation
from timeline_pipeline.i18n.times import local, zone_label
from timeline_pipeline.report.milestones import Milestone, MilestoneName
from timeline_pipeline.report.sections import ReportContent, ReportItem, SectionKey

__all__ = [
    "MILESTONE_LABELS",
    "SECTION_TITLES",
    "content_json",
    "human_duration",
    "render_markdown",
    "section_title",
]

MAX_LINKS_PER_ITEM = 20
"""As the export: an entry bound to a whole thread links its first messages and counts the rest."""


def N_(message: str) -> str:
    """Marks `message` for extraction; it is translated where it is shown."""
    return message


MILESTONE_LABELS: dict[MilestoneName, str] = {
    MilestoneName.STARTED: N_("Started"),
    MilestoneName.DETECTED: N_("Detected"),
    MilestoneName.MITIGATED: N_("Mitigated"),
    MilestoneName.RESOLVED: N_("Resolved"),
}
SECTION_TITLES: dict[SectionKey, str] = {
    SectionKey.IMPACT: N_("Impact"),
    SectionKey.ROOT_CAUSE: N_("Root cause"),
    SectionKey.DECISIONS: N_("Decisions"),
    SectionKey.MITIGATIONS: N_("Mitigations"),
    SectionKey.TIMELINE: N_("Timeline"),
    SectionKey.FOLLOW_UPS: N_("Follow-ups"),
    SectionKey.UNCONFIRMED: N_("Unconfirmed drafts"),
}
_WORKSPACE_STATUSES: dict[str, str] = {
    "firing": N_("Firing"),
    "recovered": N_("Recovered"),
    "archived": N_("Archived"),
}
_DURATIONS: tuple[tuple[str, str], ...] = (
    ("time_to_detect", N_("Time to detect")),
    ("time_to_mitigate", N_("Time to mitigate")),
    ("time_to_resolve", N_("Time to resolve")),
)
_NO_VALUE = "—"


def section_title(key: SectionKey | str, presentation: Presentation | None = None) -> str:
    """A section's title in the workspace's language (`Root cause`, `根因`)."""
    shown = presentation or Presentation.default()
    return translations(Domain.REPORT, shown.locale).gettext(SECTION_TITLES[SectionKey(key)])


def human_duration(seconds: int | None, presentation: Presentation | None = None) -> str:
    """`1 h 12 min`, `3 min 10 s`, `2 d 4 h` (`1 小时 12 分钟` in Chinese): minutes are what an
    incident is measured in, seconds matter only under an hour, and hours only under two days."""
    t = translations(Domain.REPORT, (presentation or Presentation.default()).locale)
    if seconds is None:
        return _NO_VALUE
    days, rest = divmod(max(0, seconds), 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days >= 2:
        if hours:
            return t.gettext("{days} d {hours} h").format(days=days, hours=hours)
        return t.gettext("{days} d").format(days=days)
    hours += days * 24
    if hours:
        if minutes:
            return t.gettext("{hours} h {minutes} min").format(hours=hours, minutes=minutes)
        return t.gettext("{hours} h").format(hours=hours)
    if minutes:
        if secs:
            return t.gettext("{minutes} min {seconds} s").format(minutes=minutes, seconds=secs)
        return t.gettext("{minutes} min").format(minutes=minutes)
    return t.gettext("{seconds} s").format(seconds=secs)


class _Writer:
    """The document's words and times in one workspace's presentation."""

    def __init__(self, presentation: Presentation) -> None:
        self.shown = presentation
        self.t: gettext.NullTranslations = translations(Domain.REPORT, presentation.locale)

    def gettext(self, message: str) -> str:
        return self.t.gettext(message)

    def date_time(self, moment: datetime) -> str:
        """`2026-12-05 04:05`: the local date and time (an ISO date, as the export writes it)."""
        return f"{local(moment, self.shown.time_zone):%Y-%m-%d %H:%M}"

    def zone(self, moment: datetime) -> str:
        return zone_label(moment, self.shown.time_zone)

    def moment(self, moment: datetime | None) -> str:
        """A time with its date and its zone: `2026-12-05 04:05 UTC+8`."""
        if moment is None:
            return _NO_VALUE
        return f"{self.date_time(moment)} {self.zone(moment)}"

    def cell(self, text: str) -> str:
        """Literal text on one line (a table cell or a bullet)."""
        return escape_markdown(" ".join(text.split()))

    def links(self, item: ReportItem) -> str:
        shown = [
            f"[{number}]({_safe_url(url)})"
            for number, url in enumerate(item.links[:MAX_LINKS_PER_ITEM], start=1)
            if _safe_url(url)
        ]
        more = len(item.links) - MAX_LINKS_PER_ITEM
        if more > 0:
            shown.append(self.gettext("+{count} more").format(count=more))
        return " ".join(shown) or _NO_VALUE

    def item_text(self, item: ReportItem) -> str:
        text = self.cell(item.text)
        if item.status == "draft":
            text += " " + _emphasis(self.gettext("(draft)"))
        return text


def render_markdown(content: ReportContent, presentation: Presentation | None = None) -> str:
    """The report as Markdown, read in `presentation` (English and UTC when not given)."""
    write = _Writer(presentation or Presentation.default())
    lines = [
        "# " + write.gettext("Incident report: {title}").format(title=write.cell(content.title))
    ]
    lines.append("")
    if content.drafts_pending:
        drafts = content.counts.drafts
        lines.append(
            _emphasis(
                write.t.ngettext(
                    "Built while {count} draft awaits review: it is marked below and listed "
                    "under Unconfirmed drafts, and the report may still change.",
                    "Built while {count} drafts await review: they are marked below and listed "
                    "under Unconfirmed drafts, and the report may still change.",
                    drafts,
                ).format(count=drafts)
            )
        )
        lines.append("")
    lines.extend(_overview(content, write))
    lines.extend(["", "## " + write.gettext("Milestones"), ""])
    lines.extend(_milestones(content, write))
    for key in (
        SectionKey.IMPACT,
        SectionKey.ROOT_CAUSE,
        SectionKey.DECISIONS,
        SectionKey.MITIGATIONS,
    ):
        lines.extend(["", "## " + write.gettext(SECTION_TITLES[key]), ""])
        items = content.section(key).items
        lines.extend(_bullet(item, write) for item in items)
        if not items:
            lines.append(_emphasis(write.gettext("Nothing recorded yet.")))
    lines.extend(["", "## " + write.gettext(SECTION_TITLES[SectionKey.TIMELINE]), ""])
    lines.extend(_timeline(content.section(SectionKey.TIMELINE).items, write))
    lines.extend(["", "## " + write.gettext(SECTION_TITLES[SectionKey.FOLLOW_UPS]), ""])
    follow_ups = content.section(SectionKey.FOLLOW_UPS).items
    lines.extend(_follow_up(item, write) for item in follow_ups)
    if not follow_ups:
        lines.append(_emphasis(write.gettext("Nothing recorded yet.")))
    drafts_section = content.section(SectionKey.UNCONFIRMED).items
    lines.extend(["", "## " + write.gettext(SECTION_TITLES[SectionKey.UNCONFIRMED]), ""])
    for item in drafts_section:
        category = write.cell(category_label(item.category, write.shown.locale))
        lines.append(f"- {write.moment(item.occurred_at)} · {category} · {write.cell(item.text)}")
    if not drafts_section:
        lines.append(_emphasis(write.gettext("None: every entry in this report is confirmed.")))
    return "\n".join(lines) + "\n"


def content_json(
    content: ReportContent, presentation: Presentation | None = None
) -> dict[str, Any]:
    """The report as JSON-able values: times in UTC ISO 8601, stored values (`root_cause`,
    `draft`) as they are; only the section titles follow `presentation` (English when not
    given), for a client that shows them."""
    return {
        "workspace_id": content.workspace_id,
        "title": content.title,
        "status": content.status,
        "window": {"start": _iso(content.window_start), "end": _iso(content.window_end)},
        "drafts_pending": content.drafts_pending,
        "milestones": {
            milestone.name.value: _milestone_json(milestone) for milestone in content.milestones
        },
        "durations": {
            "time_to_detect": content.durations.time_to_detect,
            "time_to_mitigate": content.durations.time_to_mitigate,
            "time_to_resolve": content.durations.time_to_resolve,
        },
        "sections": [
            {
                "key": section.key,
                "title": section_title(section.key, presentation),
                "items": [_item_json(item) for item in section.items],
            }
            for section in content.sections
        ],
        "counts": {
            "confirmed": content.counts.confirmed,
            "drafts": content.counts.drafts,
            "hidden": content.counts.hidden,
            "withheld": content.counts.withheld,
        },
        "cited_evidence_ids": list(content.cited_evidence_ids),
    }


def _overview(content: ReportContent, write: _Writer) -> list[str]:
    status = _WORKSPACE_STATUSES.get(content.status)
    shown_status = write.gettext(status) if status else write.cell(content.status)
    end = (
        write.moment(content.window_end)
        if content.window_end is not None
        else write.gettext("ongoing")
    )
    counts = content.counts
    lines = [
        "- " + write.gettext("**Status:** {status}").format(status=shown_status),
        "- "
        + write.gettext("**Window:** {start} to {end}").format(
            start=write.moment(content.window_start), end=end
        ),
        "- "
        + write.gettext(
            "**Entries:** confirmed {confirmed} · drafts {drafts} · hidden {hidden} · "
            "withheld {withheld}"
        ).format(
            confirmed=counts.confirmed,
            drafts=counts.drafts,
            hidden=counts.hidden,
            withheld=counts.withheld,
        ),
    ]
    if counts.withheld:
        lines.extend(
            [
                "",
                _emphasis(
                    write.t.ngettext(
                        "{count} entry is left out because a message it cites was recalled.",
                        "{count} entries are left out because a message they cite was recalled.",
                        counts.withheld,
                    ).format(count=counts.withheld)
                ),
            ]
        )
    return lines


def _milestones(content: ReportContent, write: _Writer) -> list[str]:
    timeline = {item.entry_id: item for item in content.section(SectionKey.TIMELINE).items}
    lines = [
        "| "
        + " | ".join(
            [write.gettext("Milestone"), write.gettext("Time"), write.gettext("Source")],
        )
        + " |",
        "|---|---|---|",
    ]
    for milestone in content.milestones:
        name = write.gettext(MILESTONE_LABELS[milestone.name])
        lines.append(
            f"| {name} | {write.moment(milestone.at)} | {_source(milestone, timeline, write)} |"
        )
    lines.append("")
    durations = content.durations
    for field, label in _DURATIONS:
        value = getattr(durations, field)
        lines.append(
            "- "
            + write.gettext("**{label}:** {duration}").format(
                label=write.gettext(label), duration=human_duration(value, write.shown)
            )
        )
    return lines


def _source(milestone: Milestone, timeline: dict[int, ReportItem], write: _Writer) -> str:
    """Where a milestone's time comes from: a person's override (with what the timeline said),
    an entry (linked to its first message), the chat's signals, or nothing yet."""
    if milestone.overridden_by is not None:
        actor = write.cell(milestone.overridden_by)
        if milestone.derived_at is None:
            return write.gettext("set by {actor}").format(actor=actor)
        return write.gettext("set by {actor} (timeline: {time})").format(
            actor=actor, time=write.moment(milestone.derived_at)
        )
    if milestone.at is None:
        return write.gettext("not yet")
    if milestone.entry_id is not None:
        label = write.gettext("entry #{id}").format(id=milestone.entry_id)
        item = timeline.get(milestone.entry_id)
        url = _safe_url(item.links[0]) if item is not None and item.links else ""
        return f"[{label}]({url})" if url else label
    return write.gettext("from the chat")


def _bullet(item: ReportItem, write: _Writer) -> str:
    return f"- {write.moment(item.occurred_at)} · {write.item_text(item)}"


def _follow_up(item: ReportItem, write: _Writer) -> str:
    line = f"- {write.item_text(item)}"
    if item.owners:
        owners = write.gettext(", ").join(write.cell(owner) for owner in item.owners)
        line += " — " + write.gettext("**Owners:** {owners}").format(owners=owners)
    return line


def _timeline(items: tuple[ReportItem, ...], write: _Writer) -> list[str]:
    if not items:
        return [_emphasis(write.gettext("Nothing recorded yet."))]
    zones = {write.zone(item.occurred_at) for item in items}
    zone_in_cells = len(zones) > 1
    header = (
        write.gettext("Time")
        if zone_in_cells
        else write.gettext("Time ({zone})").format(zone=next(iter(zones)))
    )
    columns = [header, write.gettext("Category"), write.gettext("Entry"), write.gettext("Messages")]
    lines = ["| " + " | ".join(columns) + " |", "|---|---|---|---|"]
    for item in items:
        at = write.moment(item.occurred_at) if zone_in_cells else write.date_time(item.occurred_at)
        category = write.cell(category_label(item.category, write.shown.locale))
        lines.append(f"| {at} | {category} | {write.item_text(item)} | {write.links(item)} |")
    return lines


def _milestone_json(milestone: Milestone) -> dict[str, Any]:
    return {
        "at": _iso(milestone.at),
        "entry_id": milestone.entry_id,
        "derived_at": _iso(milestone.derived_at),
        "derived_entry_id": milestone.derived_entry_id,
        "overridden_by": milestone.overridden_by,
        "overridden_at": _iso(milestone.overridden_at),
    }


def _item_json(item: ReportItem) -> dict[str, Any]:
    return {
        "entry_id": item.entry_id,
        "occurred_at": _iso(item.occurred_at),
        "category": item.category,
        "status": item.status,
        "text": item.text,
        "links": list(item.links),
        "owners": list(item.owners),
    }


def _safe_url(url: str) -> str:
    """A link target Markdown cannot misread: http(s) only (a `javascript:` target is dropped),
    with the characters that would end the target percent-encoded."""
    if not url.startswith(("https://", "http://")):
        return ""
    return url.replace(" ", "%20").replace("(", "%28").replace(")", "%29").replace("|", "%7C")


def _iso(moment: datetime | None) -> str | None:
    if moment is None:
        return None
    aware = moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
    return aware.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _emphasis(text: str) -> str:
    return f"_{text}_"
