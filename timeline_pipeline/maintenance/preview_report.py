"""The report of a rerun preview, as JSON and as Markdown (docs/maintenance.md, "Preview a
rerun"). No I/O: built from the preview's scratch rows, rendered from the JSON.

The report kept in the job's result (`build_report`) holds ids, categories, times and counts,
never text: a title is taken from a message, and the job row lives a year in a table a recall
does not reach. Each item names its scratch row (`row`); the report a curator reads gets its
titles from those rows at read time (`with_titles`), so a recall or the purge of the rows
takes them out of every later reading. `without_text` is the same report for places that must
never carry text (Dagster's run metadata, a stored report written before this rule).

Per window: the drafts the rerun would `added`, the entries it would `changed` (old and new
title and category), the ones it would re-find `unchanged` (new supporting evidence counted),
the machine drafts the new version no longer proposes (`dropped`: the rerun leaves them on the
timeline), and the entries `left_alone` because a person confirmed, edited, hid or wrote them.
Totals add the synthesizer's calls, the estimated and reported tokens and, for a model at
configured prices, what the calls cost (an apply makes the same calls again).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from timeline_pipeline.store.rerun_previews import PRIOR, PROPOSAL, PreviewRow

__all__ = ["RowText", "build_report", "markdown", "row_ids", "with_titles", "without_text"]

ITEM_KINDS = ("added", "changed", "unchanged", "dropped", "left_alone")
TEXT_KEYS: Final = ("title", "old_title")
"""The keys of an item that carry text: only ever filled at read time."""


@dataclass(frozen=True, slots=True)
class RowText:
    """The text of one scratch row as it is now (`store.rerun_previews.texts`)."""

    kind: str
    title: str
    old_title: str | None


def _window_key(row: PreviewRow) -> tuple[str, datetime]:
    return (row.chat_id, row.window_start)


def _apply_order(key: tuple[str, datetime]) -> tuple[datetime, str]:
    chat_id, window_start = key
    return (window_start, chat_id)


def _ids(row: PreviewRow, key: str) -> list[int]:
    return [int(i) for i in row.evidence.get(key, [])]


def _cost(totals: Mapping[str, Any], prices: tuple[float | None, float | None]) -> float | None:
    price_in, price_out = prices
    if price_in is None or price_out is None or not totals.get("model_calls"):
        return None
    tokens_in = int(totals.get("input_tokens", 0))
    tokens_out = int(totals.get("output_tokens", 0))
    return round((tokens_in * price_in + tokens_out * price_out) / 1_000_000, 6)


def build_report(
    rows: Sequence[PreviewRow],
    restated: set[int],
    totals: Mapping[str, Any],
    *,
    job_id: str,
    processor_version: str,
    synthesizer: str,
    prompt_version: str,
    prices: tuple[float | None, float | None],
    omitted_rows: int = 0,
) -> dict[str, Any]:
    """The preview's report: `windows` in the apply's order (oldest first across chats, ties by
    chat: the order the sensor runs the rerun's windows and the preview walks them,
    `processors.rerun_walk`), whatever order `rows` come in, and `totals`."""
    windows: dict[tuple[str, datetime], dict[str, Any]] = {}
    left_alone_ids: set[int] = set()
    for row in rows:
        window = windows.setdefault(
            _window_key(row),
            {
                "chat_id": row.chat_id,
                "window_start": row.window_start.isoformat(),
                **{kind: [] for kind in ITEM_KINDS},
            },
        )
        if row.kind == PRIOR:
            if row.outcome == "protected":
                _left_alone(window, row, restated=row.entry_id in restated, new_evidence=0)
                left_alone_ids.add(int(row.entry_id or 0))
            elif row.entry_id not in restated:
                window["dropped"].append(
                    {
                        "entry_id": row.entry_id,
                        "row": row.id,
                        "category": row.category,
                        "occurred_at": row.occurred_at.isoformat(),
                        "evidence_ids": _ids(row, "bound"),
                    }
                )
            continue
        if row.kind != PROPOSAL:
            continue
        if row.outcome == "added":
            window["added"].append(
                {
                    "row": row.id,
                    "category": row.category,
                    "occurred_at": row.occurred_at.isoformat(),
                    "evidence_ids": _ids(row, "cited"),
                }
            )
        elif row.outcome == "changed" and row.reason != "evidence":
            window["changed"].append(
                {
                    "entry_id": row.entry_id,
                    "new_in_preview": row.entry_id is None,
                    "row": row.id,
                    "old_category": row.old_category,
                    "category": row.category,
                    "occurred_at": row.occurred_at.isoformat(),
                    "new_evidence": len(_ids(row, "new")),
                }
            )
        elif row.outcome in ("changed", "unchanged"):
            window["unchanged"].append(
                {
                    "entry_id": row.entry_id,
                    "new_in_preview": row.entry_id is None,
                    "row": row.id,
                    "category": row.old_category,
                    "new_evidence": len(_ids(row, "new")),
                }
            )
        else:  # supported or untouched: a person owns the entry
            _left_alone(window, row, restated=True, new_evidence=len(_ids(row, "new")))
            left_alone_ids.add(int(row.entry_id or 0))
    for window in windows.values():
        # An added draft that cites evidence of a dropped one is what the new version says
        # instead; both stay on the timeline after the rerun.
        for added in window["added"]:
            cited = set(added["evidence_ids"])
            added["replaces"] = [
                dropped["entry_id"]
                for dropped in window["dropped"]
                if cited & set(dropped["evidence_ids"])
            ]
    listed = [windows[key] for key in sorted(windows, key=_apply_order)]
    counts = {
        kind: sum(len(window[kind]) for window in listed)
        for kind in ("added", "changed", "unchanged", "dropped")
    }
    summary = {
        "windows": int(totals.get("windows", 0)),
        "windows_with_changes": sum(
            1 for w in listed if w["added"] or w["changed"] or w["dropped"]
        ),
        **counts,
        "left_alone": len(left_alone_ids),
        "chunks": int(totals.get("chunks", 0)),
        "proposals": int(totals.get("proposals", 0)),
        "synthesizer_calls": int(totals.get("synthesizer_calls", 0)),
        "model_calls": int(totals.get("model_calls", 0)),
        "estimated_input_tokens": int(totals.get("estimated_input_tokens", 0)),
        "input_tokens": int(totals.get("input_tokens", 0)),
        "output_tokens": int(totals.get("output_tokens", 0)),
        "estimated_cost_usd": _cost(totals, prices),
        "failed_windows": int(totals.get("failed_windows", 0)),
    }
    return {
        "job_id": job_id,
        "processor_version": processor_version,
        "synthesizer": synthesizer,
        "prompt_version": prompt_version,
        "totals": summary,
        "windows": listed,
        "failures": list(totals.get("failures", [])),
        "rows_omitted": omitted_rows,
    }


def _left_alone(
    window: dict[str, Any], row: PreviewRow, *, restated: bool, new_evidence: int
) -> None:
    for item in window["left_alone"]:
        if item["entry_id"] == row.entry_id:
            item["restated"] = item["restated"] or restated
            item["new_evidence"] += new_evidence
            return
    is_prior = row.kind == PRIOR
    window["left_alone"].append(
        {
            "entry_id": row.entry_id,
            "row": row.id,
            "category": row.category if is_prior else row.old_category,
            "status": row.status,
            "reason": row.reason,
            "restated": restated,
            "new_evidence": new_evidence,
        }
    )


def row_ids(report: Mapping[str, Any]) -> set[int]:
    """The scratch rows a report's items name (their titles are read from these)."""
    return {
        int(item["row"])
        for window in report.get("windows", [])
        for kind in ITEM_KINDS
        for item in window.get(kind, [])
        if isinstance(item.get("row"), int)
    }


