"""Dagster: the rerun preview's pieces of job `rerun_windows` (docs/maintenance.md, "Preview
a rerun"; docs/dagster.md).

With `preview: true` the job creates the `window_rerun` dry-run instead of the apply; the dry-run
synthesizes each window with the synthesizer of the code location's window runs (the
`synthesizer` resource), and the completed job's report becomes the run's output metadata: a
table per window the UI shows, the same report as Markdown, and the JSON. The metadata carries
ids, categories and counts only, never a title (`preview_report.without_text`): Dagster's
storage is out of reach of a recall, a hold and the product's purge. The titles are read from
the preview's scratch rows by `maintenance status` (docs/maintenance.md, "Preview a rerun").

No `from __future__ import annotations`: kept like the other Dagster modules.
"""

from collections.abc import Callable
from typing import Any

import dagster as dg

from timeline_pipeline.maintenance.preview_report import markdown, without_text
from timeline_pipeline.maintenance.processors import default_registry
from timeline_pipeline.maintenance.service import JobService
from timeline_pipeline.orchestration.resources import DatabaseResource, TimelineSettingsResource
from timeline_pipeline.settings import Settings
from timeline_pipeline.synthesis.contract import Synthesizer

__all__ = ["preview_metadata", "rerun_service"]

WINDOW_COLUMNS = (
    ("chat_id", "string"),
    ("window_start", "string"),
    ("added", "int"),
    ("changed", "int"),
    ("unchanged", "int"),
    ("dropped", "int"),
    ("left_alone", "int"),
)


def rerun_service(
    database: DatabaseResource,
    settings: TimelineSettingsResource,
    build: Callable[[Settings], Synthesizer],
) -> JobService:
    """The job service of a rerun, whose preview runs the code location's synthesizer."""
    registry = default_registry(settings.timeline, synthesizer=lambda: build(settings.load()))
    return JobService(database.engine, registry)


def preview_metadata(job: dict[str, Any]) -> dict[str, Any]:
    """The report of a completed preview job as run metadata, without text; nothing while it
    is unfinished."""
    stored = (job.get("result") or {}).get("preview")
    if not isinstance(stored, dict):
        return {}
    report = without_text(stored)
    windows = report.get("windows", [])
    rows = [
        dg.TableRecord(
            {
                "chat_id": str(window["chat_id"]),
                "window_start": str(window["window_start"]),
                **{key: len(window[key]) for key, _ in WINDOW_COLUMNS[2:]},
            }
        )
        for window in windows
    ]
    schema = dg.TableSchema(columns=[dg.TableColumn(name, kind) for name, kind in WINDOW_COLUMNS])
    totals = report.get("totals", {})
    return {
        "preview_windows": dg.MetadataValue.table(rows, schema=schema),
        "preview_report": dg.MetadataValue.md(markdown(report)),
        "preview": dg.MetadataValue.json(report),
        "preview_added": int(totals.get("added", 0)),
        "preview_changed": int(totals.get("changed", 0)),
        "preview_dropped": int(totals.get("dropped", 0)),
        "preview_left_alone": int(totals.get("left_alone", 0)),
        "preview_model_calls": int(totals.get("model_calls", 0)),
    }
