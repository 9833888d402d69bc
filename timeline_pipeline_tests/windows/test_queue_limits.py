"""The run queue enforces the concurrency settings only when the instance's tag limits and pool
match them: every shipped instance file matches the settings it is documented with, and each
kind of drift is named (docs/scaling.md, "Limits")."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from timeline_pipeline.windows.queue_limits import queue_limit_problems

REPO = Path(__file__).resolve().parents[2]


def _instance(*parts: str) -> tuple[list[dict[str, Any]], int | None]:
    config = yaml.safe_load(REPO.joinpath(*parts).read_text())["concurrency"]
    return config["runs"]["tag_concurrency_limits"], config.get("pools", {}).get("default_limit")


@pytest.mark.parametrize(
    ("parts", "synthesis"),
    [
        (("dagster.yaml",), 2),
        (("deploy", "dagster.yaml"), 2),
        (("deploy", "k8s", "dagster.yaml"), 2),
        (("deploy", "celery", "dagster.yaml"), 4),
    ],
)
def test_every_shipped_instance_enforces_the_settings_it_is_documented_with(
    parts: tuple[str, ...], synthesis: int
) -> None:
    limits, pool = _instance(*parts)
    assert (
        queue_limit_problems(limits, synthesis=synthesis, per_workspace=1, default_pool_limit=pool)
        == []
    )


def test_a_synthesis_setting_the_queue_does_not_carry_is_named_twice() -> None:
    limits, pool = _instance("deploy", "dagster.yaml")
    problems = queue_limit_problems(limits, synthesis=3, per_workspace=1, default_pool_limit=pool)
    assert problems == [
        "run queue limit on tag timeline/synthesis is 2 in all, not 3 in all as "
        "maxConcurrentSynthesis (3) needs",
        "the default pool limit is 2, not maxConcurrentSynthesis (3): the synthesis asset's "
        "pool admits a different number of steps",
    ]


def test_a_per_workspace_setting_above_the_queue_limit_is_named() -> None:
    limits, pool = _instance("deploy", "dagster.yaml")
    (problem,) = queue_limit_problems(limits, synthesis=2, per_workspace=2, default_pool_limit=pool)
    assert problem == (
        "run queue limit on tag timeline/workspace is 1 per unique value, not 2 per unique "
        "value as maxConcurrentPerWorkspace (2) needs"
    )


def test_a_lane_limit_over_all_lanes_instead_of_per_lane_is_named() -> None:
    limits, pool = _instance("deploy", "dagster.yaml")
    changed = [
        {"key": "timeline/lane", "limit": 1} if limit["key"] == "timeline/lane" else limit
        for limit in limits
    ]
    (problem,) = queue_limit_problems(
        changed, synthesis=2, per_workspace=1, default_pool_limit=pool
    )
    assert problem == (
        "run queue limit on tag timeline/lane is 1 in all, not 1 per unique value as one run "
        "per lane needs"
    )


def test_a_missing_limit_and_a_missing_queue_are_named() -> None:
    limits, _ = _instance("deploy", "dagster.yaml")
    kept = [limit for limit in limits if limit["key"] != "timeline/workspace"]
    assert queue_limit_problems(kept, synthesis=2, per_workspace=1, default_pool_limit=None) == [
        "no run queue limit on tag timeline/workspace: maxConcurrentPerWorkspace (1) is not "
        "enforced"
    ]
    (problem,) = queue_limit_problems(None, synthesis=2, per_workspace=1, default_pool_limit=2)
    assert problem.startswith("the instance has no run queue (QueuedRunCoordinator)")
