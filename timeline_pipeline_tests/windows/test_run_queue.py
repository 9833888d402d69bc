"""The run queue (`windows/run_queue.py`): the tags every run of a workspace carries, and the
check that the instance's tag limits and pool match the settings: every shipped instance file
matches the settings it is documented with, and each kind of drift is named (docs/scaling.md,
"Limits")."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from timeline_pipeline.domain.window_keys import parse_partition_key
from timeline_pipeline.windows.run_queue import (
    lane_of,
    queue_limit_problems,
    run_tag_problem,
    summary_run_tags,
    window_run_tags,
)

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


def test_a_window_run_and_a_summary_run_of_a_workspace_share_its_workspace_and_lane() -> None:
    window = window_run_tags("inc-1", 3)
    summary = summary_run_tags("inc-1", 3)
    assert window == {
        "timeline/workspace": "inc-1",
        "timeline/synthesis": "1",
        "timeline/lane": lane_of("inc-1", 3),
    }
    assert summary == {
        "timeline/workspace": "inc-1",
        "timeline/lane": lane_of("inc-1", 3),
        "timeline/summary": "1",
    }


def test_a_run_whose_tags_escape_the_limits_is_refused_naming_the_job() -> None:
    ref = parse_partition_key("inc-1:oc_chat:20261129T1020Z")
    tags = window_run_tags("inc-1", 2)
    assert run_tag_problem(tags, ref, 2, job="synthesize_windows") is None
    batch = {key: value for key, value in tags.items() if key != "timeline/workspace"}
    assert run_tag_problem(batch, ref, 2, job="synthesize_windows", batch=True) is None
    problem = run_tag_problem(batch, ref, 2, job="synthesize_windows")
    assert problem is not None
    assert problem.startswith(f"refusing to synthesize {ref.partition_key}")
    assert "Launch it through job 'synthesize_windows'" in problem
    other_lane = {**tags, "timeline/lane": str(1 - int(tags["timeline/lane"]))}
    assert run_tag_problem(other_lane, ref, 2, job="synthesize_windows", batch=True) is not None
