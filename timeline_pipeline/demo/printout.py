"""What `timeline-pipeline demo` prints for a person: the timeline, the summary, the incident
report in short (docs/report.md) and where to open the same data, in the workspace's language and
zone (docs/i18n.md). No I/O of its own.

The strings are the `demo` catalog's msgids (English is the source language). A workspace read
in English and UTC, as the English demo's is, keeps the demo's original form (the clock of the
stored UTC time and the stored category), so that it looks exactly as it did before workspaces
had a language; any other presentation shows the category's name in its language
(`i18n.labels`) and the local time with its offset label (`i18n.times`), with the date when the
incident spans more than one local day there. The report's milestone and section names are the
report's own (`report/render.py`, catalog `report`), so the printout and the document agree.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from timeline_pipeline.i18n.catalogs import Domain, translations
from timeline_pipeline.i18n.labels import category_label
from timeline_pipeline.i18n.locales import Locale, Presentation
from timeline_pipeline.i18n.times import show_time, spans_days
from timeline_pipeline.report.milestones import MilestoneName
from timeline_pipeline.report.render import MILESTONE_LABELS, human_duration, section_title
from timeline_pipeline.report.sections import SECTION_KEYS

__all__ = ["Line", "display_width", "human_lines", "is_original_form", "report_lines"]

CATEGORY_WIDTH = 11
"""Display columns of the category; the longest name (`Mitigation`, `缓解措施`) fits."""


@dataclass(frozen=True)
class Line:
    text: str
    bold: bool = False


def display_width(text: str) -> int:
    """Terminal columns: a wide (Han, full-width) character takes two."""
    return sum(2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1 for ch in text)


def _pad(text: str, width: int) -> str:
    return text + " " * max(0, width - display_width(text))


def is_original_form(presentation: Presentation) -> bool:
    """English in UTC: the demo's printout as it was before workspaces had a language."""
    return presentation.locale is Locale.EN and presentation.time_zone.key == "UTC"


def _entry_columns(
    entries: Sequence[Mapping[str, Any]], presentation: Presentation
) -> list[tuple[str, str]]:
    """(when, category) per entry."""
    if is_original_form(presentation):
        return [(str(e["occurred_at"])[11:16], str(e["category"])) for e in entries]
    moments = [datetime.fromisoformat(str(e["occurred_at"])) for e in entries]
    zone, locale = presentation.time_zone, presentation.locale
    dated = spans_days(moments, zone)
    return [
        (
            show_time(moment, zone, locale, with_date=dated),
            category_label(str(e["category"]), locale),
        )
        for moment, e in zip(moments, entries, strict=True)
    ]


def human_lines(
    view: Mapping[str, Any],
    workspace_id: str,
    presentation: Presentation,
    *,
    dagster_home: str,
    serving: bool,
    port: int,
    report: Mapping[str, Any] | None = None,
) -> list[Line]:
    """The printout of `demo` without `--json` (the sign-in link follows it on its own line);
    with `report` (`demo.view.demo_report`, and the chat's `reply`), the report after the
    summary."""
    t = translations(Domain.DEMO, presentation.locale)
    entries: Sequence[Mapping[str, Any]] = view["entries"]
    columns = _entry_columns(entries, presentation)
    when_width = max([5, *(display_width(when) for when, _ in columns)])
    lines = [
        Line(""),
        Line(t.gettext("Timeline of workspace {workspace}").format(workspace=workspace_id), True),
    ]
    for entry, (when, category) in zip(entries, columns, strict=True):
        lines.append(
            Line(f"  {_pad(when, when_width)}  {_pad(category, CATEGORY_WIDTH)} {entry['title']}")
        )
        links = [item["link"] for item in entry["evidence"] if item.get("link")]
        if links:
            more = (
                "  " + t.gettext("(+{count} more)").format(count=len(links) - 1)
                if len(links) > 1
                else ""
            )
            lines.append(Line(f"  {'':<{when_width}}  {'':<{CATEGORY_WIDTH}} {links[0]}{more}"))
    lines += [Line(""), Line(t.gettext("Summary"), True)]
    summary = view["summary"] or t.gettext("(no summary yet)")
    lines += [Line(f"  {line}") for line in summary.splitlines()]
    if report is not None:
        lines += report_lines(report, presentation)
    lines += [Line(""), Line(t.gettext("Open the same data:"))]
    lines += _pointers(
        t.gettext,
        workspace_id,
        dagster_home=dagster_home,
        serving=serving,
        port=port,
        report=report is not None,
    )
    return lines


def _moment(value: Any) -> datetime | None:
    return datetime.fromisoformat(value.replace("Z", "+00:00")) if isinstance(value, str) else None


