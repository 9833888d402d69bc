"""Lanes and batch runs: how a tick's window requests become Dagster runs (docs/scaling.md). Pure.

A run costs seconds before its first window (a process, the code location, run start-up), so
one run synthesizes many closed windows, one after another, oldest first. Two promises must
still hold for every run however it was launched: at most `maxConcurrentSynthesis` syntheses at
once, and never two runs of one workspace at once. Lanes keep both by construction:

* every workspace has a fixed lane, `crc32(workspace id) mod maxConcurrentSynthesis`, and
  every synthesis run carries `timeline/lane=<lane>` (sensor batches, a UI replay of one
  window through the job's partition tag function, a backfill);
* `dagster.yaml` allows one run per lane value (`applyLimitPerUniqueValue`, limit 1), so at
  most `maxConcurrentSynthesis` runs synthesize at once, and a workspace's windows, all in one
  lane, are never synthesized by two runs at once.

A batch is a Dagster partition-range run: a dynamic partitions definition orders its keys by
insertion, so the sensor adds a tick's new keys grouped by request group (its lane in this
tick), oldest first, in one add request; each group's new keys are then contiguous and a range
from the first to the last covers exactly them. A window whose partition already exists (a
retry, a deferred window coming back) cannot be placed in a fresh range and gets a run of its
own. Every window keeps its own partition, its own materialization and its own claim.

`timeline/request` names the tick and lane that requested a window (`request_group`): the
sensor's check for lost requests asks Dagster for the runs of a group rather than of a window.
The tags, the lanes and the limits they meet are in `windows/run_queue.py`.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC

from timeline_pipeline.domain.sync_states import SyncState
from timeline_pipeline.domain.window_keys import (
    InvalidPartitionKey,
    WindowRef,
    parse_partition_key,
)
from timeline_pipeline.windows.planning import run_priority
from timeline_pipeline.windows.run_queue import (
    TAG_PRIORITY,
    TAG_REQUEST,
    TAG_WINDOW_ATTEMPT,
    TAG_WINDOWS,
    TAG_WORKSPACE,
    lane_of,
    window_run_tags,
)

__all__ = [
    "RANGE_END_TAG",
    "RANGE_START_TAG",
    "PlannedRun",
    "RunPlan",
    "RunScope",
    "plan_runs",
    "request_group",
    "run_tags",
]

RANGE_START_TAG = "dagster/asset_partition_range_start"
RANGE_END_TAG = "dagster/asset_partition_range_end"
PARTITION_TAG = "dagster/partition"


def request_group(ref: WindowRef, state: SyncState, lanes: int) -> str:
    """The tick and lane that requested the window: `<lane>@<when the request is checked>`.

    A tick stamps every window it requests with the same `next_attempt_at` (the tick's time
    plus the reissue delay), so the stamp identifies the tick without a new column, and it
    stays on the row until a run claims the window or the request is replaced.
    """
    lane = lane_of(ref.workspace_id, lanes)
    stamp = state.next_attempt_at
    when = stamp.astimezone(UTC).strftime("%Y%m%dT%H%M%S.%fZ") if stamp else "unset"
    return f"{lane}@{when}"


def run_tags(ref: WindowRef, state: SyncState, lanes: int) -> dict[str, str]:
    """Tags of one window's run, which dagster.yaml's run-queue limits act on."""
    return {
        **window_run_tags(ref.workspace_id, lanes),
        TAG_REQUEST: request_group(ref, state, lanes),
        TAG_WINDOW_ATTEMPT: str(state.attempt_count + 1),
        TAG_PRIORITY: str(run_priority(ref.window_start)),
    }


@dataclass(frozen=True, slots=True)
class BatchItem:
    """One requested window as the run plan needs it."""

    ref: WindowRef
    group: str
    tags: Mapping[str, str]
    """Its tags as a run of its own (workspace, lane, request, attempt, priority)."""


@dataclass(frozen=True, slots=True)
class PlannedRun:
    keys: tuple[str, ...]
    """Partition keys, oldest window first; more than one: a range run over exactly these."""
    run_key: str
    tags: Mapping[str, str]

    @property
    def is_range(self) -> bool:
        return len(self.keys) > 1


@dataclass(frozen=True, slots=True)
class RunPlan:
    add_keys: tuple[str, ...]
    """Partitions to add, in this order, in one request: each range's keys are contiguous."""
    runs: tuple[PlannedRun, ...]