def _titles(kind: str, text: RowText | None) -> dict[str, str | None]:
    """An item's text from its row: a proposal's title (and, changed, the entry's before it),
    the entry's own title for what the rerun re-finds or leaves alone. None where the row is
    gone (purged after its short retention)."""
    if text is None:
        return {"title": None, "old_title": None} if kind == "changed" else {"title": None}
    if kind == "changed":
        return {"title": text.title, "old_title": text.old_title}
    if kind == "unchanged" or (kind == "left_alone" and text.kind != PRIOR):
        return {"title": text.old_title}
    return {"title": text.title}


def with_titles(report: Mapping[str, Any], texts: Mapping[int, RowText]) -> dict[str, Any]:
    """The report a curator reads: each item with the title its scratch row holds now."""
    shown = without_text(report)
    for window in shown.get("windows", []):
        for kind in ITEM_KINDS:
            for item in window.get(kind, []):
                row = item.get("row")
                item.update(_titles(kind, texts.get(row) if isinstance(row, int) else None))
    return shown


def without_text(report: Mapping[str, Any]) -> dict[str, Any]:
    """A deep copy of the report with no item text: ids, categories, times and counts."""
    bare = copy.deepcopy(dict(report))
    for window in bare.get("windows", []):
        for kind in ITEM_KINDS:
            for item in window.get(kind, []):
                for key in TEXT_KEYS:
                    item.pop(key, None)
    return bare


