"""The timeline as a Markdown postmortem document. No I/O of its own: a view in, text out.

Entries are in time order with their category, status and a link to every supporting Lark
message, so a reader of the postmortem can go from a line to the chat in one click. Text comes
from people and models: it is escaped so that a `|` cannot break the table and a `<script>` or
a `[link](...)` in a chat message renders as the characters that were typed.

It is written in the workspace's language (the `export` catalog, category and status names from
`i18n.labels`) with its times in the workspace's zone, the zone named (docs/i18n.md). Every time
carries its date (an ISO date, as a postmortem's table is read and sorted), so an incident that
crosses midnight reads in order in every zone.
"""

from __future__ import annotations

import re
from datetime import datetime

from timeline_pipeline.curation.timeline import EntryView, TimelineView
from timeline_pipeline.domain.entries import EntrySource, SummarySource
from timeline_pipeline.i18n.catalogs import Domain, translations
from timeline_pipeline.i18n.labels import category_label, status_label
from timeline_pipeline.i18n.locales import Locale, Presentation
from timeline_pipeline.i18n.times import local, zone_label

__all__ = ["escape_markdown", "render_markdown"]

_SPECIAL = re.compile(r"([\\`*_\[\]|~>])")
"""Characters with inline meaning in (GitHub) Markdown tables; `<` and `&` become entities."""
MAX_LINKS_PER_ENTRY = 20


def escape_markdown(text: str) -> str:
    """Literal text inside a Markdown table cell: specials escaped, HTML neutralized, one line."""
    escaped = _SPECIAL.sub(r"\\\1", text)
    escaped = escaped.replace("&", "&amp;").replace("<", "&lt;")
    return "<br>".join(part.strip() for part in escaped.splitlines() if part.strip())


class _Writer:
    """The document's words and times in one workspace's presentation."""

    def __init__(self, presentation: Presentation) -> None:
        self.shown = presentation
        self.t = translations(Domain.EXPORT, presentation.locale)

    def date_time(self, moment: datetime) -> str:
        """`2026-12-05 04:05`: the local date and time, its zone named elsewhere."""
        return f"{local(moment, self.shown.time_zone):%Y-%m-%d %H:%M}"

    def zone(self, moment: datetime) -> str:
        return zone_label(moment, self.shown.time_zone)

    def status(self, status: str) -> str:
        """A status as a mark in a list: English writes it in lower case (`confirmed, edited`),
        a script without case as `i18n.labels` names it."""
        name = status_label(status, self.shown.locale)
        return name.lower() if self.shown.locale is Locale.EN else name

    def time_header(self, entries: list[EntryView]) -> tuple[str, bool]:
        """The time column's header, and whether each cell names its own zone: the zone goes
        in the header when every entry has the same offset, in each cell when a daylight
        saving change falls inside the incident."""
        zones = {self.zone(entry.occurred_at) for entry in entries}
        if len(zones) == 1:
            return self.t.gettext("Time ({zone})").format(zone=zones.pop()), False
        return self.t.gettext("Time"), True


def _evidence_cell(entry: EntryView, write: _Writer) -> str:
    links = [
        f"[#{link.evidence_id}]({link.url})" if link.url else f"#{link.evidence_id}"
        for link in entry.evidence[:MAX_LINKS_PER_ENTRY]
    ]
    more = len(entry.evidence) - MAX_LINKS_PER_ENTRY
    if more > 0:
        links.append(write.t.gettext("+{count} more").format(count=more))
    return " ".join(links) or "-"


def _entry_cell(entry: EntryView) -> str:
    cell = f"**{escape_markdown(entry.title)}**"
    if entry.detail:
        cell += f"<br>{escape_markdown(entry.detail)}"
    return cell


def _status_cell(entry: EntryView, write: _Writer) -> str:
    status = write.status(entry.status)
    if entry.source == EntrySource.HUMAN:
        return write.t.gettext("{status}, added by curator").format(status=status)
    if entry.human_edited:
        return write.t.gettext("{status}, edited").format(status=status)
    return status


def render_markdown(
    view: TimelineView,
    *,
    generated_at: datetime,
    presentation: Presentation | None = None,
) -> str:
    """The document, read in `presentation` (the workspace's language and zone; English and
    UTC when not given)."""
    write = _Writer(presentation or Presentation.default())
    t = write.t
    heading = view.title or view.workspace_id
    statuses = t.gettext(", ").join(write.status(status) for status in view.statuses)
    lines = [
        "# " + t.gettext("Incident timeline: {title}").format(title=escape_markdown(heading)),
        "",
        t.gettext(
            "Workspace `{workspace}` · {count} entries ({statuses}) · exported {when} {zone} "
            "by timeline-pipeline."
        ).format(
            workspace=view.workspace_id,
            count=len(view.entries),
            statuses=statuses,
            when=write.date_time(generated_at),
            zone=write.zone(generated_at),
        ),
        "",
        "## " + t.gettext("Summary"),
        "",
    ]
    if view.summary is None:
        lines.append(_emphasis(t.gettext("No summary yet.")))
    else:
        origin = (
            t.gettext("Summary written by a curator, revision {revision}.")
            if view.summary.source == SummarySource.HUMAN
            else t.gettext("Summary generated, revision {revision}.")
        )
        lines.extend(escape_markdown(line) for line in view.summary.content.splitlines() if line)
        lines.append("")
        lines.append(_emphasis(origin.format(revision=view.summary.revision)))
    lines.extend(["", "## " + t.gettext("Timeline"), ""])
    if not view.entries:
        lines.append(_emphasis(t.gettext("No entries.")))
    else:
        time_header, zone_in_cells = write.time_header(view.entries)
        columns = [
            time_header,
            t.gettext("Category"),
            t.gettext("Entry"),
            t.gettext("Status"),
            t.gettext("Evidence"),
        ]
        lines.append("| " + " | ".join(columns) + " |")
        lines.append("|---|---|---|---|---|")
        for entry in view.entries:
            at = write.date_time(entry.occurred_at)
            if zone_in_cells:
                at += " " + write.zone(entry.occurred_at)
            category = escape_markdown(category_label(entry.category, write.shown.locale))
            lines.append(
                f"| {at} | {category} | {_entry_cell(entry)} | "
                f"{_status_cell(entry, write)} | {_evidence_cell(entry, write)} |"
            )
    if view.next_after is not None:
        lines.extend(["", _emphasis(t.gettext("The timeline is longer than this export shows."))])
    return "\n".join(lines) + "\n"


def _emphasis(text: str) -> str:
    return f"_{text}_"
