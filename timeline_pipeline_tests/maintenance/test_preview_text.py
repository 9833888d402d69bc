"""A rerun preview keeps a message's text only where a recall reaches it (docs/maintenance.md,
"Preview a rerun"; docs/lifecycle.md): the job's stored report holds ids and counts, the titles
stay in the preview's scratch rows (workspace-scoped, recalled with the message) and the report
a curator reads takes them from there at read time. After a recall and a lifecycle run the text
is in neither the job nor a scratch row, nor in the report read again. SQLite and PostgreSQL."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Engine, select

from timeline_pipeline.db.schema import maintenance_jobs as mj
from timeline_pipeline.db.schema import window_rerun_previews as pv
from timeline_pipeline.domain.window_keys import WindowRef, window_start_of
from timeline_pipeline.ingest.recall import redact_everywhere
from timeline_pipeline.lifecycle.engine import PurgeEngine
from timeline_pipeline.lifecycle.registry import load_registry
from timeline_pipeline.maintenance.service import JobService
from timeline_pipeline.settings import load_timeline_settings
from timeline_pipeline.synthesis.rules import RuleSynthesizer
from timeline_pipeline.synthesis_run.runner import WindowRunner
from timeline_pipeline_tests.maintenance.support import FAST, drive, service
from timeline_pipeline_tests.support.windows import WINDOW
from timeline_pipeline_tests.windows.support import post, workspace

NOW = datetime.now(UTC)
W1 = window_start_of(NOW - timedelta(hours=2), WINDOW)
PLANTED = "zq7731"
FACT = f"we rolled back the deploy of payments-api {PLANTED} to v41"


def _rows(engine: Engine, table: Any) -> list[str]:
    with engine.connect() as conn:
        return [
            json.dumps([str(v) for v in row], default=str) for row in conn.execute(select(table))
        ]


def _items(report: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        item
        for window in report["windows"]
        for kind in ("added", "changed", "unchanged", "dropped", "left_alone")
        for item in window[kind]
    ]


def _titles(report: dict[str, Any]) -> list[str]:
    return [
        str(item.get(key))
        for window in report["windows"]
        for kind in ("added", "changed", "unchanged", "dropped", "left_alone")
        for item in window[kind]
        for key in ("title", "old_title")
        if item.get(key) is not None
    ]


def _preview(engine: Engine) -> tuple[JobService, str, str, dict[str, Any]]:
    """A rules window run over the planted message, then a preview of a new rules version:
    the service, the job id, the message id and the report the job stored."""
    workspace(engine, created_at=NOW - timedelta(hours=3))
    at = W1 + timedelta(minutes=1)
    post(engine, [at], text=FACT)
    message_id = f"om_inc-1_oc_chat_{at:%H%M%S%f}"  # as `post` names it
    settings = load_timeline_settings(enabled=True)
    WindowRunner(engine, settings, RuleSynthesizer()).run(
        WindowRef("inc-1", "oc_chat", W1), owner="rules"
    )
    svc = service(engine)
    job, _ = svc.create(
        job_type="window_rerun",
        idempotency_key="preview-planted",
        parameters={"workspace_id": "inc-1", "processor_version": "rules-v9"},
        limits=replace(FAST, statement_timeout_ms=5000),
    )
    done = drive(svc, job)
    assert done.status == "completed" and done.result is not None, done.error
    # Stored: ids and counts; the text only in the workspace's scratch rows.
    assert all(PLANTED not in row for row in _rows(engine, mj))
    assert any(PLANTED in row for row in _rows(engine, pv))
    return svc, done.id, message_id, done.result["preview"]


def test_the_job_keeps_ids_and_counts_and_the_report_reads_its_titles_from_the_rows(
    engine: Engine,
) -> None:
    svc, job_id, _, stored = _preview(engine)
    shown = svc.view(job_id)["result"]["preview"]
    assert any(PLANTED in title for title in _titles(shown)), shown
    assert not _titles(stored) and shown["totals"] == stored["totals"]
    # The scratch rows' purge takes the titles out of the report; the ids and counts stay.
    key = "rerun_previews.window_rerun_previews"
    purge = PurgeEngine(engine, load_registry()).run(
        descriptor_key=key, as_of=NOW + timedelta(days=3)
    )
    assert purge.status == "succeeded" and not _rows(engine, pv)
    again = svc.view(job_id)["result"]["preview"]
    assert not _titles(again) and again["totals"] == stored["totals"]
    assert [window["chat_id"] for window in again["windows"]] == ["oc_chat"]
    assert {item["row"] for item in _items(again)} == {item["row"] for item in _items(shown)}
    assert all(PLANTED not in row for row in _rows(engine, mj))


def test_a_recall_takes_the_previews_text_out_of_the_job_and_its_scratch_rows(
    engine: Engine,
) -> None:
    svc, job_id, message_id, stored = _preview(engine)
    shown = svc.view(job_id)["result"]["preview"]
    assert any(PLANTED in title for title in _titles(shown)), shown

    with engine.begin() as conn:
        counts = redact_everywhere(
            conn, ["inc-1"], chat_id="oc_chat", message_id=message_id, recalled_at=NOW, now=NOW
        )
    assert counts["redacted"] == 1
    assert PurgeEngine(engine, load_registry()).run().status == "succeeded"

    assert all(PLANTED not in row for row in _rows(engine, mj))
    assert all(PLANTED not in row for row in _rows(engine, pv))
    again = svc.view(job_id)["result"]["preview"]
    assert all(PLANTED not in title for title in _titles(again))
    assert again["totals"] == stored["totals"]  # the counts stay