def _cell(value: Any) -> str:
    text = "" if value is None else str(value)
    return " ".join(text.replace("|", "\\|").split())


def markdown(report: Mapping[str, Any]) -> str:
    """The report as Markdown: the totals, one row per window, one row per change."""
    totals = report.get("totals", {})
    lines = [
        f"### Rerun preview `{_cell(report.get('processor_version'))}` "
        f"({_cell(report.get('synthesizer'))}, {_cell(report.get('prompt_version'))})",
        "",
        "| windows | with changes | added | changed | unchanged | dropped | left alone "
        "| model calls | estimated input tokens | input tokens | output tokens | cost (USD) |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        "| "
        + " | ".join(
            _cell(totals.get(key))
            for key in (
                "windows",
                "windows_with_changes",
                "added",
                "changed",
                "unchanged",
                "dropped",
                "left_alone",
                "model_calls",
                "estimated_input_tokens",
                "input_tokens",
                "output_tokens",
            )
        )
        + f" | {_cell(totals.get('estimated_cost_usd')) or '-'} |",
        "",
        "| chat | window | added | changed | unchanged | dropped | left alone |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    windows = report.get("windows", [])
    for window in windows:
        lines.append(
            f"| {_cell(window['chat_id'])} | {_cell(window['window_start'])} | "
            + " | ".join(str(len(window[kind])) for kind in ITEM_KINDS)
            + " |"
        )
    lines += [
        "",
        "| window | change | entry | title | category | before |",
        "|---|---|---:|---|---|---|",
    ]
    for window in windows:
        at = _cell(window["window_start"])
        for item in window["added"]:
            replaces = ", ".join(f"#{i}" for i in item.get("replaces", []))
            lines.append(
                f"| {at} | added | | {_cell(item.get('title'))} | {_cell(item['category'])} | "
                f"{'instead of ' + replaces if replaces else ''} |"
            )
        for item in window["changed"]:
            entry = "" if item["entry_id"] is None else f"#{item['entry_id']}"
            lines.append(
                f"| {at} | changed | {entry} | {_cell(item.get('title'))} | "
                f"{_cell(item['category'])} | {_cell(item.get('old_title'))} "
                f"({_cell(item['old_category'])}) |"
            )
        for item in window["dropped"]:
            lines.append(
                f"| {at} | dropped (stays until hidden) | #{item['entry_id']} | "
                f"{_cell(item.get('title'))} | {_cell(item['category'])} | |"
            )
        for item in window["left_alone"]:
            title, category = _cell(item.get("title")), _cell(item["category"])
            lines.append(
                f"| {at} | left alone: {_cell(item['reason'])} | #{item['entry_id']} | "
                f"{title} | {category} | {_cell(item['status'])} |"
            )
    if report.get("rows_omitted"):
        lines += ["", f"{report['rows_omitted']} more rows are not listed."]
    return "\n".join(lines) + "\n"