def report_lines(report: Mapping[str, Any], presentation: Presentation) -> list[Line]:
    """The report in short: its milestones with their times and sources, the durations, the
    entry counts, each section's size, the follow-ups' owners, the Lark document's link and the
    reply the chat got. The whole document is `report show W` and the link."""
    t = translations(Domain.DEMO, presentation.locale)
    zone, locale = presentation.time_zone, presentation.locale
    milestones: Mapping[str, Any] = report.get("milestones") or {}
    names = [
        (name, translations(Domain.REPORT, locale).gettext(MILESTONE_LABELS[name]))
        for name in MilestoneName
    ]
    moments = {
        name: _moment((milestones.get(name.value) or {}).get("at")) for name in MilestoneName
    }
    dated = spans_days([m for m in moments.values() if m is not None], zone)
    width = max(display_width(label) for _, label in names)
    lines = [
        Line(""),
        Line(
            t.gettext("Incident report, revision {revision}").format(revision=report["revision"]),
            True,
        ),
    ]
    for name, label in names:
        milestone: Mapping[str, Any] = milestones.get(name.value) or {}
        moment = moments[name]
        if moment is None:
            not_yet = t.gettext("not yet")
            lines.append(Line(f"  {_pad(label, width)}  {not_yet}"))
            continue
        if milestone.get("overridden_by"):
            source = t.gettext("set by {actor}").format(actor=milestone["overridden_by"])
        elif milestone.get("entry_id") is not None:
            source = t.gettext("entry #{id}").format(id=milestone["entry_id"])
        else:
            source = t.gettext("from the chat")
        when = show_time(moment, zone, locale, with_date=dated)
        lines.append(Line(f"  {_pad(label, width)}  {when}  {source}"))
    durations: Mapping[str, Any] = report.get("durations") or {}
    lines.append(
        Line(
            "  "
            + t.gettext(
                "Time to detect {detect} · to mitigate {mitigate} · to resolve {resolve}"
            ).format(
                detect=human_duration(durations.get("time_to_detect"), presentation),
                mitigate=human_duration(durations.get("time_to_mitigate"), presentation),
                resolve=human_duration(durations.get("time_to_resolve"), presentation),
            )
        )
    )
    counts: Mapping[str, Any] = report.get("counts") or {}
    lines.append(
        Line(
            "  "
            + t.gettext(
                "Entries: {confirmed} confirmed · {drafts} drafts · {hidden} hidden · "
                "{withheld} withheld for a recalled message"
            ).format(
                confirmed=counts.get("confirmed", 0),
                drafts=counts.get("drafts", 0),
                hidden=counts.get("hidden", 0),
                withheld=counts.get("withheld", 0),
            )
        )
    )
    sizes: Mapping[str, Any] = report.get("sections") or {}
    shown = " · ".join(
        f"{section_title(key, presentation)} {sizes.get(key.value, 0)}" for key in SECTION_KEYS
    )
    lines.append(Line("  " + t.gettext("Sections: {sections}").format(sections=shown)))
    owners = [str(owner) for owner in report.get("owners") or []]
    if owners:
        lines.append(
            Line(
                "  "
                + t.gettext("Follow-up owners: {owners}").format(
                    owners=t.gettext(", ").join(owners)
                )
            )
        )
    labels = {"document": t.gettext("Lark document:"), "reply": t.gettext("Chat reply:")}
    label_width = max(display_width(label) for label in labels.values()) + 1
    document = report.get("document_url") or t.gettext("(not written)")
    lines.append(Line(f"  {_pad(labels['document'], label_width)}{document}"))
    reply = report.get("reply")
    if reply:
        lines.append(Line(f"  {_pad(labels['reply'], label_width)}{reply}"))
    return lines


def _pointers(
    gettext: Callable[[str], str],
    workspace_id: str,
    *,
    dagster_home: str,
    serving: bool,
    port: int,
    report: bool = False,
) -> list[Line]:
    """Where the same data opens: labels padded to one column, commands as they are typed."""
    labels = {
        "dagster": gettext("Dagster UI:"),
        "api": gettext("API:"),
        "cli": gettext("CLI:"),
        "page": gettext("Page:"),
    }
    width = max(display_width(label) for label in labels.values()) + 1
    indent = " " * (2 + width)

    def row(key: str, text: str) -> Line:
        return Line(f"  {_pad(labels[key], width)}{text}")

    lines = [
        row("dagster", f"DAGSTER_HOME={dagster_home} .venv/bin/dagster dev -w workspace.yaml"),
        row("api", f"timeline-pipeline token create --workspace {workspace_id}"),
        Line(f"{indent}timeline-pipeline serve --port 8080  # " + gettext("then, with the token:")),
        Line(
            f"{indent}curl -H 'Authorization: Bearer <token>' "
            f"http://127.0.0.1:8080/api/workspaces/{workspace_id}/timeline"
        ),
        row("cli", f"timeline-pipeline timeline show {workspace_id}"),
    ]
    if report:
        lines.append(
            Line(
                f"{indent}timeline-pipeline report show {workspace_id}  # "
                + gettext("the whole report, in Markdown")
            )
        )
    if serving:
        lines.append(row("page", gettext("open this one-time sign-in link (valid 10 minutes):")))
    else:
        lines.append(
            row(
                "page",
                f"timeline-pipeline serve --port {port}  # "
                + gettext("or `demo --serve`; then open this one-time link (valid 10 minutes):"),
            )
        )
    return lines
