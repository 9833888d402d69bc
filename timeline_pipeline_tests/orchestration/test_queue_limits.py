"""The health asset's `run_queue_enforces_concurrency_settings` check, evaluated on a real
Dagster instance configured from the repository's own `dagster.yaml` (docs/scaling.md,
"Limits"): it passes when the settings match the instance's run queue and warns, naming the
drift, when they do not."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
import yaml

from timeline_pipeline.definitions import defs as code_location
from timeline_pipeline.orchestration.health import HEALTH_JOB, timeline_pipeline_health
from timeline_pipeline.orchestration.queue_limits import (
    QUEUE_LIMITS_CHECK,
    run_queue_enforces_concurrency_settings,
)
from timeline_pipeline.orchestration.resources import DatabaseResource, TimelineSettingsResource

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def instance() -> Iterator[dg.DagsterInstance]:
    """An instance with the run queue and concurrency of the repository's dagster.yaml."""
    config = yaml.safe_load((REPO / "dagster.yaml").read_text())
    overrides = {key: config[key] for key in ("run_coordinator", "concurrency")}
    with dg.instance_for_test(overrides=overrides) as made:
        yield made


def evaluate(
    db_url: str, instance: dg.DagsterInstance, **overrides: Any
) -> dg.AssetCheckEvaluation:
    result = dg.materialize(
        [timeline_pipeline_health, run_queue_enforces_concurrency_settings],
        instance=instance,
        resources={
            "database": DatabaseResource(url=db_url),
            "timeline_settings": TimelineSettingsResource(overrides={"enabled": True, **overrides}),
        },
    )
    (found,) = [
        e for e in result.get_asset_check_evaluations() if e.check_name == QUEUE_LIMITS_CHECK
    ]
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


def test_the_health_job_evaluates_the_check() -> None:
    job = code_location.resolve_job_def(HEALTH_JOB)
    assert QUEUE_LIMITS_CHECK in {key.name for key in job.asset_layer.asset_graph.asset_check_keys}
