"""The run queue: every run tag the product sets, the lanes, and the checks that the queue's
limits are the ones the settings promise. Pure (docs/dagster.md, "Concurrency";
docs/scaling.md, "Batches and lanes" and "Sizing").

The product does not count its own runs: Dagster's run queue (`QueuedRunCoordinator`) starts a
queued run only while the tag limits of the instance's `dagster.yaml` allow it. So the promises
of the `maxConcurrent*` settings hold exactly when every run carries the right tags and the
instance limits those tags to the settings' values:

* `timeline/synthesis=1` is on every run that synthesizes (window runs, batches, a UI replay,
  a backfill, `rerun_windows`); the queue allows `maxConcurrentSynthesis` of them at once, and
  the default pool limit, which admits the synthesis asset's steps, equals it.
* The per-lane limit: every workspace has a fixed lane, `crc32(workspace id) mod
  maxConcurrentSynthesis` (`lane_of`, stable across processes, not Python's salted `hash`), and
  every run of a workspace carries `timeline/lane=<lane>`: its window runs, the batches of its
  lane and its summary runs. The queue allows one run per lane value
  (`applyLimitPerUniqueValue`, limit 1). A batch spans several workspaces of one lane, so it is
  the lane that keeps two runs of one workspace apart, and a summary from running beside its
  workspace's synthesis. Change `maxConcurrentSynthesis` only with an empty queue: queued runs
  keep their old lane.
* The per-workspace limit: a run of one window and a summary run also carry
  `timeline/workspace=<id>`, limited to `maxConcurrentPerWorkspace` runs per value; a batch
  carries no single workspace.
* `timeline/collection` keeps Lark chat collection to one run at a time; `timeline/request`
  (the tick and lane that requested a window), `timeline/windows` (a batch's size),
  `timeline/window_attempt` and `dagster/priority` (older windows first) describe a window run.

A setting and a `dagster.yaml` that drift apart run more syntheses at once than configured, or
starve lanes: `queue_limit_problems` compares the two, and the health asset's
`run_queue_enforces_concurrency_settings` check (`orchestration/settings_checks.py`) reports it
from the instance the daemon runs with. A run whose tags escape the limits (one materialized
from the asset graph, without the job's tag function) is refused before it touches a window
(`run_tag_problem`). The tags are set by `windows/batches.py` (sensor runs),
`orchestration/windows.py` (the synthesis job's partitions), `orchestration/summary.py` and
`orchestration/collection.py`.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from timeline_pipeline.domain.window_keys import WindowRef

__all__ = [
    "TAG_COLLECTION",
    "TAG_LANE",
    "TAG_PRIORITY",
    "TAG_REQUEST",
    "TAG_SUMMARY",
    "TAG_SYNTHESIS",
    "TAG_WINDOWS",
    "TAG_WINDOW_ATTEMPT",
    "TAG_WORKSPACE",
    "ExpectedLimit",
    "expected_limits",
    "lane_of",
    "queue_limit_problems",
    "run_tag_problem",
    "summary_run_tags",
    "window_run_tags",
]

# --- the tags -----------------------------------------------------------------------------------

TAG_SYNTHESIS = "timeline/synthesis"
"""On every run that synthesizes; limited to `maxConcurrentSynthesis` in all."""
TAG_LANE = "timeline/lane"
"""The workspace's lane (`lane_of`); limited to one run per value."""
TAG_WORKSPACE = "timeline/workspace"
"""The workspace of a one-window run or a summary; limited to `maxConcurrentPerWorkspace`
runs per value."""
TAG_SUMMARY = "timeline/summary"
"""On every summary run."""
TAG_COLLECTION = "timeline/collection"
"""On every Lark chat-collection run; limited to one run in all."""
TAG_REQUEST = "timeline/request"
"""The tick and lane that requested a window (`windows.batches.request_group`)."""
TAG_WINDOWS = "timeline/windows"
"""How many windows a batch run holds."""
TAG_WINDOW_ATTEMPT = "timeline/window_attempt"
"""The attempt a one-window run makes."""
TAG_PRIORITY = "dagster/priority"
"""Dagster's queue order: older windows first (`windows.planning.run_priority`)."""


# --- lanes and the tags the limits act on -------------------------------------------------------


def lane_of(workspace_id: str, lanes: int) -> str:
    """The workspace's lane: stable across processes and restarts (not Python's `hash`)."""
    if lanes < 1:
        raise ValueError("lanes must be at least 1")
    return str(zlib.crc32(workspace_id.encode("utf-8")) % lanes)


def window_run_tags(workspace_id: str, lanes: int) -> dict[str, str]:
    """The queue's tags of a run of one window of the workspace: workspace, synthesis, lane."""
    return {
        TAG_WORKSPACE: workspace_id,
        TAG_SYNTHESIS: "1",
        TAG_LANE: lane_of(workspace_id, lanes),
    }