def plan_runs(items: Sequence[BatchItem], existing: Collection[str], max_windows: int) -> RunPlan:
    """Group a tick's requests into runs: per request group, new partitions in ranges of at most
    `max_windows` windows, oldest first; a window whose partition exists gets a run of its own.
    """
    if max_windows < 1:
        raise ValueError("max_windows must be at least 1")
    groups: dict[str, list[BatchItem]] = {}
    for item in sorted(items, key=lambda i: i.ref.sort_key()):
        groups.setdefault(item.group, []).append(item)
    add_keys: list[str] = []
    runs: list[tuple[tuple[object, ...], PlannedRun]] = []
    seen: set[str] = set()
    for group in sorted(groups):
        fresh: list[BatchItem] = []
        for item in groups[group]:
            key = item.ref.partition_key
            if key in seen:
                continue
            seen.add(key)
            if key in existing:
                run = PlannedRun((key,), f"{group}/{key}", dict(item.tags))
                runs.append((item.ref.sort_key(), run))
            else:
                fresh.append(item)
        for start in range(0, len(fresh), max_windows):
            chunk = fresh[start : start + max_windows]
            keys = tuple(item.ref.partition_key for item in chunk)
            add_keys.extend(keys)
            runs.append((chunk[0].ref.sort_key(), _chunk_run(group, chunk, keys)))
    runs.sort(key=lambda pair: (pair[0], pair[1].run_key))
    return RunPlan(tuple(add_keys), tuple(run for _, run in runs))


def _chunk_run(group: str, chunk: Sequence[BatchItem], keys: tuple[str, ...]) -> PlannedRun:
    first = chunk[0]
    if len(chunk) == 1:
        return PlannedRun(keys, f"{group}/{keys[0]}", dict(first.tags))
    tags = {
        key: value
        for key, value in first.tags.items()
        # The oldest window's priority and lane; no single workspace or attempt describes it.
        if key not in (TAG_WORKSPACE, TAG_WINDOW_ATTEMPT)
    }
    tags.update(
        {
            RANGE_START_TAG: keys[0],
            RANGE_END_TAG: keys[-1],
            TAG_WINDOWS: str(len(keys)),
        }
    )
    return PlannedRun(keys, f"{group}/{keys[0]}/{len(keys)}", tags)


@dataclass(frozen=True, slots=True)
class RunScope:
    """The windows a sensor's run was asked to synthesize, read back from its tags: its request
    group and its partition (a run of one window) or partition range (a batch), minus the
    windows of the group that got runs of their own (`others`).

    A batch's range holds the group's new windows between its first and last key in window
    order (`plan_runs` cuts each group's new windows, sorted, into contiguous ranges); a window
    of the group whose partition already existed got a run of its own, named in `others`.
    """

    group: str
    first: WindowRef
    last: WindowRef
    others: frozenset[str] = frozenset()

    @classmethod
    def from_tags(cls, tags: Mapping[str, str], others: Collection[str] = ()) -> RunScope | None:
        """None for a run the sensor did not request (a UI launch, a backfill) or whose keys do
        not parse."""
        group = tags.get(TAG_REQUEST)
        first = tags.get(RANGE_START_TAG) or tags.get(PARTITION_TAG)
        last = tags.get(RANGE_END_TAG) or tags.get(PARTITION_TAG)
        if not group or not first or not last:
            return None
        try:
            return cls(
                group, parse_partition_key(first), parse_partition_key(last), frozenset(others)
            )
        except InvalidPartitionKey:
            return None

    def covers(self, ref: WindowRef, group: str) -> bool:
        """Whether this run was asked to synthesize the window `ref` requested in `group`."""
        return (
            group == self.group
            and ref.partition_key not in self.others
            and self.first.sort_key() <= ref.sort_key() <= self.last.sort_key()
        )
