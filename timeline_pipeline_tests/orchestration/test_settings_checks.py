"""The settings checks of the health asset, evaluated on a real Dagster instance configured from
the repository's own `dagster.yaml`, over the product database (SQLite and PostgreSQL):
`run_queue_enforces_concurrency_settings` passes when the settings match the instance's run
queue and warns, naming the drift, when they do not (docs/deployment-n-machines.md, "Limits");
`window_size_accepted` warns with the sensor's own reason while discovery refuses a changed
`synthesisWindow` (docs/changing.md, "A 15-minute window")."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
import yaml
from sqlalchemy import Engine

from timeline_pipeline.definitions import defs as code_location
from timeline_pipeline.domain.window_keys import window_start_of
from timeline_pipeline.orchestration.health import HEALTH_JOB, timeline_pipeline_health
from timeline_pipeline.orchestration.resources import DatabaseResource, TimelineSettingsResource
from timeline_pipeline.orchestration.settings_checks import (
    QUEUE_LIMITS_CHECK,
    WINDOW_SIZE_CHECK,
    run_queue_enforces_concurrency_settings,
    window_size_accepted,
)
from timeline_pipeline.store import window_states
from timeline_pipeline_tests.windows.support import post, workspace

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def instance() -> Iterator[dg.DagsterInstance]:
    """An instance with the run queue and concurrency of the repository's dagster.yaml."""
    config = yaml.safe_load((REPO / "dagster.yaml").read_text())
    overrides = {key: config[key] for key in ("run_coordinator", "concurrency")}
    with dg.instance_for_test(overrides=overrides) as made:
        yield made


def evaluate(
    db_url: str, instance: dg.DagsterInstance, check: str = QUEUE_LIMITS_CHECK, **overrides: Any
) -> dg.AssetCheckEvaluation:
    result = dg.materialize(
        [timeline_pipeline_health, run_queue_enforces_concurrency_settings, window_size_accepted],
        instance=instance,
        resources={
            "database": DatabaseResource(url=db_url),
            "timeline_settings": TimelineSettingsResource(overrides={"enabled": True, **overrides}),
        },
    )
    (found,) = [e for e in result.get_asset_check_evaluations() if e.check_name == check]
    return found


def test_the_check_passes_when_the_settings_match_the_run_queue(
    db_url: str, instance: dg.DagsterInstance
) -> None:
    found = evaluate(db_url, instance)
    assert found.passed
    assert found.metadata["problems"].value == 0


def test_the_check_warns_and_names_the_drift_when_a_setting_differs(
    db_url: str, instance: dg.DagsterInstance
) -> None:
    found = evaluate(db_url, instance, max_concurrent_synthesis=3)
    assert not found.passed
    assert found.severity is dg.AssetCheckSeverity.WARN
    assert found.metadata["problems"].value == 2
    assert "maxConcurrentSynthesis (3)" in (found.description or "")


def test_an_instance_without_a_run_queue_warns_that_nothing_is_enforced(db_url: str) -> None:
    with dg.instance_for_test() as bare:
        found = evaluate(db_url, bare)
    assert not found.passed
    assert "no run queue" in (found.description or "")


def test_the_health_job_evaluates_both_checks() -> None:
    job = code_location.resolve_job_def(HEALTH_JOB)
    names = {key.name for key in job.asset_layer.asset_graph.asset_check_keys}
    assert {QUEUE_LIMITS_CHECK, WINDOW_SIZE_CHECK} <= names


def test_the_window_size_check_passes_while_the_sizes_agree(
    db_url: str, engine: Engine, instance: dg.DagsterInstance
) -> None:
    a_window(engine, minutes=10)
    found = evaluate(db_url, instance, WINDOW_SIZE_CHECK)
    assert found.passed, found.description


def test_the_window_size_check_warns_with_the_sensors_reason_after_a_change(
    db_url: str, engine: Engine, instance: dg.DagsterInstance
) -> None:
    a_window(engine, minutes=10)  # unfinished, made at 10 minutes
    found = evaluate(db_url, instance, WINDOW_SIZE_CHECK, synthesis_window="15m")
    assert not found.passed
    assert found.severity is dg.AssetCheckSeverity.WARN
    assert found.description is not None
    assert found.description.startswith(
        "synthesisWindow is 15m but 1 unfinished window(s) were made at 10m"
    )
    assert found.metadata["configured_seconds"].value == 900
    assert found.metadata["latest_window_seconds"].value == 600


def a_window(engine: Engine, *, minutes: int) -> None:
    """One pending window of `minutes`, made an hour ago with a message in it."""
    start = window_start_of(datetime.now(UTC) - timedelta(hours=1), timedelta(minutes=minutes))
    workspace(engine, created_at=start - timedelta(hours=1))
    post(engine, [start + timedelta(minutes=1)])
    with engine.begin() as conn:
        made = window_states.create_window_if_evidence(
            conn,
            workspace_id="inc-1",
            chat_id="oc_chat",
            window_start=start,
            window_end=start + timedelta(minutes=minutes),
            now=start + timedelta(minutes=minutes),
        )
    assert made is not None
