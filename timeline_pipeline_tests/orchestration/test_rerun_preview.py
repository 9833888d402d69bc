"""Job `rerun_windows` with `preview: true` on a real Dagster instance (SQLite and PostgreSQL):
a move from the rules to Claude (the loopback stand-in) previewed; the report is the run's
metadata, with the model calls, tokens and their cost at the configured prices."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import dagster as dg
import pytest
from sqlalchemy import Engine, func, select

from timeline_pipeline.db.schema import workspace_timeline_entries as en
from timeline_pipeline.db.schema import workspace_timeline_sync_states as ss
from timeline_pipeline.domain.window_keys import WindowRef, window_start_of
from timeline_pipeline.orchestration.resources import DatabaseResource, TimelineSettingsResource
from timeline_pipeline.orchestration.windows import RERUN_JOB, SynthesizerResource, window_defs
from timeline_pipeline.settings import load_timeline_settings
from timeline_pipeline.synthesis.rules import RuleSynthesizer
from timeline_pipeline.synthesis_run.runner import WindowRunner
from timeline_pipeline_tests.support.anthropic_standin import AnthropicStandIn, tool_reply
from timeline_pipeline_tests.support.windows import WINDOW
from timeline_pipeline_tests.windows.support import post, workspace

OVERRIDES: dict[str, Any] = {
    "enabled": True,
    "synthesis_chunk_max_attempts": 1,
    "synthesis_price_input_per_mtok": 3.0,
    "synthesis_price_output_per_mtok": 15.0,
}
NOW = datetime.now(UTC)
W1 = window_start_of(NOW - timedelta(hours=2), WINDOW)
W2 = W1 + timedelta(minutes=30)
FACT = "we rolled back the deploy of payments-api to v41"


@pytest.fixture
def instance() -> Iterator[dg.DagsterInstance]:
    with dg.instance_for_test() as made:
        yield made


def _count(engine: Engine, table: Any) -> int:
    with engine.connect() as conn:
        return int(conn.execute(select(func.count()).select_from(table)).scalar_one())


def renamed(body: dict[str, Any]) -> dict[str, Any]:
    """Claude's answer: the rules' fact in other words, citing the same message."""
    from timeline_pipeline_tests.support.anthropic_standin import evidence_ids_in

    first = evidence_ids_in(body)[0]
    return {
        "entries": [
            {
                "title": "Payments API rolled back to v41",
                "category": "mitigation",
                "evidence_ids": [first],
            }
        ]
    }


def test_a_preview_run_shows_its_report_as_metadata_with_the_model_cost(
    db_url: str, engine: Engine, instance: dg.DagsterInstance
) -> None:
    workspace(engine, created_at=NOW - timedelta(hours=3))
    post(engine, [W1 + timedelta(minutes=1), W2 + timedelta(minutes=2)], text=FACT)
    settings = load_timeline_settings(**OVERRIDES)
    runner = WindowRunner(engine, settings, RuleSynthesizer())
    for start in (W1, W2):
        runner.run(WindowRef("inc-1", "oc_chat", start), owner="rules")
    entries_before, states_before = _count(engine, en), _count(engine, ss)
    with AnthropicStandIn(default=tool_reply(renamed)) as standin:
        defs = dg.Definitions.merge(
            dg.Definitions(
                resources={
                    "database": DatabaseResource(url=db_url),
                    "timeline_settings": TimelineSettingsResource(overrides=OVERRIDES),
                }
            ),
            window_defs(
                settings,
                SynthesizerResource(api_key=standin.api_key, base_url=standin.base_url),
            ),
        )
        config = {"workspace_id": "inc-1", "processor_version": "claude-v1", "preview": True}
        result = defs.resolve_job_def(RERUN_JOB).execute_in_process(
            instance=instance, run_config={"ops": {"create_rerun_windows": {"config": config}}}
        )
        calls = len(standin.requests)
    assert result.success
    job = result.output_for_node("create_rerun_windows")
    assert (job["mode"], job["status"]) == ("dry_run", "completed")
    assert calls == 2  # one chunk a window, each a real call to the stand-in
    totals = job["result"]["preview"]["totals"]
    # Claude words the rules' fact anew on the same message: the rerun re-finds the entry by
    # its evidence and updates it (docs/runbooks.md, "Deduplication of drafts").
    assert (totals["added"], totals["changed"], totals["dropped"]) == (0, 2, 0)
    assert totals["model_calls"] == 2
    assert (totals["input_tokens"], totals["output_tokens"]) == (240, 80)
    assert totals["estimated_cost_usd"] == pytest.approx((240 * 3.0 + 80 * 15.0) / 1e6)
    (event,) = [
        e
        for e in result.all_node_events
        if e.event_type_value == "STEP_OUTPUT" and e.step_key == "create_rerun_windows"
    ]
    metadata = event.event_specific_data.metadata  # type: ignore[union-attr]
    table = metadata["preview_windows"]
    assert isinstance(table, dg.TableMetadataValue)
    assert [(r.data["added"], r.data["changed"], r.data["dropped"]) for r in table.records] == [
        (0, 1, 0),
        (0, 1, 0),
    ]
    report = metadata["preview_report"]
    assert isinstance(report, dg.MarkdownMetadataValue)
    assert "| window | change | entry | title | category | before |" in (report.md_str or "")
    # Ids and counts only: no title, old or new, reaches Dagster's storage (a recall, a hold
    # and the purge never reach it; docs/maintenance.md, "Preview a rerun").
    stored = [
        dg.serialize_value(record.dagster_event)
        for record in instance.all_logs(result.run_id)
        if record.dagster_event is not None
    ]
    for text in ("Payments API rolled back to v41", FACT, FACT.capitalize()):
        assert text not in (report.md_str or "")
        assert all(text not in event for event in stored)
        assert text not in json.dumps(job)
    assert metadata["preview_model_calls"].value == 2
    # A preview wrote no entry and no window state.
    assert (_count(engine, en), _count(engine, ss)) == (entries_before, states_before)
