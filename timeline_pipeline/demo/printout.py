"""What `timeline-pipeline demo` prints for a person: the timeline, the summary and where to
open the same data, in the workspace's language and zone (docs/i18n.md). Pure.

The strings are the `demo` catalog's msgids (English is the source language). A workspace read
in English and UTC, as the English demo's is, keeps the demo's original form (the clock of the
stored UTC time and the stored category), so that it looks exactly as it did before workspaces
had a language; any other presentation shows the category's name in its language
(`i18n.labels`) and the local time with its offset label (`i18n.times`), with the date when the
incident spans more than one local day there.
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

__all__ = ["Line", "display_width", "human_lines", "is_original_form"]

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
) -> list[Line]:
    """The printout of `demo` without `--json` (the sign-in link follows it on its own line)."""
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
    lines += [Line(""), Line(t.gettext("Open the same data:"))]
    lines += _pointers(
        t.gettext, workspace_id, dagster_home=dagster_home, serving=serving, port=port
    )
    return lines


def _pointers(
    gettext: Callable[[str], str], workspace_id: str, *, dagster_home: str, serving: bool, port: int
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
