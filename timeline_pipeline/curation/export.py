"""The timeline as a Markdown postmortem document. Pure: a view in, text out.

Entries are in time order with their category, status and a link to every supporting Lark
message, so a reader of the postmortem can go from a line to the chat in one click. Text comes
from people and models: it is escaped so that a `|` cannot break the table and a `<script>` or
a `[link](...)` in a chat message renders as the characters that were typed.
"""

from __future__ import annotations

import re
from datetime import datetime

from timeline_pipeline.curation.timeline import EntryView, TimelineView
from timeline_pipeline.domain.entries import EntrySource, SummarySource

__all__ = ["escape_markdown", "render_markdown"]

CATEGORY_LABELS = {
    "impact": "Impact",
    "finding": "Finding",
    "decision": "Decision",
    "mitigation": "Mitigation",
    "root_cause": "Root cause",
    "recovery": "Recovery",
    "next_step": "Next step",
}
_SPECIAL = re.compile(r"([\\`*_\[\]|~>])")
"""Characters with inline meaning in (GitHub) Markdown tables; `<` and `&` become entities."""
MAX_LINKS_PER_ENTRY = 20


def escape_markdown(text: str) -> str:
    """Literal text inside a Markdown table cell: specials escaped, HTML neutralized, one line."""
    escaped = _SPECIAL.sub(r"\\\1", text)
    escaped = escaped.replace("&", "&amp;").replace("<", "&lt;")
    return "<br>".join(part.strip() for part in escaped.splitlines() if part.strip())


def _time(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%d %H:%M")


def _evidence_cell(entry: EntryView) -> str:
    links = [
        f"[#{link.evidence_id}]({link.url})" if link.url else f"#{link.evidence_id}"
        for link in entry.evidence[:MAX_LINKS_PER_ENTRY]
    ]
    more = len(entry.evidence) - MAX_LINKS_PER_ENTRY
    if more > 0:
        links.append(f"+{more} more")
    return " ".join(links) or "-"


def _entry_cell(entry: EntryView) -> str:
    cell = f"**{escape_markdown(entry.title)}**"
    if entry.detail:
        cell += f"<br>{escape_markdown(entry.detail)}"
    return cell


def _status_cell(entry: EntryView) -> str:
    marks = [entry.status]
    if entry.source == EntrySource.HUMAN:
        marks.append("added by curator")
    elif entry.human_edited:
        marks.append("edited")
    return ", ".join(marks)


def render_markdown(view: TimelineView, *, generated_at: datetime) -> str:
    heading = view.title or view.workspace_id
    lines = [
        f"# Incident timeline: {escape_markdown(heading)}",
        "",
        f"Workspace `{view.workspace_id}` · {len(view.entries)} entries "
        f"({', '.join(view.statuses)}) · exported {generated_at.strftime('%Y-%m-%d %H:%M UTC')}"
        " by timeline-pipeline.",
        "",
        "## Summary",
        "",
    ]
    if view.summary is None:
        lines.append("_No summary yet._")
    else:
        origin = (
            "written by a curator" if view.summary.source == SummarySource.HUMAN else "generated"
        )
        lines.extend(escape_markdown(line) for line in view.summary.content.splitlines() if line)
        lines.append("")
        lines.append(f"_Summary {origin}, revision {view.summary.revision}._")
    lines.extend(["", "## Timeline", ""])
    if not view.entries:
        lines.append("_No entries._")
    else:
        lines.append("| Time (UTC) | Category | Entry | Status | Evidence |")
        lines.append("|---|---|---|---|---|")
        for entry in view.entries:
            category = CATEGORY_LABELS.get(entry.category, escape_markdown(entry.category))
            lines.append(
                f"| {_time(entry.occurred_at)} | {category} | {_entry_cell(entry)} | "
                f"{_status_cell(entry)} | {_evidence_cell(entry)} |"
            )
    if view.next_after is not None:
        lines.extend(["", "_The timeline is longer than this export shows._"])
    return "\n".join(lines) + "\n"
