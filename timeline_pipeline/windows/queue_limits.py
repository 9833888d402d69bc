"""Whether the instance's run queue enforces the concurrency settings (docs/scaling.md,
"Limits"; docs/configuration.md).

`maxConcurrentSynthesis` and `maxConcurrentPerWorkspace` are settings of the product, but the
product does not enforce them itself: Dagster's run queue does, from the tag limits in the
instance's `dagster.yaml` (`timeline/synthesis`, `timeline/lane`, `timeline/workspace`) and
its default pool limit. The product uses `maxConcurrentSynthesis` for the number of run lanes
it tags runs with, so a setting and a `dagster.yaml` that drift apart run more syntheses at
once than configured, or starve lanes. This compares the two; the health asset's
`run_queue_enforces_concurrency_settings` check reports the result. Pure: the caller reads the
instance's configuration.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from timeline_pipeline.windows.batches import TAG_LANE
from timeline_pipeline.windows.planning import TAG_SYNTHESIS, TAG_WORKSPACE

__all__ = ["ExpectedLimit", "expected_limits", "queue_limit_problems"]


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
