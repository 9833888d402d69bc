"""The run-queue analysis the system test relies on: a wrong sweep would let an overlap pass."""

from __future__ import annotations

import pytest

from timeline_pipeline_tests.system import concurrency
from timeline_pipeline_tests.system.graphql import Run


def run(run_id: str, created: float, started: float, ended: float, workspace: str = "w1") -> Run:
    tags = {"timeline/workspace": workspace, "timeline/synthesis": "1"}
    return Run(run_id, "synthesize_windows", "SUCCESS", created, started, ended, tags)


def test_a_run_starting_when_another_ends_does_not_overlap_it() -> None:
    runs = [run("a", 0, 1, 5), run("b", 0, 5, 9)]
    assert concurrency.max_running(runs) == 1
    assert concurrency.overlapping_pairs(runs) == []


def test_overlaps_are_found_and_counted() -> None:
    runs = [run("a", 0, 1, 5), run("b", 0, 2, 9), run("c", 0, 3, 4), run("d", 0, 10, 11)]
    assert concurrency.max_running(runs) == 3
    assert concurrency.overlapping_pairs(runs) == [("a", "b"), ("a", "c"), ("b", "c")]


def test_queue_depth_counts_runs_from_creation_to_end() -> None:
    runs = [run("a", 0, 1, 5), run("b", 0, 5, 9), run("c", 0, 9, 12), run("d", 13, 13, 14)]
    assert concurrency.max_running(runs) == 1
    assert concurrency.max_waiting(runs) == 3


def test_a_run_waited_when_created_before_another_ended_and_started_after() -> None:
    runs = [run("a", 0, 1, 5), run("b", 0, 6, 9), run("c", 10, 11, 12)]
    assert concurrency.waited_behind(runs) == [("b", "a")]


def test_runs_are_grouped_by_tag_value() -> None:
    groups = concurrency.by_tag(
        [run("a", 0, 1, 2, "w1"), run("b", 0, 1, 2, "w2")], "timeline/workspace"
    )
    assert {key: [r.run_id for r in value] for key, value in groups.items()} == {
        "w1": ["a"],
        "w2": ["b"],
    }


def test_an_unfinished_run_cannot_be_judged() -> None:
    unfinished = Run("a", "synthesize_windows", "STARTED", 0, 1, None, {})
    with pytest.raises(ValueError, match="has not finished"):
        concurrency.max_running([unfinished])
