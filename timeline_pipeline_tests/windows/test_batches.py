"""Lanes and batch runs: the run plan a tick's requests become (windows.batches)."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest

from timeline_pipeline.domain.window_keys import WindowRef
from timeline_pipeline.windows.batches import (
    RANGE_END_TAG,
    RANGE_START_TAG,
    BatchItem,
    plan_runs,
    request_group,
    run_tags,
)
from timeline_pipeline.windows.run_queue import (
    TAG_LANE,
    TAG_REQUEST,
    TAG_WINDOWS,
    TAG_WORKSPACE,
    lane_of,
)
from timeline_pipeline_tests.support.windows import WINDOW
from timeline_pipeline_tests.windows.test_planning import state

T0 = datetime(2026, 11, 29, 10, 0, tzinfo=UTC)
TICK = datetime(2026, 11, 29, 12, 15, tzinfo=UTC)
W = WINDOW


def item(workspace: str, minute: int, lanes: int = 2, tick: datetime = TICK) -> BatchItem:
    ref = WindowRef(workspace, f"oc_{workspace.replace('-', '_')}", T0 + minute * W // 10)
    row = state(workspace_id=workspace, next_attempt_at=tick)
    return BatchItem(ref, request_group(ref, row, lanes), run_tags(ref, row, lanes))


def test_a_lane_is_stable_and_within_the_lane_count() -> None:
    assert lane_of("inc-1", 2) == lane_of("inc-1", 2)  # crc32, not Python's salted hash
    assert {lane_of(f"ws-{i}", 3) for i in range(60)} == {"0", "1", "2"}
    assert lane_of("anything", 1) == "0"
    with pytest.raises(ValueError, match="lanes"):
        lane_of("inc-1", 0)


def test_lanes_spread_many_workspaces_evenly_enough() -> None:
    counts = Counter(lane_of(f"ws-{i:04d}", 2) for i in range(200))
    assert min(counts.values()) >= 80


def test_a_request_group_names_the_lane_and_the_tick() -> None:
    ref = WindowRef("inc-1", "oc_1", T0)
    group = request_group(ref, state(next_attempt_at=TICK), 2)
    assert group == f"{lane_of('inc-1', 2)}@20261129T121500.000000Z"
    later = request_group(ref, state(next_attempt_at=TICK + timedelta(seconds=30)), 2)
    assert later != group


@pytest.mark.parametrize(
    ("workspaces", "existing", "max_windows", "expected_sizes"),
    [
        # one workspace, five new windows: one range run
        (["a"] * 5, set(), 50, [5]),
        # cut at the batch size, oldest first
        (["a"] * 5, set(), 2, [2, 2, 1]),
        # a batch of one is a run of one partition, not a range
        (["a"], set(), 50, [1]),
        # batch size 1: every window alone (the shape before batches)
        (["a"] * 3, set(), 1, [1, 1, 1]),
    ],
)
def test_new_windows_of_one_lane_become_ranges(
    workspaces: list[str], existing: set[str], max_windows: int, expected_sizes: list[int]
) -> None:
    items = [item(ws, minute) for minute, ws in enumerate(workspaces)]
    plan = plan_runs(items, existing, max_windows)
    assert [len(run.keys) for run in plan.runs] == expected_sizes
    assert list(plan.add_keys) == [i.ref.partition_key for i in items]
    for run in plan.runs:
        if run.is_range:
            assert run.tags[RANGE_START_TAG] == run.keys[0]
            assert run.tags[RANGE_END_TAG] == run.keys[-1]
            assert run.tags[TAG_WINDOWS] == str(len(run.keys))
            assert TAG_WORKSPACE not in run.tags
        else:
            assert run.tags[TAG_WORKSPACE] == "a"
        assert run.tags[TAG_LANE] == lane_of("a", 2)


def test_each_lanes_new_keys_are_contiguous_so_a_range_covers_only_its_batch() -> None:
    workspaces = [f"ws-{i:03d}" for i in range(40)]
    items = [item(ws, minute) for minute in range(3) for ws in workspaces]
    plan = plan_runs(list(reversed(items)), set(), 25)
    position = {key: index for index, key in enumerate(plan.add_keys)}
    assert sorted(position) == sorted(i.ref.partition_key for i in items)
    covered: list[str] = []
    for run in plan.runs:
        first, last = position[run.keys[0]], position[run.keys[-1]]
        # what Dagster resolves from the range tags: every key added between first and last
        assert list(plan.add_keys[first : last + 1]) == list(run.keys)
        lanes = {lane_of(key.split(":")[0], 2) for key in run.keys}
        assert lanes == {run.tags[TAG_LANE]}, "a range mixed lanes"
        starts = [key.split(":")[2] for key in run.keys]
        assert starts == sorted(starts), "a batch is not oldest first"
        covered.extend(run.keys)
    assert sorted(covered) == sorted(position), "a window was lost or planned twice"
    assert len(plan.runs) <= 2 * -(-len(items) // 2 // 25) + 2


def test_existing_partitions_get_runs_of_their_own_and_are_not_added_again() -> None:
    items = [item("a", 0), item("a", 1), item("a", 2), item("a", 3)]
    retried = {items[1].ref.partition_key}
    plan = plan_runs(items, retried, 50)
    assert items[1].ref.partition_key not in plan.add_keys
    alone = [run for run in plan.runs if run.keys == (items[1].ref.partition_key,)]
    assert len(alone) == 1 and alone[0].tags[TAG_WORKSPACE] == "a"
    ranges = [run for run in plan.runs if run.is_range]
    assert [list(run.keys) for run in ranges] == [
        [items[0].ref.partition_key, items[2].ref.partition_key, items[3].ref.partition_key]
    ]


def test_requests_of_an_older_tick_stay_in_their_own_group() -> None:
    """A re-issued request keeps the group Dagster is asked about; it is not merged."""
    now, old = item("a", 2), item("a", 0, tick=TICK - timedelta(minutes=20))
    plan = plan_runs([now, old], set(), 50)
    assert [run.keys for run in plan.runs] == [(old.ref.partition_key,), (now.ref.partition_key,)]
    assert {run.tags[TAG_REQUEST] for run in plan.runs} == {now.group, old.group}
    assert len({run.run_key for run in plan.runs}) == 2


def test_runs_are_listed_oldest_first_and_duplicates_planned_once() -> None:
    a, b = item("a", 3), item("b", 1)
    plan = plan_runs([a, b, a], set(), 50)
    assert sum(len(run.keys) for run in plan.runs) == 2
    oldest = min((a, b), key=lambda i: i.ref.sort_key())
    assert plan.runs[0].keys[0] == oldest.ref.partition_key
    with pytest.raises(ValueError, match="max_windows"):
        plan_runs([a], set(), 0)