def summary_run_tags(workspace_id: str, lanes: int) -> dict[str, str]:
    """The tags of a workspace's summary run: its workspace and its lane, which the queue limits
    to one run each, so the summary waits for its workspace's synthesis (and the synthesis for
    it)."""
    return {
        TAG_WORKSPACE: workspace_id,
        TAG_LANE: lane_of(workspace_id, lanes),
        TAG_SUMMARY: "1",
    }


# --- the instance's limits against the settings -------------------------------------------------


@dataclass(frozen=True, slots=True)
class ExpectedLimit:
    """One tag limit the run queue must carry for a setting to hold."""

    key: str
    limit: int
    per_value: bool
    """The limit applies to each value of the tag (`applyLimitPerUniqueValue`), not to all."""
    setting: str
    """The setting the limit enforces, named in the problem an operator reads."""


def expected_limits(*, synthesis: int, per_workspace: int) -> tuple[ExpectedLimit, ...]:
    return (
        ExpectedLimit(TAG_SYNTHESIS, synthesis, False, f"maxConcurrentSynthesis ({synthesis})"),
        ExpectedLimit(TAG_LANE, 1, True, "one run per lane"),
        ExpectedLimit(
            TAG_WORKSPACE, per_workspace, True, f"maxConcurrentPerWorkspace ({per_workspace})"
        ),
    )


def _per_value(limit: Mapping[str, Any]) -> bool:
    value = limit.get("value")
    return isinstance(value, Mapping) and bool(value.get("applyLimitPerUniqueValue"))


def _shape(per_value: bool) -> str:
    return "per unique value" if per_value else "in all"


def queue_limit_problems(
    tag_limits: Sequence[Mapping[str, Any]] | None,
    *,
    synthesis: int,
    per_workspace: int,
    default_pool_limit: int | None,
) -> list[str]:
    """What keeps the run queue from enforcing the settings, one sentence each; empty when it
    enforces them. `tag_limits` is None when the instance has no run queue at all."""
    if tag_limits is None:
        return [
            "the instance has no run queue (QueuedRunCoordinator), so no concurrency setting "
            "is enforced: use the deployment's dagster.yaml (docs/deployment.md)"
        ]
    problems = []
    for expected in expected_limits(synthesis=synthesis, per_workspace=per_workspace):
        found = [limit for limit in tag_limits if limit.get("key") == expected.key]
        if not found:
            problems.append(
                f"no run queue limit on tag {expected.key}: {expected.setting} is not enforced"
            )
            continue
        matching = [
            limit
            for limit in found
            if _per_value(limit) == expected.per_value and limit.get("limit") == expected.limit
        ]
        if not matching:
            seen = ", ".join(f"{limit.get('limit')} {_shape(_per_value(limit))}" for limit in found)
            wanted = f"{expected.limit} {_shape(expected.per_value)}"
            problems.append(
                f"run queue limit on tag {expected.key} is {seen}, not {wanted} "
                f"as {expected.setting} needs"
            )
    if default_pool_limit is not None and default_pool_limit != synthesis:
        problems.append(
            f"the default pool limit is {default_pool_limit}, not maxConcurrentSynthesis "
            f"({synthesis}): the synthesis asset's pool admits a different number of steps"
        )
    return problems


# --- a run's own tags against the limits ---------------------------------------------------------


def run_tag_problem(
    tags: Mapping[str, str], ref: WindowRef, lanes: int, *, job: str, batch: bool = False
) -> str | None:
    """Why a run may not synthesize `ref` (its tags escape the concurrency limits), or None.

    Every run needs `timeline/synthesis=1` and the window's lane; a run of one window also
    needs its workspace. A batch covers several workspaces of one lane, which the lane's
    limit of one run keeps apart. `job` is the job whose partitions carry the tags.
    """
    lane = lane_of(ref.workspace_id, lanes)
    workspace = tags.get(TAG_WORKSPACE)
    wrong_workspace = not batch and workspace != ref.workspace_id
    if wrong_workspace or tags.get(TAG_SYNTHESIS) != "1" or tags.get(TAG_LANE) != lane:
        wanted = f"{TAG_SYNTHESIS}='1' and {TAG_LANE}={lane!r}"
        if not batch:
            wanted = f"{TAG_WORKSPACE}={ref.workspace_id!r}, {wanted}"
        return (
            f"refusing to synthesize {ref.partition_key}: the run carries "
            f"{TAG_WORKSPACE}={workspace!r}, {TAG_SYNTHESIS}={tags.get(TAG_SYNTHESIS)!r} and "
            f"{TAG_LANE}={tags.get(TAG_LANE)!r}, not {wanted}, so Dagster's "
            "one-synthesis-per-workspace limit would not apply. Launch it through job "
            f"{job!r} (its partitions carry these tags) or add the tags."
        )
    return None
